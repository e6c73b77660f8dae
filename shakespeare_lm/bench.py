"""Benchmarks: ``python -m shakespeare_lm.bench [--device cuda] [--quick] [--headline]``.

Every number is measured in this run, on the shipped model, after a warm-up, with
``shakespeare_lm.timing`` (CUDA events on a GPU, perf_counter on the CPU); ratios compare
measurements taken side by side. Speed lives here, never in the tests.

The run ends with the headline figures (``--headline``: only those), each the median of
ratios of runs timed in pairs, with the 95% interval of that median: speculative decoding
on unseen text and on a replayed one, ours against transformers per token, the batch-256
decode against the matmul peak, and the batch-1 step against its bandwidth bound.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys

import torch

from . import cost as roofline
from .decoding.beam import bench_beam_vs_naive
from .decoding.generate import generate
from .interop import bench_peers
from .speculative import BENCH_PROMPT, SPREAD_LIMIT, bench_speculative
from .speculative.eagle import FEATURE_FILE, load_feature_head
from .speculative.heads import HEADS_FILE, load_heads
from .timing import against_baseline, benchmark, model_device, paired_ratio, write_json
from .weights import load_pretrained

PROMPT = "KATHARINA:\nMoved! in good time: "
PEER_PROMPT = BENCH_PROMPT  # 55 characters: 190 more still fit transformers' 256-slot window


def _prompts(n: int, length: int = 64) -> list[str]:
    """n different prompts of ``length`` characters cut from the held-out plays."""
    from .corpus import load_heldout

    text = load_heldout()
    step = max(1, (len(text) - length) // n)
    return [text[i * step : i * step + length] for i in range(n)]


def kv_cache_vs_recompute(model, tok, n_chars: int = 1000) -> dict:
    """Time per generated character at ``n_chars`` characters (greedy, sliding window)."""
    run = lambda cache: generate(model, tok, PROMPT, n_chars, temperature=0, use_cache=cache,
                                 context_overflow="slide")
    device = model_device(model)
    cached = benchmark(lambda: run(True), device, warmup=1, repeats=3)
    recomputed = benchmark(lambda: run(False), device, warmup=1, repeats=1)
    assert run(True).ids == run(False).ids, "cached and recomputed generations differ"
    return {"chars": n_chars, "cache_ms_per_char": 1e3 * cached / n_chars,
            "recompute_ms_per_char": 1e3 * recomputed / n_chars, "ratio": recomputed / cached}


def batch_throughput(model, tok, batches=(1, 64, 256), new_tokens: int = 128) -> dict:
    """Generated tokens per second (decode, whole batch) at each batch size."""
    out = {}
    for b in batches:
        prompts = _prompts(b)
        gens = generate(model, tok, prompts, new_tokens, seed=0, warmup=True)
        t = gens[0].timings
        runs = [generate(model, tok, prompts, new_tokens, seed=0)[0].timings
                for _ in range(2)] + [t]
        best = min(runs, key=lambda x: x.time_to_first_token_s + x.decode_s)
        out[b] = {"tokens_per_s": best.tokens_per_s,
                  "ms_per_step": 1e3 * best.time_per_output_token_s}
    return out


def prefill_throughput(model, tok, batch: int = 64) -> dict:
    """Prompt tokens per second for a batch of full-context prompts."""
    from .decoding.generate import prefill

    device = model_device(model)
    L = model.config.block_size
    prompts = _prompts(batch, L)
    idx = torch.tensor([tok.encode(p) for p in prompts], device=device)

    def run():
        with model.cache(batch, L):
            prefill(model, idx, torch.arange(L, device=device))

    seconds = benchmark(run, device, warmup=1, repeats=3)
    return {"batch": batch, "prompt_len": L, "tokens_per_s": batch * L / seconds}


# --- what each section prints ------------------------------------------------------------
def kv_text(kv: dict) -> str:
    return (f"\n1. KV cache vs recomputing the context, {kv['chars']} generated characters "
            "(greedy):\n"
            f"   cache {kv['cache_ms_per_char']:.2f} ms/char, "
            f"recompute {kv['recompute_ms_per_char']:.2f} ms/char "
            f"-> cache is {kv['ratio']:.1f}x faster (identical text)")


def throughput_text(thr: dict) -> str:
    base = thr[1]["tokens_per_s"]
    lines = ["\n2. decode throughput (128 new tokens after 64-character prompts, sampling):"]
    lines += [f"   batch {b:3d}: {r['tokens_per_s']:9.0f} tokens/s "
              f"({r['ms_per_step']:.2f} ms/step), {r['tokens_per_s'] / base:5.1f}x batch 1"
              for b, r in thr.items()]
    return "\n".join(lines)


def prefill_text(pf: dict, decode_tokens_per_s: float) -> str:
    return (f"\n3. prefill: {pf['tokens_per_s']:,.0f} prompt tokens/s (batch {pf['batch']} x "
            f"{pf['prompt_len']} characters), {pf['tokens_per_s'] / decode_tokens_per_s:.0f}x "
            "batch-1 decode")


def beam_text(bm: dict) -> str:
    return (f"\n4. beam search k={bm['beam_width']} over {bm['new_tokens']} characters: "
            f"batched on the KV cache {bm['cached_s']:.2f} s, "
            f"naive (k full forward passes per step) {bm['naive_s']:.2f} s "
            f"-> {bm['speedup']:.1f}x faster (same text: {bm['same_text']})")


def speculative_text(sp: dict) -> str:
    pl = sp["plain_seconds"]
    lines = [f"\n5. speculative decoding at batch 1, {sp['new_tokens']} characters at "
             f"T={sp['temperature']:g} (sliding window), {sp['repeats']} interleaved repeats; "
             f"plain KV-cache decoding {sp['plain_tokens_per_s']:.0f} tokens/s (median; "
             f"{1e3 * min(pl):.0f}-{1e3 * max(pl):.0f} ms a run). Each run is paired with its own "
             "plain run; a speedup is the median of the paired ratios [its 95% interval]",
             "   draft          gamma  accept  chars/pass (predicted)  cost ratio  "
             "speedup [min-max]"]
    for r in sp["rows"]:
        flag = "" if r["trustworthy"] else f"  (!) interval {r['spread']:.0%} of the median"
        again = f"  confirmed: {len(r['all_seconds'])} more pairs" if r["confirmed"] else ""
        lines.append(f"   {r['draft']:14s} {r['gamma']:5d}  {r['acceptance_rate']:6.3f}  "
                     f"{r['tokens_per_pass']:10.2f} ({r['predicted_tokens_per_pass']:.2f})  "
                     f"{r['cost_ratio']:10.3f}  {r['speedup']:6.2f}x [{r['ci_low']:.2f}-"
                     f"{r['ci_high']:.2f}]{flag}{again}")
        if r["draft"] in ("heads", "EAGLE head"):
            acc = ", ".join(f"{a:.2f}" for a in r["per_position_acceptance"])
            lines.append(f"   {'':14s} acceptance per draft position: {acc}")
    b = sp["best"]
    trusted = "" if b["trustworthy"] else " (NOT trustworthy: no row was)"
    lines.append(f"   best trustworthy: {b['draft']} at gamma={b['gamma']}, {b['speedup']:.2f}x "
                 f"[{b['ci_low']:.2f}-{b['ci_high']:.2f}] over plain decoding (per repeat "
                 f"{b['speedup_min']:.2f}-{b['speedup_max']:.2f}, {len(b['all_seconds'])} "
                 f"pairs){trusted}")
    if not all(r["trustworthy"] for r in sp["rows"]):
        lines.append(f"   WARNING: in rows marked (!) the 95% interval of the median is wider "
                     f"than {SPREAD_LIMIT:.0%} of it: the machine is busy, do not trust those "
                     "ratios")
    return "\n".join(lines)


# --- the headline figures: each a median of paired ratios with its 95% interval ----------
HEADLINE_GAMMAS = (4, 8)
HEADLINE_CHARS = 400  # speculative runs: characters at T = 1, sliding the window
SPECULATIVE_GOAL = 2.5  # row a's goal: speculative over plain decoding


def _summary(r: dict, pairs: int) -> dict:
    """The parts of a ``timing.paired_ratio`` result a headline row prints."""
    return {"ratio": r["ratio"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
            "pairs": pairs, "trustworthy": r["trustworthy"]}


def speculative_headline(model, draft_model, tok, eagle=None, repeats: int = 9,
                         confirm_repeats: int = 15, new_tokens: int = HEADLINE_CHARS) -> dict:
    """Speculative against plain decoding on unseen text: every draft of {draft model,
    4-gram, 6-gram, and the FeatureHead ``eagle`` when given} at every gamma of
    ``HEADLINE_GAMMAS``, each run beside its own plain run with a new seed and a draft that
    remembers nothing (``bench_speculative(fresh=True)``); the fastest setting timed again
    with ``confirm_repeats`` fresh pairs ("cold"), and the same setting with its seed
    replayed and the n-gram's memory kept ("remembered"). At temperature 1 an n-gram draws
    its proposals without that memory (``NGramDraft.sample_chain``), so there the two
    differ only in the text."""
    from .speculative import ModelDraft, NGramDraft

    drafts = {"draft model": ModelDraft(draft_model, name="draft model"),
              "4-gram": NGramDraft(tok, order=4), "6-gram": NGramDraft(tok, order=6)}
    if eagle is not None:
        drafts["EAGLE head"] = eagle
    kw = dict(new_tokens=new_tokens, temperature=1.0, seed=0)
    sweep = bench_speculative(model, None, tok, gammas=HEADLINE_GAMMAS, drafts=drafts,
                              repeats=repeats, confirm=1, confirm_repeats=confirm_repeats, **kw)
    best = next(r for r in sweep["rows"] if r["confirmed"])
    name, gamma = best["draft"], best["gamma"]
    again = bench_speculative(model, None, tok, gammas=(gamma,), drafts={name: drafts[name]},
                              repeats=confirm_repeats, fresh=False, **kw)["rows"][0]
    row = lambda r: {**_summary(_ratio_of(r), len(r["all_seconds"])), "draft": r["draft"],
                     "gamma": r["gamma"], "acceptance_rate": r["acceptance_rate"],
                     "chars_per_round": r["chars_per_round"],
                     "round_in_chars": r["round_in_chars"]}
    return {"cold": row(best), "remembered": row(again), "drafts": list(drafts),
            "sweep": [(r["draft"], r["gamma"], r["speedup"]) for r in sweep["rows"]]}


def _ratio_of(row: dict) -> dict:
    """``paired_ratio`` of a ``bench_speculative`` row (plain seconds over its own)."""
    return paired_ratio(row["plain_seconds"], row["all_seconds"])


def peers_headline(model, tok, new_tokens: int = 190, repeats: int = 15) -> dict:
    """Ours against transformers' ``generate`` on the same weights, greedy, batch 1: each of
    our runs beside one of theirs; the ratio is their time over ours (per token alike)."""
    from .interop.hf import hf_inputs, to_transformers

    device = model_device(model)
    hf = to_transformers(model)
    enc = tok.encode(PEER_PROMPT)
    inputs = {k: v.to(device) for k, v in hf_inputs([enc]).items()}
    ours = lambda: generate(model, tok, PEER_PROMPT, new_tokens, temperature=0).ids
    theirs = lambda: hf.generate(**inputs, max_new_tokens=new_tokens, do_sample=False,
                                 pad_token_id=0)[0, len(enc):].tolist()
    same = ours() == theirs()
    base, seconds, _ = against_baseline(theirs, {"ours": ours}, repeats, device)
    r = paired_ratio(base["ours"], seconds["ours"])
    return {**_summary(r, repeats), "same_text": same, "new_tokens": new_tokens,
            "ours_ms": 1e3 * statistics.median(seconds["ours"]) / new_tokens,
            "theirs_ms": 1e3 * statistics.median(base["ours"]) / new_tokens}


def _decode_run(model, tok, prompts: list[str], new_tokens: int, temperature: float = 1.0):
    """(seconds of the decode steps after the first token, their context lengths)."""
    t = generate(model, tok, prompts, new_tokens, seed=0, temperature=temperature)[0].timings
    L = len(prompts[0])
    return t.decode_s, [L + k - 1 for k in range(1, t.new_tokens)]


def flops_headline(model, tok, batch: int = 256, new_tokens: int = 64,
                   repeats: int = 9) -> dict:
    """Decode FLOP/s at ``batch`` rows against this CPU's matmul peak, measured in pairs:
    each repeat times the peak (``measure_matmul_flops``, best of 3) and the memory
    bandwidth (``measure_bandwidth``) right beside a generation of ``new_tokens`` characters
    after 64-character prompts. The ratio per pair is (the decode steps' FLOPs / the peak)
    over their measured time. ``ceiling`` is the most the roofline allows: the steps'
    seconds at the peak over their roofline seconds (``pass_cost`` on this CPU as measured,
    each step the longer of its FLOPs at the peak and its bytes, the weights and every row's
    cached keys and values, at the bandwidth), median over the repeats."""
    spec = roofline.ModelSpec.from_model(model)
    prompts, device = _prompts(batch), model_device(model)
    _decode_run(model, tok, prompts, 8)  # warm-up: allocation, first-touch of the cache
    at_peak, seconds, peaks, ceilings, bandwidths = [], [], [], [], []
    for _ in range(repeats):
        peaks.append(roofline.measure_matmul_flops(device, repeats=3))
        bandwidths.append(roofline.measure_bandwidth(device, repeats=3))
        decode_s, contexts = _decode_run(model, tok, prompts, new_tokens)
        hw = roofline.Hardware("this CPU (measured)", peaks[-1], bandwidths[-1])
        steps = [roofline.pass_cost(spec, hw, 1, batch, c) for c in contexts]
        at_peak.append(sum(s.compute_s for s in steps))
        ceilings.append(at_peak[-1] / sum(s.seconds for s in steps))
        seconds.append(decode_s)
    r = paired_ratio(at_peak, seconds)  # (seconds at peak) / (seconds taken) = the fraction
    return {**_summary(r, repeats), "batch": batch, "peak_flops": statistics.median(peaks),
            "achieved_flops": sum(s.flops for s in steps) / statistics.median(seconds),
            "ceiling": statistics.median(ceilings), "bandwidth": statistics.median(bandwidths),
            "step_bytes": statistics.mean(s.bytes for s in steps)}


def bandwidth_headline(model, tok, new_tokens: int = 128, repeats: int = 9) -> dict:
    """A batch-1 decode step against its bandwidth bound: the bytes a step must read (the
    weights, and the cached keys and values) over this machine's measured memory bandwidth
    (``measure_bandwidth``, a copy larger than the caches), measured in pairs as above. The
    ratio is the measured step over the bound: 1 is at the limit."""
    spec = roofline.ModelSpec.from_model(model)
    device = model_device(model)
    _decode_run(model, tok, [PEER_PROMPT], 8, temperature=0)
    bound_s, seconds, bandwidths = [], [], []
    for _ in range(repeats):
        bandwidths.append(roofline.measure_bandwidth(device, repeats=3))
        decode_s, contexts = _decode_run(model, tok, [PEER_PROMPT], new_tokens, temperature=0)
        moved = sum(roofline.pass_bytes(spec, 1, 1, c) for c in contexts)
        bound_s.append(moved / bandwidths[-1])
        seconds.append(decode_s)
    r = paired_ratio(seconds, bound_s)  # measured over bound: how far from the limit
    steps = len(contexts)
    return {**_summary(r, repeats), "step_ms": 1e3 * statistics.median(seconds) / steps,
            "bound_ms": 1e3 * statistics.median(bound_s) / steps,
            "bandwidth": statistics.median(bandwidths), "weight_bytes": spec.weight_bytes}



def headline_text(h: dict) -> str:
    """The five headline rows, each with its goal."""
    def ci(r, unit="x"):
        fmt = (lambda v: f"{v:.0%}") if unit == "%" else (lambda v: f"{v:.2f}x")
        flag = "" if r["trustworthy"] else "  (!) interval over 30% of the median"
        return (f"{fmt(r['ratio'])} [{fmt(r['ci_low'])}-{fmt(r['ci_high'])}], "
                f"{r['pairs']} pairs{flag}")
    sp, pe, fl, bw = h["speculative"], h["peers"], h["flops"], h["bandwidth"]
    cold, warm = sp["cold"], sp["remembered"]
    gammas = ", ".join(map(str, HEADLINE_GAMMAS))
    return "\n".join([
        "\nHeadline figures: each the median of paired ratios [its 95% interval], every pair "
        "timed side by side in this run",
        f"  a. speculative vs plain, unseen text, T=1, {HEADLINE_CHARS} characters, best of "
        f"{{{', '.join(sp['drafts'])}}} x gamma {{{gammas}}}: {cold['draft']} gamma="
        f"{cold['gamma']} (acceptance {cold['acceptance_rate']:.3f}): {ci(cold)}   goal >= "
        f"{SPECULATIVE_GOAL}x",
        f"     {cold['chars_per_round']:.2f} characters a round, a round costing "
        f"{cold['round_in_chars']:.2f} plain characters: {SPECULATIVE_GOAL}x needs "
        f"{SPECULATIVE_GOAL * cold['round_in_chars']:.2f} characters a round at that cost",
        f"  b. the same setting replaying one text (at T=1 the n-gram draws without "
        f"remembered lookups): {ci(warm)}",
        f"  c. ours vs transformers generate, greedy, batch 1, same weights, per token: "
        f"{ci(pe)} (ours {pe['ours_ms']:.3f} ms, transformers {pe['theirs_ms']:.3f} ms a "
        f"token; identical text: {pe['same_text']})   goal >= 2x",
        f"  d. batch-{fl['batch']} decode FLOP/s over the measured matmul peak: {ci(fl, '%')} "
        f"({fl['achieved_flops'] / 1e9:.1f} of {fl['peak_flops'] / 1e9:.1f} GFLOP/s)   "
        f"goal >= 50%; the roofline allows at most {fl['ceiling']:.0%} (a step moves "
        f"{fl['step_bytes'] / 1e6:.0f} MB of weights and cached keys and values, at "
        f"{fl['bandwidth'] / 1e9:.1f} GB/s)",
        f"  e. batch-1 decode step over its bandwidth bound (weights {bw['weight_bytes'] / 1e6:.1f}"
        f" MB and the cached keys and values, at {bw['bandwidth'] / 1e9:.1f} GB/s): {ci(bw)} "
        f"(step {bw['step_ms']:.3f} ms, bound {bw['bound_ms']:.3f} ms)"])


def headline(model, draft_model, tok, eagle=None) -> dict:
    """Every headline figure, printed as it is measured (row a sweeps the FeatureHead
    ``eagle`` too, when given)."""
    out = {}
    out["speculative"] = speculative_headline(model, draft_model, tok, eagle)
    out["peers"] = peers_headline(model, tok)
    out["flops"] = flops_headline(model, tok)
    out["bandwidth"] = bandwidth_headline(model, tok)
    print(headline_text(out))
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="skip the slower comparisons")
    parser.add_argument("--peers", action="store_true",
                        help="also run the comparison with transformers (section 6)")
    parser.add_argument("--headline", action="store_true",
                        help="only the headline figures (73 s on a quiet 2-core machine)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    model, tok = load_pretrained(device=args.device)
    draft, _ = load_pretrained("draft", device=args.device)
    eagle = load_feature_head(model) if FEATURE_FILE.exists() else None
    results = {"device": args.device, "torch": torch.__version__,
               "threads": torch.get_num_threads(),
               "machine": platform.processor() or platform.machine()}
    if args.device.startswith("cuda"):
        results["gpu"] = torch.cuda.get_device_name()
    print(f"shakespeare_lm bench on {args.device} ({results['machine']}, "
          f"torch {torch.__version__}, {results['threads']} threads), "
          f"model of {model.num_params():,} parameters")
    if args.headline:
        results["headline"] = headline(model, draft, tok, eagle)
        return _finish(args, results)
    results["kv_cache_vs_recompute"] = kv = kv_cache_vs_recompute(model, tok)
    print(kv_text(kv))
    results["batch_throughput"] = thr = batch_throughput(model, tok)
    print(throughput_text(thr))
    results["prefill"] = pf = prefill_throughput(model, tok)
    print(prefill_text(pf, thr[1]["tokens_per_s"]))
    if not args.quick:
        results["beam_vs_naive"] = bm = bench_beam_vs_naive(model, tok)
        print(beam_text(bm))
        heads = load_heads(model) if HEADS_FILE.exists() else None
        results["speculative"] = sp = bench_speculative(model, draft, tok, heads=heads,
                                                        eagle=eagle, confirm=2)
        print(speculative_text(sp))
        if args.peers:
            print("\n6. ours vs transformers on the same weights "
                  "(python -m shakespeare_lm.interop.bench_peers):")
            results["peers"] = bench_peers.main(["--device", args.device])
        else:
            print("\n6. ours vs transformers on the same weights: run with --peers, or "
                  "python -m shakespeare_lm.interop.bench_peers")
    results["headline"] = headline(model, draft, tok, eagle)
    return _finish(args, results)


def _finish(args, results: dict) -> dict:
    if args.json:
        write_json(args.json, results)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
