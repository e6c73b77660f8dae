"""The CUDA path: ``make test-gpu`` on a machine with a GPU (deselected elsewhere).

With REQUIRE_GPU=1 (set by make test-gpu) a missing GPU fails these tests instead of
skipping them.
"""
import os

import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm.timing import Stopwatch

from .conftest import make_tiny

pytestmark = pytest.mark.gpu
PROMPT = "KATHARINA:\nMoved! in good time: "


@pytest.fixture(scope="module", autouse=True)
def need_cuda():
    if not torch.cuda.is_available():
        if os.environ.get("REQUIRE_GPU") == "1":
            pytest.fail("REQUIRE_GPU=1 but torch.cuda.is_available() is False")
        pytest.skip("no CUDA device")


@pytest.mark.parametrize("batch", [1, 4])
def test_cached_equals_full_forward_on_cuda(batch):
    model = make_tiny().cuda()
    idx = torch.randint(0, model.config.vocab_size, (batch, 40), device="cuda")
    full = model(idx)
    with model.cache(batch, 40):
        chunks = [model(idx[:, :30], torch.arange(30, device="cuda"))]
        chunks += [model(idx[:, t : t + 1], torch.tensor([t], device="cuda"))
                   for t in range(30, 40)]
    torch.testing.assert_close(torch.cat(chunks, 1), full, rtol=1e-4, atol=1e-4)


def test_shipped_model_greedy_on_cuda_matches_cpu():
    cpu_model, tok = slm.load_pretrained()
    gpu_model, _ = slm.load_pretrained(device="cuda")
    assert next(gpu_model.parameters()).is_cuda
    cpu = slm.generate(cpu_model, tok, [PROMPT, "PETRUCHIO:\n"], 60, temperature=0)
    gpu = slm.generate(gpu_model, tok, [PROMPT, "PETRUCHIO:\n"], 60, temperature=0)
    for c, g in zip(cpu, gpu):
        assert c.ids == g.ids
        assert c.logprobs == pytest.approx(g.logprobs, abs=1e-3)


def test_seeded_sampling_on_cuda_is_reproducible():
    model, tok = slm.load_pretrained(device="cuda")
    a = slm.generate(model, tok, [PROMPT] * 8, 80, seed=5, top_p=0.9)
    b = slm.generate(model, tok, [PROMPT] * 8, 80, seed=5, top_p=0.9)
    assert [g.text for g in a] == [g.text for g in b]


def test_timings_on_cuda_use_events():
    model, tok = slm.load_pretrained(device="cuda")
    with Stopwatch("cuda") as sw:
        torch.ones(1000, device="cuda").sum()
    assert sw.cuda and sw.seconds > 0
    g = slm.generate(model, tok, PROMPT, 50, temperature=0, warmup=True)
    t = g.timings
    assert t.device.startswith("cuda") and t.new_tokens == 50
    assert 0 < t.prefill_s <= t.time_to_first_token_s and t.tokens_per_s > 0
