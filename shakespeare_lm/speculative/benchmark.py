"""Wall-clock speedup of speculative decoding over plain decoding, measured in one run.

Noise: every (draft, gamma) runs right beside its own run of plain decoding, the pairs in a
rotated round-robin order (``timing.against_baseline``), so a burst of load on a shared
machine falls on both runs of a pair. Each speedup is the median of the per-repeat (paired)
ratios, with their range and the 95% interval of the median beside it
(``timing.paired_ratio``), and is flagged as untrustworthy when that interval is wider than
``SPREAD_LIMIT`` of the median. Each timing is reported as a median with its own min-max
spread as well.
"""

from __future__ import annotations

import itertools
import statistics

from ..decoding.generate import generate
from ..model import Transformer
from ..timing import (RATIO_SPREAD_LIMIT, against_baseline, interleaved, model_device, paired_ratio,
                      relative_spread)
from .algorithm import speculative_decode
from .drafts import ModelDraft, NGramDraft, PromptLookupDraft, as_draft
from .stats import expected_tokens_per_pass

BENCH_PROMPT = "KATHARINA:\nMoved! in good time: let him that moved you "
SPREAD_LIMIT = RATIO_SPREAD_LIMIT  # the median's 95% interval / median: above, noise
NGRAM_ORDERS = (4, 6)  # the bench's n-gram drafts: the classic 4-gram, and a 6-gram


def default_drafts(draft_model: Transformer | None, tok, heads=None,
                   ngram_orders: tuple[int, ...] = (4,), eagle=None) -> dict:
    """name -> draft: n-grams of ``ngram_orders``, the draft model, prompt lookup, Medusa
    heads, an EAGLE feature head (the last two when given)."""
    drafts = {f"{n}-gram": NGramDraft(tok, order=n) for n in ngram_orders}
    if draft_model is not None:
        drafts["draft model"] = ModelDraft(draft_model, name="draft model")
    drafts["prompt lookup"] = PromptLookupDraft(tok.vocab_size)
    if heads is not None:
        drafts["heads"] = heads
    if eagle is not None:
        drafts["EAGLE head"] = eagle
    return drafts


def bench_speculative(target: Transformer, draft_model: Transformer | None, tok, *,
                      prompt: str = BENCH_PROMPT, new_tokens: int = 400,
                      gammas: tuple[int, ...] = (2, 4, 6, 8, 10), temperature: float = 1.0,
                      seed: int = 0, repeats: int = 7,
                      ngram_orders: tuple[int, ...] = NGRAM_ORDERS,
                      drafts: dict | None = None, heads=None, eagle=None,
                      keep_stats: bool = False, confirm: int = 0,
                      confirm_repeats: int = 15, paired: bool = True,
                      fresh: bool = True) -> dict:
    """Wall-clock speedup of speculative decoding over plain decoding (``generate``) of the
    same target at batch 1, per draft and gamma, both sliding their context window.

    Drafts: ``default_drafts(...)`` or the dict ``drafts`` (name -> Draft, Transformer,
    DraftHeads or FeatureHead); a gamma above a draft's ``max_gamma`` (the heads' count) is
    capped at it.
    Timings, after a warm-up, the draft's cost included: ``repeats`` runs of each setting,
    each beside its own plain run (``timing.against_baseline``), or with ``paired=False``
    one plain run per round-robin pass shared by its settings (``timing.interleaved``: half
    the runs for a long sweep). ``confirm=n`` times the n fastest settings again with
    ``confirm_repeats`` pairs each and reports those (``"confirmed"``): more repeats, a
    narrower interval for the headline. Returns device, plain seconds and tokens/s, a row
    per setting (median seconds; speedup = median of the paired ratios, their min-max and
    the median's 95% interval, ``timing.paired_ratio``; whether to trust it; acceptance
    overall and per slot; tokens per pass measured and predicted; the draft cost ratio;
    the characters a round and a round's seconds over a plain character's, from the timed
    runs: ``chars_per_round`` and ``round_in_chars``),
    and the best row (the fastest trustworthy one, else the fastest). ``keep_stats=True``
    adds "stats": (draft, gamma) -> the warm-up's ``SpeculativeStats``.

    Unseen text (``fresh=True``): the first run (a setting's warm-up, which the stats come
    from) uses ``seed``; every later run, plain or speculative, takes the next seed, and a
    draft with ``forget()`` (the n-grams) drops what earlier runs taught it before each run,
    so every timed run writes text nothing has seen. ``fresh=False`` replays ``seed`` with
    whatever the draft remembers: the figure for a text generated twice.
    """
    device = model_device(target)
    if drafts is None:
        drafts = default_drafts(draft_model, tok, heads, ngram_orders, eagle)
    drafts = {name: as_draft(d, target) for name, d in drafts.items()}
    kw = dict(temperature=temperature, context_overflow="slide")
    seeds, rounds = _Seeds(seed, fresh), {}
    runs = _settings(target, tok, prompt, new_tokens, drafts, gammas, seeds, rounds, **kw)
    baseline = lambda: generate(target, tok, prompt, new_tokens, seed=seeds("plain"), **kw)
    base, seconds, first, plain = _timed(baseline, runs, repeats, device, paired)
    rows = [_row(name, g, base[name, g], seconds[name, g], first[name, g].stats, rounds[name, g])
            for name, g in seconds]
    if confirm:
        plain += _confirm(rows, runs, baseline, first, confirm, confirm_repeats, device, rounds)
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


def _settings(target, tok, prompt: str, new_tokens: int, drafts: dict, gammas, seeds: _Seeds,
              rounds: dict, **kw) -> dict:
    """(draft name, gamma) -> a speculative run of that setting with the next seed; with
    fresh seeds, a draft that can ``forget()`` forgets what earlier runs taught it first.
    Each run appends (target passes, characters made) to ``rounds[name, gamma]``."""
    def spec(name, d, g):
        if seeds.fresh and hasattr(d, "forget"):
            d.forget()
        out = speculative_decode(target, d, tok, prompt, new_tokens, g,
                                 seed=seeds((name, g)), **kw)
        rounds.setdefault((name, g), []).append((out.stats.target_passes, len(out.ids)))
        return out

    runs = {}
    for name, d in drafts.items():
        cap = getattr(d, "max_gamma", None)  # draft heads propose one character per head
        for g in gammas if cap is None else sorted({min(g, cap) for g in gammas}):
            runs[name, g] = lambda name=name, d=d, g=g: spec(name, d, g)
    return runs


def _confirm(rows: list[dict], runs: dict, baseline, first: dict, n: int, repeats: int,
             device, rounds: dict) -> list[float]:
    """Time the ``n`` fastest settings of ``rows`` again with ``repeats`` pairs each and put
    those figures in their rows (marked "confirmed"); return the new plain timings."""
    top = sorted(rows, key=lambda r: -r["speedup"])[:n]
    again = {(r["draft"], r["gamma"]): runs[r["draft"], r["gamma"]] for r in top}
    base, seconds, _ = against_baseline(baseline, again, repeats, device)
    plain = []
    for i, r in enumerate(rows):
        key = (r["draft"], r["gamma"])
        if key in again:
            rows[i] = {**_row(*key, base[key], seconds[key], first[key].stats, rounds[key]),
                       "confirmed": True}
            plain += base[key]
    return plain


class _Seeds:
    """The seed of each run: ``seed`` for a setting's first run (its warm-up), and then,
    when ``fresh``, a new seed for every run; otherwise ``seed`` again."""

    def __init__(self, seed: int, fresh: bool):
        self.seed, self.fresh, self.seen = seed, fresh, set()
        self.new = itertools.count(seed + 1)

    def __call__(self, key) -> int:
        if key not in self.seen:
            self.seen.add(key)
            return self.seed
        return next(self.new) if self.fresh else self.seed


def _timed(baseline, runs: dict, repeats: int, device, paired: bool):
    """(plain seconds paired with each key, seconds per key, warm-up results, every plain
    time): each run beside its own plain run, or one plain run per pass when not paired."""
    if paired:
        base, seconds, first = against_baseline(baseline, runs, repeats, device)
        return base, seconds, first, [t for k in runs for t in base[k]]
    seconds, first = interleaved({"plain": baseline, **runs}, repeats, device)
    plain = seconds.pop("plain")
    first.pop("plain")
    return dict.fromkeys(runs, plain), seconds, first, list(plain)


def _row(name: str, gamma: int, plain: list[float], spec: list[float], st,
         rounds: list[tuple[int, int]]) -> dict:
    """One (draft, gamma) row of ``bench_speculative``. ``rounds``: (passes, characters) of
    every run of the setting, the timed ones last (a warm-up runs before them)."""
    r = paired_ratio(plain, spec)
    return {"draft": name, "gamma": gamma, **_round_costs(plain, spec, rounds[-len(spec):]),
            "seconds": statistics.median(spec),
            "all_seconds": spec, "plain_seconds": plain, "speedup": r["ratio"],
            "speedup_min": r["ratio_min"], "speedup_max": r["ratio_max"],
            "ci_low": r["ci_low"], "ci_high": r["ci_high"], "confirmed": False,
            "spread": r["ratio_spread"], "timing_spread": relative_spread(spec),
            "trustworthy": r["trustworthy"],
            "acceptance_rate": st.acceptance_rate,
            "per_position_acceptance": st.per_position_acceptance,
            "tokens_per_pass": st.tokens_per_pass,
            "predicted_tokens_per_pass": expected_tokens_per_pass(st.acceptance_rate, gamma)
            if st.proposed else float("nan"),
            "cost_ratio": st.cost_ratio}


def _round_costs(plain: list[float], spec: list[float], rounds: list[tuple[int, int]]) -> dict:
    """Where a setting's speedup comes from, run by run: characters per round (one target
    pass and its drafting), and a round's seconds over a plain character's seconds (the
    paired plain run's, which makes as many characters: the bench sets no stop rule). The
    speedup is about their quotient, so a goal G needs G times the round's cost in
    characters a round."""
    per_round = [n / passes for passes, n in rounds]
    cost = [(s / passes) / (b / n) for s, b, (passes, n) in zip(spec, plain, rounds)]
    return {"chars_per_round": statistics.median(per_round),
            "round_in_chars": statistics.median(cost)}
