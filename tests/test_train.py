import json

import pytest

import shakespeare_lm as slm
from shakespeare_lm import corpus
from shakespeare_lm.train import train


@pytest.fixture(scope="module")
def texts():
    return corpus.load_train()[:200_000], corpus.load_heldout()[:20_000]


def test_short_training_run_lowers_heldout_loss_and_writes_weights(tmp_path, texts):
    model, record = train("tiny", max_iters=60, max_minutes=5, batch_size=16, eval_every=30,
                          eval_windows=8, out=tmp_path, run_dir=tmp_path / "run",
                          train_text=texts[0], heldout_text=texts[1], progress=False)
    history = [h["heldout_sample_nats_per_char"] for h in record["history"]]
    assert history[-1] < history[0] - 0.5  # from ~log(63) = 4.14 down
    loaded, tok, meta = slm.load_model(tmp_path / "tiny.safetensors")
    assert meta["steps"] == 60 and meta["heldout_nats_per_char"] == record["heldout_nats_per_char"]
    assert "python -m shakespeare_lm.train" in meta["command"]
    assert json.loads((tmp_path / "run" / "checkpoint.json").read_text())["step"] == 60


def test_training_resumes_from_checkpoint(tmp_path, texts):
    kw = dict(batch_size=8, eval_every=10, eval_windows=4, out=None, run_dir=tmp_path,
              train_text=texts[0], heldout_text=texts[1], progress=False)
    _, first = train("tiny", max_iters=10, max_minutes=5, **{**kw, "run_dir": tmp_path / "b"})
    assert first["steps"] == 10
    _, resumed = train("tiny", max_iters=20, max_minutes=5, resume=True,
                       **{**kw, "run_dir": tmp_path / "b"})
    assert resumed["steps"] == 20
    assert [h["step"] for h in resumed["history"]] == [0, 10, 20]
