"""Benchmarks: ``python -m shakespeare_lm.bench [--device cuda] [--quick]``.

Every number is measured in this run, on the shipped model, after a warm-up, with
``shakespeare_lm.timing`` (CUDA events on a GPU, perf_counter on the CPU); ratios compare
measurements taken side by side. Speed lives here, never in the tests.
"""

from __future__ import annotations

import argparse
import platform
import sys

import torch

from . import cost as roofline
from .decoding.beam import bench_beam_vs_naive
from .decoding.generate import generate
from .interop import bench_peers
from .speculative import SPREAD_LIMIT, bench_speculative
from .speculative.heads import HEADS_FILE, load_heads
from .timing import benchmark, model_device, write_json
from .weights import load_pretrained

PROMPT = "KATHARINA:\nMoved! in good time: "


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


def achieved_flops(model, batch: int, tokens_per_s: float, context: int) -> float:
    """FLOP/s implied by a decode rate at a mean context length (``cost.roofline.pass_flops``)."""
    spec = roofline.ModelSpec.from_model(model)
    per_token = roofline.pass_flops(spec, tokens=1, batch=1, context=context)
    return per_token * tokens_per_s


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


def roofline_text(rf: dict) -> str:
    flops, peak = rf["achieved_flops"], rf["matmul_peak_flops"]
    return (f"\n3. achieved FLOP/s at batch {rf['best_batch']}: {flops / 1e9:.2f} GFLOP/s = "
            f"{flops / peak:.1%} of this machine's measured matmul peak ({peak / 1e9:.1f} GFLOP/s; "
            f"measured bandwidth {rf['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s)")


def prefill_text(pf: dict, decode_tokens_per_s: float) -> str:
    return (f"\n4. prefill: {pf['tokens_per_s']:,.0f} prompt tokens/s (batch {pf['batch']} x "
            f"{pf['prompt_len']} characters), {pf['tokens_per_s'] / decode_tokens_per_s:.0f}x "
            "batch-1 decode")


def beam_text(bm: dict) -> str:
    return (f"\n5. beam search k={bm['beam_width']} over {bm['new_tokens']} characters: "
            f"batched on the KV cache {bm['cached_s']:.2f} s, "
            f"naive (k full forward passes per step) {bm['naive_s']:.2f} s "
            f"-> {bm['speedup']:.1f}x faster (same text: {bm['same_text']})")


def speculative_text(sp: dict) -> str:
    pl = sp["plain_seconds"]
    lines = [f"\n6. speculative decoding at batch 1, {sp['new_tokens']} characters at "
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
        if r["draft"] == "heads":
            acc = ", ".join(f"{a:.2f}" for a in r["per_position_acceptance"])
            lines.append(f"   {'':14s} acceptance per head position: {acc}")
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


def roofline_section(model, device: str, thr: dict) -> dict:
    """Achieved FLOP/s at the best batch against this machine's measured matmul peak."""
    best_b = max(thr, key=lambda b: thr[b]["tokens_per_s"])
    peak = roofline.measure_matmul_flops(device, repeats=10)  # best of 10
    bandwidth = roofline.measure_bandwidth(device)
    flops = achieved_flops(model, best_b, thr[best_b]["tokens_per_s"], context=64 + 64)
    return {"matmul_peak_flops": peak, "bandwidth_bytes_per_s": bandwidth,
            "best_batch": best_b, "achieved_flops": flops, "fraction_of_peak": flops / peak}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="skip the slower comparisons")
    parser.add_argument("--peers", action="store_true",
                        help="also run the comparison with transformers (section 7)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    model, tok = load_pretrained(device=args.device)
    results = {"device": args.device, "torch": torch.__version__,
               "threads": torch.get_num_threads(),
               "machine": platform.processor() or platform.machine()}
    if args.device.startswith("cuda"):
        results["gpu"] = torch.cuda.get_device_name()
    print(f"shakespeare_lm bench on {args.device} ({results['machine']}, "
          f"torch {torch.__version__}, {results['threads']} threads), "
          f"model of {model.num_params():,} parameters")
    results["kv_cache_vs_recompute"] = kv = kv_cache_vs_recompute(model, tok)
    print(kv_text(kv))
    results["batch_throughput"] = thr = batch_throughput(model, tok)
    print(throughput_text(thr))
    results["roofline"] = roofline_section(model, args.device, thr)
    print(roofline_text(results["roofline"]))
    results["prefill"] = pf = prefill_throughput(model, tok)
    print(prefill_text(pf, thr[1]["tokens_per_s"]))
    if not args.quick:
        results["beam_vs_naive"] = bm = bench_beam_vs_naive(model, tok)
        print(beam_text(bm))
        draft, _ = load_pretrained("draft", device=args.device)
        heads = load_heads(model) if HEADS_FILE.exists() else None
        results["speculative"] = sp = bench_speculative(model, draft, tok, heads=heads,
                                                        confirm=2)
        print(speculative_text(sp))
        if args.peers:
            print("\n7. ours vs transformers on the same weights "
                  "(python -m shakespeare_lm.interop.bench_peers):")
            results["peers"] = bench_peers.main(["--device", args.device])
        else:
            print("\n7. ours vs transformers on the same weights: run with --peers, or "
                  "python -m shakespeare_lm.interop.bench_peers")
    if args.json:
        write_json(args.json, results)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
