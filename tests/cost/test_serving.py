import math

import pytest

import shakespeare_lm as slm
from shakespeare_lm.cost import serving

TEXT = ("KATHARINA:\nMoved! in good time: let him that moved you hither\nRemove you hence: "
        "I knew you at the first\nYou were a moveable.\n\nPETRUCHIO:\nWhy, what's a moveable?\n\n")


def requests(n=10, seed=0, prompt_len=(2, 20), new_tokens=(2, 40)):
    return serving.make_requests(n, TEXT, seed=seed, prompt_len=prompt_len, new_tokens=new_tokens)


def test_make_requests_is_seeded_and_in_range():
    a, b, c = requests(seed=1), requests(seed=1), requests(seed=2)
    assert a == b and a != c
    for r in a:
        assert 2 <= len(r.prompt) <= 20 and 2 <= r.max_new_tokens <= 40 and r.prompt in TEXT
    assert [r.rid for r in a] == list(range(10))


@pytest.mark.parametrize("kwargs, name", [({"n": 0}, "n=0"), ({"prompt_len": (5, 2)}, "prompt_len"),
                                          ({"new_tokens": (0, 3)}, "new_tokens")])
def test_make_requests_rejects_bad_arguments_by_name(kwargs, name):
    args = {"n": 3, "text": TEXT, "seed": 0, **kwargs}
    with pytest.raises(ValueError, match=name):
        serving.make_requests(**args)


@pytest.mark.parametrize("policy", serving.POLICIES)
@pytest.mark.parametrize("allocator", serving.ALLOCATORS)
@pytest.mark.parametrize("max_batch", [1, 3])
def test_every_request_gets_exactly_its_greedy_generation(tiny, tok, policy, allocator, max_batch):
    reqs = requests(8)
    # a cache just longer than the longest request forces the engine to drop old slots
    result = serving.simulate(reqs, tiny, tok, policy=policy, max_batch=max_batch,
                              allocator=allocator, block_tokens=8, kv_budget_tokens=400,
                              context=64, cache_len=70)
    assert result.steps > 70
    assert sorted(result.outputs) == [r.rid for r in reqs]
    for r in reqs:
        alone = slm.generate(tiny, tok, r.prompt, r.max_new_tokens, temperature=0)
        assert result.outputs[r.rid] == alone.ids
    assert result.generated_tokens == sum(r.max_new_tokens for r in reqs)
    assert result.seconds > 0


def test_schedule_without_a_model_matches_the_run_with_one(tiny, tok):
    reqs = requests(8)
    kw = dict(policy="continuous", max_batch=3, allocator="paged", block_tokens=8,
              kv_budget_tokens=200)
    real = serving.simulate(reqs, tiny, tok, **kw)
    dry = serving.simulate(reqs, context=tiny.config.block_size, **kw)
    assert (dry.steps, dry.finish_step, dry.active_rows, dry.reserved_tokens) == (
        real.steps, real.finish_step, real.active_rows, real.reserved_tokens)
    assert math.isnan(dry.seconds)


@pytest.mark.parametrize("max_batch", [1, 2, 4])
def test_static_batching_takes_the_longest_request_of_each_batch(max_batch):
    reqs = requests(9)
    result = serving.simulate(reqs, policy="static", max_batch=max_batch, context=128)
    lengths = [len(r.prompt) + r.max_new_tokens - 1 for r in reqs]  # tokens each one feeds
    batches = [lengths[i : i + max_batch] for i in range(0, len(lengths), max_batch)]
    assert result.steps == sum(max(b) for b in batches)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("max_batch", [2, 4, 8])
def test_continuous_batching_never_needs_more_steps_than_static(seed, max_batch):
    reqs = requests(16, seed=seed)
    static = serving.simulate(reqs, policy="static", max_batch=max_batch, context=128)
    cont = serving.simulate(reqs, policy="continuous", max_batch=max_batch, context=128)
    assert cont.steps <= static.steps
    assert cont.row_utilization >= static.row_utilization


def test_one_row_serves_requests_one_after_another():
    reqs = requests(5)
    for policy in serving.POLICIES:
        result = serving.simulate(reqs, policy=policy, max_batch=1, context=128)
        assert result.steps == sum(len(r.prompt) + r.max_new_tokens - 1 for r in reqs)
        assert result.row_utilization == 1


@pytest.mark.parametrize("block_tokens", [1, 4, 16])
def test_paged_blocks_waste_less_than_one_block_per_request(block_tokens):
    reqs = requests(12)
    paged = serving.simulate(reqs, max_batch=4, allocator="paged", block_tokens=block_tokens,
                             context=128)
    contiguous = serving.simulate(reqs, max_batch=4, allocator="contiguous", context=128)
    for used, reserved, rows in zip(paged.used_tokens, paged.reserved_tokens, paged.active_rows):
        assert used <= reserved < used + rows * block_tokens
    for used, reserved, rows in zip(contiguous.used_tokens, contiguous.reserved_tokens,
                                    contiguous.active_rows):
        assert reserved == rows * 128 >= used
    assert paged.kv_waste < contiguous.kv_waste
    if block_tokens == 1:
        assert paged.kv_waste == 0


@pytest.mark.parametrize("policy", serving.POLICIES)
@pytest.mark.parametrize("budget", [128, 300, 700])
def test_kv_budget_is_never_exceeded_and_paging_fits_more_requests(policy, budget):
    reqs = requests(16)
    kw = dict(policy=policy, max_batch=8, context=128, kv_budget_tokens=budget)
    contiguous = serving.simulate(reqs, allocator="contiguous", **kw)
    paged = serving.simulate(reqs, allocator="paged", block_tokens=8, **kw)
    for r in (contiguous, paged):
        assert max(r.reserved_tokens) <= budget
        assert r.generated_tokens == sum(q.max_new_tokens for q in reqs)
    assert max(contiguous.active_rows) == min(8, budget // 128)
    assert max(paged.active_rows) >= max(contiguous.active_rows)


def test_paged_allocator_preempts_the_newest_request_when_blocks_run_out():
    reqs = serving.make_requests(6, TEXT, seed=0, prompt_len=(4, 4), new_tokens=(60, 60))
    result = serving.simulate(reqs, max_batch=6, allocator="paged", block_tokens=8,
                              kv_budget_tokens=128, context=128)
    assert result.preemptions > 0
    assert max(result.reserved_tokens) <= 128
    assert sorted(result.finish_step) == list(range(6))


@pytest.mark.parametrize("kwargs, name", [
    ({"policy": "greedy"}, "policy"), ({"allocator": "buddy"}, "allocator"),
    ({"max_batch": 0}, "max_batch"), ({"block_tokens": 0}, "block_tokens"),
    ({"kv_budget_tokens": 100}, "kv_budget_tokens"), ({"context": 10}, "context=10"),
    ({"cache_len": 100}, "cache_len"),
])
def test_simulate_rejects_bad_arguments_by_name(kwargs, name):
    args = {"context": 128, **kwargs}
    with pytest.raises(ValueError, match=name):
        serving.simulate(requests(4), **args)


def test_simulate_needs_a_context_or_a_model():
    with pytest.raises(ValueError, match="context=None"):
        serving.simulate(requests(2))
