"""Wall-clock speedup of speculative decoding over plain decoding, measured in one run.

Noise: plain decoding and every (draft, gamma) run round-robin (``timing.interleaved``), so
a burst of load on a shared machine falls on all of them; each speedup is the ratio of
medians, with the range of the per-repeat (paired) ratios beside it, and is flagged when a
timing's spread exceeds ``SPREAD_LIMIT`` of its median.
"""

from __future__ import annotations

import statistics

from ..generate import generate
from ..model import Transformer
from ..timing import interleaved, model_device, relative_spread
from .algorithm import speculative_decode
from .drafts import ModelDraft, NGramDraft, PromptLookupDraft, as_draft
from .stats import expected_tokens_per_pass

BENCH_PROMPT = "KATHARINA:\nMoved! in good time: let him that moved you "
SPREAD_LIMIT = 0.3  # (max - min) / median above which a ratio is not to be trusted


def default_drafts(draft_model: Transformer | None, tok, heads=None,
                   ngram_orders: tuple[int, ...] = (4,)) -> dict:
    """name -> draft: n-grams of ``ngram_orders``, the draft model, prompt lookup, heads."""
    drafts = {f"{n}-gram": NGramDraft(tok, order=n) for n in ngram_orders}
    if draft_model is not None:
        drafts["draft model"] = ModelDraft(draft_model, name="draft model")
    drafts["prompt lookup"] = PromptLookupDraft(tok.vocab_size)
    if heads is not None:
        drafts["heads"] = heads
    return drafts


def bench_speculative(target: Transformer, draft_model: Transformer | None, tok, *,
                      prompt: str = BENCH_PROMPT, new_tokens: int = 400,
                      gammas: tuple[int, ...] = (2, 4, 6), temperature: float = 1.0,
                      seed: int = 0, repeats: int = 5, ngram_orders: tuple[int, ...] = (4,),
                      drafts: dict | None = None, heads=None,
                      keep_stats: bool = False) -> dict:
    """Wall-clock speedup of speculative decoding over plain KV-cache decoding
    (``generate``) of the same target at batch 1, for each draft and gamma, both sliding
    their context window (``context_overflow="slide"``) so any ``new_tokens`` is generated.

    Drafts: ``default_drafts(draft_model, tok, heads, ngram_orders)``, or the dict ``drafts``
    (name -> Draft, Transformer or DraftHeads). Timings: ``repeats`` interleaved runs after a
    warm-up; the draft's cost is included. Returns a dict: device, plain seconds (median and
    all) and tokens/s, one row per (draft, gamma) with the median seconds, the speedup (ratio
    of medians) and its paired min-max, whether the spread allows trusting it, acceptance
    (overall and per draft position), tokens per pass (measured and i.i.d.-predicted), the
    measured draft cost ratio; and the best row. ``keep_stats=True`` adds "stats":
    (draft, gamma) -> the ``SpeculativeStats`` of the warm-up run (every proposal's overlap
    and outcome; the timed runs repeat it exactly), which JSON cannot hold.
    """
    device = model_device(target)
    if drafts is None:
        drafts = default_drafts(draft_model, tok, heads, ngram_orders)
    drafts = {name: as_draft(d, target) for name, d in drafts.items()}
    kw = dict(temperature=temperature, seed=seed, context_overflow="slide")
    runs = {"plain": lambda: generate(target, tok, prompt, new_tokens, **kw)}
    for name, d in drafts.items():
        for g in gammas:
            runs[name, g] = (lambda d=d, g=g:
                             speculative_decode(target, d, tok, prompt, new_tokens, g, **kw))
    seconds, first = interleaved(runs, repeats, device)
    plain = seconds.pop("plain")
    rows = [_row(name, g, plain, seconds[name, g], first[name, g].stats)
            for name, g in seconds]
    out = {"device": str(device), "prompt": prompt, "new_tokens": new_tokens,
           "temperature": temperature, "repeats": repeats,
           "plain_s": statistics.median(plain), "plain_seconds": plain,
           "plain_spread": relative_spread(plain),
           "plain_tokens_per_s": new_tokens / statistics.median(plain), "rows": rows,
           "best": max(rows, key=lambda r: r["speedup"])}
    if keep_stats:
        out["stats"] = {key: first[key].stats for key in seconds}
    return out


def _row(name: str, gamma: int, plain: list[float], spec: list[float], st) -> dict:
    """One (draft, gamma) row of ``bench_speculative``."""
    paired = [p / s for p, s in zip(plain, spec)]
    spread = max(relative_spread(plain), relative_spread(spec))
    return {"draft": name, "gamma": gamma, "seconds": statistics.median(spec),
            "all_seconds": spec, "speedup": statistics.median(plain) / statistics.median(spec),
            "speedup_min": min(paired), "speedup_max": max(paired), "spread": spread,
            "trustworthy": spread <= SPREAD_LIMIT,
            "acceptance_rate": st.acceptance_rate,
            "per_position_acceptance": st.per_position_acceptance,
            "tokens_per_pass": st.tokens_per_pass,
            "predicted_tokens_per_pass": expected_tokens_per_pass(st.acceptance_rate, gamma)
            if st.proposed else float("nan"),
            "cost_ratio": st.cost_ratio}
