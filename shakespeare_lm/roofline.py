"""What generation costs: a roofline model of prefill and decode, and probes of this machine.

A forward pass does some floating-point operations (FLOPs) and moves some bytes from memory.
On hardware with peak ``peak_flops`` FLOP/s and ``bandwidth`` bytes/s, it takes at least

    max(FLOPs / peak_flops, bytes / bandwidth)              (Williams et al. 2009)

and whichever term is larger is the *binding limit*. Their ratio, FLOPs per byte, is the
pass's *arithmetic intensity*; the hardware's ``peak_flops / bandwidth`` is its ridge point.
Prefill runs the whole prompt through the weights in one pass (many FLOPs per weight read);
decode runs one token per sequence (two FLOPs per weight read), so it is memory-bound until
the batch is large (Pope et al. 2023).

Counting: every weight is read once per pass and used for 2 FLOPs per token (a multiply and
an add); attention adds 4 * d_model FLOPs per layer for each (query, visible key) pair, and
the KV cache adds its reads (the cached context) and writes (the new tokens). Activations are
not counted. ``weights_only=True`` counts the weights alone, as the source text's worked
examples do.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

import torch

from .model import PRESETS, ModelConfig
from .timing import benchmark


def _check_positive(name: str, value, integer: bool = False, allow_zero: bool = False) -> None:
    ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
    low_ok = value >= 0 if allow_zero else value > 0
    if isinstance(value, bool) or not ok_type or not low_ok or (not integer and not math.isfinite(value)):
        kind = "an integer" if integer else "a finite number"
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}={value!r} is invalid: {name} must be {kind} {bound}")


# --- KV cache memory -----------------------------------------------------------------
def kv_cache_bytes(n_layer: int, d_model: int, n_tokens: int, batch: int = 1,
                   bytes_per_number: float = 4, n_kv_heads: int | None = None,
                   n_head: int | None = None) -> float:
    """Bytes of keys and values cached for ``batch`` sequences of ``n_tokens`` tokens.

    2 (key and value) x layers x d_model x bytes per number, per token; with grouped-query
    attention (Ainslie et al. 2023) only n_kv_heads of the n_head heads keep keys and values,
    so the cache shrinks by n_kv_heads / n_head.
    """
    _check_positive("n_layer", n_layer, integer=True)
    _check_positive("d_model", d_model, integer=True)
    _check_positive("n_tokens", n_tokens, integer=True, allow_zero=True)
    _check_positive("batch", batch, integer=True, allow_zero=True)
    _check_positive("bytes_per_number", bytes_per_number)
    if (n_kv_heads is None) != (n_head is None):
        raise ValueError(f"n_kv_heads={n_kv_heads!r} and n_head={n_head!r}: give both "
                         "(grouped-query attention) or neither (every head keeps its keys)")
    kv_width = d_model
    if n_head is not None:
        _check_positive("n_head", n_head, integer=True)
        _check_positive("n_kv_heads", n_kv_heads, integer=True)
        if d_model % n_head or n_head % n_kv_heads:
            raise ValueError(f"n_head={n_head}, n_kv_heads={n_kv_heads}, d_model={d_model}: "
                             "n_head must divide d_model and n_kv_heads must divide n_head")
        kv_width = d_model // n_head * n_kv_heads
    return 2 * n_layer * kv_width * bytes_per_number * n_tokens * batch


# --- presets -------------------------------------------------------------------------
@dataclass(frozen=True)
class Hardware:
    """An accelerator as the roofline sees it: peak FLOP/s, memory bandwidth (bytes/s),
    memory size (bytes, or None if unknown) and a fixed cost per forward pass (seconds)."""

    name: str
    peak_flops: float
    bandwidth: float
    memory_bytes: float | None = None
    overhead_s: float = 0.0

    def __post_init__(self):
        _check_positive("peak_flops", self.peak_flops)
        _check_positive("bandwidth", self.bandwidth)
        if self.memory_bytes is not None:
            _check_positive("memory_bytes", self.memory_bytes)
        _check_positive("overhead_s", self.overhead_s, allow_zero=True)

    @property
    def ridge_intensity(self) -> float:
        """FLOPs per byte at which compute and memory take equally long."""
        return self.peak_flops / self.bandwidth

    def parallel(self, n: int) -> Hardware:
        """n of these devices sharing the work perfectly (tensor parallelism, no comms)."""
        _check_positive("n", n, integer=True)
        mem = None if self.memory_bytes is None else self.memory_bytes * n
        return replace(self, name=f"{n} x {self.name}", peak_flops=self.peak_flops * n,
                       bandwidth=self.bandwidth * n, memory_bytes=mem)


HARDWARE: dict[str, Hardware] = {
    # the source text's round illustrative figures (its memory size is not given)
    "round-gpu": Hardware("illustrative GPU (2,000 GB/s, 500 TFLOP/s)", 500e12, 2000e9),
    # NVIDIA H100 SXM: dense 16-bit tensor-core peak, HBM3 bandwidth, 80 GB
    "h100": Hardware("H100 SXM", 989e12, 3.35e12, 80e9),
    # NVIDIA H200: the H100's compute with 4.8 TB/s HBM3e, 141 GB
    "h200": Hardware("H200", 989e12, 4.8e12, 141e9),
}


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer as the roofline sees it.

    n_params weights of ``bytes_per_weight`` bytes; n_layer layers of width d_model; n_head
    query heads of which n_kv_heads keep keys and values; the cache stores
    ``kv_bytes_per_number`` bytes per number (default: the weights' precision).
    """

    name: str
    n_params: float
    n_layer: int
    d_model: int
    bytes_per_weight: float = 2
    n_head: int = 1
    n_kv_heads: int | None = None
    kv_bytes_per_number: float | None = None

    def __post_init__(self):
        _check_positive("n_params", self.n_params)
        _check_positive("bytes_per_weight", self.bytes_per_weight)
        if self.kv_bytes_per_number is not None:
            _check_positive("kv_bytes_per_number", self.kv_bytes_per_number)
        self.kv_bytes_per_token  # validates n_layer, d_model and the heads

    @property
    def weight_bytes(self) -> float:
        return self.n_params * self.bytes_per_weight

    @property
    def kv_bytes_per_token(self) -> float:
        kv_bytes = self.bytes_per_weight if self.kv_bytes_per_number is None else self.kv_bytes_per_number
        n_kv = self.n_head if self.n_kv_heads is None else self.n_kv_heads
        return kv_cache_bytes(self.n_layer, self.d_model, 1, 1, kv_bytes, n_kv, self.n_head)

    def with_(self, **changes) -> ModelSpec:
        """A copy with some fields changed (e.g. ``bytes_per_weight=1`` for 8-bit weights)."""
        return replace(self, **changes)

    @classmethod
    def from_config(cls, cfg: ModelConfig, name: str = "this book's model",
                    bytes_per_weight: float = 4) -> ModelSpec:
        """The spec of one of our models (fp32 by default), counting parameters exactly."""
        return cls(name, count_params(cfg), cfg.n_layer, cfg.d_model, bytes_per_weight, cfg.n_head)

    @classmethod
    def from_model(cls, model, name: str = "this book's model") -> ModelSpec:
        p = next(model.parameters())
        return cls(name, model.num_params(), model.config.n_layer, model.config.d_model,
                   p.element_size(), model.config.n_head)


def count_params(cfg: ModelConfig) -> int:
    """Parameters of ``Transformer(cfg)``: tied token embedding, positions, blocks, final norm."""
    C = cfg.d_model
    per_block = 12 * C * C + 13 * C  # qkv 3C^2+3C, proj C^2+C, MLP 8C^2+5C, two LayerNorms 4C
    return cfg.vocab_size * C + cfg.block_size * C + cfg.n_layer * per_block + 2 * C


MODELS: dict[str, ModelSpec] = {
    "shakespeare": ModelSpec.from_config(PRESETS["shakespeare"]),
    # the source text's base model: 65M weights in fp32, 6 layers of width 512, 8 heads
    "base-65m": ModelSpec("65M base model (fp32)", 65e6, 6, 512, 4, 8),
    # the source text's round 7B: 7e9 weights in 16 bits, Llama-2-7B-like shape
    "7b": ModelSpec("7B model (16-bit)", 7e9, 32, 4096, 2, 32),
    # Llama 2 7B (Touvron et al. 2023): 6.74e9 weights, 32 layers, d_model 4096, 32 heads
    "llama2-7b": ModelSpec("Llama-2-7B-like (16-bit)", 6.74e9, 32, 4096, 2, 32, 32),
    # a 70B model (Llama-2-70B-like): 80 layers, d_model 8192, 64 query heads, 8 KV heads
    "70b": ModelSpec("70B model (16-bit, 8 KV heads)", 70e9, 80, 8192, 2, 64, 8),
}


# --- one forward pass ----------------------------------------------------------------
@dataclass(frozen=True)
class PassCost:
    """FLOPs, bytes and time of one forward pass on some hardware."""

    flops: float
    bytes: float
    compute_s: float     # FLOPs / peak FLOP/s
    memory_s: float      # bytes / bandwidth
    overhead_s: float = 0.0

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s) + self.overhead_s

    @property
    def intensity(self) -> float:
        """Arithmetic intensity: FLOPs per byte moved."""
        return self.flops / self.bytes

    @property
    def bound(self) -> str:
        """The binding limit: "compute" or "memory"."""
        return "compute" if self.compute_s > self.memory_s else "memory"

    @property
    def compute_utilization(self) -> float:
        """Fraction of the peak arithmetic the pass uses while it runs."""
        return self.compute_s / self.seconds


def pass_flops(spec: ModelSpec, tokens: int, batch: int = 1, context: int = 0,
               weights_only: bool = False) -> float:
    """FLOPs to run ``tokens`` new tokens of each of ``batch`` sequences that already have
    ``context`` tokens cached: 2 per weight per token, plus attention's 4 * d_model per layer
    for every (query, visible key) pair."""
    _check_positive("tokens", tokens, integer=True)
    _check_positive("batch", batch, integer=True)
    _check_positive("context", context, integer=True, allow_zero=True)
    flops = 2 * spec.n_params * tokens * batch
    if not weights_only:
        # query i (0-based) of this chunk sees context + i + 1 keys
        pairs = tokens * context + tokens * (tokens + 1) // 2
        flops += 4 * spec.n_layer * spec.d_model * pairs * batch
    return flops


def pass_bytes(spec: ModelSpec, tokens: int, batch: int = 1, context: int = 0,
               weights_only: bool = False) -> float:
    """Bytes moved by that pass: the weights once, the cached context's keys and values read,
    the new tokens' keys and values written."""
    _check_positive("tokens", tokens, integer=True)
    _check_positive("batch", batch, integer=True)
    _check_positive("context", context, integer=True, allow_zero=True)
    moved = spec.weight_bytes
    if not weights_only:
        moved += spec.kv_bytes_per_token * (context + tokens) * batch
    return moved


def pass_cost(spec: ModelSpec, hw: Hardware, tokens: int, batch: int = 1, context: int = 0,
              weights_only: bool = False) -> PassCost:
    """The roofline cost of one forward pass (see ``pass_flops`` and ``pass_bytes``)."""
    flops = pass_flops(spec, tokens, batch, context, weights_only)
    moved = pass_bytes(spec, tokens, batch, context, weights_only)
    return PassCost(flops, moved, flops / hw.peak_flops, moved / hw.bandwidth, hw.overhead_s)


def prefill_cost(spec: ModelSpec, hw: Hardware, prompt_len: int, batch: int = 1,
                 weights_only: bool = False) -> PassCost:
    """One pass over a ``prompt_len``-token prompt for each of ``batch`` sequences."""
    return pass_cost(spec, hw, prompt_len, batch, 0, weights_only)


def decode_cost(spec: ModelSpec, hw: Hardware, context: int = 0, batch: int = 1,
                weights_only: bool = False) -> PassCost:
    """One decode step: one new token per sequence, ``context`` tokens already cached."""
    return pass_cost(spec, hw, 1, batch, context, weights_only)


def time_to_first_token(spec: ModelSpec, hw: Hardware, prompt_len: int, batch: int = 1,
                        weights_only: bool = False) -> float:
    """Seconds until the first token: the prefill pass (choosing the token is not counted)."""
    return prefill_cost(spec, hw, prompt_len, batch, weights_only).seconds


def decode_tokens_per_s(spec: ModelSpec, hw: Hardware, context: int = 0, batch: int = 1,
                        weights_only: bool = False) -> float:
    """Tokens per second over the whole batch while decoding at ``context``."""
    return batch / decode_cost(spec, hw, context, batch, weights_only).seconds


def answer_seconds(spec: ModelSpec, hw: Hardware, prompt_len: int, new_tokens: int,
                   batch: int = 1, weights_only: bool = False) -> float:
    """Seconds to produce ``new_tokens`` tokens after a prompt: prefill yields the first one,
    then ``new_tokens - 1`` decode steps, each reading a context one token longer."""
    _check_positive("new_tokens", new_tokens, integer=True)
    total = time_to_first_token(spec, hw, prompt_len, batch, weights_only)
    for i in range(1, new_tokens):
        total += decode_cost(spec, hw, prompt_len + i, batch, weights_only).seconds
    return total


def knee_batch(spec: ModelSpec, hw: Hardware, context: int = 0, weights_only: bool = False) -> float:
    """The batch size at which a decode step turns from memory- to compute-bound (may be
    fractional; ``inf`` if the KV reads grow as fast as the arithmetic and it never does).

    A step for B sequences costs B * f FLOPs and W + B * k bytes, so compute time catches
    up with memory time at B = (W / bandwidth) / (f / peak - k / bandwidth).
    """
    f = pass_flops(spec, 1, 1, context, weights_only)
    k = pass_bytes(spec, 1, 1, context, weights_only) - spec.weight_bytes
    gain = f / hw.peak_flops - k / hw.bandwidth
    return spec.weight_bytes / hw.bandwidth / gain if gain > 0 else math.inf


def throughput_knee(batches, tokens_per_s, fraction: float = 0.8) -> int:
    """The smallest batch whose throughput reaches ``fraction`` of the best one measured: past
    it, a bigger batch buys little throughput and costs latency."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction={fraction!r} is invalid: it must be in (0, 1]")
    if len(batches) != len(tokens_per_s) or not batches:
        raise ValueError(f"batches ({len(batches)}) and tokens_per_s ({len(tokens_per_s)}) "
                         "must be non-empty and of the same length")
    best = max(tokens_per_s)
    return min(b for b, t in zip(batches, tokens_per_s) if t >= fraction * best)


def attainable_flops(hw: Hardware, intensity: float) -> float:
    """The roofline: the most FLOP/s a kernel of this arithmetic intensity can reach."""
    return min(hw.peak_flops, intensity * hw.bandwidth)


def max_batch_for_memory(spec: ModelSpec, memory_bytes: float, context: int) -> int:
    """How many sequences of ``context`` tokens fit their KV cache beside the weights."""
    _check_positive("memory_bytes", memory_bytes)
    _check_positive("context", context, integer=True)
    free = memory_bytes - spec.weight_bytes
    return max(0, int(free // (spec.kv_bytes_per_token * context)))


# --- probes of this machine ------------------------------------------------------------
def _is_cuda(device) -> bool:
    return torch.device(device).type == "cuda"


def measure_bandwidth(device: str | torch.device = "cpu", n_bytes: int | None = None,
                      repeats: int = 5) -> float:
    """Achieved memory bandwidth (bytes/s): copy a buffer larger than the caches, counting
    its read and its write, after a warm-up copy (``timing.benchmark``)."""
    n_bytes = n_bytes or (2**30 if _is_cuda(device) else 2**27)  # 1 GiB / 128 MiB
    _check_positive("n_bytes", n_bytes, integer=True)
    src = torch.ones(n_bytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    seconds = benchmark(lambda: dst.copy_(src), device, warmup=2, repeats=repeats)
    return 2 * src.nbytes / seconds


def measure_matmul_flops(device: str | torch.device = "cpu", n: int | None = None,
                         dtype: torch.dtype = torch.float32, repeats: int = 5) -> float:
    """Achieved matmul FLOP/s: an n x n by n x n product (2 n^3 FLOPs), after a warm-up."""
    n = n or (8192 if _is_cuda(device) else 768)
    _check_positive("n", n, integer=True)
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, generator=gen, device=device).to(dtype)
    b = torch.randn(n, n, generator=gen, device=device).to(dtype)
    seconds = benchmark(lambda: a @ b, device, warmup=2, repeats=repeats)
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
    import shakespeare_lm as slm  # late import: generate imports nothing from here

    runs = []
    for r in range(repeats):
        gens = slm.generate(model, tok, prompts, max_new_tokens, temperature=0,
                            warmup=(r == 0), **kw)
        runs.append(gens[0].timings)
    return runs


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
    Each entry is the median of ``repeats`` runs, the first with ``warmup=True``.
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
                                   "seconds": statistics.median(t.prefill_s for t in runs)})

    out["decode"] = []
    for use_cache in (True, False):
        for c in contexts:
            runs = _median_timings(model, tok, [_prompt(c)], decode_steps + 1, repeats,
                                   use_cache=use_cache)
            out["decode"].append({
                "context": c + decode_steps // 2, "use_cache": use_cache,
                "seconds_per_token": statistics.median(t.time_per_output_token_s for t in runs)})

    out["batching"] = []
    for batch in batch_sizes:
        runs = _median_timings(model, tok, [_prompt(batch_prompt_len)] * batch,
                               batch_new_tokens + 1, repeats)
        per_token = statistics.median(t.time_per_output_token_s for t in runs)
        out["batching"].append({"batch": batch, "context": batch_prompt_len + batch_new_tokens // 2,
                                "seconds_per_token": per_token, "tokens_per_s": batch / per_token})
    return out


# --- figures: kernel-free sliders for the static site ----------------------------------
EXPLORER_MODELS = ("shakespeare", "base-65m", "7b", "70b")
_INTENSITIES = [10 ** (e / 4) for e in range(-8, 25)]  # 0.01 .. 1e6 FLOPs per byte


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def roofline_chart(spec: ModelSpec, hw: Hardware, prompt_len: int, batch: int = 1) -> dict:
    """A ``figures`` chart spec: the roofline of ``hw`` with the operating points of a prefill
    of ``batch`` prompts of ``prompt_len`` tokens and of the decode step that follows it."""
    pre = prefill_cost(spec, hw, prompt_len, batch)
    dec = decode_cost(spec, hw, prompt_len, batch)
    caption = (f"prefill {batch} x {prompt_len} tokens: {_fmt(pre.seconds * 1e3)} ms, "
               f"{pre.bound}-bound at {_fmt(pre.intensity)} FLOP/byte\n"
               f"decode step at context {prompt_len}: {_fmt(dec.seconds * 1e3)} ms, "
               f"{dec.bound}-bound at {_fmt(dec.intensity)} FLOP/byte, "
               f"{_fmt(batch / dec.seconds)} tokens/s\n"
               f"ridge point {_fmt(hw.ridge_intensity)} FLOP/byte")
    return {
        "title": f"{spec.name} on {hw.name}",
        "xlabel": "arithmetic intensity (FLOP per byte)", "ylabel": "FLOP/s",
        "xlog": True, "ylog": True,
        "lines": [{"x": _INTENSITIES, "y": [attainable_flops(hw, x) for x in _INTENSITIES],
                   "name": "roofline", "color": "#444"}],
        "points": [{"x": pre.intensity, "y": pre.flops / pre.seconds, "label": "prefill",
                    "color": "#1f77b4"},
                   {"x": dec.intensity, "y": dec.flops / dec.seconds, "label": "decode",
                    "color": "#d62728"}],
        "vlines": [{"x": hw.ridge_intensity, "label": "ridge"}],
        "caption": caption,
    }


def explorer_setting(model: str, bytes_per_weight: float, bandwidth_gbs: float,
                     peak_tflops: float) -> tuple[ModelSpec, Hardware]:
    """The ModelSpec and Hardware of one setting of the roofline explorer's sliders (the KV
    cache is stored with the weights' precision)."""
    spec = MODELS[model].with_(bytes_per_weight=bytes_per_weight, kv_bytes_per_number=None)
    hw = Hardware(f"{_fmt(bandwidth_gbs)} GB/s, {_fmt(peak_tflops)} TFLOP/s",
                  peak_tflops * 1e12, bandwidth_gbs * 1e9)
    return spec, hw


def explorer_chart(model: str = "7b", bytes_per_weight: float = 2, prompt_len: int = 1000,
                   batch: int = 1, bandwidth_gbs: float = 2000, peak_tflops: float = 500) -> dict:
    """``roofline_chart`` for one setting of the explorer's sliders (see ``ROOFLINE_JS``)."""
    spec, hw = explorer_setting(model, bytes_per_weight, bandwidth_gbs, peak_tflops)
    return roofline_chart(spec, hw, prompt_len, batch)


# The same chart in JavaScript, for the static page: tests/test_roofline.py checks it
# against ``explorer_chart`` in node.
ROOFLINE_JS = r"""
var m = data.models[values.model], bpw = values.bytes_per_weight;
var peak = values.peak_tflops * 1e12, bw = values.bandwidth_gbs * 1e9;
var P = values.prompt_len, B = values.batch;
var kvPerToken = 2 * m.n_layer * (m.d_model / m.n_head * m.n_kv_heads) * bpw;
function cost(tokens, context) {
  var pairs = tokens * context + tokens * (tokens + 1) / 2;
  var flops = 2 * m.n_params * tokens * B + 4 * m.n_layer * m.d_model * pairs * B;
  var bytes = m.n_params * bpw + kvPerToken * (context + tokens) * B;
  var c = flops / peak, mem = bytes / bw, s = Math.max(c, mem);
  return {flops: flops, bytes: bytes, seconds: s, intensity: flops / bytes,
          bound: c > mem ? "compute" : "memory"};
}
function f(x) { return String(+x.toPrecision(3)); }  // 3 significant digits
var pre = cost(P, 0), dec = cost(1, P), ridge = peak / bw;
return {
  title: m.name + " on " + f(values.bandwidth_gbs) + " GB/s, " + f(values.peak_tflops) + " TFLOP/s",
  xlabel: "arithmetic intensity (FLOP per byte)", ylabel: "FLOP/s", xlog: true, ylog: true,
  lines: [{x: data.intensities, y: data.intensities.map(function (x) { return Math.min(peak, x * bw); }),
           name: "roofline", color: "#444"}],
  points: [{x: pre.intensity, y: pre.flops / pre.seconds, label: "prefill", color: "#1f77b4"},
           {x: dec.intensity, y: dec.flops / dec.seconds, label: "decode", color: "#d62728"}],
  vlines: [{x: ridge, label: "ridge"}],
  caption: "prefill " + B + " x " + P + " tokens: " + f(pre.seconds * 1e3) + " ms, " + pre.bound +
    "-bound at " + f(pre.intensity) + " FLOP/byte\ndecode step at context " + P + ": " +
    f(dec.seconds * 1e3) + " ms, " + dec.bound + "-bound at " + f(dec.intensity) +
    " FLOP/byte, " + f(B / dec.seconds) + " tokens/s\nridge point " + f(ridge) + " FLOP/byte"
};
"""

EXPLORER_SLIDERS = {
    "model": (EXPLORER_MODELS, "7b"),
    "bytes_per_weight": ((0.5, 1, 2, 4), 2),
    "prompt_len": ((1, 16, 128, 1000, 4096, 16384), 1000),
    "batch": ((1, 4, 16, 64, 256, 1024), 1),
    "bandwidth_gbs": ((50, 500, 1000, 2000, 3350, 4800), 2000),
    "peak_tflops": ((1, 10, 100, 500, 989, 2000), 500),
}


def roofline_explorer():
    """A kernel-free ``figures.SliderFigure``: the roofline and the prefill and decode
    operating points for a model, bytes per weight, prompt length, batch, bandwidth, FLOP/s."""
    from .figures import Slider, SliderFigure

    labels = {"model": "model", "bytes_per_weight": "bytes per weight",
              "prompt_len": "prompt length", "batch": "batch size",
              "bandwidth_gbs": "bandwidth (GB/s)", "peak_tflops": "peak TFLOP/s"}
    sliders = [Slider(name, values, value, labels[name],
                      fmt=(lambda k: MODELS[k].name) if name == "model" else str)
               for name, (values, value) in EXPLORER_SLIDERS.items()]
    models = {k: {"name": MODELS[k].name, "n_params": MODELS[k].n_params,
                  "n_layer": MODELS[k].n_layer, "d_model": MODELS[k].d_model,
                  "n_head": MODELS[k].n_head,
                  "n_kv_heads": MODELS[k].n_kv_heads or MODELS[k].n_head}
              for k in EXPLORER_MODELS}
    return SliderFigure(sliders, render_js=ROOFLINE_JS,
                        data={"models": models, "intensities": _INTENSITIES},
                        width=720, height=380)


def prefill_decode_chart(spec: ModelSpec, hw: Hardware, prompt_len: int, step: int,
                         n_decode: int = 8) -> dict:
    """Per step (prefill, then ``n_decode`` decode steps), the fraction of the weights read
    and the fraction of the step's time the arithmetic units are busy; steps after ``step``
    are not drawn yet."""
    costs = [prefill_cost(spec, hw, prompt_len)]
    costs += [decode_cost(spec, hw, prompt_len + i) for i in range(n_decode)]
    shown = [i <= step for i in range(len(costs))]
    now = costs[step]
    what = (f"prefill: {prompt_len} tokens in one pass" if step == 0
            else f"decode step {step}: 1 token, {prompt_len + step - 1} cached")
    return {
        "title": f"{spec.name} on {hw.name}, prompt of {prompt_len} tokens",
        "categories": ["prefill"] + [f"d{i}" for i in range(1, n_decode + 1)],
        "ylabel": "fraction", "ylim": [0, 1.05],
        "bars": [{"y": [1.0 if s else 0.0 for s in shown], "name": "weights read (all of them)",
                  "color": "#7f7f7f", "fill": False},
                 {"y": [c.compute_utilization if s else 0.0 for c, s in zip(costs, shown)],
                  "name": "arithmetic units busy", "color": "#1f77b4"}],
        "caption": (f"{what}: reads {_fmt(now.bytes / 1e9)} GB, does {_fmt(now.flops / 1e12)} "
                    f"TFLOP, takes {_fmt(now.seconds * 1e3)} ms ({now.bound}-bound); "
                    f"the arithmetic units are busy {_fmt(100 * now.compute_utilization)}% of it"),
    }


def prefill_decode_figure(spec: ModelSpec | None = None, hw: Hardware | None = None,
                          prompt_lens=(10, 100, 1000), n_decode: int = 8):
    """A kernel-free stepped figure of ``prefill_decode_chart`` (sliders: prompt length, step)."""
    from .figures import Slider, SliderFigure

    spec = spec or MODELS["7b"]
    hw = hw or HARDWARE["round-gpu"]
    sliders = [Slider("prompt_len", prompt_lens, prompt_lens[-1], "prompt length"),
               Slider("step", range(n_decode + 1), 0, "step",
                      fmt=lambda s: "prefill" if s == 0 else f"decode {s}")]
    return SliderFigure(sliders, frame_fn=lambda prompt_len, step: prefill_decode_chart(
        spec, hw, prompt_len, step, n_decode), width=680, height=330)
