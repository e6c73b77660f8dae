"""Beam search, and exact search for the most probable continuation over a short horizon.

The search is written once, model-free. ``beam_core`` sees the model only through a
*step* function that returns next-token log-probabilities for every live hypothesis,

    step(None, None)      -> (1, V)  the logits after the prompt
    step(parents, tokens) -> (n, V)  live row i is old row parents[i] extended by tokens[i]

(logits: ``beam_core`` applies the sampler's penalties and takes the log-softmax; log-probs
are logits too), so a toy next-probability table (``prefix_step`` over any
``prefixes -> log-probs`` function) and the real model (``CachedStep``: the beams are one
batch on the KV cache, whose rows the cache handle's ``reorder`` permutes when the beams are
re-ranked) run the same algorithm. ``beam_search`` is the model-facing function;
``naive_beam_search`` is the same search with one full forward pass per beam per step, kept
for the benchmark.

Scores are summed log-probabilities divided by the GNMT length penalty
``((5 + |y|) / 6) ** alpha`` (Wu et al. 2016); alpha = 0 ranks by log-probability alone.
A hypothesis that ends (a constraint that accepts and cannot go on, or a stop sequence:
``shakespeare_lm.decoding.stopping``'s check, the constraint asked first) keeps its slot in
the beam with its final score; the search ends when every slot holds a finished
hypothesis or the budget of new tokens is spent.

``exact_core`` / ``exact_search`` find the true most probable continuation of a fixed
length by branch and bound: log-probabilities are <= 0, so a prefix scoring below a known
complete sequence (the beam's answer) can be pruned with all its continuations. At most
``exp(-bound)`` prefixes of any length can score above ``bound``, so the frontier is small
when the bound is a probable sequence; ``max_frontier`` caps it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from ..timing import benchmark, model_device
from .automata import ConstraintError
from .checks import (as_prompt_list, check_count, check_max_new_tokens, check_number,
                     encode_prompts, one_or_list)
from .context_window import WindowPolicy
from .generate import Generation, decode_one_token, prefill
from .sampler import DecodingConfig, Sampler
from .scoring import next_token_logits, teacher_forced_logits
from .stopping import StopCheck, limit_reason

Step = Callable[[torch.Tensor | None, torch.Tensor | None], torch.Tensor]
NextLogProbs = Callable[[torch.Tensor], torch.Tensor]   # prefixes (N, t) -> logits (N, V)

BENCH_PROMPT = "KATHARINA:\nMoved! in good time: "


# --- results ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Hypothesis:
    """One candidate continuation: its tokens, their log-probabilities and its score."""

    ids: tuple[int, ...]
    logprobs: tuple[float, ...]      # log p(token | everything before it), one per token
    score: float                     # sum(logprobs) / length_penalty(len(ids), alpha)
    reason: str                      # why it ended: "stop_sequence", "constraint", ...

    @property
    def logprob(self) -> float:
        """log p(continuation | prompt): the sum of the per-token log-probabilities."""
        return math.fsum(self.logprobs)


@dataclass
class BeamGeneration(Generation):
    """A ``Generation`` found by search, with the score it was ranked by."""

    score: float = math.nan          # log-probability / GNMT length penalty

    @property
    def logprob(self) -> float:
        return math.fsum(self.logprobs)


@dataclass
class ExactResult:
    """The most probable continuation of a fixed length, and what finding it cost."""

    best: BeamGeneration
    frontier_sizes: list[int] = field(default_factory=list)  # prefixes scored at each depth

    @property
    def prefixes_scored(self) -> int:
        return sum(self.frontier_sizes)


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6) ** alpha (Wu et al. 2016, eq. 14)."""
    return ((5.0 + length) / 6.0) ** alpha


# --- input checks -----------------------------------------------------------------------
def _check_beam_width(beam_width, vocab_size: int) -> None:
    check_count("beam_width", beam_width, 1, vocab_size,
                " (1 is greedy; at most the vocabulary size)")


def _check_alpha(alpha) -> None:
    check_number("length_penalty", alpha, hint=" (the GNMT exponent alpha; 0 switches it off, "
                 "0.6-0.7 is typical)")


def _check_prompt(tok, prompt, model) -> list[int]:
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str (exact search runs one prompt), got "
                        f"{type(prompt).__name__}")
    return encode_prompts(tok, prompt, model.config.block_size)[0]


# --- the model-free search --------------------------------------------------------------
BEAM_SETTINGS = ("repetition_penalty", "frequency_penalty", "presence_penalty",
                 "no_repeat_ngram_size", "stop")


def beam_config(config: DecodingConfig | None = None, **settings) -> DecodingConfig:
    """The ``DecodingConfig`` of a search: penalties and stop sequences only. Temperature,
    truncation and a seed reshape or draw from a distribution; a search ranks by it."""
    cfg = DecodingConfig.from_settings(config, **settings)
    cfg.refuse_all_but(BEAM_SETTINGS, "beam search",
                       "it ranks continuations by log-probability and draws nothing, so "
                       "temperature, truncation rules and seed would change nothing")
    return cfg


class _Beam:
    """The beam between steps: the live hypotheses (tokens (n, t), the model's log-probs
    (n, t), summed scoring log-probs (n,), constraint states) and the finished ones."""

    def __init__(self, sampler: Sampler, width: int, alpha: float, is_stop, history):
        self.sampler, self.width, self.alpha = sampler, width, alpha
        self.stop = StopCheck(constraint=sampler.constraint, is_stop=is_stop,
                              constraint_first=True)
        self.history = torch.tensor(list(history), dtype=torch.long)     # (H,) the prompt
        c = sampler.constraint
        self.states = [None if c is None else c.start()]
        self.finished: list[Hypothesis] = []
        self.ids = self.lps = self.raw = None

    def scores(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(the model's log-probs, the log-probs the search ranks by), both (n, V) float64:
        the sampler's penalties (they see prompt + hypothesis), renormalised, then its mask.
        The mask is not renormalised: scores stay the model's log-probabilities."""
        s = self.sampler
        model_logp = torch.log_softmax(logits, dim=-1).double()
        score_logp = model_logp
        if s.needs_history:
            prompt = self.history.to(logits.device).expand(logits.shape[0], -1)
            history = torch.cat([prompt, self.ids], dim=1)                # (n, H + t)
            score_logp = torch.log_softmax(s.penalise(logits, history), dim=-1).double()
        if s.constraint is not None:
            score_logp = s.mask(score_logp, s.allowed(self.states, strict=False))
        return model_logp, score_logp

    def advance(self, logits: torch.Tensor, length: int):
        """Rank every extension of every live hypothesis (logits (n, V)) with the finished
        ones and keep the ``width`` best; (parents, tokens) of the live ones kept, or None."""
        if self.ids is None:                                      # the prompt's distribution
            n, device = logits.shape[0], logits.device
            self.ids = torch.zeros(n, 0, dtype=torch.long, device=device)
            self.lps = torch.zeros(n, 0, dtype=torch.float64, device=device)
            self.raw = torch.zeros(n, dtype=torch.float64, device=device)
        model_logp, score_logp = self.scores(logits)
        raw = self.raw[:, None] + score_logp                      # (n, V) log p(prefix + token)
        penalised = raw / length_penalty(length, self.alpha)
        kept = self._select(self._best(penalised), penalised, model_logp)
        if not kept:
            self.ids = self.ids[:0]
            return None
        device = logits.device
        parents = torch.tensor([p for p, _, _ in kept], device=device)
        tokens = torch.tensor([t for _, t, _ in kept], device=device)
        self.ids = torch.cat([self.ids[parents], tokens[:, None]], dim=1)
        self.lps = torch.cat([self.lps[parents], model_logp[parents, tokens][:, None]], dim=1)
        self.raw = raw[parents, tokens]
        self.states = [state for _, _, state in kept]
        return parents, tokens

    def _best(self, penalised: torch.Tensor) -> list[int]:
        """Indices of the ``width`` best finite candidates: live extensions (flattened n x V)
        first, then the finished hypotheses; ties go to the lower index."""
        kept_finished = torch.tensor([h.score for h in self.finished], dtype=torch.float64,
                                     device=penalised.device)
        candidates = torch.cat([penalised.flatten(), kept_finished])
        order = torch.sort(candidates, descending=True, stable=True).indices[:self.width]
        return order[torch.isfinite(candidates[order])].tolist()

    def _select(self, order: list[int], penalised, model_logp) -> list[tuple]:
        """Split the chosen candidates: the ones that end join ``finished`` (a finished one
        keeps its slot); returns (parent, token, state) of those that go on."""
        n_live, V = penalised.numel(), penalised.shape[1]
        c, finished, kept = self.sampler.constraint, [], []
        for i in order:
            if i >= n_live:
                finished.append(self.finished[i - n_live])
                continue
            parent, token = divmod(i, V)
            state = c.advance(self.states[parent], token) if c is not None else None
            ids = self.ids[parent].tolist() + [token]
            reason = self.stop.ended(ids, state)
            if reason is None:
                kept.append((parent, token, state))
                continue
            lps = self.lps[parent].tolist() + [float(model_logp[parent, token])]
            finished.append(Hypothesis(tuple(ids), tuple(lps), float(penalised[parent, token]),
                                       reason))
        self.finished = finished
        return kept

    def result(self, end_reason: str) -> list[Hypothesis]:
        """Every hypothesis in the beam, best first; the live ones end with ``end_reason``."""
        alpha_lp = length_penalty(self.ids.shape[1], self.alpha)
        out = list(self.finished)
        for ids, lps, raw_score in zip(self.ids.tolist(), self.lps.tolist(), self.raw.tolist()):
            out.append(Hypothesis(tuple(ids), tuple(lps), raw_score / alpha_lp, end_reason))
        return sorted(out, key=lambda h: -h.score)  # sorted() is stable: ties keep beam order


def beam_core(step: Step, vocab_size: int, max_steps: int, beam_width: int,
              length_penalty_alpha: float = 0.0, *,
              is_stop: Callable[[list[int]], bool] | None = None, constraint=None,
              end_reason: str = "max_tokens", config: DecodingConfig | None = None,
              history: Sequence[int] = ()) -> list[Hypothesis]:
    """Beam search over a step function (see the module docstring); hypotheses best first.

    Each step scores every extension of every live hypothesis (n x V candidates) together
    with the finished hypotheses still in the beam, and keeps the ``beam_width`` best by
    length-penalised score (ties: the lower candidate index). ``is_stop(ids)`` says whether a
    continuation has just ended. ``config`` (penalties only, see ``beam_config``) and
    ``constraint`` (the protocol in CONTRIBUTING.md) go through ``shakespeare_lm.decoding.sampler``
    as in ``generate``: the penalties, which count ``history`` (the prompt's ids) and the
    hypothesis, reshape the distribution a hypothesis is scored by; the mask removes tokens
    without renormalising, so the search looks for the most probable continuation the
    constraint allows. ``Hypothesis.logprobs`` are always the model's. With beam_width=1
    this is greedy decoding.
    """
    _check_beam_width(beam_width, vocab_size)
    check_max_new_tokens(max_steps)
    _check_alpha(length_penalty_alpha)
    sampler = Sampler(beam_config(config), constraint, vocab_size)
    if max_steps == 0:
        return [Hypothesis((), (), 0.0, end_reason)]
    beam = _Beam(sampler, beam_width, length_penalty_alpha, is_stop, history)
    chosen = (None, None)
    for t in range(max_steps):
        chosen = beam.advance(step(*chosen), t + 1)
        if chosen is None:
            break
    return beam.result(end_reason)


class PrefixStep:
    """A step function for ``beam_core`` from any ``prefixes (N, t) -> logits (N, V)``
    function (log-probabilities are logits too), e.g. a toy next-probability table; it
    keeps the prefixes itself."""

    def __init__(self, next_logprobs: NextLogProbs, device=None):
        self.next_logprobs, self.device = next_logprobs, device
        self.prefixes = None

    def __call__(self, parents, tokens):
        if parents is None:
            self.prefixes = torch.zeros(1, 0, dtype=torch.long, device=self.device)
        else:
            self.prefixes = torch.cat([self.prefixes[parents],
                                       tokens[:, None].to(self.prefixes.device)], dim=1)
        return self.next_logprobs(self.prefixes)


def prefix_step(next_logprobs: NextLogProbs, device=None) -> Step:
    """``PrefixStep(next_logprobs, device)``: a step function over a prefixes function."""
    return PrefixStep(next_logprobs, device)


def table_logprobs(table: dict[tuple[int, ...], Sequence[float]], vocab_size: int) -> NextLogProbs:
    """A next-log-probabilities function from a table {prefix ids: next-token probabilities}.

    A prefix missing from the table raises ``KeyError`` naming it; a probability of 0 is a
    log-probability of -inf (that token can never be chosen).
    """
    def next_logprobs(prefixes: torch.Tensor) -> torch.Tensor:
        rows = []
        for p in prefixes.tolist():
            if tuple(p) not in table:
                raise KeyError(f"the table has no next-token probabilities after prefix {tuple(p)}")
            probs = torch.tensor(table[tuple(p)], dtype=torch.float64)
            if probs.shape != (vocab_size,):
                raise ValueError(f"the table row for prefix {tuple(p)} has shape "
                                 f"{tuple(probs.shape)}, expected ({vocab_size},)")
            rows.append(probs.log())
        return torch.stack(rows)

    return next_logprobs


def exact_core(next_logprobs: NextLogProbs, horizon: int, lower_bound: float | None = None,
               max_frontier: int = 50_000, tol: float = 1e-4,
               device=None) -> tuple[Hypothesis, list[int]]:
    """The most probable continuation of exactly ``horizon`` tokens, by branch and bound.

    ``lower_bound``: the log-probability of some known continuation of that length (e.g. the
    beam's); without one, greedy's is used. Prefixes scoring below it (less ``tol``, for
    rounding) are pruned: log-probabilities are <= 0, so none of their continuations could do
    better. Returns (best hypothesis, number of prefixes scored at each depth). Raises
    ``RuntimeError`` if a depth would keep more than ``max_frontier`` prefixes.
    """
    check_count("horizon", horizon, 1)
    if lower_bound is None:                                       # greedy's score is a bound
        prefix = torch.zeros(1, 0, dtype=torch.long, device=device)
        lower_bound = 0.0
        for _ in range(horizon):
            lp = next_logprobs(prefix).double()[0]
            tok_id = int(lp.argmax())
            lower_bound += float(lp[tok_id])
            prefix = torch.cat([prefix, prefix.new_tensor([[tok_id]])], dim=1)
    frontier = torch.zeros(1, 0, dtype=torch.long, device=device)
    scores = torch.zeros(1, dtype=torch.float64, device=device)
    lps = torch.zeros(1, 0, dtype=torch.float64, device=device)
    sizes = []
    for depth in range(horizon):
        sizes.append(frontier.shape[0])
        logp = next_logprobs(frontier).double()                   # (N, V)
        total = scores[:, None] + logp                            # (N, V)
        V = total.shape[1]
        if depth == horizon - 1:
            best = int(total.flatten().argmax())                  # first maximum on ties
            row, tok_id = divmod(best, V)
            ids = frontier[row].tolist() + [tok_id]
            token_lps = lps[row].tolist() + [float(logp[row, tok_id])]
            return Hypothesis(tuple(ids), tuple(token_lps), float(total[row, tok_id]),
                              "max_tokens"), sizes
        rows, toks = torch.nonzero(total >= lower_bound - tol, as_tuple=True)
        if rows.numel() > max_frontier:
            raise RuntimeError(
                f"exact search at depth {depth + 1} of horizon={horizon} would keep "
                f"{rows.numel()} prefixes, more than max_frontier={max_frontier}: use a shorter "
                "horizon, a better lower_bound (a wider beam's score) or a larger max_frontier")
        frontier = torch.cat([frontier[rows], toks[:, None]], dim=1)
        lps = torch.cat([lps[rows], logp[rows, toks][:, None]], dim=1)
        scores = total[rows, toks]
    raise AssertionError("unreachable")


def cat_dog_example() -> tuple[list[str], dict[tuple[int, ...], list[float]]]:
    """The worked example of the source text: after "YOUR CAT IS A LOVELY", a six-word
    vocabulary and its next-word probabilities for one and two steps (step 2 is made up:
    unsure after CAT, sure to end after DOG). Returns (words, table for ``table_logprobs``)."""
    words = ["CAT", "DOG", "IS", "LOVELY", "AND", "<EOS>"]
    CAT, DOG = words.index("CAT"), words.index("DOG")
    table = {
        (): [0.772, 0.211, 0.013, 0.004, 0.0, 0.0],            # softmax of logits 6.2 4.9 2.1 1.0
        (CAT,): [0.155, 0.155, 0.155, 0.155, 0.18, 0.20],      # unsure how to go on
        (DOG,): [0.0075, 0.0075, 0.0075, 0.0075, 0.02, 0.95],  # confident the sentence ends
    }
    return words, table


# --- the model as a step function -------------------------------------------------------
class CachedStep:
    """Beams as one batch on the KV cache: each step reorders the cache rows to the
    surviving beams' parents and feeds one token per beam (one forward pass per step)."""

    def __init__(self, model, prompt_ids: list[int], max_new_tokens: int):
        self.model, self.prompt_ids = model, prompt_ids
        self.device = model_device(model)
        self.slot = len(prompt_ids)                               # where the next token goes
        self.cache = model.cache(1, len(prompt_ids) + max_new_tokens)

    @torch.no_grad()
    def __call__(self, parents, tokens):
        if parents is None:
            idx = torch.tensor([self.prompt_ids], device=self.device)
            logits = prefill(self.model, idx, torch.arange(idx.shape[1], device=self.device))
        else:
            n_rows = self.cache.batch
            if parents.numel() != n_rows or not torch.equal(
                    parents, torch.arange(n_rows, device=parents.device)):
                self.cache.reorder(parents)                       # row i <- old row parents[i]
            pos = torch.tensor([self.slot], device=self.device)
            logits = decode_one_token(self.model, tokens[:, None], pos)
            self.slot += 1
        return logits.float()                                     # (n, V)

    def close(self) -> None:
        self.cache.close()


def naive_logits(model, prompt_ids: list[int]) -> NextLogProbs:
    """Next-token logits with one full forward pass per prefix, no cache: the way the
    source text's beam search calls the model."""

    @torch.no_grad()
    def next_logits(prefixes: torch.Tensor) -> torch.Tensor:
        rows = [next_token_logits(model, [prompt_ids + p])[0] for p in prefixes.tolist()]
        return torch.stack(rows).float()

    return next_logits


def cached_prefix_logprobs(model, prompt_ids: list[int], chunk: int = 128) -> NextLogProbs:
    """Batched next-token log-probabilities for many prefixes after one shared prompt.

    For each chunk of prefixes the prompt runs once on the KV cache, its row is copied to
    every prefix and only the prefixes are run (``scoring.teacher_forced_logits``).
    """
    @torch.no_grad()
    def next_logprobs(prefixes: torch.Tensor) -> torch.Tensor:
        out = []
        for s in range(0, prefixes.shape[0], chunk):
            part = prefixes[s : s + chunk].tolist()
            # the distribution after prompt + p is the one of a placeholder appended to p
            logits = teacher_forced_logits(model, [prompt_ids] * len(part),
                                           [p + [0] for p in part], use_cache=True)[:, -1]
            out.append(torch.log_softmax(logits.float(), dim=-1))
        return torch.cat(out)

    return next_logprobs


# --- the model-facing functions ---------------------------------------------------------
def _stop_test(tok, stops: tuple[str, ...]) -> Callable[[list[int]], bool] | None:
    """``beam_core``'s ``is_stop`` for stop sequences: it decodes only the last ids that the
    longest one can span (one character per id)."""
    if not stops:
        return None
    check, longest = StopCheck(stops), max(len(s) for s in stops)
    return lambda ids: check.stopped(tok.decode(ids[-longest:]))


def _to_generation(prompt: str, tok, h: Hypothesis) -> BeamGeneration:
    return BeamGeneration(prompt, tok.decode(h.ids), list(h.ids), list(h.logprobs), h.reason,
                          None, h.score)


def _search_one(model, tok, prompt: str, ids: list[int], max_new_tokens: int, beam_width: int,
                alpha: float, cfg: DecodingConfig, constraint, naive: bool) -> list[BeamGeneration]:
    """Every final beam for one prompt, best first."""
    V = model.config.vocab_size
    budget = WindowPolicy(model.config.block_size, slide=False).window(len(ids),
                                                                       max_new_tokens).budget
    end_reason = limit_reason(budget, max_new_tokens)
    if naive:
        step, close = prefix_step(naive_logits(model, ids), model_device(model)), None
    else:
        step = CachedStep(model, ids, budget)
        close = step.close
    try:
        hyps = beam_core(step, V, budget, beam_width, alpha, is_stop=_stop_test(tok, cfg.stop),
                         constraint=constraint, end_reason=end_reason, config=cfg, history=ids)
    finally:
        if close is not None:
            close()
    if not hyps:
        raise ConstraintError(
            f"every beam reached a state where the constraint {constraint!r:.80} allows no next "
            "character: no continuation can satisfy it")
    return [_to_generation(prompt, tok, h) for h in hyps]


def _search(model, tok, prompt, max_new_tokens, beam_width, length_penalty_alpha, *,
            return_all, constraint, naive, config, settings):
    cfg = beam_config(config, **settings)
    encoded = encode_prompts(tok, prompt, model.config.block_size)
    check_max_new_tokens(max_new_tokens)
    _check_beam_width(beam_width, model.config.vocab_size)
    _check_alpha(length_penalty_alpha)
    cfg.check_stop_characters(tok)
    Sampler(cfg, constraint, model.config.vocab_size)  # checks the constraint
    out = []
    for p, ids in zip(as_prompt_list(prompt), encoded):
        gens = _search_one(model, tok, p, ids, max_new_tokens, beam_width, length_penalty_alpha,
                           cfg, constraint, naive)
        out.append(gens if return_all else gens[0])
    return one_or_list(prompt, out)


@torch.no_grad()
def beam_search(model, tok, prompt: str | list[str], max_new_tokens: int, beam_width: int,
                length_penalty: float = 0.0, *, constraint=None, return_all: bool = False,
                config: DecodingConfig | None = None, **settings) -> BeamGeneration | list:
    """Beam search (the beams are one batch on the KV cache) for a probable continuation.

    Keeps the ``beam_width`` best partial continuations of ``prompt`` by summed
    log-probability over the GNMT length penalty ``((5+|y|)/6)**length_penalty``
    (Wu et al. 2016). Decoding settings, as ``config=`` or keywords (``beam_config``):
    ``stop`` and the penalties (``repetition_penalty``, ``frequency_penalty``,
    ``presence_penalty``), applied by ``shakespeare_lm.decoding.sampler`` as in ``generate``, so
    width 1 is ``generate(..., temperature=0)`` with the same penalties. A continuation ends
    at ``max_new_tokens``, at the end of a ``stop`` sequence (kept in the text), when a
    ``constraint`` accepts and cannot continue (its mask applied by the sampler), or at the
    context window. Returns the best as a ``BeamGeneration`` (``.score``, ``.logprobs``:
    the model's), or with ``return_all=True`` every final beam, best first; a list of
    prompts is searched one after another and gives a list.
    """
    return _search(model, tok, prompt, max_new_tokens, beam_width, length_penalty,
                   return_all=return_all, constraint=constraint, naive=False, config=config,
                   settings=settings)


@torch.no_grad()
def naive_beam_search(model, tok, prompt: str | list[str], max_new_tokens: int,
                      beam_width: int, length_penalty: float = 0.0, *, constraint=None,
                      return_all: bool = False, config: DecodingConfig | None = None,
                      **settings):
    """``beam_search`` with k separate full forward passes per step and no cache, as in
    the source text's code: the same search, for the speed comparison."""
    return _search(model, tok, prompt, max_new_tokens, beam_width, length_penalty,
                   return_all=return_all, constraint=constraint, naive=True, config=config,
                   settings=settings)


@torch.no_grad()
def exact_search(model, tok, prompt: str, horizon: int, *, lower_bound: float | None = None,
                 beam_width: int = 5, max_frontier: int = 50_000, chunk: int = 128) -> ExactResult:
    """The most probable continuation of exactly ``horizon`` characters (branch and bound).

    The bound is ``lower_bound`` if given, else the log-probability of the ``beam_width``
    beam search continuation of the same length. The cost grows with how many prefixes
    score above the bound (at most exp(-bound) per depth); ``max_frontier`` caps it.
    """
    ids = _check_prompt(tok, prompt, model)
    block = model.config.block_size
    check_count("horizon", horizon, 1, block - len(ids),
                f" (the context window {block} less the prompt's {len(ids)} characters)")
    if lower_bound is None:
        lower_bound = beam_search(model, tok, prompt, horizon, beam_width).logprob
    best, sizes = exact_core(cached_prefix_logprobs(model, ids, chunk), horizon, lower_bound,
                             max_frontier, device=model_device(model))
    return ExactResult(_to_generation(prompt, tok, best), sizes)


# --- benchmark --------------------------------------------------------------------------
def bench_beam_vs_naive(model, tok, prompt: str = BENCH_PROMPT, max_new_tokens: int = 120,
                        beam_width: int = 5, repeats: int = 3) -> dict:
    """Seconds for beam search with the beams batched on the KV cache vs k separate full
    forward passes per step (median of ``repeats`` after a warm-up), and their ratio."""
    device = model_device(model)

    def cached():
        return beam_search(model, tok, prompt, max_new_tokens, beam_width)

    def naive():
        return naive_beam_search(model, tok, prompt, max_new_tokens, beam_width)

    same_text = cached().text == naive().text                    # also the warm-up
    cached_s = benchmark(cached, device, warmup=0, repeats=repeats)
    naive_s = benchmark(naive, device, warmup=0, repeats=repeats)
    return {"beam_width": beam_width, "new_tokens": max_new_tokens, "cached_s": cached_s,
            "naive_s": naive_s, "speedup": naive_s / cached_s, "same_text": same_text}
