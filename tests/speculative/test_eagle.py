import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm import speculative as sp
from shakespeare_lm.speculative import eagle as E

from ..conftest import make_tiny
from .test_speculative import assert_chi_square_verdict


def make_head(model, seed=0, sharpness=1.0):
    """A seeded feature head with random weights; ``sharpness`` scales its features, so
    its q is more peaked (and further from a random target's p)."""
    torch.manual_seed(seed)
    head = E.FeatureHead(model, hidden=24)
    with torch.no_grad():
        head.ln.weight.mul_(sharpness)
    return head.eval().requires_grad_(False)


@pytest.fixture(scope="module")
def head(tiny):
    return make_head(tiny)


# --- the head -------------------------------------------------------------------------
def test_the_head_maps_a_feature_and_an_id_to_a_feature_the_unembedding_reads(tiny, head):
    ids = torch.tensor([[3, 5, 8, 13]])
    logits, h = tiny(ids, return_hidden=True)
    torch.testing.assert_close(head.logits(h), logits)   # the target's own unembedding
    nxt = head(h[0, :-1], ids[0, 1:])                     # (3, C): a feature after each id
    assert nxt.shape == h[0, 1:].shape
    assert not torch.allclose(nxt, h[0, 1:])              # a random head predicts badly


def test_the_draft_chains_features_through_the_ids_after_the_observed_state(tiny, head):
    C = tiny.config.d_model
    h0 = torch.randn(C)
    d = sp.EagleDraft(head)
    d.start([1, 2, 3], 16)
    d.observe(2, h0)                                      # the state after ids[:2]

    def q(*fed):                                          # the module's chain, step by step
        h = h0
        for y in fed:
            h = head(h, torch.tensor(y))
        return torch.softmax(head.logits(h).double(), -1).numpy()

    assert d.probs([1, 2, 3, 4]) == pytest.approx(q(3, 4), abs=1e-6)  # feeds ids[2:]
    # a different id past the observed state: the chain is recomputed, not reused
    assert d.probs([1, 2, 3, 7]) == pytest.approx(q(3, 7), abs=1e-6)
    torch.testing.assert_close(d.next_logits([1, 2, 3, 7]).exp().double(),
                               torch.from_numpy(d.probs([1, 2, 3, 7])))
    # drawing a chain: each id's probability is the one probs gives, bit for bit
    out, drawn = d.sample_chain([1, 2, 3], [0.3, 0.9, 0.5])
    assert len(out) == 3
    for i, (y, p) in enumerate(zip(out, drawn)):
        assert d.probs([1, 2, 3] + out[:i])[y] == p
    d.observe(2, h0 + 1)                                  # a new state at 2: a new chain
    h1 = head(h0 + 1, torch.tensor(3))
    want = torch.softmax(head.logits(h1).double(), -1).numpy()
    assert d.probs([1, 2, 3]) == pytest.approx(want, abs=1e-6)
    d.rollback(1)                                         # forgets the state after ids[:2]
    assert d.next_logits([1, 2, 3]) is None and d.sample_chain([1, 2, 3], [0.5]) == ([], [])


# --- exactness ------------------------------------------------------------------------
@pytest.mark.parametrize("prompt", ["K", "KATHARINA:\n", "KATHARINA:\nMoved! in good time: "])
@pytest.mark.parametrize("gamma", [1, 3, 6])
def test_greedy_with_the_eagle_draft_equals_greedy_target_bit_for_bit(tiny, tok, head, prompt,
                                                                      gamma):
    plain = slm.generate(tiny, tok, prompt, 50, temperature=0)
    fast = slm.speculative_decode(tiny, head, tok, prompt, 50, gamma, temperature=0)
    assert fast.ids == plain.ids and fast.stop_reason == plain.stop_reason
    assert fast.stats.drafted > 0  # the head did propose


# at T = 1 the draft draws its chain itself (``sample_chain``); a peaked q there, since a
# broken verifier drawing from p instead of the residual shows only where q is far from p
@pytest.mark.parametrize("temperature, sharpness", [(0.1, 1.0), (1.0, 10.0)])
@pytest.mark.parametrize("verifier, passes", [("exact", True), ("no_residual", False)])
def test_chi_square_with_the_eagle_draft_passes_exact_verifier_and_catches_broken_one(
        tiny, tok, verifier, passes, temperature, sharpness):
    head = make_head(tiny, sharpness=sharpness)
    assert_chi_square_verdict(tiny, head, tok, verifier, passes, temperature)


def test_sampled_text_with_the_eagle_draft_slides_past_the_window(tiny, tok, head):
    g = slm.speculative_decode(tiny, head, tok, "KATHARINA:\n", 300, 4, seed=1,
                               context_overflow="slide")
    assert len(g.ids) == 300 and g.stats.drafted > 0


# --- saving and loading ---------------------------------------------------------------
def test_a_saved_head_loads_back_identical(tiny, head, tmp_path):
    path = E.save_feature_head(head, {"hidden": 24}, tmp_path / "eagle.safetensors")
    back = slm.load_feature_head(tiny, path)
    h, x = torch.randn(4, tiny.config.d_model), torch.tensor([1, 2, 3, 4])
    assert torch.equal(back(h, x), head(h, x))
    assert (tmp_path / "eagle.json").exists()


def test_loading_a_missing_corrupt_or_mismatched_head_is_a_clear_error(tiny, head, tmp_path):
    with pytest.raises(FileNotFoundError, match="no feature head.*eagle --train"):
        slm.load_feature_head(tiny, tmp_path / "none.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match="not a readable safetensors.*eagle --train"):
        slm.load_feature_head(tiny, bad)
    path = E.save_feature_head(head, {}, tmp_path / "eagle.safetensors")
    with pytest.raises(ValueError, match=r"d_model=48.*\(hidden, 96\), found \(24, 64\)"):
        slm.load_feature_head(make_tiny(d_model=48), path)


def test_the_eagle_draft_refuses_something_else():
    with pytest.raises(TypeError, match="head must be a FeatureHead"):
        sp.EagleDraft("head")


def test_the_shipped_head_keeps_what_its_record_says():
    """The shipped head against its record: the acceptance of each chain step on held-out
    windows, recomputed on a fifth of them, and well above a guess at the first step."""
    import json

    from shakespeare_lm.corpus import load_heldout
    model, tok = slm.load_pretrained()
    record = json.loads(E.FEATURE_FILE.with_suffix(".json").read_text())
    head = slm.load_feature_head(model)
    W = model.config.block_size
    ids = E.corpus_ids(tok, load_heldout(), 100, W)[: 20 * W].view(20, W)
    with torch.no_grad():
        got = E.chain_overlap(head, ids, E.hidden_states(model, ids.flatten(), W), 8)
    want = record["heldout_acceptance_by_step"]
    assert len(want) == 8 and want[0] > 0.7
    assert max(abs(a - b) for a, b in zip(got, want)) < 0.03, (got, want)
