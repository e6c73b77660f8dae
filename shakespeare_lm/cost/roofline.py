"""The roofline model of a forward pass, as formulas: FLOPs, bytes, time and the binding limit.

See ``shakespeare_lm.cost`` for the model and how it counts; this module is pure
arithmetic on ``Hardware`` and ``ModelSpec`` (no torch, no timing, no figures).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..checks import check_positive
from ..model import PRESETS, ModelConfig

# --- sizes ---------------------------------------------------------------------------
GB, GiB = 1e9, 2**30  # the book's GB is decimal (10^9 bytes); a GiB is 2^30 bytes
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5}


def weight_bytes(n_params: float, dtype: str | float = "fp32") -> float:
    """Bytes of ``n_params`` weights stored as ``dtype``: a name in ``DTYPE_BYTES`` ("bf16")
    or a number of bytes per weight (2)."""
    check_positive("n_params", n_params)
    if isinstance(dtype, str):
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"dtype={dtype!r} is unknown: use one of {sorted(DTYPE_BYTES)} "
                             "or a number of bytes per weight")
        dtype = DTYPE_BYTES[dtype]
    check_positive("bytes per weight", dtype)
    return n_params * dtype


# --- KV cache memory -----------------------------------------------------------------
def kv_cache_bytes(n_layer: int, d_model: int, n_tokens: int, batch: int = 1,
                   bytes_per_number: float = 4, n_kv_heads: int | None = None,
                   n_head: int | None = None) -> float:
    """Bytes of keys and values cached for ``batch`` sequences of ``n_tokens`` tokens.

    2 (key and value) x layers x d_model x bytes per number, per token; with grouped-query
    attention (Ainslie et al. 2023) only n_kv_heads of the n_head heads keep keys and values,
    so the cache shrinks by n_kv_heads / n_head.
    """
    check_positive("n_layer", n_layer, integer=True)
    check_positive("d_model", d_model, integer=True)
    check_positive("n_tokens", n_tokens, integer=True, allow_zero=True)
    check_positive("batch", batch, integer=True, allow_zero=True)
    check_positive("bytes_per_number", bytes_per_number)
    if (n_kv_heads is None) != (n_head is None):
        raise ValueError(f"n_kv_heads={n_kv_heads!r} and n_head={n_head!r}: give both "
                         "(grouped-query attention) or neither (every head keeps its keys)")
    kv_width = d_model
    if n_head is not None:
        check_positive("n_head", n_head, integer=True)
        check_positive("n_kv_heads", n_kv_heads, integer=True)
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
        check_positive("peak_flops", self.peak_flops)
        check_positive("bandwidth", self.bandwidth)
        if self.memory_bytes is not None:
            check_positive("memory_bytes", self.memory_bytes)
        check_positive("overhead_s", self.overhead_s, allow_zero=True)

    @property
    def ridge_intensity(self) -> float:
        """FLOPs per byte at which compute and memory take equally long."""
        return self.peak_flops / self.bandwidth

    def parallel(self, n: int) -> Hardware:
        """n of these devices sharing the work perfectly (tensor parallelism, no comms)."""
        check_positive("n", n, integer=True)
        mem = None if self.memory_bytes is None else self.memory_bytes * n
        return replace(self, name=f"{n} x {self.name}", peak_flops=self.peak_flops * n,
                       bandwidth=self.bandwidth * n, memory_bytes=mem)


HARDWARE: dict[str, Hardware] = {
    # round illustrative figures (no memory size given)
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
        check_positive("n_params", self.n_params)
        check_positive("bytes_per_weight", self.bytes_per_weight)
        if self.kv_bytes_per_number is not None:
            check_positive("kv_bytes_per_number", self.kv_bytes_per_number)
        _ = self.kv_bytes_per_token  # validates n_layer, d_model and the heads

    @property
    def weight_bytes(self) -> float:
        """Bytes of the weights (``weight_bytes(n_params, bytes_per_weight)``)."""
        return weight_bytes(self.n_params, self.bytes_per_weight)

    @property
    def kv_bytes_per_token(self) -> float:
        kv_bytes = (self.bytes_per_weight if self.kv_bytes_per_number is None
                    else self.kv_bytes_per_number)
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
    # the base model of the original transformer (Vaswani et al. 2017, table 3): 65M
    # weights (encoder and decoder) in fp32; its 6 decoder layers of width 512 (8 heads)
    # cache keys and values. The one parameter count of a "6 x 512 base model" in the book.
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
    check_positive("tokens", tokens, integer=True)
    check_positive("batch", batch, integer=True)
    check_positive("context", context, integer=True, allow_zero=True)
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
    check_positive("tokens", tokens, integer=True)
    check_positive("batch", batch, integer=True)
    check_positive("context", context, integer=True, allow_zero=True)
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
    check_positive("new_tokens", new_tokens, integer=True)
    total = time_to_first_token(spec, hw, prompt_len, batch, weights_only)
    for i in range(1, new_tokens):
        total += decode_cost(spec, hw, prompt_len + i, batch, weights_only).seconds
    return total


def knee_batch(spec: ModelSpec, hw: Hardware, context: int = 0,
               weights_only: bool = False) -> float:
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
    check_positive("memory_bytes", memory_bytes)
    check_positive("context", context, integer=True)
    free = memory_bytes - spec.weight_bytes
    return max(0, int(free // (spec.kv_bytes_per_token * context)))
