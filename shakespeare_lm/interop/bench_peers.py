"""Ours beside transformers on the same weights: ``python -m shakespeare_lm.interop.bench_peers``.

The shipped model and draft are converted with ``to_transformers`` (bit-identical logits),
so every row compares two implementations of the same computation:

1. plain decoding, ``slm.generate`` vs transformers ``generate``, at batch 1 and batch 64;
2. speculative decoding with the shipped draft model: ``slm.speculative_decode`` vs
   transformers' assisted generation (``assistant_model=``, the converted draft), at the same
   number of draft tokens per round (``num_assistant_tokens``, constant schedule, no
   confidence cut-off), and once with transformers' own defaults;
3. prompt lookup: ours with ``PromptLookupDraft`` vs ``prompt_lookup_num_tokens=``;
4. our best exact configuration of any draft (with the n-grams and the draft heads, which
   transformers has no counterpart for) vs transformers' best assisted generation.

Greedy (T=0) and T=1 for each. transformers samples with ``top_k=0`` (its default is top-k
50), so T=1 is plain sampling on both sides. Every call gets an explicit attention mask.

Noise: the cases run round-robin (each repeat visits every case, in a rotated order, after
one untimed warm-up of each), and each figure is the median of the repeats with its min-max
spread. A ratio is the median of the per-repeat (paired) ratios, with their range beside
it, and is flagged as untrustworthy when the 95% interval of that median (the range itself
for up to 8 repeats) is wider than 30% of it (``timing.paired_ratio``). Both sides use the
same ``torch.set_num_threads`` (1 by default; ``--threads``).

The prompt plus the generated text must fit the 256-character window (transformers cannot
slide it), and transformers' prompt lookup fails (IndexError) when its proposals would run
past the window, so every case stops ``max(gammas) + 1`` characters short of it: a request
for 400 characters after the 55-character prompt generates 194 on every side at gammas up
to 6. The output says how many were generated.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ..decoding.generate import generate
from ..speculative import (BENCH_PROMPT, HeadsDraft, NGramDraft, PromptLookupDraft,
                           speculative_decode)
from ..speculative.benchmark import NGRAM_ORDERS
from ..speculative.heads import HEADS_FILE, load_heads
from ..timing import interleaved, paired_ratio, relative_spread, write_json
from ..weights import load_pretrained
from .hf import hf_inputs, to_transformers

PROMPT = BENCH_PROMPT  # the speculative bench's prompt, so the two benches are comparable
SPREAD_LIMIT = 0.3   # (max - min) / median of a case's timings, shown as "(!)"


@dataclass
class Case:
    """One timed configuration. ``run()`` returns the generated ids of its first row."""

    key: str
    side: str                  # "ours" or "transformers"
    family: str                # "plain", "draft model", "prompt lookup"
    temperature: float
    batch: int
    gamma: int | None
    run: Callable[[], list[int]]
    seconds: list[float] = field(default_factory=list)
    ids: list[int] | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def spread(self) -> float:
        return relative_spread(self.seconds)

    def summary(self, new_tokens: int) -> dict:
        tokens = new_tokens * self.batch
        return {"key": self.key, "side": self.side, "family": self.family,
                "temperature": self.temperature, "batch": self.batch, "gamma": self.gamma,
                "seconds": self.seconds, "median_s": self.median, "spread": self.spread,
                "tokens_per_s": tokens / self.median,
                "tokens_per_s_min": tokens / max(self.seconds),
                "tokens_per_s_max": tokens / min(self.seconds)}


def build_cases(model, draft, tok, prompt: str, new_tokens: int, gammas, temperatures,
                batches, seed: int = 0) -> list[Case]:
    hf, hf_draft = to_transformers(model), to_transformers(draft)
    enc = tok.encode(prompt)
    device = next(model.parameters()).device
    inputs = {b: {k: v.to(device) for k, v in hf_inputs([enc] * b).items()} for b in batches}
    lookup = PromptLookupDraft(tok.vocab_size)
    cases: list[Case] = []

    def hf_call(batch, T, **kw):
        def run():
            torch.manual_seed(seed)
            sample = {"do_sample": True, "top_k": 0} if T > 0 else {"do_sample": False}
            out = hf.generate(**inputs[batch], max_new_tokens=new_tokens, **sample, **kw)
            return out[0, len(enc):].tolist()
        return run

    def assistant(gamma):  # a fixed gamma per round, as ours (None: transformers' defaults)
        gc = hf_draft.generation_config
        if gamma is None:
            gc.num_assistant_tokens = gc.num_assistant_tokens_schedule = None
            gc.assistant_confidence_threshold = None
        else:
            gc.num_assistant_tokens, gc.num_assistant_tokens_schedule = gamma, "constant"
            gc.assistant_confidence_threshold = 0.0
        return hf_draft

    for T in temperatures:
        t = f"T={T:g}"
        for b in batches:
            cases.append(Case(f"plain b{b} {t} ours", "ours", "plain", T, b, None,
                              lambda b=b, T=T: generate(model, tok, [prompt] * b, new_tokens,
                                                        temperature=T, seed=seed)[0].ids))
            cases.append(Case(f"plain b{b} {t} transformers", "transformers", "plain", T, b, None,
                              hf_call(b, T)))
        for g in gammas:
            cases.append(Case(f"draft model g{g} {t} ours", "ours", "draft model", T, 1, g,
                              lambda g=g, T=T: speculative_decode(
                                  model, draft, tok, prompt, new_tokens, g, temperature=T,
                                  seed=seed).ids))
            cases.append(Case(f"draft model g{g} {t} transformers", "transformers", "draft model",
                              T, 1, g, lambda g=g, T=T: hf_call(
                                  1, T, assistant_model=assistant(g))()))
        cases.append(Case(f"draft model defaults {t} transformers", "transformers", "draft model",
                          T, 1, None, lambda T=T: hf_call(1, T, assistant_model=assistant(None))()))
        for g in gammas:
            cases.append(Case(f"prompt lookup g{g} {t} ours", "ours", "prompt lookup", T, 1, g,
                              lambda g=g, T=T: speculative_decode(
                                  model, lookup, tok, prompt, new_tokens, g, temperature=T,
                                  seed=seed).ids))
            cases.append(Case(f"prompt lookup g{g} {t} transformers", "transformers",
                              "prompt lookup", T, 1, g,
                              lambda g=g, T=T: hf_call(1, T, prompt_lookup_num_tokens=g)()))
    return cases


def ours_only_cases(model, tok, prompt: str, new_tokens: int, gammas, temperatures,
                    seed: int = 0) -> list[Case]:
    """Our drafts transformers has no counterpart for: the n-grams and the shipped draft heads
    (when ``data/heads.safetensors`` is there), so that our best exact configuration of any
    draft meets transformers' assisted generation in the same run."""
    drafts = {f"{n}-gram": NGramDraft(tok, order=n) for n in NGRAM_ORDERS}
    if HEADS_FILE.exists():
        drafts["heads"] = HeadsDraft(load_heads(model))
    return [Case(f"{name} g{g} T={T:g} ours", "ours", name, T, 1, g,
                 lambda d=d, g=g, T=T: speculative_decode(model, d, tok, prompt, new_tokens, g,
                                                          temperature=T, seed=seed).ids)
            for T in temperatures for name, d in drafts.items() for g in gammas]


def measure(cases: list[Case], repeats: int, device, log=print) -> None:
    """One untimed warm-up of each case, then ``repeats`` round-robin passes."""
    seconds, first = interleaved({c.key: c.run for c in cases}, repeats, device, log)
    for c in cases:
        c.ids, c.seconds = first[c.key], seconds[c.key]


def compare(ours: Case, theirs: Case) -> dict:
    """How many times faster ``ours`` is than ``theirs`` (per token: same token counts): the
    median of the per-repeat ratios, their min-max, and whether their spread allows trusting
    it (``timing.paired_ratio``)."""
    r = paired_ratio(theirs.seconds, ours.seconds)
    return {"ours": ours.key, "theirs": theirs.key, "ratio": r["ratio"],
            "paired_min": r["ratio_min"], "paired_max": r["ratio_max"],
            "spread": r["ratio_spread"], "trustworthy": r["trustworthy"]}


def _fmt_case(c: Case, new_tokens: int) -> str:
    s = c.summary(new_tokens)
    flag = "  (!) timings vary" if c.spread > SPREAD_LIMIT else ""
    return (f"   {c.key:42s} {s['tokens_per_s']:9.0f} tok/s  [{s['tokens_per_s_min']:.0f}-"
            f"{s['tokens_per_s_max']:.0f}]  median {1e3 * c.median:8.1f} ms, spread "
            f"{100 * c.spread:4.0f}%{flag}")


def _fmt_ratio(label: str, r: dict) -> str:
    warn = ("" if r["trustworthy"] else
            f"  WARNING: per-repeat ratios vary by {r['spread']:.0%} > 30%, do not trust it")
    return (f"   {label:60s} {r['ratio']:5.2f}x  (paired {r['paired_min']:.2f}-"
            f"{r['paired_max']:.2f}){warn}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch.set_num_threads for both sides (default 1)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chars", type=int, default=400, help="characters requested")
    parser.add_argument("--gammas", default="2,4,6,8,10", help="draft tokens per round")
    parser.add_argument("--temperatures", default="0,1")
    parser.add_argument("--batches", default="1,64")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    if args.repeats < 5:
        print(f"note: --repeats {args.repeats} < 5: medians of so few runs are fragile")
    import transformers

    before = torch.get_num_threads(), transformers.logging.get_verbosity()
    torch.set_num_threads(args.threads)
    # transformers' assisted generation warns about its own internal generation_config use
    transformers.logging.set_verbosity_error()
    try:
        return _run(args)
    finally:
        torch.set_num_threads(before[0])
        transformers.logging.set_verbosity(before[1])


def _ratios(by_key: dict, gammas, batches, t: str) -> tuple[dict, dict]:
    """The ratios printed for temperature ``t``: plain per batch, each family per gamma,
    each side's best, and each side's speedup over its own plain decoding."""
    rows, labels = {}, {}
    for b in batches:
        key = f"plain b{b} {t}"
        rows[key] = compare(by_key[f"{key} ours"], by_key[f"{key} transformers"])
        labels[key] = f"plain decoding, batch {b}"
    for fam in ("draft model", "prompt lookup"):
        for g in gammas:
            key = f"{fam} g{g} {t}"
            rows[key] = compare(by_key[f"{key} ours"], by_key[f"{key} transformers"])
            labels[key] = f"{fam}, gamma {g} both"
        best_ours = min((by_key[f"{fam} g{g} {t} ours"] for g in gammas), key=lambda c: c.median)
        theirs = [by_key[f"{fam} g{g} {t} transformers"] for g in gammas]
        if fam == "draft model":
            theirs.append(by_key[f"draft model defaults {t} transformers"])
        best_theirs = min(theirs, key=lambda c: c.median)
        name = lambda c: "defaults" if c.gamma is None else f"g{c.gamma}"
        rows[f"{fam} best {t}"] = compare(best_ours, best_theirs)
        labels[f"{fam} best {t}"] = (f"{fam}, each side's best (ours {name(best_ours)}, "
                                     f"transformers {name(best_theirs)})")
        # each side's speculative speedup over its own plain decoding at batch 1
        rows[f"{fam} ours vs own plain {t}"] = compare(best_ours, by_key[f"plain b1 {t} ours"])
        labels[f"{fam} ours vs own plain {t}"] = f"  ours: {fam} {name(best_ours)} over plain b1"
        rows[f"{fam} transformers vs own plain {t}"] = compare(
            best_theirs, by_key[f"plain b1 {t} transformers"])
        labels[f"{fam} transformers vs own plain {t}"] = (
            f"  transformers: {fam} {name(best_theirs)} over plain b1")
    exact = [c for c in by_key.values()
             if c.side == "ours" and c.gamma and c.key.endswith(f"{t} ours")]
    assisted = [c for c in by_key.values() if c.family == "draft model"
                and c.side == "transformers" and f" {t} " in c.key]
    best_ours, best_assisted = (min(cs, key=lambda c: c.median) for cs in (exact, assisted))
    rows[f"best ours vs assisted {t}"] = compare(best_ours, best_assisted)
    labels[f"best ours vs assisted {t}"] = (f"our best exact configuration ({best_ours.family} "
                                            f"g{best_ours.gamma}) vs transformers' best assisted")
    return rows, labels


def _run(args) -> dict:
    import transformers

    model, tok = load_pretrained(device=args.device)
    draft, _ = load_pretrained("draft", device=args.device)
    block = model.config.block_size
    gammas = [int(g) for g in args.gammas.split(",")]
    # transformers 5.24's prompt lookup can propose tokens past max_length and then index
    # past n_positions (IndexError) near the window's end: keep max(gammas) + 1 slots free
    new_tokens = min(args.chars, block - len(tok.encode(PROMPT)) - max(gammas) - 1)
    temperatures = [float(t) for t in args.temperatures.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    print(f"ours vs transformers {transformers.__version__} on the same weights, {args.device} "
          f"({platform.processor() or platform.machine()}), torch {torch.__version__}, "
          f"torch.set_num_threads({args.threads}) for both sides")
    print(f"prompt {PROMPT!r} ({len(PROMPT)} characters); {args.chars} characters requested, "
          f"{new_tokens} generated by every case (the window is {block}, less "
          f"{max(gammas) + 1} kept free for transformers' prompt lookup)")
    print(f"each figure: median of {args.repeats} interleaved repeats [min-max], after a warm-up")

    cases = build_cases(model, draft, tok, PROMPT, new_tokens, gammas, temperatures, batches)
    cases += ours_only_cases(model, tok, PROMPT, new_tokens, gammas, temperatures)
    by_key = {c.key: c for c in cases}
    measure(cases, args.repeats, args.device)

    results = {"transformers": transformers.__version__, "torch": torch.__version__,
               "threads": args.threads, "device": args.device, "prompt": PROMPT,
               "chars_requested": args.chars, "new_tokens": new_tokens,
               "repeats": args.repeats, "cases": [c.summary(new_tokens) for c in cases],
               "ratios": {}, "checks": {}}
    for c in cases:
        assert len(c.ids) == new_tokens, f"{c.key} generated {len(c.ids)} tokens"
    for T in temperatures:
        t = f"T={T:g}"
        print(f"\n== {t} ==")
        for c in cases:
            if c.temperature == T:
                print(_fmt_case(c, new_tokens))
        rows, labels = _ratios(by_key, gammas, batches, t)
        print("   ratios, per token (>1: the first is faster); 'over plain' rows are each side's "
              "own speedup:")
        for key, r in rows.items():
            print(_fmt_ratio(labels[key], r))
        results["ratios"].update(rows)
        if T == 0:
            same = {c.key: c.ids == by_key[f"plain b1 {t} ours"].ids for c in cases
                    if c.temperature == 0}
            results["checks"]["greedy_identical"] = same
            differs = [k for k, v in same.items() if not v]
            print(f"   greedy text identical in every T=0 case: {all(same.values())}"
                  + ("" if all(same.values()) else f" (differs: {differs})"))
        else:
            same = by_key[f"plain b1 {t} ours"].ids == by_key[f"plain b1 {t} transformers"].ids
            results["checks"][f"plain_b1_{t}_same_sample"] = same
            print(f"   plain b1 sampled text identical for the same seed: {same}")
    if args.json:
        write_json(args.json, results)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
