"""Record what llama.cpp's samplers do, as test data for ours.

llama.cpp (through ``llama-cpp-python``'s low-level API, which applies a sampler to an array
of token data) is run on a pool of seeded logit vectors, with each setting of top-nσ, XTC,
DRY, mirostat 2.0 and the default chain with temperature last. What it keeps, and the logits
it leaves, are written to a JSON file that ``tests/interop/test_llama_cpp_parity.py`` reads:
the tests need no llama.cpp, and ``make book`` never compiles it. Rerun wherever
``llama-cpp-python`` is installed (it compiles llama.cpp: a few minutes), from the
repository root:

    python shakespeare_lm/interop/llama_samplers.py --out tests/data/llama_cpp_samplers.json

Run as a file, it imports only numpy and ``llama_cpp``, so it also runs in a bare
environment that has llama-cpp-python and none of this package's dependencies. The data
committed were recorded with llama-cpp-python 0.3.36 (its JSON says so).
"""

from __future__ import annotations

import argparse
import ctypes
import json
from pathlib import Path

import numpy as np

VOCAB = 63          # our model's vocabulary size
POOL = 60           # logit vectors
SEED = 20261204


def logit_pool(n: int = POOL, vocab: int = VOCAB, seed: int = SEED) -> np.ndarray:
    """Seeded logit vectors of several shapes: flat, peaked, two-headed, with ties."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        kind = i % 4
        x = rng.normal(size=vocab) * [0.5, 2.0, 4.0, 1.5][kind]
        if kind == 2:
            x[rng.integers(vocab)] += 6.0                       # one clear favourite
        if kind == 3:
            top = rng.choice(vocab, 2, replace=False)
            x[top] = x.max() + 1.0                              # two tied favourites
        rows.append(x.astype(np.float32))
    return np.stack(rows)


class LlamaSamplers:
    """llama.cpp's samplers applied to one logit vector at a time."""

    def __init__(self):
        import llama_cpp

        self.ll = llama_cpp
        self.version = getattr(llama_cpp, "__version__", "unknown")

    def run(self, sampler, logits: np.ndarray, history=()) -> dict:
        """Apply ``sampler`` (accepting ``history`` first) to ``logits``; the tokens it
        keeps, in id order, with their logits, and the token it selected (or None)."""
        ll = self.ll
        for token in history:
            ll.llama_sampler_accept(sampler, int(token))
        data = (ll.llama_token_data * len(logits))(
            *[ll.llama_token_data(i, float(v), 0.0) for i, v in enumerate(logits)])
        arr = ll.llama_token_data_array(ctypes.cast(data, ll.llama_token_data_p),
                                        len(logits), -1, False)
        ll.llama_sampler_apply(sampler, ctypes.byref(arr))
        out = {int(arr.data[i].id): float(arr.data[i].logit) for i in range(arr.size)
               if np.isfinite(arr.data[i].logit)}
        selected = int(arr.data[arr.selected].id) if arr.selected >= 0 else None
        return {"kept": sorted(out), "logits": [float(f"{out[k]:.7g}") for k in sorted(out)],
                "selected": selected}

    def chain(self, *samplers):
        ll = self.ll
        chain = ll.llama_sampler_chain_init(ll.llama_sampler_chain_default_params())
        for s in samplers:
            ll.llama_sampler_chain_add(chain, s)
        return chain


def record(pool: np.ndarray) -> dict:
    """Every case: the rule, its settings, the pool row (and history), llama.cpp's result."""
    lc = LlamaSamplers()
    ll = lc.ll
    rng = np.random.default_rng(SEED + 1)
    cases = []

    def case(rule, params, row, sampler, history=()):
        result = lc.run(sampler, pool[row], history)
        ll.llama_sampler_free(sampler)
        entry = {"rule": rule, "params": params, "row": row, "kept": result["kept"]}
        if rule in ("dry", "llama_chain"):  # rules that change the logits they keep
            entry["logits"] = result["logits"]
        if history:
            entry["history"] = [int(t) for t in history]
        cases.append(entry)

    for row in range(len(pool)):
        _truncations(ll, case, row)
        if row % 2 == 0:  # DRY on a history with repeats: pieces of itself, copied
            base = rng.integers(0, 12, size=int(rng.integers(8, 30))).tolist()
            _dry(ll, case, row, base + base[: int(rng.integers(2, len(base)))])
        _chains(lc, case, row)
    return {"llama_cpp_python": lc.version, "seed": SEED,
            "pool": [[float(f"{v:.9g}") for v in row] for row in pool], "cases": cases,
            "mirostat_v2": _mirostat_runs(lc, pool)}


def _truncations(ll, case, row: int) -> None:
    for n in (0.5, 1.0, 1.5, 2.0, 3.0):
        case("top_n_sigma", {"n": n}, row, ll.llama_sampler_init_top_n_sigma(n))
    for threshold in (0.02, 0.05, 0.1, 0.2, 0.3):
        for min_keep in (1, 3):
            # probability 1: every draw (a uniform number below 1) applies the cut
            case("xtc", {"threshold": threshold, "probability": 1.0,
                         "min_tokens_to_keep": min_keep}, row,
                 ll.llama_sampler_init_xtc(1.0, threshold, min_keep, 1))


def _dry(ll, case, row: int, history: list[int]) -> None:
    for mult, b, allowed, last_n in ((0.8, 1.75, 2, 64), (1.0, 2.0, 1, 64),
                                     (0.5, 1.5, 3, 16)):
        case("dry", {"multiplier": mult, "base": b, "allowed_length": allowed,
                     "last_n": last_n}, row,
             ll.llama_sampler_init_dry(None, mult, b, allowed, last_n, None, 0), history)


def _chains(lc, case, row: int) -> None:
    """llama.cpp's default chain's truncations, then temperature last."""
    ll = lc.ll
    for top_k, top_p, min_p, temp in ((40, 0.95, 0.05, 0.8), (20, 0.9, 0.0, 1.5),
                                      (0, 0.6, 0.1, 2.0), (10, 1.0, 0.2, 0.5)):
        samplers = [ll.llama_sampler_init_top_k(top_k)] if top_k else []
        samplers += [ll.llama_sampler_init_top_p(top_p, 1), ll.llama_sampler_init_min_p(min_p, 1),
                     ll.llama_sampler_init_temp(temp)]
        case("llama_chain", {"top_k": top_k or None, "top_p": top_p, "min_p": min_p or None,
                             "temperature": temp}, row, lc.chain(*samplers))


def _mirostat_runs(lc, pool: np.ndarray) -> list[dict]:
    """Mirostat 2.0: a state carried over 40 steps on pool rows in turn."""
    ll = lc.ll
    runs = []
    for tau, eta, seed in ((3.0, 0.1, 1), (5.0, 0.1, 2), (1.5, 0.3, 3)):
        sampler = ll.llama_sampler_init_mirostat_v2(seed, tau, eta)
        steps = []
        for step in range(40):
            row = (step * 7 + seed) % len(pool)
            result = lc.run(sampler, pool[row])
            ll.llama_sampler_accept(sampler, result["selected"])
            steps.append({"row": row, "kept": result["kept"], "selected": result["selected"]})
        ll.llama_sampler_free(sampler)
        runs.append({"tau": tau, "eta": eta, "seed": seed, "steps": steps})
    return runs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("tests/data/llama_cpp_samplers.json"))
    args = parser.parse_args(argv)
    data = record(logit_pool())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"{args.out}: {len(data['cases'])} cases and {len(data['mirostat_v2'])} mirostat "
          f"runs from llama-cpp-python {data['llama_cpp_python']}")


if __name__ == "__main__":
    main()
