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
only how many tokens one target pass yields. p and q are both shaped by the one
``shakespeare_lm.decoding.sampler.Sampler``, so they see the same rules, penalties and constraint.
Greedy decoding (temperature 0) is the same rule with one-hot p and q: a proposal survives
when it is the target's argmax.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..decoding.checks import (as_prompt_list, check_context_overflow, check_count,
                               check_max_new_tokens, encode_prompts, one_or_list)
from ..decoding.context_window import Window, WindowedRow, WindowPolicy, decode_in_windows
from ..decoding.generate import Generation, Timings, prefill
from ..decoding.sampler import FREE, DecodingConfig, Sampler, history_tensor
from ..decoding.stopping import StopCheck
from ..model import Transformer
from ..timing import Stopwatch, model_device
from .drafts import Draft, as_draft, draw
from .stats import SpeculativeStats

VERIFIERS = ("exact", "no_residual")


# --- the round's steps ------------------------------------------------------------------
def uniforms(n: int, gen: torch.Generator) -> list[float]:
    """n independent uniforms in [0, 1) from ``gen``, in one call."""
    return torch.rand(n, generator=gen, device=gen.device).tolist() if n else []


class DraftRows:
    """The draft's distributions q (g, V) at its g proposals, worked out only when read.

    A draft that can draw without its whole distribution (``NGramDraft.sample_chain``)
    proposes with the drawn ids' probabilities alone (``drawn``), which is all the
    acceptance test needs. A row is computed for the residual at a rejection (``values``)
    and, for the statistics, when they are asked for (``rows[:n]``)."""

    def __init__(self, draft: Draft, seq: list[int], proposals: list[int], drawn: list[float],
                 device):
        self.draft, self.seq, self.proposals, self.drawn = draft, list(seq), proposals, drawn
        self.device = device

    def __len__(self) -> int:
        return len(self.drawn)

    def values(self, i: int) -> np.ndarray:
        """q (V,) before proposal i, as the draft computes it (float64)."""
        return self.draft.probs(self.seq + self.proposals[:i])

    def row(self, i: int) -> torch.Tensor:
        """q (V,) before proposal i, in float32 like the target's p."""
        return torch.from_numpy(self.values(i)).to(self.device, torch.float32)

    def __getitem__(self, rows: slice) -> torch.Tensor:
        return torch.stack([self.row(i) for i in range(len(self))[rows]])


def draft_tokens(draft: Draft, seq: list[int], gamma: int, sampler: Sampler,
                 gen: torch.Generator, device,
                 state=FREE) -> tuple[list[int], torch.Tensor | DraftRows, list]:
    """Up to gamma proposals after seq, drawn one by one from the draft's distribution q
    shaped by ``sampler``. Returns (ids, q (g, V), the constraint's states before each
    proposal and after the last: g + 1). Drafting stops early when the draft has nothing
    to propose, or proposes only characters the constraint forbids. When the sampler leaves
    distributions as they are and the draft can ``sample``, q is the ``DraftRows`` of the
    proposals: the same q, its rows worked out only where they are read."""
    c = sampler.constraint if state is not FREE else None
    u = uniforms(gamma, gen)
    if c is None and sampler.is_softmax and getattr(draft, "can_sample", False):
        proposals, drawn = draft.sample_chain(seq, u)
        return proposals, DraftRows(draft, seq, proposals, drawn, device), [state] * (gamma + 1)
    proposals, qs, states = [], [], [state]
    for i in range(gamma):
        if c is not None and not c.can_continue(states[-1]):
            break  # the constraint is complete: nothing may follow
        logits = draft.next_logits(seq + proposals)
        if logits is None:
            break
        history = history_tensor([seq + proposals], device) if sampler.needs_history else None
        allowed = None if c is None else sampler.allowed([states[-1]])
        shaped = sampler.shape(logits.to(device)[None], history, allowed)
        if allowed is not None and not bool(torch.isfinite(shaped).any()):
            break  # every character the draft would propose is forbidden: no proposal
        q = sampler.distribution(shaped)
        proposals.append(draw(q[0].tolist(), u[i]))
        qs.append(q)
        if c is not None:
            states.append(c.advance(states[-1], proposals[-1]))
    V = qs[0].shape[-1] if qs else 0
    q = torch.cat(qs) if qs else torch.zeros(0, V, device=device)
    return proposals, q, states


@torch.no_grad()
def verify_pass(target: Transformer, seq: list[int], proposals: list[int],
                return_hidden: bool = False):
    """ONE target forward pass over seq[-1] and the proposals at slots len(seq)-1 onward
    (the cache holds seq[:-1]): logits (g + 1, V) for the token after each of them, and
    with ``return_hidden`` the last hidden states (g + 1, C) as well."""
    device = model_device(target)
    n = len(seq)
    idx = torch.tensor([[seq[-1], *proposals]], device=device)
    out = target(idx, torch.arange(n - 1, n + len(proposals), device=device), return_hidden)
    return (out[0][0], out[1][0]) if return_hidden else out[0]


def target_distributions(sampler: Sampler, logits: torch.Tensor, seq: list[int],
                         proposals: list[int], states: list) -> torch.Tensor:
    """p (g + 1, V): the target's logits after seq + proposals[:i] shaped by ``sampler``."""
    history = None
    if sampler.needs_history:
        history = history_tensor([seq + proposals[:i] for i in range(len(proposals) + 1)],
                                 logits.device)
    allowed = None
    if sampler.constraint is not None and states[0] is not FREE:
        c = sampler.constraint  # a complete constraint's row is never used: leave it open
        allowed = sampler.allowed([st if c.can_continue(st) else FREE for st in states])
    return sampler.probs(logits, history, allowed)


def accept_reject(p: torch.Tensor, q: torch.Tensor | DraftRows, proposals: list[int],
                  gen: torch.Generator, verifier: str = "exact") -> tuple[int, int]:
    """The verification rule. p (g + 1, V) target and q (g, V) draft probabilities, g
    proposals -> (k accepted, the next token). ``verifier="no_residual"`` is a deliberate bug:
    it resamples from p instead of the residual, which skews the output towards the draft."""
    g = len(proposals)
    u = uniforms(g + 1, gen)  # one per proposal, and one for the token that ends the round
    if isinstance(q, DraftRows):
        return _accept_reject_drawn(p.tolist(), q, proposals, u, verifier)
    k = g
    if g:
        d = torch.tensor(proposals, device=p.device)[:, None]
        ratio = (p[:g].gather(1, d) / q.gather(1, d))[:, 0].tolist()  # q(d) > 0: d came from q
        # accept with probability min(1, p/q): the first i with u_i >= ratio_i is rejected
        k = next((i for i in range(g) if u[i] >= ratio[i]), g)
    if k == g:
        nxt = p[g]                                       # all kept: a bonus token from p
    elif verifier == "exact":
        nxt = (p[k] - q[k]).clamp(min=0)                 # the mass where p exceeds q
        if not nxt.sum() > 0:                            # p == q up to rounding: residual is p
            nxt = p[k]
    else:
        nxt = p[k]                                       # the bug: no residual correction
    return k, draw(nxt.tolist(), u[g])


def _accept_reject_drawn(p: list[list[float]], q: DraftRows, proposals: list[int],
                         u: list[float], verifier: str) -> tuple[int, int]:
    """``accept_reject`` for a draft that gave only its proposals' probabilities: the same
    rule on p as Python lists, with q's row worked out only at the rejection, if any."""
    g = len(proposals)
    ratio = [row[x] / qx for row, x, qx in zip(p, proposals, q.drawn)]
    k = next((i for i in range(g) if u[i] >= ratio[i]), g)
    nxt = p[k]                   # all kept: the bonus token; or the deliberate bug's resample
    if k < g and verifier == "exact":
        residual = [max(a - b, 0.0) for a, b in zip(p[k], q.values(k))]
        nxt = residual if sum(residual) > 0 else nxt     # p == q up to rounding: residual is p
    return k, draw(nxt, u[g])


def rollback(target: Transformer, draft: Draft, length: int) -> None:
    """Keep the first ``length`` slots of both caches; the rejected proposals are forgotten."""
    target.active_cache.truncate(length)
    draft.rollback(length)


@dataclass
class Round:
    """One draft-and-verify round: the proposals, how many survived, the token that follows."""

    proposals: list[int]
    accepted: int
    token: int                 # the residual draw at the first rejection, or the bonus token
    p: torch.Tensor            # (g + 1, V) target probabilities after the rules
    q: torch.Tensor | DraftRows  # (g, V) draft probabilities after the rules
    logits: torch.Tensor       # (g + 1, V) raw target logits
    draft_s: float
    target_s: float

    @property
    def new_tokens(self) -> list[int]:
        return self.proposals[: self.accepted] + [self.token]


def speculative_round(target: Transformer, draft: Draft, seq: list[int], gamma: int,
                      sampler: Sampler, gen: torch.Generator, verifier: str = "exact",
                      state=FREE) -> Round:
    """Draft up to gamma tokens after seq, verify them in one target pass, keep the accepted
    prefix and one more token, and roll both caches back to seq + the accepted proposals.
    The target's cache must hold seq[:-1]. The sampler's constraint, in ``state``, masks p
    and q alike."""
    device = model_device(target)
    with Stopwatch(device) as sw_draft:
        proposals, q, states = draft_tokens(draft, seq, gamma, sampler, gen, device, state)
    reads_hidden = getattr(draft, "reads_target_hidden", False)
    with Stopwatch(device) as sw_target:
        logits = verify_pass(target, seq, proposals, reads_hidden)
        if reads_hidden:
            logits, hidden = logits
        p = target_distributions(sampler, logits, seq, proposals, states)
        k, token = accept_reject(p, q, proposals, gen, verifier)
        if k < len(proposals):  # with every proposal kept there is nothing to forget
            rollback(target, draft, len(seq) + k)
        if reads_hidden:  # the state after seq + k proposals, which predicted ``token``
            draft.observe(len(seq) + k, hidden[k])
    return Round(proposals, k, token, p, q, logits, sw_draft.seconds, sw_target.seconds)


# --- the decoder ----------------------------------------------------------------------
@dataclass(frozen=True)
class SpeculativeSetup:
    """Everything ``speculative_decode`` checked once: the draft, ids, budget, sampler."""

    drafter: Draft
    ids: list[int]
    budget: int
    sampler: Sampler
    device: torch.device
    block: int = 0             # the context window of target and draft together
    slide: bool = False        # go on past the window (context_overflow="slide")

    @property
    def policy(self) -> WindowPolicy:
        """The context-window policy of ``shakespeare_lm.decoding.context_window``."""
        return WindowPolicy(self.block, self.slide)


def setup(target, draft, tok, prompt: str, max_new_tokens: int, gamma: int, verifier: str,
          config: DecodingConfig, constraint=None,
          context_overflow: str = "stop") -> SpeculativeSetup:
    """Check every argument once; wrap the draft."""
    if not isinstance(target, Transformer):
        raise TypeError(f"target must be a shakespeare_lm Transformer, got {type(target).__name__}")
    ids = encode_prompts(tok, prompt)[0]
    check_max_new_tokens(max_new_tokens)
    check_count("gamma", gamma, 1, hint=" (draft tokens per round)")
    if verifier not in VERIFIERS:
        raise ValueError(f"verifier={verifier!r} is invalid: verifier must be one of {VERIFIERS}")
    slide = check_context_overflow(context_overflow)
    config.check_stop_characters(tok)
    if config.mirostat:
        raise ValueError(f"speculative decoding cannot use mirostat_tau={config.mirostat_tau!r}: "
                         "mirostat's target moves after every draw by the surprise of the "
                         "token drawn, so the distribution at a drafted position depends on "
                         "draws not yet made, and a pass that verifies several positions "
                         "cannot know it; use generate, or a stateless rule such as min_p or "
                         "top_n_sigma")
    sampler = Sampler(config, constraint, target.config.vocab_size, tok)
    drafter = as_draft(draft, target)
    block = min(target.config.block_size, getattr(drafter, "block_size", target.config.block_size))
    if len(ids) > block:
        raise ValueError(f"prompt has {len(ids)} characters but the context window is {block}; "
                         f"keep its last {block} characters (prompt[-{block}:]) or fewer")
    budget = max_new_tokens if slide else min(max_new_tokens, block - len(ids))
    return SpeculativeSetup(drafter, ids, budget, sampler, model_device(target), block, slide)


def prefill_both(target: Transformer, drafter: Draft, ids: list[int], max_len: int):
    """Set up the target's cache, fill it with ids[:-1] (every new token then comes from a
    round) and start the draft on ids. Returns the target's cache handle."""
    device = model_device(target)
    cache = target.cache(1, max_len)
    try:
        drafter.start(ids, max_len)
        if len(ids) > 1:
            logits, hidden = target(torch.tensor([ids[:-1]], device=device),
                                    torch.arange(len(ids) - 1, device=device), True)
            if getattr(drafter, "reads_target_hidden", False):
                drafter.observe(len(ids) - 1, hidden[0, -1])
    except BaseException:
        cache.close()
        raise
    return cache


@dataclass
class SpeculativeGeneration(Generation):
    """A ``Generation`` by speculative decoding, with what the rounds did (``stats``)."""

    stats: SpeculativeStats | None = None


@dataclass
class _Progress(WindowedRow):
    """The text of one speculative decode so far, and why it ended."""

    prompt: list[int]
    max_new: int
    seq: list[int] = field(default_factory=list)   # the current window's context and text
    new: list[int] = field(default_factory=list)   # the new ids
    logprobs: list[float] = field(default_factory=list)
    text: str = ""
    reason: str | None = None
    state: object = FREE
    window_end: int = 0        # len(new) at which the current context window is full

    def start_window(self, w: Window) -> int:
        """Set seq to the context of window ``w`` and note where it ends; returns the KV
        cache slots the window needs."""
        self.seq = self.context_of(w)
        self.window_end = len(self.new) + w.budget
        return len(self.seq) + w.budget


def _emit(run: _Progress, rnd: Round, tok, stop: StopCheck) -> None:
    """Append a round's new tokens until one ends the text or fills its window."""
    new = rnd.new_tokens
    logp = torch.log_softmax(rnd.logits[: len(new)].float(), dim=-1)
    logp = logp.gather(-1, torch.tensor(new, device=logp.device)[:, None])[:, 0].tolist()
    for t, lp in zip(new, logp):
        run.seq.append(t)
        run.new.append(t)
        run.logprobs.append(lp)
        run.text += tok.chars[t]
        if stop.constraint is not None:
            run.state = stop.constraint.advance(run.state, t)
        run.reason = stop.reason(run.text, len(run.new), run.state,
                                 run.window_end - len(run.new))
        if run.reason:
            return


class _Decode:
    """One text's speculative decode: the rounds of each context window, the statistics
    and the timings, window by window (``run_window`` is ``decode_in_windows``' step)."""

    def __init__(self, target, tok, su: SpeculativeSetup, max_new_tokens: int, gamma: int,
                 verifier: str, gen: torch.Generator):
        self.target, self.tok, self.su = target, tok, su
        self.gamma, self.verifier, self.gen = gamma, verifier, gen
        self.stats = SpeculativeStats(su.drafter.name, gamma, verifier,
                                      position_tested=[0] * gamma, position_accepted=[0] * gamma)
        c = su.sampler.constraint
        self.run = _Progress(list(su.ids), max_new_tokens, state=FREE if c is None else c.start())
        self.stop = StopCheck.for_sampler(su.sampler, max_new_tokens)
        self.prefill_s = self.ttft = 0.0

    def run_window(self, windows: list[Window | None]) -> None:
        """Prefill both caches with the window's context, then rounds until the text ends or
        the window is full."""
        su, run = self.su, self.run
        slots = run.start_window(windows[0])
        try:
            with Stopwatch(su.device) as sw_prefill:
                prefill_both(self.target, su.drafter, run.seq, slots)
            self.prefill_s = self.prefill_s or sw_prefill.seconds  # the first window's
            first_round_s = self._rounds()
        finally:
            if self.target.active_cache is not None:
                self.target.active_cache.close()
            su.drafter.finish()
        if not self.ttft and self.stats.target_passes:  # the first round made the first token
            self.ttft = self.prefill_s + first_round_s

    def _rounds(self) -> float:
        """Rounds on the caches of one window; returns the seconds of its first round."""
        su, run, first_s = self.su, self.run, None
        while run.reason is None:
            g = min(self.gamma, run.window_end - len(run.new) - 1)  # never draft past the window
            if su.sampler.constraint is not None:
                su.sampler.allowed([run.state], [run.text])  # raises if nothing is allowed
            rnd = speculative_round(self.target, su.drafter, run.seq, g, su.sampler, self.gen,
                                    self.verifier, run.state)
            self.stats.record(rnd)
            first_s = rnd.draft_s + rnd.target_s if first_s is None else first_s
            _emit(run, rnd, self.tok, self.stop)
        return first_s or 0.0


def _decode_one(target, tok, su: SpeculativeSetup, prompt: str, max_new_tokens: int,
                gamma: int, verifier: str, gen: torch.Generator) -> SpeculativeGeneration:
    """Rounds, window after window, until the text ends; timings and statistics."""
    d = _Decode(target, tok, su, max_new_tokens, gamma, verifier, gen)
    with Stopwatch(su.device) as sw_total:
        decode_in_windows(su.policy, [d.run], d.run_window)
    run = d.run
    timings = Timings(d.prefill_s, d.ttft, max(sw_total.seconds - d.ttft, 0.0),
                      len(run.new), 1, str(su.device))
    return SpeculativeGeneration(prompt, run.text, run.new, run.logprobs, run.reason, timings,
                                 d.stats)


@torch.no_grad()
def speculative_decode(target: Transformer, draft, tok, prompt: str | list[str],
                       max_new_tokens: int, gamma: int, *, constraint=None,
                       verifier: str = "exact", context_overflow: str = "stop",
                       config: DecodingConfig | None = None,
                       **settings) -> SpeculativeGeneration | list[SpeculativeGeneration]:
    """Continue ``prompt`` with the target's distribution, drafting gamma tokens ahead.

    ``draft``: a Transformer (its own KV cache) or any ``Draft``. The decoding settings (a
    ``DecodingConfig`` or its fields as keywords, as in ``generate``) and a ``constraint``
    shape both p and q through one ``Sampler``; temperature=0 is greedy and returns exactly
    the target's greedy text. ``verifier="no_residual"`` is a deliberately wrong rule, for
    tests. ``context_overflow="slide"`` goes on past the context window in the windows of
    ``shakespeare_lm.decoding.context_window``, as ``generate`` does. A list of prompts is
    decoded one text after another (one generator). Returns a ``SpeculativeGeneration`` (a
    list for a list of prompts) whose ``.stats`` say what the rounds did. Leviathan et al.
    2023, Chen et al. 2023.
    """
    cfg = DecodingConfig.from_settings(config, **settings)
    prompts = as_prompt_list(prompt)
    setups = [setup(target, draft, tok, p, max_new_tokens, gamma, verifier, cfg, constraint,
                    context_overflow) for p in prompts]
    gen = cfg.generator(model_device(target))
    out = [_decode_one(target, tok, su, p, max_new_tokens, gamma, verifier, gen)
           for su, p in zip(setups, prompts)]
    return one_or_list(prompt, out)


@torch.no_grad()
def next_token_counts(target: Transformer, draft, tok, prompt: str, n_samples: int, gamma: int,
                      *, verifier: str = "exact", config: DecodingConfig | None = None,
                      **settings) -> tuple[torch.Tensor, torch.Tensor]:
    """Run ``n_samples`` independent rounds from the same prompt and count the first token
    each emits; the caches are rolled back to the prompt after every round. Returns
    (counts (V,), the target's exact next-token probabilities (V,)) for a goodness-of-fit test."""
    check_count("n_samples", n_samples, 1)
    cfg = DecodingConfig.from_settings(config, **settings)
    su = setup(target, draft, tok, prompt, gamma + 1, gamma, verifier, cfg)
    if su.budget < gamma + 1:
        raise ValueError(f"prompt of {len(su.ids)} characters leaves no room for {gamma} draft "
                         "tokens in the context window")
    gen = cfg.generator(su.device)
    seq = list(su.ids)
    counts = torch.zeros(target.config.vocab_size, dtype=torch.long)
    try:
        with prefill_both(target, su.drafter, seq, len(seq) + gamma + 1) as cache:
            for _ in range(n_samples):
                rnd = speculative_round(target, su.drafter, seq, gamma, su.sampler, gen, verifier)
                counts[rnd.new_tokens[0]] += 1
                rollback(target, su.drafter, len(seq) - 1)  # back to the prompt
            cache.truncate(0)
            logits = prefill(target, torch.tensor([seq], device=su.device),
                             torch.arange(len(seq), device=su.device))
            exact = su.sampler.probs(logits, history_tensor([seq], su.device)
                                     if su.sampler.needs_history else None)[0]
    finally:
        su.drafter.finish()
    return counts, exact.cpu()
