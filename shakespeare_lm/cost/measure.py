"""What this machine and our model actually do: bandwidth and matmul probes, and the timing
of our model's prefill, decode and batching with the package's own generation loop."""

from __future__ import annotations

import statistics

import torch

from ..checks import check_positive
from ..decoding.generate import generate
from ..timing import benchmark
from .roofline import Hardware


# --- probes of this machine ------------------------------------------------------------
def _is_cuda(device) -> bool:
    return torch.device(device).type == "cuda"


def measure_bandwidth(device: str | torch.device = "cpu", n_bytes: int | None = None,
                      repeats: int = 5) -> float:
    """Achieved memory bandwidth (bytes/s): copy a buffer larger than the caches, counting
    its read and its write, after a warm-up copy (``timing.benchmark``)."""
    n_bytes = n_bytes or (2**30 if _is_cuda(device) else 2**27)  # 1 GiB / 128 MiB
    check_positive("n_bytes", n_bytes, integer=True)
    src = torch.ones(n_bytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    seconds = benchmark(lambda: dst.copy_(src), device, warmup=2, repeats=repeats)
    return 2 * src.nbytes / seconds


def measure_matmul_flops(device: str | torch.device = "cpu", n: int | None = None,
                         dtype: torch.dtype = torch.float32, repeats: int = 5) -> float:
    """Achieved matmul FLOP/s: an n x n by n x n product (2 n^3 FLOPs), after a warm-up;
    the best of ``repeats`` runs, since load on a shared machine only ever adds time."""
    n = n or (8192 if _is_cuda(device) else 768)
    check_positive("n", n, integer=True)
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, generator=gen, device=device).to(dtype)
    b = torch.randn(n, n, generator=gen, device=device).to(dtype)
    seconds = benchmark(lambda: a @ b, device, warmup=2, repeats=repeats, reduce=min)
    return 2 * n**3 / seconds


def measure_hardware(device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32,
                     repeats: int = 5) -> Hardware:
    """This machine as a roofline: its measured bandwidth and matmul FLOP/s in ``dtype``."""
    kind = torch.cuda.get_device_name(device) if _is_cuda(device) else "CPU"
    return Hardware(f"this machine ({kind}, measured)",
                    measure_matmul_flops(device, dtype=dtype, repeats=repeats),
                    measure_bandwidth(device, repeats=repeats))


# --- our model, measured ---------------------------------------------------------------
_FILLER = "KATHARINA:\nMoved! in good time: let him that moved you hither\nRemove you hence.\n\n"


def _prompt(length: int) -> str:
    return (_FILLER * (length // len(_FILLER) + 1))[:length]


def _median_timings(model, tok, prompts, max_new_tokens: int, repeats: int, **kw):
    runs = []
    for r in range(repeats):
        gens = generate(model, tok, prompts, max_new_tokens, temperature=0,
                            warmup=(r == 0), **kw)
        runs.append(gens[0].timings)
    return runs


def _spread(key: str, values: list[float]) -> dict:
    """The median of ``values`` as ``key``, the fastest and slowest as ``key``_low, _high."""
    return {key: statistics.median(values), f"{key}_low": min(values),
            f"{key}_high": max(values)}


def measure_model_costs(model, tok, device: str | torch.device = "cpu", *,
                        prompt_lengths=(1, 16, 64, 128, 255), prefill_batches=(1, 8),
                        contexts=(8, 64, 128, 192, 240), decode_steps: int = 8,
                        batch_sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256),
                        batch_prompt_len: int = 32, batch_new_tokens: int = 24,
                        repeats: int = 3, probe: bool = True) -> dict:
    """Time our model with the package's own generation loop, as plain numbers.

    - ``prefill``: prefill seconds for each prompt length and batch (``max_new_tokens=1``);
    - ``decode``: seconds per generated token at each context, with and without the cache;
    - ``batching``: decode tokens/s over the batch and seconds per token per request;
    - ``hardware``: this device's measured bandwidth and matmul FLOP/s (if ``probe``).
    Each entry is the median of ``repeats`` runs, the first with ``warmup=True``, with the
    fastest and slowest of them beside it (the keys ending ``_low`` and ``_high``).
    The model is moved to ``device`` and left there.
    """
    model = model.to(device)
    block = model.config.block_size
    for name, values in (("prompt_lengths", prompt_lengths), ("contexts", contexts)):
        bad = [v for v in values if not 1 <= v < block]
        if bad:
            raise ValueError(f"{name}={list(values)} is invalid: {bad} outside [1, {block - 1}]")
    if max(contexts) + decode_steps + 1 > block:
        raise ValueError(f"contexts up to {max(contexts)} plus decode_steps={decode_steps} "
                         f"exceed the context window of {block}")
    out = {"device": str(torch.device(device)), "n_params": model.num_params(),
           "bytes_per_weight": next(model.parameters()).element_size()}
    if probe:
        hw = measure_hardware(device, dtype=next(model.parameters()).dtype)
        out["hardware"] = {"name": hw.name, "peak_flops": hw.peak_flops, "bandwidth": hw.bandwidth}

    out["prefill"] = []
    for batch in prefill_batches:
        for n in prompt_lengths:
            runs = _median_timings(model, tok, [_prompt(n)] * batch, 1, repeats)
            out["prefill"].append({"prompt_len": n, "batch": batch,
                                   **_spread("seconds", [t.prefill_s for t in runs])})

    out["decode"] = []
    for use_cache in (True, False):
        for c in contexts:
            runs = _median_timings(model, tok, [_prompt(c)], decode_steps + 1, repeats,
                                   use_cache=use_cache)
            out["decode"].append({
                "context": c + decode_steps // 2, "use_cache": use_cache,
                **_spread("seconds_per_token", [t.time_per_output_token_s for t in runs])})

    out["batching"] = []
    for batch in batch_sizes:
        runs = _median_timings(model, tok, [_prompt(batch_prompt_len)] * batch,
                               batch_new_tokens + 1, repeats)
        timed = _spread("seconds_per_token", [t.time_per_output_token_s for t in runs])
        out["batching"].append({"batch": batch, "context": batch_prompt_len + batch_new_tokens // 2,
                                **timed, "tokens_per_s": batch / timed["seconds_per_token"]})
    return out
