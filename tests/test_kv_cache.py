import pytest
import torch

import shakespeare_lm as slm

from .conftest import make_tiny


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("prompt_len", [1, 7, 30])
def test_cached_prefill_and_decode_equal_full_forward(tiny, batch, prompt_len):
    torch.manual_seed(prompt_len)
    idx = torch.randint(0, tiny.config.vocab_size, (batch, prompt_len + 10))
    full = tiny(idx)  # (B, T, V) without a cache
    with tiny.cache(batch, prompt_len + 10):
        chunks = [tiny(idx[:, :prompt_len], torch.arange(prompt_len))]
        for t in range(prompt_len, prompt_len + 10):
            chunks.append(tiny(idx[:, t : t + 1], torch.tensor([t])))
    cached = torch.cat(chunks, dim=1)
    torch.testing.assert_close(cached, full, rtol=1e-5, atol=1e-5)
    assert torch.equal(cached.argmax(-1), full.argmax(-1))


@pytest.mark.parametrize("prompts", [["KATHARINA:\n"], ["KATHARINA:\nMoved", "A", "To be, or not"]])
def test_cached_generation_equals_recomputed(tiny, tok, prompts):
    cached = slm.generate(tiny, tok, prompts, 40, temperature=0)
    recomputed = slm.generate(tiny, tok, prompts, 40, temperature=0, use_cache=False)
    for c, r in zip(cached, recomputed):
        assert c.ids == r.ids
        assert c.logprobs == pytest.approx(r.logprobs, abs=1e-5)


def test_batched_ragged_prompts_generate_as_they_would_alone(tiny, tok):
    prompts = ["KATHARINA:\nMoved! in good time: ", "PETRUCHIO:\n", "O"]
    batched = slm.generate(tiny, tok, prompts, 30, temperature=0)
    for p, g in zip(prompts, batched):
        alone = slm.generate(tiny, tok, p, 30, temperature=0)
        assert g.ids == alone.ids
        assert g.logprobs == pytest.approx(alone.logprobs, abs=1e-5)


def test_cache_size_in_bytes(tiny):
    cfg = tiny.config
    with tiny.cache(4, 50) as cache:
        # keys and values, every layer: 2 * L * B * T * d_model * 4 bytes (fp32)
        assert cache.nbytes == 2 * cfg.n_layer * 4 * 50 * cfg.d_model * 4
        assert cache.max_len == 50 and all(c.max_len == 50 for c in cache.layers)
    assert tiny.active_cache is None


@pytest.mark.parametrize("slots", [torch.tensor([2, 3, 4]), slice(2, 5)])
def test_cache_update_writes_only_the_given_slots(slots):
    cache = slm.KVCache(batch=2, n_head=2, max_len=8, head_dim=4)
    k = torch.ones(2, 2, 3, 4)
    kc, vc = cache.update(slots, k, 2 * k)
    assert kc[:, :, 2:5].eq(1).all() and vc[:, :, 2:5].eq(2).all()
    assert kc[:, :, :2].eq(0).all() and kc[:, :, 5:].eq(0).all() and vc[:, :, 5:].eq(0).all()


def test_reorder_cache_rows():
    cache = slm.KVCache(batch=3, n_head=1, max_len=2, head_dim=1)
    cache.update(torch.tensor([0]), torch.arange(3.0).view(3, 1, 1, 1), torch.zeros(3, 1, 1, 1))
    cache.reorder(torch.tensor([2, 2, 0]))
    assert cache.k_cache[:, 0, 0, 0].tolist() == [2.0, 2.0, 0.0]


def test_model_without_cache_rejects_sequence_longer_than_context(tiny):
    with pytest.raises(ValueError, match="exceeds the context"):
        tiny(torch.zeros(1, tiny.config.block_size + 1, dtype=torch.long))


def test_input_pos_without_cache_is_a_clear_error():
    model = make_tiny()
    with pytest.raises(RuntimeError, match=r"model\.cache\(batch, max_len\)"):
        model(torch.zeros(1, 2, dtype=torch.long), torch.arange(2))


@pytest.mark.parametrize("keep", [0, 3, 7])
def test_handle_truncate_is_a_length_reset_that_decodes_like_a_fresh_cache(tiny, keep):
    ids = torch.arange(1, 13)[None]  # (1, 12)
    with tiny.cache(1, 20) as cache:
        slm.prefill(tiny, ids, torch.arange(12))
        assert cache.length == 12
        cache.truncate(keep)
        assert cache.length == keep
        after = tiny(ids[:, keep:keep + 3], torch.arange(keep, keep + 3))
    with tiny.cache(1, 20):
        if keep:
            slm.prefill(tiny, ids[:, :keep], torch.arange(keep))
        fresh = tiny(ids[:, keep:keep + 3], torch.arange(keep, keep + 3))
    torch.testing.assert_close(after, fresh, rtol=1e-5, atol=1e-6)


def test_handle_truncate_rejects_a_length_outside_the_cache(tiny):
    with tiny.cache(1, 8) as cache:
        with pytest.raises(ValueError, match=r"length=9 is invalid.*\[0, 8\]"):
            cache.truncate(9)


@pytest.mark.parametrize("batch", [1, 2])
def test_the_causal_slice_plan_is_the_padded_mask_plan_bit_for_bit(batch):
    """Rows without padding write a slice of slots and share one causal mask (none for a
    single query); they must give the same bits as the per-pass boolean mask that padded
    rows use (forced here by flagging the cache as padded, which changes nothing else:
    every padding count is 0)."""
    model = make_tiny()
    torch.manual_seed(batch)
    idx = torch.randint(0, model.config.vocab_size, (batch, 20))
    chunks = [(0, 7), (7, 8), (8, 9), (9, 14), (14, 15), (15, 20)]  # prefill, steps, verifies

    def run(sliced: bool):
        out = []
        with model.cache(batch, 20) as cache:
            cache._padded = not sliced
            for a, b in chunks:
                out.append(model(idx[:, a:b], torch.arange(a, b), return_hidden=True))
        return out

    for (l1, h1), (l2, h2) in zip(run(True), run(False)):
        assert torch.equal(l1, l2) and torch.equal(h1, h2)
    with model.cache(batch, 20):  # both plans check the bounds
        with pytest.raises(ValueError, match="reaches slot 20"):
            model(idx[:, :1], torch.tensor([20]))


def test_a_forward_hook_sees_every_cached_pass():
    """A hook on a submodule (chapter 1 counts positions on ``tok_emb``) fires on every
    cached pass, prefill and decode alike, and changes no logit."""
    model = make_tiny()
    idx = torch.randint(0, model.config.vocab_size, (1, 6))
    seen = []

    def run():
        with model.cache(1, 6):
            return [model(idx[:, :4], torch.arange(4)), model(idx[:, 4:5], torch.tensor([4])),
                    model(idx[:, 5:6], torch.tensor([5]))]

    plain = run()
    hook = model.tok_emb.register_forward_hook(lambda m, i, o: seen.append(i[0].numel()))
    hooked = run()
    hook.remove()
    assert seen == [4, 1, 1]
    assert all(torch.equal(a, b) for a, b in zip(plain, hooked))
    seen.clear()
    run()
    assert seen == []
