"""The bench's headline figures, run small on the tiny model: what each row measures and
reports (not how fast anything is: speed lives in ``make bench``)."""

import pytest

from shakespeare_lm import bench
from shakespeare_lm.speculative.eagle import FeatureHead

from .conftest import make_tiny


@pytest.fixture(scope="module")
def pair():
    return make_tiny(), make_tiny(seed=1)


def _interval_holds(r: dict, pairs: int) -> None:
    assert r["pairs"] == pairs
    assert 0 < r["ci_low"] <= r["ratio"] <= r["ci_high"]


def test_the_speculative_headline_times_the_best_setting_cold_and_remembered(pair, tok):
    model, draft = pair
    eagle = FeatureHead(model, hidden=8).eval().requires_grad_(False)
    out = bench.speculative_headline(model, draft, tok, eagle, repeats=2, confirm_repeats=3,
                                     new_tokens=12)
    names = ("draft model", "4-gram", "6-gram", "EAGLE head")
    assert out["drafts"] == list(names)
    assert {(d, g) for d, g, _ in out["sweep"]} == {
        (d, g) for d in names for g in bench.HEADLINE_GAMMAS}
    cold, warm = out["cold"], out["remembered"]
    assert (cold["draft"], cold["gamma"]) == (warm["draft"], warm["gamma"])
    _interval_holds(cold, 3)
    _interval_holds(warm, 3)
    # a round makes between 1 and gamma + 1 characters and takes some time (its cost in
    # plain characters); the speedup is about the quotient of the two
    for r in (cold, warm):
        assert 1 <= r["chars_per_round"] <= r["gamma"] + 1
        assert r["round_in_chars"] > 0


def test_the_peer_flops_and_bandwidth_headlines(pair, tok):
    pytest.importorskip("transformers")
    model, _ = pair
    peers = bench.peers_headline(model, tok, new_tokens=8, repeats=3)
    _interval_holds(peers, 3)
    assert peers["same_text"] is True and peers["ours_ms"] > 0 and peers["theirs_ms"] > 0
    flops = bench.flops_headline(model, tok, batch=4, new_tokens=6, repeats=3)
    _interval_holds(flops, 3)
    assert flops["batch"] == 4 and flops["achieved_flops"] > 0
    # the roofline's ceiling: a fraction, below 1 where a step's bytes outlast its FLOPs,
    # and the bytes are the weights plus every row's cached keys and values
    assert 0 < flops["ceiling"] <= 1 and flops["bandwidth"] > 0
    assert flops["step_bytes"] > 4 * model.num_params()
    bw = bench.bandwidth_headline(model, tok, new_tokens=6, repeats=3)
    _interval_holds(bw, 3)
    assert bw["bound_ms"] > 0 and bw["weight_bytes"] == 4 * model.num_params()
    text = bench.headline_text({"speculative": bench.speculative_headline(
        model, pair[1], tok, repeats=1, confirm_repeats=1, new_tokens=6),
        "peers": peers, "flops": flops, "bandwidth": bw})
    for label in ("a. speculative vs plain, unseen text", "b. the same setting",
                  "c. ours vs transformers", "d. batch-4 decode FLOP/s",
                  "the roofline allows at most", "characters a round, a round costing",
                  "e. batch-1 decode step over its bandwidth bound"):
        assert label in text
