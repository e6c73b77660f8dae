"""How masking changes the distribution: exact enumeration, rejection sampling, distances.

Masking step by step does not sample from the model conditioned on the constraint
(Park et al. 2024): ``exact_distributions`` computes both distributions by enumeration,
``rejection_sample`` estimates the conditional one, ``total_variation`` compares them.
The constraints themselves (``RegexConstraint``, ``BracketListConstraint``,
``ChoiceConstraint`` and the ``Constraint`` protocol) live in ``shakespeare_lm.decoding.automata``
and are importable from here as well.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from .automata import (NEG_INF, BracketListConstraint, CharConstraint, ChoiceConstraint, Constraint,
                       ConstraintError, ListState, RegexConstraint, State, allowed_or_raise,
                       check_constraint, mask_logits)
from .checks import as_prompt_list, check_count, one_or_list
from .generate import generate
from .scoring import teacher_forced_logprobs

__all__ = [
    "BracketListConstraint", "CharConstraint", "ChoiceConstraint", "Constraint",
    "ConstraintError", "ExactDistributions", "ListState", "RegexConstraint", "RejectionSample",
    "State", "allowed_or_raise", "check_constraint", "completion_logprobs", "completions",
    "exact_distributions", "first_completion", "mask_logits", "rejection_sample",
    "total_variation",
]

# --- how masking changes the distribution ---------------------------------------------
def completions(constraint, tok, max_len: int = 64, limit: int = 10_000) -> list[str]:
    """Every text at which constrained generation stops with reason "constraint" (the
    automaton accepts and cannot continue), found by depth-first search over the automaton.

    No completion is a prefix of another, so under the model they are disjoint events.
    Raises ValueError if some path is longer than ``max_len`` or there are more than
    ``limit`` completions (an infinite or very large language).
    """
    out: list[str] = []

    def visit(state, text: str) -> None:
        if constraint.is_accepting(state) and not constraint.can_continue(state):
            out.append(text)
            if len(out) > limit:
                raise ValueError(f"the constraint has more than limit={limit} completions; "
                                 "enumeration needs a small finite language")
            return
        if len(text) >= max_len:
            raise ValueError(f"the constraint allows texts longer than max_len={max_len} "
                             f"(e.g. {text!r}...); enumeration needs a finite language")
        for t in torch.nonzero(constraint.allowed(state)).flatten().tolist():
            visit(constraint.advance(state, t), text + tok.chars[t])

    visit(constraint.start(), "")
    return out


def _chunks(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _path(constraint, tok, text: str, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ids (W,) of ``text`` padded with 0, and the allowed mask (W, V) before each of its
    characters (all True on padding steps, so that they add nothing)."""
    ids = torch.zeros(width, dtype=torch.long)
    masks = torch.ones(width, tok.vocab_size, dtype=torch.bool)
    state = constraint.start()
    for i, ch in enumerate(text):
        masks[i] = allowed_or_raise(constraint, state, text[:i])
        ids[i] = tok.stoi[ch]
        state = constraint.advance(state, tok.stoi[ch])
    return ids, masks


def completion_logprobs(model, tok, prompt: str | Sequence[str], constraint, texts: Sequence[str],
                        batch_size: int = 256, use_cache: bool = True
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """For each text y after ``prompt``: its log-probability under the model, log p(y), and
    under per-step masking, log q(y) = sum_t log [p(y_t | y_<t) / p(allowed_t | y_<t)].

    Returns two float64 tensors: (N,) for one prompt, (P, N) for a list of P prompts (one
    batched computation; see ``scoring.teacher_forced_logits`` for how the model is run).
    """
    prompts = as_prompt_list(prompt)
    ctxs = [tok.encode(p) for p in prompts]
    if not all(ctxs):
        raise ValueError("an empty prompt: the first character needs a context to be scored in")
    texts = list(texts)
    if not texts or not all(isinstance(t, str) and t for t in texts):
        raise ValueError(f"texts={texts!r:.80} is invalid: it must be a non-empty list of "
                         "non-empty str")
    block = getattr(getattr(model, "config", None), "block_size", math.inf)
    longest, L = max(len(t) for t in texts), max(len(c) for c in ctxs)
    if L + longest > block:
        raise ValueError(f"prompt ({L} characters) plus the longest completion ({longest}) "
                         f"exceeds the context window of {block}; keep only the prompt's last "
                         f"{block - longest} characters")
    ids, masks = zip(*(_path(constraint, tok, t, longest) for t in texts))
    ids, masks = torch.stack(ids), torch.stack(masks)                   # (N, W), (N, W, V)
    pairs = [(p, n) for p in range(len(ctxs)) for n in range(len(texts))]
    logp = torch.empty(len(pairs), dtype=torch.float64)
    logq = torch.empty(len(pairs), dtype=torch.float64)
    for chunk in _chunks(list(range(len(pairs))), batch_size):
        rows = [pairs[i] for i in chunk]
        n = torch.tensor([j for _, j in rows])
        logsm = teacher_forced_logprobs(model, [ctxs[p] for p, _ in rows],
                                        [tok.encode(texts[j]) for _, j in rows],
                                        use_cache).cpu()                    # (B, W', V)
        W = logsm.shape[1]
        step = logsm.gather(-1, ids[n, :W, None]).squeeze(-1)              # log p(y_t | y_<t)
        kept = logsm.masked_fill(~masks[n, :W], NEG_INF).logsumexp(-1)     # log p(allowed_t)
        real = torch.arange(W)[None, :] < torch.tensor([len(texts[j]) for _, j in rows])[:, None]
        logp[chunk] = torch.where(real, step, 0.0).sum(-1)
        logq[chunk] = torch.where(real, step - kept, 0.0).sum(-1)
    logp, logq = logp.view(len(prompts), len(texts)), logq.view(len(prompts), len(texts))
    return one_or_list(prompt, logp), one_or_list(prompt, logq)


@dataclass
class ExactDistributions:
    """The distributions over a constraint's completions after a prompt (all (N,) float64)."""

    completions: list[str]
    model_p: torch.Tensor        # p(y): the unconstrained model's probability of text y
    conditional: torch.Tensor    # p(y | y satisfies the constraint) = p(y) / sum p
    masked: torch.Tensor         # what per-step masking samples: prod_t renormalised p

    @property
    def mass(self) -> float:
        """p(the constraint is satisfied): the model's total probability of all completions."""
        return float(self.model_p.sum())

    @property
    def tv(self) -> float:
        """Total variation distance between the masked and the exact conditional distribution."""
        return total_variation(self.conditional, self.masked)

    def as_rows(self) -> list[tuple[str, float, float, float]]:
        """(completion, p, conditional, masked) per completion, the most probable
        (conditional) first."""
        rows = zip(self.completions, self.model_p.tolist(), self.conditional.tolist(),
                   self.masked.tolist())
        return sorted(rows, key=lambda r: -r[2])


def exact_distributions(model, tok, prompt: str | Sequence[str], constraint, max_len: int = 64,
                        limit: int = 10_000) -> ExactDistributions | list[ExactDistributions]:
    """Enumerate the constraint's completions (``completions``) and compute, exactly, the
    model's probability of each, the conditional distribution given the constraint and the
    distribution that per-step masking samples from (at temperature 1, no truncation).
    A list of prompts is computed in one batch and gives a list."""
    texts = completions(constraint, tok, max_len, limit)
    logp, logq = completion_logprobs(model, tok, prompt, constraint, texts)
    conditional = torch.softmax(logp, dim=-1)         # p(y) / sum_y' p(y'), computed stably
    out = [ExactDistributions(texts, a.exp(), b, c.exp())
           for a, b, c in zip(logp.view(-1, len(texts)), conditional.view(-1, len(texts)),
                              logq.view(-1, len(texts)))]
    return one_or_list(prompt, out)


@dataclass
class RejectionSample:
    """Unconstrained samples, kept when they begin with a completion of the constraint."""

    counts: Counter              # completion -> number of accepted samples
    n: int                       # samples drawn
    rejected: Counter            # text of each rejected sample -> how often it was drawn

    @property
    def accepted(self) -> int:
        return sum(self.counts.values())

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.n

    def distribution(self) -> dict[str, float]:
        """The accepted samples' empirical distribution (an estimate of the conditional)."""
        if not self.accepted:
            raise ValueError(f"none of the {self.n} samples satisfied the constraint; draw more")
        return {k: v / self.accepted for k, v in self.counts.items()}


def first_completion(constraint, tok, text: str) -> str | None:
    """The prefix of ``text`` at which the automaton accepts and cannot continue, or None if
    ``text`` leaves the constraint (or ends) before that."""
    state = constraint.start()
    for i, ch in enumerate(text):
        if constraint.is_accepting(state) and not constraint.can_continue(state):
            return text[:i]
        t = tok.stoi[ch]
        if not bool(constraint.allowed(state)[t]):
            return None
        state = constraint.advance(state, t)
    return text if constraint.is_accepting(state) and not constraint.can_continue(state) else None


def rejection_sample(model, tok, prompt: str, constraint, n: int, max_new_tokens: int, *,
                     seed: int = 0, batch_size: int = 256) -> RejectionSample:
    """Draw ``n`` unconstrained samples of ``max_new_tokens`` characters (temperature 1) and
    keep those that begin with a completion: accepted samples follow the exact conditional
    distribution, at the cost of discarding the rest."""
    check_count("n", n, 1, hint=" (samples to draw)")
    counts: Counter = Counter()
    rejected: Counter = Counter()
    for i, chunk in enumerate(_chunks(list(range(n)), batch_size)):
        gens = generate(model, tok, [prompt] * len(chunk), max_new_tokens, seed=seed + i)
        for g in gens:
            done = first_completion(constraint, tok, g.text)
            if done is None:
                rejected[g.text] += 1
            else:
                counts[done] += 1
    return RejectionSample(counts, n, rejected)


def total_variation(p, q) -> float:
    """Total variation distance 1/2 sum_y |p(y) - q(y)| between two distributions, given as
    dicts (outcome -> probability; a missing outcome has probability 0) or as equal-length
    sequences / tensors over the same outcomes."""
    if isinstance(p, dict) or isinstance(q, dict):
        if not (isinstance(p, dict) and isinstance(q, dict)):
            raise TypeError("total_variation needs two dicts or two sequences, not a mix")
        keys = sorted(set(p) | set(q))
        p, q = [p.get(k, 0.0) for k in keys], [q.get(k, 0.0) for k in keys]
    p = torch.as_tensor(p, dtype=torch.float64).flatten()
    q = torch.as_tensor(q, dtype=torch.float64).flatten()
    if p.shape != q.shape:
        raise ValueError(f"p has {p.numel()} outcomes but q has {q.numel()}: they must match")
    for name, d in (("p", p), ("q", q)):
        if bool((d < 0).any()) or not math.isclose(float(d.sum()), 1.0, abs_tol=1e-6):
            raise ValueError(f"{name} is not a probability distribution (sum {float(d.sum()):.6g}, "
                             f"min {float(d.min()):.3g}): entries must be >= 0 and sum to 1")
    return 0.5 * float((p - q).abs().sum())
