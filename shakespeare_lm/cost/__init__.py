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
not counted. ``weights_only=True`` counts the weights alone, as the classic back-of-the-
envelope examples do.

The wing has one module per job, and this module re-exports the public names of the first
two, so ``from shakespeare_lm import cost as rf`` gives all of them:

- ``cost.roofline``: the formulas (``Hardware``, ``ModelSpec``, presets, pass costs);
- ``cost.measure``: probes of this machine and timings of our model;
- ``cost.serving``: a simulation of static and continuous batching over a request stream.

The roofline's figures (and ``RooflineChart``, the Vega-Lite copy of the formulas) are
presentation: ``shakespeare_lm.site.roofline_charts``.
"""


from .measure import measure_bandwidth, measure_hardware, measure_matmul_flops, measure_model_costs
from .roofline import (DTYPE_BYTES, GB, HARDWARE, MODELS, GiB, Hardware, ModelSpec, PassCost,
                       answer_seconds, attainable_flops, count_params, decode_cost,
                       decode_tokens_per_s, knee_batch, kv_cache_bytes, max_batch_for_memory,
                       pass_bytes, pass_cost, pass_flops, prefill_cost, throughput_knee,
                       time_to_first_token, weight_bytes)

__all__ = [
    "DTYPE_BYTES", "GB", "GiB", "weight_bytes",
    "HARDWARE", "MODELS", "Hardware", "ModelSpec", "PassCost", "answer_seconds",
    "attainable_flops", "count_params", "decode_cost", "decode_tokens_per_s", "knee_batch",
    "kv_cache_bytes", "max_batch_for_memory", "pass_bytes", "pass_cost", "pass_flops",
    "prefill_cost", "throughput_knee", "time_to_first_token",
    "measure_bandwidth", "measure_hardware", "measure_matmul_flops", "measure_model_costs",
]
