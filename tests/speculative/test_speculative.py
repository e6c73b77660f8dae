import numpy as np
import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm import speculative as sp
from shakespeare_lm.corpus import TRAIN_FILE
from shakespeare_lm.decoding.sampler import DecodingConfig, Sampler

from ..conftest import make_tiny

PROMPTS = ["K", "KATHARINA:\n", "KATHARINA:\nMoved! in good time: "]


@pytest.fixture(scope="module")
def draft_model():
    return make_tiny(seed=1)


@pytest.fixture(scope="module")
def trigram(tok):
    # a slice of the training text keeps the test fast; the counting is the same
    return sp.NGramDraft(tok, order=3, text=TRAIN_FILE.read_text()[:200_000])


def _drafts(draft_model, trigram, tok):
    return {"model": draft_model, "trigram": trigram,
            "lookup": sp.PromptLookupDraft(tok.vocab_size, min_ngram=1)}


# --- exactness ------------------------------------------------------------------------
@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("gamma", [1, 3, 8])
@pytest.mark.parametrize("which", ["model", "trigram", "lookup"])
def test_greedy_speculative_equals_greedy_target_bit_for_bit(tiny, tok, draft_model, trigram,
                                                              prompt, gamma, which):
    draft = _drafts(draft_model, trigram, tok)[which]
    plain = slm.generate(tiny, tok, prompt, 50, temperature=0)
    fast = slm.speculative_decode(tiny, draft, tok, prompt, 50, gamma, temperature=0)
    assert fast.ids == plain.ids and fast.text == plain.text
    assert fast.stop_reason == plain.stop_reason == "max_tokens"
    assert fast.logprobs == pytest.approx(plain.logprobs, abs=1e-5)
    stats = fast.stats
    assert sum(stats.tokens_per_round) == 50 and stats.target_passes == len(stats.tokens_per_round)


def test_top_k_1_truncates_both_p_and_q_so_sampling_is_greedy(tiny, tok, draft_model):
    plain = slm.generate(tiny, tok, "KATHARINA:\n", 40, temperature=0)
    fast = slm.speculative_decode(tiny, draft_model, tok, "KATHARINA:\n", 40, 4,
                                     temperature=1.3, top_k=1, seed=5)
    assert fast.ids == plain.ids


def test_greedy_speculative_stops_like_generate_at_stop_and_context_window(tiny, tok,
                                                                          draft_model):
    free = slm.generate(tiny, tok, "KATHARINA:\n", 30, temperature=0).text
    for prompt, n, stop, reason in [("KATHARINA:\n", 60, free[10:13], "stop_sequence"),
                                    ("x" * 120, 50, None, "context_window"),
                                    ("x" * 120, 8, None, "max_tokens"),   # the last slot
                                    ("x" * 128, 8, None, "context_window"),
                                    ("x" * 128, 0, None, "max_tokens")]:
        plain = slm.generate(tiny, tok, prompt, n, temperature=0, stop=stop)
        fast = slm.speculative_decode(tiny, draft_model, tok, prompt, n, 4, temperature=0,
                                      stop=stop)
        assert (fast.text, fast.stop_reason) == (plain.text, plain.stop_reason)
        assert fast.stop_reason == reason


def test_speculative_and_generate_name_the_same_reason_when_two_hold(tiny, tok, draft_model):
    # the constraint's completion ends with the stop sequence: both say "stop_sequence"
    c = slm.ChoiceConstraint(["K:\n"], tok)
    plain = slm.generate(tiny, tok, "P:\nNay.\n\n", 10, temperature=0, constraint=c,
                         stop=":\n")
    fast = slm.speculative_decode(tiny, draft_model, tok, "P:\nNay.\n\n", 10, 4,
                                  temperature=0, constraint=c, stop=":\n")
    assert (fast.text, fast.stop_reason) == (plain.text, plain.stop_reason)
    assert plain.stop_reason == "stop_sequence"


@pytest.mark.parametrize("gamma", [1, 4])
def test_draft_identical_to_target_accepts_everything(tiny, tok, gamma):
    out = slm.speculative_decode(tiny, tiny, tok, "KATHARINA:\n", 41, gamma,
                                 temperature=1.0, seed=0)
    stats = out.stats
    assert stats.acceptance_rate == 1.0
    assert stats.per_position_acceptance == [1.0] * gamma
    assert stats.tokens_per_round[:-1] == [gamma + 1] * (len(stats.tokens_per_round) - 1)
    assert stats.expected_acceptance == pytest.approx(1.0, abs=1e-5)
    assert len(out.ids) == 41


@pytest.mark.parametrize("verifier, passes", [("exact", True), ("no_residual", False)])
def test_chi_square_of_first_token_passes_exact_verifier_and_catches_broken_one(
        tiny, tok, draft_model, verifier, passes):
    assert_chi_square_verdict(tiny, draft_model, tok, verifier, passes)


@pytest.mark.parametrize("verifier, passes", [("exact", True), ("no_residual", False)])
def test_chi_square_holds_for_an_ngram_that_gives_only_its_proposals_probabilities(
        tiny, tok, trigram, verifier, passes):
    """At temperature 1 the n-gram draws its proposals without a whole distribution
    (``DraftRows``); the same test passes the exact rule and catches the broken one."""
    gen = torch.Generator().manual_seed(0)
    sampler = Sampler(DecodingConfig(), None, tok.vocab_size, tok)
    _, q, _ = sp.draft_tokens(trigram, tok.encode("To be"), 3, sampler, gen, "cpu")
    assert isinstance(q, sp.DraftRows) and len(q) == 3
    assert_chi_square_verdict(tiny, trigram, tok, verifier, passes, temperature=1.0)


def assert_chi_square_verdict(target, draft, tok, verifier, passes, temperature=0.1):
    """600 first characters after one prompt: the exact verifier passes, a broken one fails."""
    counts, exact = sp.next_token_counts(target, draft, tok, "To be, or not", 600, 2,
                                         temperature=temperature, seed=0, verifier=verifier)
    assert counts.sum() == 600
    stat, dof, p_value = sp.chi_square_test(counts, exact)
    assert dof >= 3
    assert (p_value > 0.01) if passes else (p_value < 1e-4)


@pytest.mark.parametrize("draft, temperature", [("model", 0.2), ("trigram", 1.0)])
def test_measured_acceptance_matches_one_minus_total_variation(tiny, tok, draft_model, trigram,
                                                               draft, temperature):
    d = draft_model if draft == "model" else trigram  # the trigram: q's rows worked out late
    stats = slm.speculative_decode(tiny, d, tok, "KATHARINA:\n", 120, 3,
                                   temperature=temperature, seed=3).stats
    a, n = stats.expected_acceptance, stats.proposed
    assert 0.1 < a < 0.95  # a draft that is neither useless nor perfect
    assert abs(stats.acceptance_rate - a) < 4 * (a * (1 - a) / n) ** 0.5


# --- caches ---------------------------------------------------------------------------
def _fresh_cache(seed: int, ids: list[int], max_len: int):
    model = make_tiny(seed)
    with model.cache(1, max_len) as cache:
        slm.prefill(model, torch.tensor([ids]), torch.arange(len(ids)))
        return [(c.k_cache.clone(), c.v_cache.clone()) for c in cache.layers]


def _assert_same_cache(model, expected):
    """The slots the cache may still read equal a fresh prefill's (truncate is a length
    reset: the slots past it are stale, never read, and overwritten by the next pass)."""
    n = model.active_cache.length
    for c, (k, v) in zip(model.active_cache.layers, expected, strict=True):
        assert n == k.shape[2] or not k[:, :, n:].any()  # the fresh cache is empty past n
        torch.testing.assert_close(c.k_cache[:, :, :n], k[:, :, :n], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(c.v_cache[:, :, :n], v[:, :, :n], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("prompt", PROMPTS[1:])
def test_rollback_leaves_both_caches_identical_to_a_fresh_prefill(tok, prompt):
    target, draft = make_tiny(0), sp.ModelDraft(make_tiny(1))
    seq, max_len = tok.encode(prompt), 100
    gen = torch.Generator().manual_seed(0)
    cache = sp.prefill_both(target, draft, seq, max_len)
    sampler = slm.Sampler(slm.DecodingConfig(temperature=0.3))
    rejections = full_rounds = 0
    try:
        for _ in range(12):
            rnd = sp.speculative_round(target, draft, seq, 4, sampler, gen)
            seq = seq + rnd.new_tokens
            rejections += rnd.accepted < 4
            full_rounds += rnd.accepted == 4
            _assert_same_cache(target, _fresh_cache(0, seq[:-1], max_len))
            assert draft.fed == seq[: len(draft.fed)] and len(draft.fed) >= len(seq) - 2
            _assert_same_cache(draft.model, _fresh_cache(1, draft.fed, max_len))
    finally:
        cache.close()
        draft.finish()
    assert rejections and full_rounds  # both kinds of rollback were exercised


# --- statistics and predictions -------------------------------------------------------
def test_stats_count_every_round_and_position(tiny, tok, draft_model):
    out = slm.speculative_decode(tiny, draft_model, tok, "KATHARINA:\n", 80, 4,
                                 temperature=0.5, seed=1)
    st = out.stats
    assert sum(st.tokens_per_round) == len(out.ids) == 80
    assert st.accepted == sum(st.position_accepted) == sum(st.tokens_per_round) - st.target_passes
    assert st.proposed == sum(st.position_tested) == len(st.overlap) == len(st.outcome)
    assert sum(st.outcome) == st.accepted
    assert [st.slot.count(i) for i in range(4)] == st.position_tested
    assert all(a >= b for a, b in zip(st.position_tested, st.position_tested[1:]))
    assert st.tokens_per_pass == pytest.approx(80 / st.target_passes)
    assert set(st.as_dict()) >= {"acceptance_rate", "target_passes", "tokens_per_pass"}
    assert out.timings.new_tokens == 80


def test_iid_and_product_formulas():
    assert sp.expected_tokens_per_pass(0.6, 1) == pytest.approx(1.6)
    assert sp.expected_tokens_per_pass(1.0, 4) == 5.0
    assert sp.expected_tokens_per_pass(0.5, 3) == pytest.approx(1 + sp.expected_accepted([0.5] * 3))
    assert sp.expected_accepted([0.8, 0.7, 0.5]) == pytest.approx(0.8 + 0.56 + 0.28)
    assert sp.predicted_speedup(0.8, 4, 0.0) == pytest.approx(sp.expected_tokens_per_pass(0.8, 4))
    assert sp.predicted_speedup(0.1, 8, 0.2) < 1  # a poor draft costs more than it saves
    with pytest.raises(ValueError, match="alpha=1.5"):
        sp.expected_tokens_per_pass(1.5, 2)


def test_chi_square_test_rejects_wrong_distribution_and_accepts_right_one():
    probs = torch.tensor([0.5, 0.2, 0.2, 0.1])
    gen = torch.Generator().manual_seed(0)
    right = torch.bincount(torch.multinomial(probs, 4000, True, generator=gen), minlength=4)
    wrong = torch.bincount(torch.multinomial(torch.full((4,), 0.25), 4000, True, generator=gen),
                           minlength=4)
    assert sp.chi_square_test(right, probs)[2] > 0.01
    assert sp.chi_square_test(wrong, probs)[2] < 1e-6


# --- drafts ---------------------------------------------------------------------------
def test_ngram_draft_counts_and_backs_off(tok):
    ng = sp.NGramDraft(tok, order=3, smoothing=0.01, text="abcd" * 200)
    a, b, c = tok.encode("abc")
    assert ng.distribution([a, b]).exp()[c] > 0.99    # "ab" is always followed by "c"
    assert ng.distribution([b]).exp()[c] > 0.99       # a shorter context uses the bigram table
    ids = tok.encode("abcd" * 3 + "zz")
    for end in range(len(ids) + 1):                   # every context length, seen or not
        torch.testing.assert_close(ng.distribution(ids[:end]).exp().sum(), torch.tensor(1.0))
    unseen = ng.distribution(tok.encode("zz")).exp()  # never seen: falls back to shorter contexts
    assert unseen.min() > 0


def test_ngram_draft_matches_the_interpolation_formula(tok):
    """A high order (sparse counts, remembered rows) against the formula worked by hand."""
    text = "the cat sat on the mat. the cat ate."
    ng = sp.NGramDraft(tok, order=6, smoothing=0.5, text=text)
    ids, V = tok.encode(text), tok.vocab_size

    def by_hand(ctx):
        probs = torch.full((V,), 1.0 / V, dtype=torch.float64)
        for k in range(len(ctx) + 1):                 # orders 1 .. len(ctx) + 1
            c = ctx[len(ctx) - k:]
            row = torch.zeros(V, dtype=torch.float64)
            for i in range(len(ids) - k):
                if ids[i:i + k] == c:
                    row[ids[i + k]] += 1
            probs = (row + 0.5 * probs) / (row.sum() + 0.5)
        return probs

    for ctx in ("the ca", "he cat", "xx the", "t", ""):
        c = tok.encode(ctx)
        torch.testing.assert_close(ng.distribution(c).exp().double(), by_hand(c[-5:]),
                                   rtol=1e-5, atol=1e-7)
        assert torch.equal(ng.distribution(c), ng.distribution(c))  # remembered, unchanged
        torch.testing.assert_close(torch.from_numpy(ng.probs(c)), by_hand(c[-5:]))


def test_ngram_counts_by_order_are_every_context_and_its_followers(tok):
    """What ``counts_by_order`` hands out (the live site's copy reads it) holds every k-gram
    of the text once, sorted, with the followers' counts; and it is a copy."""
    text = "the cat sat on the mat. the cat ate."
    ng = sp.NGramDraft(tok, order=4, smoothing=0.5, text=text)
    ids, V = tok.encode(text), tok.vocab_size
    levels = ng.counts_by_order()
    assert len(levels) == 4
    _check_counts(levels, ids, V)
    levels[1][3][:] = 0                                 # changing the copy changes nothing
    assert ng.counts_by_order()[1][3].sum() == len(ids) - 1


def _check_counts(levels, ids: list[int], V: int) -> None:
    """Each level k of ``counts_by_order`` is every (k+1)-gram of ids once, counted by hand:
    its contexts sorted and distinct, its followers sorted within each context."""
    for k, (contexts, starts, nexts, counts) in enumerate(levels):
        assert list(contexts) == sorted(set(contexts)) and len(starts) == len(contexts) + 1
        seen = {}
        for j, code in enumerate(contexts):
            followers = nexts[starts[j]:starts[j + 1]]
            assert list(followers) == sorted(set(followers))
            for i in range(starts[j], starts[j + 1]):
                seen[int(code), int(nexts[i])] = counts[i]
        expected = {}
        for i in range(len(ids) - k):
            code = 0
            for x in ids[i:i + k]:
                code = code * V + x
            expected[code, ids[i + k]] = expected.get((code, ids[i + k]), 0) + 1
        assert seen == expected, f"level {k}"


@pytest.mark.parametrize("order", range(1, sp.NGramDraft.MAX_ORDER + 1))
def test_ngram_counts_hold_for_every_order_and_the_texts_last_grams(tok, order):
    """The counts come from one sort of the longest grams, the shorter ones read off as
    their prefixes, and the few that start too near the end to be a prefix added: texts of
    two or three letters (so grams repeat and the late ones fall among the prefixes), from
    exactly ``order`` characters long up, every k-gram counted once."""
    rng = np.random.default_rng(order)
    for length in [order, order + 1, order + 2, 17, 60]:
        for letters in ("ab", "ab ", "z"):
            text = "".join(rng.choice(list(letters), size=length))
            ng = sp.NGramDraft(tok, order=order, text=text)
            _check_counts(ng.counts_by_order(), tok.encode(text), tok.vocab_size)


def test_the_sites_ngram_asset_unpacks_to_the_drafts_counts(tok):
    import base64
    import gzip

    from shakespeare_lm.site.book import ngram_asset

    asset = ngram_asset(tok.decode(list(range(tok.vocab_size))), order=3)
    draft = sp.NGramDraft(tok, order=3)
    assert (asset["name"], asset["order"], asset["smoothing"]) == ("3-gram", 3, 1.0)
    dtypes = {"contexts": "<u4", "starts": "<u4", "nexts": "u1", "counts": "<u4"}
    for level, arrays in zip(asset["levels"], draft.counts_by_order(), strict=True):
        for (name, dtype), original in zip(dtypes.items(), arrays):
            got = np.frombuffer(gzip.decompress(base64.b64decode(level[name])), dtype)
            assert np.array_equal(got, original), name


@pytest.mark.parametrize("ctx", ["the ca", "xx the", "t", ""])
def test_ngram_sample_chain_draws_from_its_distribution_and_gives_each_probability(tok, ctx):
    """Each draw's probability is its entry of ``probs`` bit for bit, and 20,000 draws
    after one context follow ``probs`` (chi-square); a chain extends its own context."""
    text = "the cat sat on the mat. the cat ate."
    ng = sp.NGramDraft(tok, order=6, smoothing=0.5, text=text)
    c = tok.encode(ctx)
    gen = torch.Generator().manual_seed(1)
    ids, drawn = ng.sample_chain(c, torch.rand(12, generator=gen).tolist())
    for i, (x, q) in enumerate(zip(ids, drawn)):
        assert q == ng.probs(c + ids[:i])[x]
    counts = torch.zeros(tok.vocab_size)
    for u in torch.rand(20_000, generator=gen).tolist():
        counts[ng.sample(c, u)[0]] += 1
    assert sp.chi_square_test(counts, torch.from_numpy(ng.probs(c)))[2] > 1e-3


def test_prompt_lookup_proposes_what_followed_the_last_match(tok):
    pl = sp.PromptLookupDraft(tok.vocab_size, max_ngram=4, min_ngram=2)
    ids = tok.encode("the cat. the c")
    assert tok.chars[pl.lookup(ids)] == "a"
    logits = pl.next_logits(ids)
    assert torch.isfinite(logits).sum() == 1 and logits.argmax() == tok.encode("a")[0]
    assert pl.next_logits(tok.encode("abcdef")) is None


def test_no_new_tokens_gives_an_empty_generation(tiny, tok, draft_model):
    out = slm.speculative_decode(tiny, draft_model, tok, "KATHARINA:\n", 0, 4)
    st = out.stats
    assert out.ids == [] and out.stop_reason == "max_tokens" and st.target_passes == 0


@pytest.mark.parametrize("kwargs, error, match", [
    ({"gamma": 0}, ValueError, "gamma=0"),
    ({"verifier": "sloppy"}, ValueError, "verifier='sloppy'"),
    ({"temperature": -1.0}, ValueError, "temperature=-1.0"),
    ({"top_p": 1.5}, ValueError, "top_p=1.5"),
    ({"prompt": [1, "b"]}, TypeError, "prompt must be a str or a non-empty list of str"),
    ({"draft": "trigram"}, TypeError, "draft must be"),
    ({"draft": make_tiny(vocab_size=10)}, ValueError, "vocab_size=10"),
])
def test_bad_arguments_raise_clear_errors(tiny, tok, draft_model, kwargs, error, match):
    args = {"draft": draft_model, "prompt": "KATHARINA:\n", "gamma": 2, **kwargs}
    with pytest.raises(error, match=match):
        slm.speculative_decode(tiny, args.pop("draft"), tok, args.pop("prompt"), 10,
                               args.pop("gamma"), **args)


def test_bad_draft_settings_raise_clear_errors(tok):
    with pytest.raises(ValueError, match="order=9"):
        sp.NGramDraft(tok, order=9, text="abc")
    with pytest.raises(ValueError, match="max_ngram=1"):
        sp.PromptLookupDraft(tok.vocab_size, max_ngram=1, min_ngram=2)


def test_bench_reports_a_row_per_draft_and_gamma(tiny, tok, draft_model):
    drafts = {"model": draft_model, "lookup": sp.PromptLookupDraft(tok.vocab_size)}
    out = sp.bench_speculative(tiny, None, tok, new_tokens=12, gammas=(1, 2), repeats=3,
                               drafts=drafts)
    assert [(r["draft"], r["gamma"]) for r in out["rows"]] == [
        ("model", 1), ("model", 2), ("lookup", 1), ("lookup", 2)]
    assert out["best"] in out["rows"] and out["plain_s"] > 0
    for r in out["rows"]:  # each run was paired with its own plain run
        ratios = sorted(p / s for p, s in zip(r["plain_seconds"], r["all_seconds"]))
        assert len(ratios) == 3 and r["speedup"] == pytest.approx(ratios[1])
        assert (r["speedup_min"], r["speedup_max"]) == pytest.approx((ratios[0], ratios[2]))
    assert len(out["plain_seconds"]) == 4 * 3
    assert all(len(r["per_position_acceptance"]) == r["gamma"] for r in out["rows"])


def test_bench_rows_say_what_a_round_makes_and_costs(tiny, tok):
    """A greedy draft that is the target itself has every proposal kept: each round makes
    gamma + 1 characters (12 = 3 rounds of 4), and the cost of a round, in plain
    characters, is its seconds over a paired plain character's seconds, run by run."""
    import copy

    out = sp.bench_speculative(tiny, None, tok, new_tokens=12, gammas=(3,), repeats=3,
                               drafts={"itself": copy.deepcopy(tiny)}, temperature=0)
    row = out["rows"][0]
    assert row["chars_per_round"] == 4.0
    costs = sorted((s / 3) / (p / 12) for s, p in zip(row["all_seconds"], row["plain_seconds"]))
    assert row["round_in_chars"] == pytest.approx(costs[1])


def test_bench_keep_stats_gives_each_row_the_stats_of_its_run(tiny, tok, draft_model):
    drafts = {"model": draft_model}
    out = sp.bench_speculative(tiny, None, tok, new_tokens=12, gammas=(1, 3), repeats=1,
                               drafts=drafts, keep_stats=True)
    assert "stats" not in sp.bench_speculative(tiny, None, tok, new_tokens=12, gammas=(1,),
                                               repeats=1, drafts=drafts)
    for r in out["rows"]:
        st = out["stats"][r["draft"], r["gamma"]]
        assert st.gamma == r["gamma"] and st.acceptance_rate == r["acceptance_rate"]
        again = sp.speculative_decode(tiny, draft_model, tok, sp.BENCH_PROMPT, 12, r["gamma"],
                                      seed=0, context_overflow="slide").stats
        assert again.tokens_per_round == st.tokens_per_round  # the same run, repeated

@pytest.mark.parametrize("fresh", [True, False])
def test_the_bench_times_unseen_text(tiny, tok, monkeypatch, fresh):
    """Each setting's first run (its warm-up, which its stats come from) uses the given
    seed; with ``fresh`` every later run, plain or speculative, takes a seed no run used
    before, and the n-gram forgets what earlier runs taught it before each run. Without it,
    every run replays the seed with the n-gram's memory intact."""
    from shakespeare_lm.speculative import benchmark

    ngram = sp.NGramDraft(tok, order=3, text=TRAIN_FILE.read_text()[:20_000])
    calls = []
    real_spec, real_plain = benchmark.speculative_decode, benchmark.generate

    def spec(*args, seed, **kw):
        calls.append(("spec", seed, len(ngram._logits)))
        return real_spec(*args, seed=seed, **kw)

    def plain(*args, seed, **kw):
        calls.append(("plain", seed, None))
        return real_plain(*args, seed=seed, **kw)

    monkeypatch.setattr(benchmark, "speculative_decode", spec)
    monkeypatch.setattr(benchmark, "generate", plain)
    # at temperature 0.8 the n-gram's distributions go through its memory (at 1 it draws
    # without them and remembers nothing)
    sp.bench_speculative(tiny, None, tok, new_tokens=10, gammas=(2,), repeats=3,
                         drafts={"3-gram": ngram}, seed=5, fresh=fresh, temperature=0.8)
    warm_plain, warm_spec, timed = calls[0], calls[1], calls[2:]
    assert warm_plain[:2] == ("plain", 5) and warm_spec[:2] == ("spec", 5)
    assert len(timed) == 6
    seeds = [c[1] for c in timed]
    if fresh:
        assert sorted(seeds) == list(range(6, 12))       # every timed run: a new seed
        assert all(c[2] == 0 for c in timed if c[0] == "spec")  # and a draft that forgot
    else:
        assert seeds == [5] * 6
        assert all(c[2] > 0 for c in timed if c[0] == "spec")


# --- constraints ----------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda tok: slm.RegexConstraint(r"[A-Z]+:\n[a-z ]{3,12}\.", tok),
    lambda tok: slm.ChoiceConstraint(["PETRUCHIO", "KATHARINA", "BIANCA"], tok),
])
def test_greedy_speculative_with_a_constraint_equals_constrained_generate(tiny, tok, draft_model,
                                                                          make):
    constraint = make(tok)
    plain = slm.generate(tiny, tok, "KATHARINA:\n", 40, temperature=0, constraint=constraint)
    fast = slm.speculative_decode(tiny, draft_model, tok, "KATHARINA:\n", 40, 3,
                                     temperature=0, constraint=constraint)
    assert (fast.text, fast.stop_reason) == (plain.text, plain.stop_reason)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sampled_speculative_text_satisfies_the_constraint(tiny, tok, trigram, seed):
    constraint = slm.ChoiceConstraint(["PETRUCHIO", "KATHARINA", "BIANCA"], tok)
    out = slm.speculative_decode(tiny, trigram, tok, "A", 40, 4, seed=seed, constraint=constraint)
    assert out.stop_reason == "constraint" and out.text in ("PETRUCHIO", "KATHARINA", "BIANCA")


@pytest.mark.parametrize("gamma", [2, 5])
@pytest.mark.parametrize("which", ["model", "trigram"])
def test_greedy_speculative_slides_like_generate_past_the_context_window(
        tiny, tok, draft_model, trigram, gamma, which):
    draft = _drafts(draft_model, trigram, tok)[which]
    prompt = "KATHARINA:\nMoved! in good time: "  # 32 + 200 characters: two slides at 128
    plain = slm.generate(tiny, tok, prompt, 200, temperature=0, context_overflow="slide")
    fast = slm.speculative_decode(tiny, draft, tok, prompt, 200, gamma, temperature=0,
                                  context_overflow="slide")
    assert fast.ids == plain.ids and fast.stop_reason == plain.stop_reason == "max_tokens"
    assert fast.logprobs == pytest.approx(plain.logprobs, abs=1e-5)


def test_unknown_context_overflow_is_a_clear_error(tiny, tok):
    with pytest.raises(ValueError, match="context_overflow='wrap' is invalid"):
        slm.speculative_decode(tiny, tiny, tok, "K", 5, 2, context_overflow="wrap")


def test_draw_is_the_inverse_cdf_and_never_draws_a_zero_weight():
    from shakespeare_lm.speculative.algorithm import draw

    weights = [0.0, 0.2, 0.0, 0.5, 0.3, 0.0]  # unnormalised is fine: total 1.0 here
    assert draw(weights, 0.0) == 1 and draw(weights, 0.1999) == 1
    assert draw(weights, 0.2) == 3 and draw(weights, 0.6999) == 3
    assert draw(weights, 0.7) == 4 and draw(weights, 1 - 2**-24) == 4
    assert draw([x * 7 for x in weights], 0.5) == 3          # scale does not matter
    n = 10_000  # a grid of uniforms gives each index its share of them, to 1 in n
    counts = [0] * len(weights)
    for i in range(n):
        counts[draw(weights, (i + 0.5) / n)] += 1
    assert [c / n for c in counts] == pytest.approx(weights, abs=1 / n)


def test_bench_with_a_shared_baseline_times_one_plain_run_per_pass(tiny, tok):
    drafts = {"lookup": sp.PromptLookupDraft(tok.vocab_size)}
    out = sp.bench_speculative(tiny, None, tok, new_tokens=12, gammas=(1, 2), repeats=3,
                               drafts=drafts, paired=False)
    assert len(out["plain_seconds"]) == 3          # one per pass, not one per setting
    for r in out["rows"]:
        assert r["plain_seconds"] == out["plain_seconds"]
        ratios = sorted(p / s for p, s in zip(r["plain_seconds"], r["all_seconds"]))
        assert r["speedup"] == pytest.approx(ratios[1])
