import json

import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm import corpus
from shakespeare_lm.train import encode_corpus, heldout_nats_per_char
from shakespeare_lm.weights import WeightsError

from .conftest import make_tiny


@pytest.fixture
def saved(tmp_path, tok):
    model = make_tiny(seed=3)
    slm.save_model(model, tok, tmp_path / "m.safetensors", note="test")
    return model, tmp_path / "m.safetensors"


def test_save_load_roundtrip(saved, tok):
    model, path = saved
    loaded, tok2, meta = slm.load_model(path)
    assert tok2.chars == tok.chars and meta["note"] == "test" and not loaded.training
    x = torch.randint(0, tok.vocab_size, (2, 9))
    assert torch.equal(loaded(x), model(x))
    assert loaded.lm_head.weight is loaded.tok_emb.weight  # still tied


def test_truncated_file_is_a_clear_error(saved):
    _, path = saved
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(WeightsError, match="sha256.*corrupt, truncated"):
        slm.load_model(path)
    with pytest.raises(WeightsError, match="not a readable safetensors file"):
        slm.load_model(path, verify_checksum=False)


def test_corrupt_bytes_are_caught_by_the_checksum(saved):
    _, path = saved
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(WeightsError, match="does not match the sha256"):
        slm.load_model(path)


def test_config_that_does_not_match_the_tensors(saved):
    _, path = saved
    meta_path = path.with_suffix(".json")
    meta = json.loads(meta_path.read_text())
    meta["config"]["d_model"] = 64
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(WeightsError, match="shape"):
        slm.load_model(path)


def test_missing_or_bad_sidecar(saved):
    _, path = saved
    path.with_suffix(".json").write_text("{not json")
    with pytest.raises(WeightsError, match="not valid JSON"):
        slm.load_model(path)
    path.with_suffix(".json").unlink()
    with pytest.raises(WeightsError, match="missing"):
        slm.load_model(path)


def test_unknown_shipped_name():
    with pytest.raises(WeightsError, match="no shipped model named 'nope'.*available"):
        slm.load_pretrained("nope")


@pytest.mark.parametrize("name", ["shakespeare", "draft"])
def test_shipped_weights_load_and_reproduce_recorded_heldout_loss(name):
    model, tok = slm.load_pretrained(name)
    meta = model.meta
    assert not model.training and str(next(model.parameters()).device) == "cpu"
    assert meta["heldout_sha256"] == corpus.sha256_file(corpus.HELDOUT_FILE)
    assert meta["train_sha256"] == corpus.sha256_file(corpus.TRAIN_FILE)
    data = encode_corpus(tok, corpus.load_heldout())
    sample = heldout_nats_per_char(model, data, limit=meta["heldout_sample_windows"])
    assert sample == pytest.approx(meta["heldout_sample_nats_per_char"], abs=2e-4)
    if name == "shakespeare":
        assert meta["heldout_nats_per_char"] <= 1.50
        assert model.config.block_size >= 256


def test_shipped_main_model_is_much_larger_than_draft():
    main, _ = slm.load_pretrained()
    draft, _ = slm.load_pretrained("draft")
    assert main.num_params() > 10 * draft.num_params()
