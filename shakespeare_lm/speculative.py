"""Speculative decoding: a cheap draft proposes, the target verifies, the output is exact.

Leviathan, Kalman and Matias 2023; Chen et al. 2023. One round, with the text so far ``x``
of length n (the target's KV cache holds ``x[:-1]``):

1. ``draft_tokens``: the draft proposes d_1..d_g, each drawn from its shaped distribution q_i;
2. ``verify_pass``: the target reads ``x[-1], d_1..d_g`` in ONE forward pass on its cache and
   returns g + 1 next-token distributions p_1..p_{g+1};
3. ``accept_reject``: d_i is kept with probability min(1, p_i(d_i) / q_i(d_i)), in order; at
   the first rejection a token is drawn from the residual max(p_i - q_i, 0) (normalised) and
   the round ends; if all g are kept, a bonus token is drawn from p_{g+1};
4. ``rollback``: both KV caches forget the rejected proposals.

Whatever the draft, every emitted token has the target's distribution; the draft decides
only how many tokens one target pass yields. Greedy decoding (temperature 0) is the same
rule with one-hot p and q: a proposal survives when it is the target's argmax.

Drafts share one small interface (``Draft``): a smoothed character n-gram counted from the
training text (``NGramDraft``), a small transformer with its own KV cache (``ModelDraft``),
and prompt lookup (``PromptLookupDraft``, Saxena 2023).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import torch
import torch.nn.functional as F

from . import constrained, rules
from .generate import (Generation, Timings, _check_max_new_tokens, _check_prompts, _check_stop,
                       decode_one_token, make_generator, prefill)
from .model import Transformer
from .timing import Stopwatch, benchmark, model_device

TRAIN_FILE = Path(__file__).resolve().parent.parent / "data" / "shakespeare_train.txt"
VERIFIERS = ("exact", "no_residual")
PENALTIES = ("repetition_penalty", "frequency_penalty", "presence_penalty")


# --- drafts ---------------------------------------------------------------------------
@runtime_checkable
class Draft(Protocol):
    """What speculative decoding asks of a proposer."""

    name: str

    def start(self, ids: list[int], max_len: int) -> None:
        """A new text begins with ``ids``; it will grow to at most ``max_len`` ids."""

    def next_logits(self, ids: list[int]) -> torch.Tensor | None:
        """Logits (V,) for the id after ``ids`` (which extends the previous call's ids);
        None when the draft has nothing to propose."""

    def rollback(self, length: int) -> None:
        """Forget everything past ``ids[:length]``: those ids were rejected."""

    def finish(self) -> None:
        """The text is done: release any state."""


class ModelDraft:
    """A (small) transformer as the draft, with its own KV cache that is cut back on rejection."""

    def __init__(self, model: Transformer, name: str = "transformer"):
        self.model, self.name = model, name
        self.fed: list[int] = []  # the ids whose keys and values are in the cache
        self.device = model_device(model)

    @property
    def block_size(self) -> int:
        return self.model.config.block_size

    def start(self, ids: list[int], max_len: int) -> None:
        self.device = device = model_device(self.model)
        self.model.setup_cache(1, max_len)
        self.fed = []
        if len(ids) > 1:  # all but the last id: next_logits feeds what is new
            prefill(self.model, torch.tensor([ids[:-1]], device=device),
                    torch.arange(len(ids) - 1, device=device))
            self.fed = list(ids[:-1])

    def next_logits(self, ids: list[int]) -> torch.Tensor:
        n = len(self.fed)
        if len(ids) <= n or ids[:n] != self.fed:
            raise RuntimeError("ModelDraft.next_logits: ids must extend the ids already in "
                               "the cache; call rollback(length) after a rejection")
        device = self.device
        new = ids[n:]  # one id, or two after a round that accepted every proposal
        if len(new) == 1:
            logits = decode_one_token(self.model, torch.tensor([new], device=device),
                                      torch.tensor([n], device=device))
        else:
            logits = prefill(self.model, torch.tensor([new], device=device),
                             torch.arange(n, len(ids), device=device))
        self.fed = list(ids)
        return logits[0]

    def rollback(self, length: int) -> None:
        if length < len(self.fed):
            self.model.truncate_cache(length)
            self.fed = self.fed[:length]

    def finish(self) -> None:
        self.model.clear_cache()
        self.fed = []


def _encode_array(tok, text: str) -> np.ndarray:
    """Text -> int64 ids quickly (the training text has millions of characters)."""
    if all(ord(c) < 256 for c in tok.chars):
        lookup = np.full(256, -1, dtype=np.int64)
        lookup[[ord(c) for c in tok.chars]] = np.arange(tok.vocab_size)
        ids = lookup[np.frombuffer(text.encode("latin-1", errors="replace"), dtype=np.uint8)]
        if (ids >= 0).all():
            return ids
    return np.asarray(tok.encode(text), dtype=np.int64)  # names the offending character


class NGramDraft:
    """A character n-gram model counted from text, as a draft with no parameters to train.

    Smoothing interpolates each order with the one below it (a Dirichlet prior with
    ``smoothing`` pseudo-counts on the shorter context's estimate, down to uniform), so every
    character has some probability and unseen contexts fall back to shorter ones. Contexts
    shorter than ``order - 1`` (the very start of a text) use the lower-order tables.
    """

    MAX_ORDER = 4  # dense tables: V^order entries (63^4 is 16M floats)

    def __init__(self, tok, order: int = 3, smoothing: float = 1.0, text: str | None = None):
        if isinstance(order, bool) or not isinstance(order, int) or not 1 <= order <= self.MAX_ORDER:
            raise ValueError(f"order={order!r} is invalid: order must be an integer in "
                             f"[1, {self.MAX_ORDER}] (3 is a trigram)")
        if not isinstance(smoothing, (int, float)) or not smoothing > 0 or not math.isfinite(smoothing):
            raise ValueError(f"smoothing={smoothing!r} is invalid: smoothing must be a number > 0")
        if text is None:
            text = TRAIN_FILE.read_text(encoding="utf-8")
        V = tok.vocab_size
        ids = _encode_array(tok, text)
        if len(ids) < order:
            raise ValueError(f"text of {len(ids)} characters is too short to count {order}-grams")
        self.name, self.order, self.vocab_size = f"{order}-gram", order, V
        probs = np.full((1, V), 1.0 / V)  # order 0: uniform
        self.log_tables: list[torch.Tensor] = []  # [k]: (V^k, V) log P(next | last k ids)
        for k in range(order):
            code = np.zeros(len(ids) - k, dtype=np.int64)
            for j in range(k + 1):  # base-V number of the (k+1)-gram, oldest id most significant
                code = code * V + ids[j : len(ids) - k + j]
            counts = np.bincount(code, minlength=V ** (k + 1)).reshape(V**k, V).astype(np.float64)
            prior = probs[np.arange(V**k) % max(V ** (k - 1), 1)] if k else probs
            probs = (counts + smoothing * prior) / (counts.sum(1, keepdims=True) + smoothing)
            self.log_tables.append(torch.from_numpy(np.log(probs)).float())

    def distribution(self, ids: list[int]) -> torch.Tensor:
        """log P(next | ids) (V,) from the last ``order - 1`` ids (fewer at the start)."""
        k = min(self.order - 1, len(ids))
        index = 0
        for i in ids[len(ids) - k:]:
            index = index * self.vocab_size + i
        return self.log_tables[k][index]

    def start(self, ids: list[int], max_len: int) -> None:
        pass

    def next_logits(self, ids: list[int]) -> torch.Tensor:
        return self.distribution(ids)

    def rollback(self, length: int) -> None:
        pass

    def finish(self) -> None:
        pass


class PromptLookupDraft:
    """Prompt lookup (Saxena 2023): find the most recent earlier occurrence of the last n ids
    (n from ``max_ngram`` down to ``min_ngram``) and propose the id that followed it, with
    certainty (q is one-hot). No match: no proposal, and the round is a plain decode step."""

    def __init__(self, vocab_size: int, max_ngram: int = 8, min_ngram: int = 3):
        if isinstance(min_ngram, bool) or not isinstance(min_ngram, int) or min_ngram < 1:
            raise ValueError(f"min_ngram={min_ngram!r} is invalid: it must be an integer >= 1")
        if isinstance(max_ngram, bool) or not isinstance(max_ngram, int) or max_ngram < min_ngram:
            raise ValueError(f"max_ngram={max_ngram!r} is invalid: it must be an integer "
                             f">= min_ngram={min_ngram}")
        if vocab_size > 256:
            raise ValueError(f"vocab_size={vocab_size} is invalid: prompt lookup here searches "
                             "bytes, so at most 256 ids")
        self.vocab_size, self.max_ngram, self.min_ngram = vocab_size, max_ngram, min_ngram
        self.name = "prompt lookup"

    def lookup(self, ids: list[int]) -> int | None:
        """The id that followed the latest earlier match of the longest suffix, or None."""
        text = bytes(ids)
        for n in range(min(self.max_ngram, len(ids) - 1), self.min_ngram - 1, -1):
            j = text.rfind(text[-n:], 0, len(ids) - 1)  # a match that ends before the last id
            if j >= 0:
                return ids[j + n]
        return None

    def start(self, ids: list[int], max_len: int) -> None:
        pass

    def next_logits(self, ids: list[int]) -> torch.Tensor | None:
        nxt = self.lookup(ids)
        if nxt is None:
            return None
        logits = torch.full((self.vocab_size,), float("-inf"))
        logits[nxt] = 0.0
        return logits

    def rollback(self, length: int) -> None:
        pass

    def finish(self) -> None:
        pass


def as_draft(draft, target: Transformer) -> Draft:
    """A ``Draft`` from a Transformer (wrapped in ``ModelDraft``) or a ``Draft`` itself."""
    if isinstance(draft, Transformer):
        if draft.config.vocab_size != target.config.vocab_size:
            raise ValueError(f"draft vocab_size={draft.config.vocab_size} does not match the "
                             f"target's vocab_size={target.config.vocab_size}")
        if draft is target:  # one module cannot hold two caches: draft with a copy
            return ModelDraft(copy.deepcopy(target), name="target itself")
        return ModelDraft(draft)
    if isinstance(draft, Draft):
        return draft
    raise TypeError(f"draft must be a Transformer or a Draft (NGramDraft, ModelDraft, "
                    f"PromptLookupDraft), got {type(draft).__name__}")


# --- statistics -----------------------------------------------------------------------
@dataclass
class SpeculativeStats:
    """What one ``speculative_decode`` call did."""

    draft: str
    gamma: int
    verifier: str
    target_passes: int = 0            # verification passes (the prompt's prefill not counted)
    drafted: int = 0                  # draft tokens proposed, tested or not
    proposed: int = 0                 # draft tokens put to the test (up to the first rejection)
    accepted: int = 0
    tokens_per_round: list[int] = field(default_factory=list)   # accepted + 1, each pass
    position_tested: list[int] = field(default_factory=list)    # [i]: proposals at draft slot i
    position_accepted: list[int] = field(default_factory=list)
    outcome: list[bool] = field(default_factory=list)   # whether each tested proposal survived
    slot: list[int] = field(default_factory=list)       # its draft slot, 0 .. gamma - 1
    draft_s: float = 0.0              # time spent drafting
    target_s: float = 0.0             # time in verification passes and accept/reject
    _tested_pq: list = field(default_factory=list, repr=False)  # (p, q) rows of tested proposals

    def record(self, rnd: "Round") -> None:
        """Add one round's outcome."""
        k, g = rnd.accepted, len(rnd.proposals)
        tested = min(k + 1, g)  # proposals after the first rejection were never tested
        self.target_passes += 1
        self.drafted += g
        self.proposed += tested
        self.accepted += k
        self.tokens_per_round.append(k + 1)
        if tested:  # overlaps are computed when asked for, not while decoding
            self._tested_pq.append((rnd.p[:tested], rnd.q[:tested]))
            self.outcome += [i < k for i in range(tested)]
            self.slot += list(range(tested))
        for i in range(tested):
            self.position_tested[i] += 1
            self.position_accepted[i] += i < k
        self.draft_s += rnd.draft_s
        self.target_s += rnd.target_s

    @property
    def overlap(self) -> list[float]:
        """sum_x min(p, q) = 1 - TV(p, q) of every tested proposal, in order."""
        return [a for p, q in self._tested_pq for a in torch.minimum(p, q).sum(-1).tolist()]

    @property
    def acceptance_rate(self) -> float:
        """Accepted / tested proposals (nan if the draft proposed nothing)."""
        return self.accepted / self.proposed if self.proposed else float("nan")

    @property
    def tokens_per_pass(self) -> float:
        """Tokens emitted per verification pass of the target."""
        return sum(self.tokens_per_round) / self.target_passes if self.target_passes else float("nan")

    @property
    def cost_ratio(self) -> float:
        """Measured seconds per drafted token / seconds per verification pass."""
        if not (self.drafted and self.target_s):
            return float("nan")
        return (self.draft_s / self.drafted) / (self.target_s / self.target_passes)

    @property
    def per_position_acceptance(self) -> list[float]:
        """Acceptance rate at draft slot i, given that slot was reached."""
        return [a / t if t else float("nan")
                for a, t in zip(self.position_accepted, self.position_tested)]

    @property
    def per_position_overlap(self) -> list[float]:
        """Mean sum_x min(p, q) at draft slot i: the acceptance rate the distributions predict."""
        sums = [0.0] * self.gamma
        for i, a in zip(self.slot, self.overlap, strict=True):
            sums[i] += a
        return [s / t if t else float("nan") for s, t in zip(sums, self.position_tested)]

    @property
    def expected_acceptance(self) -> float:
        """Mean of sum_x min(p, q) = 1 - TV(p, q) over the tested proposals."""
        overlap = self.overlap
        return sum(overlap) / len(overlap) if overlap else float("nan")

    def as_dict(self) -> dict:
        skip = ("tokens_per_round", "outcome", "slot", "_tested_pq")
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        d.update(acceptance_rate=self.acceptance_rate, tokens_per_pass=self.tokens_per_pass,
                 cost_ratio=self.cost_ratio, per_position_overlap=self.per_position_overlap,
                 per_position_acceptance=self.per_position_acceptance,
                 expected_acceptance=self.expected_acceptance)
        return d


# --- the round's steps ------------------------------------------------------------------
def distributions(logits: torch.Tensor, histories: list[list[int]] | None, settings: dict,
                  greedy: bool, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """Rows of logits (R, V) -> the probabilities (R, V) actually sampled from: the penalties
    (they see ``histories[r]``), the constraint mask ``allowed`` (R, V), the other rules of
    ``settings`` in their order, then softmax, or one-hot argmax when greedy."""
    history = None
    penalties = {k: v for k, v in settings.items() if k in PENALTIES}
    shaping = {k: v for k, v in settings.items() if k not in PENALTIES}
    if histories is not None and penalties:
        width = max(len(h) for h in histories)
        history = torch.full((len(histories), width), -1, dtype=torch.long, device=logits.device)
        for r, h in enumerate(histories):
            history[r, : len(h)] = torch.tensor(h, device=logits.device)
    shaped = rules.compose(logits.float(), history, **penalties)
    if allowed is not None:
        shaped = constrained.mask_logits(shaped, allowed)
    shaped = rules.compose(shaped, None, **shaping)
    if greedy:
        return F.one_hot(rules.greedy(shaped), logits.shape[-1]).float()
    return torch.softmax(shaped, dim=-1)


def draft_tokens(draft: Draft, seq: list[int], gamma: int, settings: dict, greedy: bool,
                 gen: torch.Generator, device, constraint=None,
                 state=None) -> tuple[list[int], torch.Tensor, list]:
    """Up to gamma proposals after seq, drawn one by one from the draft. Returns (ids,
    q (g, V), the constraint's states before each proposal and after the last: g + 1)."""
    proposals, qs, states = [], [], [state]
    for _ in range(gamma):
        if constraint is not None and not constraint.can_continue(states[-1]):
            break  # the constraint is complete: nothing may follow
        logits = draft.next_logits(seq + proposals)
        if logits is None:
            break
        allowed = None if constraint is None else constraint.allowed(states[-1])[None]
        q = distributions(logits.to(device)[None], [seq + proposals], settings, greedy, allowed)
        proposals.append(int(torch.multinomial(q, 1, generator=gen)))
        qs.append(q)
        if constraint is not None:
            states.append(constraint.advance(states[-1], proposals[-1]))
    V = qs[0].shape[-1] if qs else 0
    q = torch.cat(qs) if qs else torch.zeros(0, V, device=device)
    return proposals, q, states


@torch.no_grad()
def verify_pass(target: Transformer, seq: list[int], proposals: list[int]) -> torch.Tensor:
    """ONE target forward pass over seq[-1] and the proposals at slots len(seq)-1 onward
    (the cache holds seq[:-1]): logits (g + 1, V) for the token after each of them."""
    device = model_device(target)
    n = len(seq)
    idx = torch.tensor([[seq[-1], *proposals]], device=device)
    return target(idx, torch.arange(n - 1, n + len(proposals), device=device))[0]


def accept_reject(p: torch.Tensor, q: torch.Tensor, proposals: list[int],
                  gen: torch.Generator, verifier: str = "exact") -> tuple[int, int]:
    """The verification rule. p (g + 1, V) target and q (g, V) draft probabilities, g
    proposals -> (k accepted, the next token). ``verifier="no_residual"`` is a deliberate bug:
    it resamples from p instead of the residual, which skews the output towards the draft."""
    g = len(proposals)
    k = g
    if g:
        rows = torch.arange(g, device=p.device)
        d = torch.tensor(proposals, device=p.device)
        ratio = p[rows, d] / q[rows, d]                  # q(d) > 0: d was drawn from q
        u = torch.rand(g, generator=gen, device=p.device)
        rejected = (u >= ratio).nonzero()                # accept with probability min(1, p/q)
        k = int(rejected[0, 0]) if len(rejected) else g
    if k == g:
        nxt = p[g]                                       # all kept: a bonus token from p
    elif verifier == "exact":
        nxt = (p[k] - q[k]).clamp(min=0)                 # the mass where p exceeds q
        if not nxt.sum() > 0:                            # p == q up to rounding: residual is p
            nxt = p[k]
    else:
        nxt = p[k]                                       # the bug: no residual correction
    return k, int(torch.multinomial(nxt / nxt.sum(), 1, generator=gen))


def rollback(target: Transformer, draft: Draft, length: int) -> None:
    """Keep the first ``length`` slots of both caches; the rejected proposals are forgotten."""
    target.truncate_cache(length)
    draft.rollback(length)


@dataclass
class Round:
    """One draft-and-verify round: the proposals, how many survived, the token that follows."""

    proposals: list[int]
    accepted: int
    token: int                 # the residual draw at the first rejection, or the bonus token
    p: torch.Tensor            # (g + 1, V) target probabilities after the rules
    q: torch.Tensor            # (g, V) draft probabilities after the rules
    logits: torch.Tensor       # (g + 1, V) raw target logits
    draft_s: float
    target_s: float

    @property
    def new_tokens(self) -> list[int]:
        return self.proposals[: self.accepted] + [self.token]


def speculative_round(target: Transformer, draft: Draft, seq: list[int], gamma: int,
                      settings: dict, greedy: bool, gen: torch.Generator,
                      verifier: str = "exact", constraint=None, state=None) -> Round:
    """Draft up to gamma tokens after seq, verify them in one target pass, keep the accepted
    prefix and one more token, and roll both caches back to seq + the accepted proposals.
    The target's cache must hold seq[:-1]. A ``constraint`` in ``state`` masks p and q alike."""
    device = model_device(target)
    with Stopwatch(device) as sw_draft:
        proposals, q, states = draft_tokens(draft, seq, gamma, settings, greedy, gen, device,
                                            constraint, state)
    with Stopwatch(device) as sw_target:
        logits = verify_pass(target, seq, proposals)
        histories = [seq + proposals[:i] for i in range(len(proposals) + 1)]
        allowed = None
        if constraint is not None:  # a complete constraint's row is never used: leave it open
            allowed = torch.stack([constraint.allowed(st) if constraint.can_continue(st)
                                   else torch.ones(logits.shape[-1], dtype=torch.bool)
                                   for st in states])
        p = distributions(logits, histories, settings, greedy, allowed)
        k, token = accept_reject(p, q, proposals, gen, verifier)
        if k < len(proposals):  # with every proposal kept there is nothing to forget
            rollback(target, draft, len(seq) + k)
    return Round(proposals, k, token, p, q, logits, sw_draft.seconds, sw_target.seconds)


# --- the decoder ----------------------------------------------------------------------
@dataclass(frozen=True)
class _Setup:
    drafter: Draft
    ids: list[int]
    budget: int
    settings: dict
    greedy: bool
    device: torch.device


def _setup(target, draft, tok, prompt, max_new_tokens, gamma, temperature, verifier,
           **rule_settings) -> _Setup:
    """Check every argument once; wrap the draft."""
    if not isinstance(target, Transformer):
        raise TypeError(f"target must be a shakespeare_lm Transformer, got {type(target).__name__}")
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str (speculative decoding runs one text at a time), "
                        f"got {type(prompt).__name__}")
    _, encoded = _check_prompts(tok, prompt)
    _check_max_new_tokens(max_new_tokens)
    if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1:
        raise ValueError(f"gamma={gamma!r} is invalid: gamma (draft tokens per round) must be "
                         "an integer >= 1")
    if verifier not in VERIFIERS:
        raise ValueError(f"verifier={verifier!r} is invalid: verifier must be one of {VERIFIERS}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature >= 0:
        raise ValueError(f"temperature={temperature!r} is invalid: temperature must be a "
                         "number >= 0 (0 means greedy)")
    settings = rules.validate(temperature=temperature, **rule_settings)
    drafter = as_draft(draft, target)
    ids = encoded[0]
    block = min(target.config.block_size, getattr(drafter, "block_size", target.config.block_size))
    if len(ids) > block:
        raise ValueError(f"prompt has {len(ids)} characters but the context window is {block}; "
                         f"keep its last {block} characters (prompt[-{block}:]) or fewer")
    budget = min(max_new_tokens, block - len(ids))
    return _Setup(drafter, ids, budget, settings, temperature == 0, model_device(target))


def _prefill_both(target: Transformer, drafter: Draft, ids: list[int], max_len: int) -> None:
    """Fill the target's cache with ids[:-1] (every new token then comes from a round) and
    start the draft on ids."""
    device = model_device(target)
    target.setup_cache(1, max_len)
    if len(ids) > 1:
        prefill(target, torch.tensor([ids[:-1]], device=device), torch.arange(len(ids) - 1, device=device))
    drafter.start(ids, max_len)


@torch.no_grad()
def speculative_decode(target: Transformer, draft, tok, prompt: str, max_new_tokens: int,
                       gamma: int, *, temperature: float = 1.0, top_k: int | None = None,
                       top_p: float | None = None, min_p: float | None = None,
                       typical_p: float | None = None, epsilon: float | None = None,
                       eta: float | None = None, repetition_penalty: float | None = None,
                       frequency_penalty: float | None = None,
                       presence_penalty: float | None = None, stop: str | list[str] | None = None,
                       seed: int | None = None, verifier: str = "exact",
                       constraint=None) -> tuple[Generation, SpeculativeStats]:
    """Continue ``prompt`` (a str) with the target's distribution, drafting gamma tokens ahead.

    ``draft``: a Transformer (its own KV cache) or any ``Draft``. The decoding rules and a
    ``constraint`` (as in ``generate``) shape both p and q; temperature=0 is greedy and
    returns exactly the target's greedy text. ``verifier="no_residual"`` is a deliberately
    wrong rule, for tests. Leviathan et al. 2023, Chen et al. 2023.
    Returns (Generation, SpeculativeStats).
    """
    su = _setup(target, draft, tok, prompt, max_new_tokens, gamma, temperature, verifier,
                top_k=top_k, top_p=top_p, min_p=min_p, typical_p=typical_p, epsilon=epsilon,
                eta=eta, repetition_penalty=repetition_penalty,
                frequency_penalty=frequency_penalty, presence_penalty=presence_penalty)
    stops = _check_stop(tok, stop)
    max_stop = max((len(s) for s in stops), default=0)
    if constraint is not None:
        constrained.check_constraint(constraint, target.config.vocab_size)
    state = None if constraint is None else constraint.start()
    gen = make_generator(seed, su.device)
    stats = SpeculativeStats(su.drafter.name, gamma, verifier,
                             position_tested=[0] * gamma, position_accepted=[0] * gamma)
    seq = list(su.ids)
    out_ids: list[int] = []
    out_lp: list[float] = []
    text = ""
    reason = None if su.budget else ("max_tokens" if max_new_tokens == 0 else "context_window")
    prefill_s = ttft = 0.0
    try:
        with Stopwatch(su.device) as sw_total:
            with Stopwatch(su.device) as sw_prefill:
                _prefill_both(target, su.drafter, seq, len(seq) + su.budget)
            prefill_s = sw_prefill.seconds
            while reason is None:
                g = min(gamma, su.budget - len(out_ids) - 1)  # never draft past the budget
                if constraint is not None:
                    constrained.allowed_or_raise(constraint, state, text)
                rnd = speculative_round(target, su.drafter, seq, g, su.settings, su.greedy,
                                        gen, verifier, constraint, state)
                stats.record(rnd)
                new = rnd.new_tokens
                logp = torch.log_softmax(rnd.logits[: len(new)].float(), dim=-1)
                logp = logp.gather(-1, torch.tensor(new, device=su.device)[:, None])[:, 0].tolist()
                for t, lp in zip(new, logp):
                    seq.append(t)
                    out_ids.append(t)
                    out_lp.append(lp)
                    text += tok.chars[t]
                    if constraint is not None:
                        state = constraint.advance(state, t)
                    if stops and any(text[-max_stop:].endswith(s) for s in stops):
                        reason = "stop_sequence"
                    elif (constraint is not None and constraint.is_accepting(state)
                          and not constraint.can_continue(state)):
                        reason = "constraint"
                    elif len(out_ids) == su.budget:
                        reason = "max_tokens" if su.budget == max_new_tokens else "context_window"
                    if reason:
                        break
                if stats.target_passes == 1:  # the first round ends with the first token
                    ttft = prefill_s + stats.draft_s + stats.target_s
        total_s = sw_total.seconds
    finally:
        target.clear_cache()
        su.drafter.finish()
    timings = Timings(prefill_s, ttft, max(total_s - ttft, 0.0), len(out_ids), 1, str(su.device))
    return Generation(prompt, text, out_ids, out_lp, reason, timings), stats


@torch.no_grad()
def next_token_counts(target: Transformer, draft, tok, prompt: str, n_samples: int, gamma: int,
                      *, temperature: float = 1.0, seed: int | None = None,
                      verifier: str = "exact", **rule_settings) -> tuple[torch.Tensor, torch.Tensor]:
    """Run ``n_samples`` independent rounds from the same prompt and count the first token
    each emits; the caches are rolled back to the prompt after every round. Returns
    (counts (V,), the target's exact next-token probabilities (V,)) for a goodness-of-fit test."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples={n_samples!r} is invalid: it must be an integer >= 1")
    su = _setup(target, draft, tok, prompt, gamma + 1, gamma, temperature, verifier, **rule_settings)
    if su.budget < gamma + 1:
        raise ValueError(f"prompt of {len(su.ids)} characters leaves no room for {gamma} draft "
                         "tokens in the context window")
    gen = make_generator(seed, su.device)
    seq = list(su.ids)
    counts = torch.zeros(target.config.vocab_size, dtype=torch.long)
    try:
        _prefill_both(target, su.drafter, seq, len(seq) + gamma + 1)
        for _ in range(n_samples):
            rnd = speculative_round(target, su.drafter, seq, gamma, su.settings, su.greedy, gen,
                                    verifier)
            counts[rnd.new_tokens[0]] += 1
            rollback(target, su.drafter, len(seq) - 1)  # back to the prompt
        target.truncate_cache(0)
        logits = prefill(target, torch.tensor([seq], device=su.device),
                         torch.arange(len(seq), device=su.device))
        exact = distributions(logits, [seq], su.settings, su.greedy)[0]
    finally:
        target.clear_cache()
        su.drafter.finish()
    return counts, exact.cpu()


# --- predictions ----------------------------------------------------------------------
def expected_tokens_per_pass(alpha: float, gamma: int) -> float:
    """Tokens per target pass if each proposal is accepted independently with probability
    alpha: 1 + alpha + ... + alpha^gamma = (1 - alpha^(gamma+1)) / (1 - alpha)."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha={alpha!r} is invalid: an acceptance rate must be in [0, 1]")
    return gamma + 1.0 if alpha == 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)


def expected_accepted(alphas) -> float:
    """Expected accepted proposals before the first rejection when slot i is accepted with
    probability alphas[i] (given the earlier ones were): sum_i prod_{j <= i} alphas[j]."""
    total, survive = 0.0, 1.0
    for a in alphas:
        if not 0 <= a <= 1:
            raise ValueError(f"acceptance {a!r} in alphas is invalid: it must be in [0, 1]")
        survive *= a
        total += survive
    return total


def predicted_speedup(alpha: float, gamma: int, cost_ratio: float) -> float:
    """Wall-clock speedup over plain decoding when a draft step costs ``cost_ratio`` target
    steps and a (gamma + 1)-token verification pass costs one (Leviathan et al. 2023, eq. 1):
    tokens per pass / (gamma * cost_ratio + 1)."""
    if cost_ratio < 0:
        raise ValueError(f"cost_ratio={cost_ratio!r} is invalid: it must be >= 0")
    return expected_tokens_per_pass(alpha, gamma) / (gamma * cost_ratio + 1)


def chi_square_test(counts, probs, min_expected: float = 5.0) -> tuple[float, int, float]:
    """Pearson's goodness-of-fit test of observed ``counts`` (V,) against ``probs`` (V,).

    Categories expected fewer than ``min_expected`` times are pooled into one. Returns
    (statistic, degrees of freedom, p-value); the p-value is the chi-square upper tail.
    """
    counts = torch.as_tensor(counts, dtype=torch.float64).flatten()
    probs = torch.as_tensor(probs, dtype=torch.float64).flatten()
    n = counts.sum()
    expected = n * probs / probs.sum()
    small = expected < min_expected
    obs = torch.cat([counts[~small], counts[small].sum()[None]])
    exp = torch.cat([expected[~small], expected[small].sum()[None]])
    if exp[-1] == 0:
        if obs[-1] > 0:  # a category the target never produces was produced
            return math.inf, int(len(obs) - 2), 0.0
        obs, exp = obs[:-1], exp[:-1]
    stat = float(((obs - exp) ** 2 / exp).sum())
    dof = len(obs) - 1
    if dof < 1:
        raise ValueError("chi_square_test needs at least two categories with enough expected "
                         f"counts; got {len(obs)} (draw more samples)")
    p_value = float(torch.special.gammaincc(torch.tensor(dof / 2.0, dtype=torch.float64),
                                            torch.tensor(stat / 2.0, dtype=torch.float64)))
    return stat, dof, p_value


# --- benchmark ------------------------------------------------------------------------
BENCH_PROMPT = "KATHARINA:\nMoved! in good time: "


def bench_speculative(target: Transformer, draft_model: Transformer | None, tok, *,
                      prompt: str = BENCH_PROMPT, new_tokens: int = 200,
                      gammas: tuple[int, ...] = (1, 2, 4, 8), temperature: float = 1.0,
                      seed: int = 0, repeats: int = 3, ngram_orders: tuple[int, ...] = (3, 4),
                      drafts: dict | None = None) -> dict:
    """Wall-clock speedup of speculative decoding over plain KV-cache decoding
    (``generate``) of the same target at batch 1, for each draft and gamma.

    Drafts: n-grams of ``ngram_orders``, ``draft_model`` (skipped if None) and prompt lookup,
    or the dict ``drafts`` (name -> Draft or Transformer) instead. Each timing is the median
    of ``repeats`` runs after a warm-up (``timing.benchmark``); the draft's cost is included.
    Returns a dict: device, plain seconds and tokens/s, one row per (draft, gamma) with
    seconds, speedup, acceptance rate, tokens per pass (measured and i.i.d.-predicted), the
    measured draft cost ratio, and the best row.
    """
    from .generate import generate

    device = model_device(target)
    if drafts is None:
        drafts = {f"{n}-gram": NGramDraft(tok, order=n) for n in ngram_orders}
        if draft_model is not None:
            drafts["draft model"] = ModelDraft(draft_model, name="draft model")
        drafts["prompt lookup"] = PromptLookupDraft(tok.vocab_size)

    def plain():
        generate(target, tok, prompt, new_tokens, temperature=temperature, seed=seed)

    plain_s = benchmark(plain, device, warmup=1, repeats=repeats)
    rows = []
    for name, draft in drafts.items():
        for g in gammas:
            last = {}

            def run():
                last["stats"] = speculative_decode(target, draft, tok, prompt, new_tokens, g,
                                                   temperature=temperature, seed=seed)[1]

            seconds = benchmark(run, device, warmup=1, repeats=repeats)
            st = last["stats"]
            rows.append({"draft": name, "gamma": g, "seconds": seconds,
                         "speedup": plain_s / seconds,
                         "acceptance_rate": st.acceptance_rate,
                         "tokens_per_pass": st.tokens_per_pass,
                         "predicted_tokens_per_pass": expected_tokens_per_pass(st.acceptance_rate, g)
                         if st.proposed else float("nan"),
                         "cost_ratio": st.cost_ratio})
    return {"device": str(device), "prompt": prompt, "new_tokens": new_tokens,
            "temperature": temperature, "plain_s": plain_s,
            "plain_tokens_per_s": new_tokens / plain_s, "rows": rows,
            "best": max(rows, key=lambda r: r["speedup"])}
