import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm import speculative as sp
from shakespeare_lm.speculative import heads as H

from ..conftest import make_tiny
from .test_speculative import assert_chi_square_verdict


def make_heads(model, n_heads=3, seed=0):
    """Seeded heads with random residual blocks, so each differs from the next-token head."""
    heads = H.DraftHeads(model, n_heads)
    torch.manual_seed(seed)
    for b in heads.blocks:
        torch.nn.init.normal_(b.weight, std=0.3)
    return heads.eval()


@pytest.fixture(scope="module")
def heads(tiny):
    return make_heads(tiny)


# --- the heads ------------------------------------------------------------------------
def test_zero_initialised_heads_all_equal_the_next_token_head(tiny):
    heads = H.DraftHeads(tiny, 2)
    ids = torch.tensor([[3, 5, 8, 13]])
    logits, h = tiny(ids, return_hidden=True)
    out = heads(h)                                                   # (1, 4, 2, V)
    assert out.shape == (1, 4, 2, tiny.config.vocab_size)
    for i in range(2):
        torch.testing.assert_close(out[:, :, i], logits)


def test_head_targets_are_the_tokens_two_and_more_ahead():
    y = H.head_targets(torch.arange(10), window=5, n_heads=2)        # windows 0..4, 5..9
    assert y[0, :, 0].tolist() == [2, 3, 4, -1, -1]
    assert y[1, :, 1].tolist() == [8, 9, -1, -1, -1]


# --- exactness ------------------------------------------------------------------------
@pytest.mark.parametrize("prompt", ["K", "KATHARINA:\n", "KATHARINA:\nMoved! in good time: "])
@pytest.mark.parametrize("gamma", [1, 3, 5])
def test_greedy_with_heads_equals_greedy_target_bit_for_bit(tiny, tok, heads, prompt, gamma):
    plain = slm.generate(tiny, tok, prompt, 50, temperature=0)
    fast = slm.speculative_decode(tiny, sp.HeadsDraft(heads), tok, prompt, 50, gamma,
                                  temperature=0)
    assert fast.ids == plain.ids and fast.stop_reason == plain.stop_reason
    assert fast.stats.drafted > 0  # the heads did propose


@pytest.mark.parametrize("verifier, passes", [("exact", True), ("no_residual", False)])
def test_chi_square_with_heads_passes_exact_verifier_and_catches_broken_one(
        tiny, tok, heads, verifier, passes):
    assert_chi_square_verdict(tiny, heads, tok, verifier, passes)


# --- saving and loading ---------------------------------------------------------------
def test_saved_heads_load_back_identical(tiny, heads, tmp_path):
    path = H.save_heads(heads, {"n_heads": 3}, tmp_path / "heads.safetensors")
    back = slm.load_heads(tiny, path)
    h = torch.randn(4, tiny.config.d_model)
    assert torch.equal(back(h), heads(h))
    assert (tmp_path / "heads.json").exists()


def test_loading_missing_corrupt_or_mismatched_heads_is_a_clear_error(tiny, heads, tmp_path):
    with pytest.raises(FileNotFoundError, match="no draft heads.*heads --train"):
        slm.load_heads(tiny, tmp_path / "none.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match="not a readable safetensors.*heads --train"):
        slm.load_heads(tiny, bad)
    path = H.save_heads(heads, {}, tmp_path / "heads.safetensors")
    with pytest.raises(ValueError, match="d_model=48.*heads --train"):
        slm.load_heads(make_tiny(d_model=48), path)


def test_heads_draft_refuses_something_else():
    with pytest.raises(TypeError, match="heads must be DraftHeads"):
        sp.HeadsDraft("heads")


def test_the_training_command_passes_its_options_and_records_itself(capsys):
    got = {}

    def train(model, tok, max_minutes, n_heads):
        got.update(max_minutes=max_minutes, n_heads=n_heads)
        return "part", {}

    def save(part, record):
        got.update(part=part, record=record)
        return "data/x.safetensors"

    H.train_command(["--train", "--n-heads", "2", "--max-minutes", "0.5", "--threads", "1"],
                    "shakespeare_lm.speculative.heads", "heads", train, save, 5.0,
                    {"--n-heads": 3})
    assert got["max_minutes"] == 0.5 and got["n_heads"] == 2 and got["part"] == "part"
    assert got["record"]["command"] == ("python -m shakespeare_lm.speculative.heads --train "
                                        "--n-heads 2 --max-minutes 0.5")
    assert "wrote data/x.safetensors" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        H.train_command([], "m", "heads", train, save, 5.0)  # nothing to do without --train
