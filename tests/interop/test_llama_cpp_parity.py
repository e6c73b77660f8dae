"""Our top-nσ, XTC, DRY, mirostat 2.0 and temperature-last chain against llama.cpp's.

``tests/data/llama_cpp_samplers.json`` holds what llama.cpp's samplers kept, and the logits
they left, on a pool of seeded logit vectors (``python -m shakespeare_lm.interop.llama_samplers``
recorded it with llama-cpp-python; see that module). llama.cpp works in float32 and sorts
ties in no fixed order, so a kept set is compared as the sorted list of its logits, to 1e-4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from shakespeare_lm.decoding import rules
from shakespeare_lm.interop.llama_samplers import logit_pool

DATA = Path(__file__).resolve().parents[1] / "data" / "llama_cpp_samplers.json"


@pytest.fixture(scope="module")
def recorded():
    return json.loads(DATA.read_text())


def test_the_pool_is_the_one_recorded(recorded):
    pool = torch.tensor(logit_pool().tolist())
    assert torch.equal(pool, torch.tensor(recorded["pool"]))


def same_values(ours_out: torch.Tensor, theirs: list[float]) -> bool:
    mine = sorted(float(v) for v in ours_out if torch.isfinite(v))
    return len(mine) == len(theirs) and all(abs(a - b) <= 1e-4 * max(1, abs(b))
                                            for a, b in zip(mine, sorted(theirs)))


def ours(case: dict, row: torch.Tensor) -> torch.Tensor:
    p = case["params"]
    if case["rule"] == "top_n_sigma":
        return rules.top_n_sigma(row, p["n"])
    if case["rule"] == "xtc":
        return rules.xtc(row[None], p["threshold"], p["probability"], torch.zeros(1),
                         p["min_tokens_to_keep"])[0]
    if case["rule"] == "dry":
        history = torch.tensor([case["history"]])
        return rules.dry(row[None], history, p["multiplier"], p["base"], p["allowed_length"],
                         last_n=p["last_n"])[0]
    if case["rule"] == "llama_chain":
        return rules.compose(row, order="llama.cpp", **p)
    raise AssertionError(case["rule"])


@pytest.mark.parametrize("rule", ["top_n_sigma", "xtc", "dry", "llama_chain"])
def test_each_rule_keeps_what_llama_cpp_keeps(recorded, rule):
    pool = torch.tensor(recorded["pool"], dtype=torch.float32)
    cases = [c for c in recorded["cases"] if c["rule"] == rule]
    assert len(cases) >= 80
    differ = []
    for case in cases:
        row = pool[case["row"]]
        out = ours(case, row)
        theirs = case.get("logits") or row[case["kept"]].tolist()
        if not same_values(out, theirs):
            differ.append((case["params"], case["row"], len(theirs),
                           int(torch.isfinite(out).sum())))
    assert not differ, f"{len(differ)} of {len(cases)} differ, e.g. {differ[:5]}"


def test_dry_leaves_the_logits_llama_cpp_leaves(recorded):
    pool = torch.tensor(recorded["pool"], dtype=torch.float32)
    for case in (c for c in recorded["cases"] if c["rule"] == "dry"):
        out = ours(case, pool[case["row"]])
        assert torch.allclose(out[case["kept"]], torch.tensor(case["logits"]), atol=1e-5)


def test_mirostat_v2_cuts_where_llama_cpp_cuts_step_after_step(recorded):
    """Replayed with llama.cpp's own draws: from mu = 2 tau, our cut must keep as many tokens
    as llama.cpp's at every step, and our update must carry mu on as its does."""
    pool = torch.tensor(recorded["pool"], dtype=torch.float64)
    for run in recorded["mirostat_v2"]:
        mu = torch.tensor([2.0 * run["tau"]], dtype=torch.float64)
        for i, step in enumerate(run["steps"]):
            cut = rules.mirostat_truncate(pool[step["row"]][None], mu)[0]
            assert int(torch.isfinite(cut).sum()) == len(step["kept"]), (run["tau"], i)
            p = torch.softmax(cut, -1)[step["selected"]]
            mu = rules.mirostat_update(mu, p, run["tau"], run["eta"])
