"""Wall-clock speedup of speculative decoding over plain decoding, measured in one run.

Noise: plain decoding and every (draft, gamma) run round-robin (``timing.interleaved``), so
a burst of load on a shared machine falls on all of them. Each speedup is the median of the
per-repeat (paired) ratios, with their range beside it (``timing.paired_ratio``), and is
flagged as untrustworthy when that range exceeds ``SPREAD_LIMIT`` of the median. Each
timing is reported as a median with its own min-max spread as well.
"""

from __future__ import annotations

import statistics

from ..generate import generate
from ..model import Transformer
from ..timing import RATIO_SPREAD_LIMIT, interleaved, model_device, paired_ratio, relative_spread
from .algorithm import speculative_decode
from .drafts import ModelDraft, NGramDraft, PromptLookupDraft, as_draft
from .stats import expected_tokens_per_pass

BENCH_PROMPT = "KATHARINA:\nMoved! in good time: let him that moved you "
SPREAD_LIMIT = RATIO_SPREAD_LIMIT  # (max - min) / median of the paired ratios: above, noise
NGRAM_ORDERS = (4, 6)  # the bench's n-gram drafts: the classic 4-gram, and a 6-gram


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
                      gammas: tuple[int, ...] = (2, 4, 6, 8, 10), temperature: float = 1.0,
                      seed: int = 0, repeats: int = 7,
                      ngram_orders: tuple[int, ...] = NGRAM_ORDERS,
                      drafts: dict | None = None, heads=None,
                      keep_stats: bool = False) -> dict:
    """Wall-clock speedup of speculative decoding over plain KV-cache decoding
    (``generate``) of the same target at batch 1, for each draft and gamma, both sliding
    their context window (``context_overflow="slide"``) so any ``new_tokens`` is generated.

    Drafts: ``default_drafts(draft_model, tok, heads, ngram_orders)``, or the dict ``drafts``
    (name -> Draft, Transformer or DraftHeads). Timings: ``repeats`` interleaved runs after a
    warm-up; the draft's cost is included. Returns a dict: device, plain seconds (median and
    all) and tokens/s, one row per (draft, gamma) with the median seconds, the speedup (median
    of the paired per-repeat ratios) with their min-max, whether their spread allows
    trusting it, acceptance
    (overall and per draft position), tokens per pass (measured and i.i.d.-predicted), the
    measured draft cost ratio; and the best row (the fastest trustworthy one, or the
    fastest of all when none is). ``keep_stats=True`` adds "stats":
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
           "best": max([r for r in rows if r["trustworthy"]] or rows,
                       key=lambda r: r["speedup"])}
    if keep_stats:
        out["stats"] = {key: first[key].stats for key in seconds}
    return out


def _row(name: str, gamma: int, plain: list[float], spec: list[float], st) -> dict:
    """One (draft, gamma) row of ``bench_speculative``."""
    r = paired_ratio(plain, spec)
    return {"draft": name, "gamma": gamma, "seconds": statistics.median(spec),
            "all_seconds": spec, "speedup": r["ratio"],
            "speedup_min": r["ratio_min"], "speedup_max": r["ratio_max"],
            "spread": r["ratio_spread"], "timing_spread": relative_spread(spec),
            "trustworthy": r["trustworthy"],
            "acceptance_rate": st.acceptance_rate,
            "per_position_acceptance": st.per_position_acceptance,
            "tokens_per_pass": st.tokens_per_pass,
            "predicted_tokens_per_pass": expected_tokens_per_pass(st.acceptance_rate, gamma)
            if st.proposed else float("nan"),
            "cost_ratio": st.cost_ratio}
