"""Chapter 4's equal-budget comparison: the grid gives every tuned family the same number of
settings, and the bootstrap over prompts (``experiment.bootstrap_prompts``) is seeded, brackets
its estimate and gives the known answer on cases small enough to work out by hand."""

import numpy as np
import pytest

from shakespeare_lm.analysis import experiment as E
from shakespeare_lm.decoding.sampler import DecodingConfig

from ..conftest import make_tiny
from .test_experiment import _prompts


# --- the grid --------------------------------------------------------------------------
def test_every_tuned_family_has_the_same_number_of_settings():
    counts = E.settings_per_family()
    assert set(counts) == set(E.TUNED_FAMILIES)
    assert set(counts.values()) == {E.BUDGET}, counts
    assert E.TUNED_FAMILIES == E.SAMPLING_FAMILIES + E.MODERN_FAMILIES
    assert len(E.TUNED_SETTINGS) == E.BUDGET * len(E.TUNED_FAMILIES)
    # the tuned settings are the grid's first, and nothing else in the grid is tuned
    assert E.DEFAULT_SETTINGS[: len(E.TUNED_SETTINGS)] == E.TUNED_SETTINGS
    assert not any(s.family in E.TUNED_FAMILIES
                   for s in E.DEFAULT_SETTINGS[len(E.TUNED_SETTINGS):])


def test_settings_per_family_counts_a_lopsided_grid():
    grid = [E._s("top-p", p, top_p=p) for p in (0.5, 0.9)] + [E._s("min-p", 0.1, min_p=0.1)]
    assert E.settings_per_family(grid, ("top-p", "min-p", "eta")) == {
        "top-p": 2, "min-p": 1, "eta": 0}


def test_each_family_varies_one_knob_and_is_a_valid_decoding_config():
    labels = [s.label for s in E.DEFAULT_SETTINGS]
    assert len(set(labels)) == len(labels)
    for family in E.TUNED_FAMILIES:
        mine = [s for s in E.TUNED_SETTINGS if s.family == family]
        assert len({s.value for s in mine}) == E.BUDGET, family
        assert len({tuple(n for n, _ in s.params) for s in mine}) == 1, family
        for s in mine:
            DecodingConfig(**s.kwargs)           # every setting is one the sampler accepts
            if family != "temperature":         # sampling at T = 1 otherwise
                assert "temperature" not in s.kwargs


def test_the_exercise_temperature_is_not_in_the_grid():
    [extra] = E.BOOK_RUNS["exercise"]
    assert extra.label not in {s.label for s in E.DEFAULT_SETTINGS}


# --- offsets above the yardstick and the best setting ---------------------------------
FAMILIES = ["temperature", "temperature", "top-p", "top-p", "min-p", "min-p"]


def test_offsets_above_measure_from_the_temperature_curve_inside_its_range():
    real = np.array([1.0, 0.9, 0.97, 0.99, 0.94, 0.5])
    nll = np.array([0.5, 1.0, 0.75, 1.2, 0.6, 0.4])
    off = E.offsets_above(real, nll, FAMILIES)
    # the curve: 1.0 at 0.5, 0.9 at 1.0; at 0.75 it is 0.95, at 0.6 it is 0.98
    assert off[:3] == pytest.approx([0.0, 0.0, 0.02])
    assert off[4] == pytest.approx(-0.04)
    assert np.isnan(off[3]) and np.isnan(off[5])    # outside 0.5 .. 1.0
    assert E.best_setting(off, FAMILIES, "top-p") == 2
    assert E.best_setting(off, FAMILIES, "min-p") == 4
    assert E.best_offset(real, nll, FAMILIES, "top-p") == pytest.approx(0.02)


def test_a_family_with_no_setting_in_range_has_no_best_and_unknown_ones_are_refused():
    off = np.array([0.0, 0.0, np.nan, np.nan, 0.1, -0.2])
    assert E.best_setting(off, FAMILIES, "top-p") is None
    assert np.isnan(E.best_offset(np.array([1.0, 0.9, 0.5, 0.5, 0.9, 0.9]),
                                  np.array([0.5, 1.0, 2.0, 2.0, 0.7, 0.8]), FAMILIES, "top-p"))
    with pytest.raises(ValueError, match="family='eta' has no settings"):
        E.best_setting(off, FAMILIES, "eta")
    with pytest.raises(ValueError, match="yardstick='typical' needs at least 2 settings"):
        E.offsets_above(np.ones(6), np.ones(6), FAMILIES, yardstick="typical")


# --- the bootstrap over prompts --------------------------------------------------------
def _parts(rng, n_settings=6, n_prompts=24):
    """Random per-prompt counts: real words found, words, summed NLL, characters."""
    words = rng.integers(40, 70, size=(n_settings, n_prompts)).astype(float)
    found = np.floor(words * rng.uniform(0.85, 1.0, size=words.shape))
    chars = np.full(words.shape, 300.0)
    nll = chars * rng.uniform(0.6, 1.4, size=words.shape)
    return np.stack([found, words, nll, chars], axis=-1)


def test_pooled_is_the_ratio_of_sums_and_counts_weight_the_prompts():
    parts = _parts(np.random.default_rng(1))
    real, nll = E.pooled(parts)
    assert real == pytest.approx(parts[..., 0].sum(1) / parts[..., 1].sum(1))
    assert nll == pytest.approx(parts[..., 2].sum(1) / parts[..., 3].sum(1))
    counts = np.zeros(24)
    counts[3] = 2
    r2, n2 = E.pooled(parts, counts)                 # prompt 3 twice: prompt 3 alone
    assert r2 == pytest.approx(parts[:, 3, 0] / parts[:, 3, 1])
    assert n2 == pytest.approx(parts[:, 3, 2] / parts[:, 3, 3])
    both = E.pooled(parts, np.stack([np.ones(24), counts]))
    assert both[0].shape == (2, 6) and both[0][1] == pytest.approx(r2)


def test_resample_counts_draw_n_prompts_with_replacement_as_the_chapter_does():
    counts = E.resample_counts(24, 500, seed=3)
    assert counts.shape == (500, 24) and (counts.sum(1) == 24).all()
    rng = np.random.default_rng(3)
    assert np.array_equal(counts, rng.multinomial(24, np.full(24, 1 / 24), size=500))
    with pytest.raises(ValueError, match="n_boot=0 is invalid"):
        E.resample_counts(24, 0)


def _share(real, nll):
    return real[0]


def test_bootstrap_is_seeded():
    parts = _parts(np.random.default_rng(2))
    a = E.bootstrap_prompts(parts, _share, n_boot=300, seed=7)
    b = E.bootstrap_prompts(parts, _share, n_boot=300, seed=7)
    c = E.bootstrap_prompts(parts, _share, n_boot=300, seed=8)
    assert np.array_equal(a.samples, b.samples) and (a.low, a.high) == (b.low, b.high)
    assert not np.array_equal(a.samples, c.samples)
    assert a.estimate == c.estimate == pytest.approx(E.pooled(parts)[0][0])


@pytest.mark.parametrize("seed", range(5))
def test_the_interval_contains_the_estimate(seed):
    parts = _parts(np.random.default_rng(seed))
    families = ["temperature"] * 2 + ["top-p"] * 2 + ["min-p"] * 2
    # temperature spans the whole NLL range, so every setting has an offset
    parts[0, :, 2], parts[1, :, 2] = 0.5 * parts[0, :, 3], 1.5 * parts[1, :, 3]

    def gap(real, nll):
        return (E.best_offset(real, nll, families, "min-p")
                - E.best_offset(real, nll, families, "top-p"))

    for statistic in (_share, gap):
        iv = E.bootstrap_prompts(parts, statistic, n_boot=1000, seed=seed)
        assert iv.low <= iv.estimate <= iv.high, (statistic.__name__, iv)
        assert iv.low < iv.high and iv.n_undefined == 0 and iv.level == 0.95


def test_a_known_case_two_prompts_all_real_and_none_real():
    # one setting, two prompts of 10 words: all real in one, none in the other. A resample
    # draws the first prompt 0, 1 or 2 times (probabilities 1/4, 1/2, 1/4), so the share is
    # 0, 0.5 or 1, and the 95% interval runs from 0 to 1 around the estimate 0.5
    parts = np.array([[[10, 10, 3.0, 10], [0, 10, 3.0, 10]]], dtype=float)
    iv = E.bootstrap_prompts(parts, _share, n_boot=4000, seed=0)
    assert iv.estimate == 0.5 and (iv.low, iv.high) == (0.0, 1.0)
    assert set(np.unique(iv.samples)) == {0.0, 0.5, 1.0}
    assert np.mean(iv.samples == 0.5) == pytest.approx(0.5, abs=0.03)


def test_a_known_case_identical_prompts_leave_no_spread():
    one = np.array([45.0, 50.0, 300.0, 300.0])
    parts = np.broadcast_to(one, (3, 24, 4)).copy()
    iv = E.bootstrap_prompts(parts, _share, n_boot=200, seed=0)
    assert iv.estimate == iv.low == iv.high == pytest.approx(0.9)


def test_a_known_case_the_interval_of_a_mean_is_about_two_standard_errors():
    # equal word counts make the pooled share the mean of the prompts' shares: its bootstrap
    # interval is about the mean +- 1.96 standard errors (sd / sqrt(n), the plug-in sd)
    rng = np.random.default_rng(4)
    shares = rng.uniform(0.8, 1.0, size=200)
    parts = np.stack([100 * shares, np.full(200, 100.0), np.full(200, 300.0),
                      np.full(200, 300.0)], axis=-1)[None]
    iv = E.bootstrap_prompts(parts, _share, n_boot=4000, seed=0)
    se = shares.std() / np.sqrt(200)
    assert iv.estimate == pytest.approx(shares.mean())
    assert iv.low == pytest.approx(shares.mean() - 1.96 * se, abs=0.2 * se)
    assert iv.high == pytest.approx(shares.mean() + 1.96 * se, abs=0.2 * se)


def test_undefined_resamples_are_left_out_and_counted():
    parts = _parts(np.random.default_rng(5), n_settings=1)

    def sometimes(real, nll):
        return np.nan if nll[0] > E.pooled(parts)[1][0] else real[0]

    iv = E.bootstrap_prompts(parts, sometimes, n_boot=400, seed=0)
    assert 0 < iv.n_undefined < 400
    with pytest.raises(ValueError, match="nan on every resample"):
        E.bootstrap_prompts(parts, lambda r, n: np.nan, n_boot=10)


@pytest.mark.parametrize("kwargs,needle", [({"level": 1.0}, "level=1.0 is invalid"),
                                           ({"level": 95}, "level=95 is invalid"),
                                           ({"n_boot": 0}, "n_boot=0 is invalid")])
def test_bootstrap_refuses_bad_arguments(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        E.bootstrap_prompts(_parts(np.random.default_rng(0)), _share, **kwargs)
    with pytest.raises(ValueError, match=r"expected \(settings, prompts, 4\)"):
        E.bootstrap_prompts(np.ones((3, 24)), _share)


# --- prompt_parts and the reuse of saved settings --------------------------------------
SETTINGS = [E._s("temperature", 1.0, temperature=1.0), E._s("min-p", 0.2, min_p=0.2)]
EXTRA = [E._s("XTC", 0.5, xtc_probability=0.5, xtc_threshold=0.1),
         E._s("mirostat", 2.0, mirostat_tau=2.0)]


def test_prompt_parts_give_back_the_pooled_measures(tok):
    from shakespeare_lm.analysis import metrics as M

    from .test_experiment import PLAY

    res = E.run_experiment(make_tiny(block_size=32), tok, SETTINGS, _prompts(), 40,
                           cache_dir=None, results_dir=None, progress=False, workers=1)
    vocab = M.vocabulary(PLAY)
    parts = E.prompt_parts(res, vocab)
    assert parts.shape == (2, 3, 4)
    real, nll = E.pooled(parts)
    for i, row in enumerate(res.table(vocab)[:2]):
        assert real[i] == pytest.approx(row["real_words"], nan_ok=True)
        assert nll[i] == pytest.approx(row["nats_per_char"], rel=1e-6)


def test_a_grown_grid_generates_only_its_new_settings(tok, tmp_path):
    model = make_tiny(block_size=32)
    run = dict(prompts=_prompts(), new_chars=40, progress=False, workers=1)
    first = E.run_experiment(model, tok, SETTINGS, cache_dir=tmp_path, **run)
    grown = E.run_experiment(model, tok, SETTINGS + EXTRA, cache_dir=tmp_path, **run)
    assert first.reused == () and grown.reused == tuple(s.label for s in SETTINGS)
    fresh = E.run_experiment(model, tok, SETTINGS + EXTRA, cache_dir=None, **run)
    assert fresh.reused == () and grown.texts == fresh.texts
    for lab in fresh.logprobs:
        assert all(np.array_equal(a, b) for a, b in zip(grown.logprobs[lab], fresh.logprobs[lab]))
    assert all(t >= 0 for t in fresh.setting_seconds.values())
    # saved with each setting's key: the grown run loads whole, and force reuses nothing
    again = E.run_experiment(model, tok, SETTINGS + EXTRA, cache_dir=tmp_path, **run)
    assert again.from_cache and again.setting_keys == grown.setting_keys
    forced = E.run_experiment(model, tok, SETTINGS + EXTRA, cache_dir=tmp_path, force=True,
                              **run)
    assert forced.reused == ()
    # another model's saved settings are not this one's
    other = E.run_experiment(make_tiny(seed=5, block_size=32), tok, SETTINGS + EXTRA,
                             cache_dir=tmp_path, **run)
    assert other.reused == () and not other.from_cache


def test_write_book_runs_takes_saved_settings_and_removes_stale_files(tok, tmp_path,
                                                                       monkeypatch):
    model = make_tiny(block_size=32)
    run = dict(prompts=_prompts(), new_chars=40, progress=False, workers=1)
    monkeypatch.setattr(E, "CACHE_DIR", tmp_path / "cache")
    E.run_experiment(model, tok, SETTINGS, cache_dir=tmp_path / "cache", **run)
    dest = tmp_path / "data"
    dest.mkdir()
    (dest / E._file_name("stale")).write_bytes(b"")
    monkeypatch.setattr(E, "BOOK_RUNS", {"grid": tuple(SETTINGS + EXTRA)})
    [res] = E.write_book_runs(model, tok, dest, workers=1, progress=False,
                              prompts=_prompts(), new_chars=40)
    assert [p.name for p in dest.iterdir()] == [res.path.name]
    assert res.reused == tuple(s.label for s in SETTINGS)
