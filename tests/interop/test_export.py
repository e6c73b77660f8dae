"""The ONNX graphs of ``python -m shakespeare_lm.interop.export`` compute what the PyTorch
models do: the same logits on held-out text, with and without a cache, and the same greedy
text."""

import numpy as np
import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm.corpus import ALPHABET
from shakespeare_lm.interop import export
from shakespeare_lm.paths import HELDOUT_FILE

from ..conftest import make_tiny

ort = pytest.importorskip("onnxruntime")
HELDOUT = HELDOUT_FILE
PROMPT = "KATHARINA:\nMoved! in good time: "


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """The shipped models, exported once into a temporary folder: {name: (model, tok, session)}."""
    out = tmp_path_factory.mktemp("onnx")
    export.export_all(out)
    sessions = {}
    for name in export.MODELS:
        model, tok = slm.load_pretrained(name)
        sessions[name] = (model, tok, ort.InferenceSession(str(out / f"{name}.onnx"),
                                                           providers=["CPUExecutionProvider"]))
    return sessions


def run(session, model, idx, past_k=None, past_v=None):
    """One pass of the graph: idx (B, T) after the cache -> (logits, present_k, present_v)."""
    idx = np.asarray(idx, dtype=np.int64)
    if past_k is None:
        past_k = past_v = export.empty_cache(model, idx.shape[0]).numpy()
    return session.run(None, {"idx": idx, "past_k": past_k,
                              "past_v": past_v})


def heldout_windows(tok, n: int, length: int) -> torch.Tensor:
    text = HELDOUT.read_text()
    starts = np.linspace(0, len(text) - length - 1, n).astype(int)
    return torch.tensor([tok.encode(text[s:s + length]) for s in starts])


@pytest.mark.slow
def test_graph_logits_match_the_model_on_20_heldout_windows(graphs):
    model, tok, session = graphs["shakespeare"]
    windows = heldout_windows(tok, 20, model.config.block_size)
    with torch.no_grad():
        expected = model(windows).numpy()
    for row in range(0, 20, 5):  # batches of 5 full windows
        logits, k, v = run(session, model, windows[row:row + 5])
        np.testing.assert_allclose(logits, expected[row:row + 5], rtol=0, atol=1e-4)
        assert k.shape == (model.config.n_layer, 5, model.config.n_head,
                           model.config.block_size, model.config.head_dim)


@pytest.mark.slow
@pytest.mark.parametrize("name", export.MODELS)
def test_graph_is_as_close_to_exact_arithmetic_as_the_float32_model(graphs, name):
    """Against the model in float64: the graph's rounding error is the model's own (the
    draft's float32 logits are already 1e-4 from exact, so 1e-4 between the two is noise)."""
    model, tok, session = graphs[name]
    windows = heldout_windows(tok, 20, model.config.block_size)
    with torch.no_grad():
        exact = model.double()(windows).numpy()
        model.float()
        float32_error = np.abs(model(windows).numpy() - exact).max()
    graph_error = np.abs(run(session, model, windows)[0] - exact).max()
    assert graph_error <= float32_error + 1e-5, (graph_error, float32_error)


@pytest.mark.slow
@pytest.mark.parametrize("split", [1, 37, 255])
def test_cached_chunks_give_the_logits_of_one_pass(graphs, split):
    """Prefill ``split`` characters, then feed the rest one at a time through the cache."""
    model, tok, session = graphs["shakespeare"]
    window = heldout_windows(tok, 1, model.config.block_size)
    with torch.no_grad():
        expected = model(window).numpy()
    logits, k, v = run(session, model, window[:, :split])
    rows = [logits]
    for t in range(split, window.shape[1]):
        logits, k, v = run(session, model, window[:, t:t + 1], k, v)
        rows.append(logits)
    np.testing.assert_allclose(np.concatenate(rows, axis=1), expected, rtol=0, atol=1e-4)


def greedy_through_graph(session, model, ids: list[int], n: int) -> list[int]:
    """Greedy decoding with the graph's cache; a full window keeps its last half and is
    re-prefilled, as slm.generate(context_overflow="slide") does."""
    block = model.config.block_size
    window, out = list(ids), []
    logits, k, v = run(session, model, [window])
    while True:
        nxt = int(np.argmax(logits[0, -1]))
        out.append(nxt)
        window.append(nxt)
        if len(out) == n:
            return out
        if len(window) == block:
            window = window[-(block // 2):]
            logits, k, v = run(session, model, [window])
        else:
            logits, k, v = run(session, model, [[nxt]], k, v)


@pytest.mark.slow
def test_cached_greedy_decoding_through_the_graph_is_slm_generate_for_300_chars(graphs):
    model, tok, session = graphs["shakespeare"]
    expected = slm.generate(model, tok, PROMPT, 300, temperature=0, context_overflow="slide")
    got = greedy_through_graph(session, model, tok.encode(PROMPT), 300)
    assert tok.decode(got) == expected.text
    assert len(expected.text) == 300


def test_cached_step_matches_the_model_on_a_tiny_model_at_batch_2():
    model = make_tiny(seed=1)
    step = export.CachedStep(model)
    idx = torch.randint(0, len(ALPHABET), (2, 20), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = model(idx)
        first, k, v = step(idx[:, :12], export.empty_cache(model, 2), export.empty_cache(model, 2))
        rest, k, v = step(idx[:, 12:], k, v)
    torch.testing.assert_close(torch.cat([first, rest], 1), expected, rtol=0, atol=1e-5)
    assert k.shape == (model.config.n_layer, 2, model.config.n_head, 20, model.config.head_dim)
