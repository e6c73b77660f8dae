import numpy as np
import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm.analysis import experiment as E
from shakespeare_lm.analysis import metrics as M
from shakespeare_lm.corpus import load_heldout

from ..conftest import make_tiny

NUMBERS = ("one", "two", "three", "four", "five", "six", "seven", "eight")
PLAY = "".join(f"SPEAKER {chr(65 + i % 26)}:\nSpeech number {NUMBERS[i % 8]}, of some words.\n\n"
               for i in range(40))


def test_heldout_prompts_are_fixed_and_end_with_a_speaker_line():
    text = load_heldout()
    a, b = E.heldout_prompts(), E.heldout_prompts(text)
    assert a == b and len(a) == E.N_PROMPTS
    positions = [p.position for p in a]
    assert positions == sorted(set(positions))
    for p in a:
        assert len(p.prompt) == E.PROMPT_CHARS and len(p.reference) == E.NEW_CHARS
        assert text[p.position - E.PROMPT_CHARS : p.position] == p.prompt
        assert text[p.position : p.position + E.NEW_CHARS] == p.reference
        assert p.prompt.endswith(f"\n\n{p.speaker}:\n") and p.speaker.isupper()
    # spread over the file: one prompt in each 24th of it
    n = len(text)
    assert all(i * n // 24 <= s < (i + 1) * n // 24 for i, s in enumerate(positions))


@pytest.mark.parametrize("kwargs,needle", [({"n": 0}, "n=0"), ({"new_chars": -1}, "new_chars=-1"),
                                           ({"n": 200}, "too few speeches")])
def test_heldout_prompts_refuse_bad_arguments(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        E.heldout_prompts(PLAY, prompt_chars=20, **kwargs)


@pytest.mark.parametrize("setting", [E._s("top-p", 0.9, top_p=0.9),
                                     E._s("greedy", None, temperature=0),
                                     E._s("contrastive", 0.5, num_candidates=3, alpha=0.5),
                                     E._s("beam", 3, beam_width=3)])
@pytest.mark.parametrize("prompt_lengths", [(5,), (3, 9, 12, 20)])
def test_generate_long_restarts_where_char_logprobs_scores(tok, setting, prompt_lengths):
    model = make_tiny(block_size=16)             # windows restart every 8 characters
    prompts = [PLAY[:n] for n in prompt_lengths]
    out = E.generate_long(E.segment_decoder(model, tok, setting, seed=1), prompts, 30, 16)
    scored = M.char_logprobs(model, tok, prompts, [c for c, _ in out])
    for (c, lp), s in zip(out, scored):
        assert len(c) == len(lp) == 30
        assert np.allclose(lp, s.numpy(), atol=1e-4)


def test_generate_long_gives_each_segment_half_a_window_of_context(tok):
    seen = []

    def decode(contexts, n, segment):
        seen.append((segment, [len(c) for c in contexts], n))
        return [("x" * n, [0.0] * n) for _ in contexts]

    out = E.generate_long(decode, ["ab", "abcdefghij"], 20, 16)
    assert [c for c, _ in out] == ["x" * 20] * 2
    # prompt of 2: 14 characters fill the first window, then 6 more with 8 of context;
    # prompt of 10: 6, then 8, then 6, each later segment with 8 characters of context
    assert seen == [(0, [2, 10], 14), (1, [8, 8], 8), (2, [8], 6)]


@pytest.mark.parametrize("prompts", [["ab"], ["ab", "abcdefghij", "KATHARINA:\nNay"]])
def test_generate_long_walks_the_windows_that_generate_slides_through(tok, prompts):
    # one loop, one policy: restarting a greedy decoder at each window of generate_long
    # gives what generate(..., context_overflow="slide") gives
    model = make_tiny(block_size=16)
    greedy = E.segment_decoder(model, tok, E._s("greedy", None, temperature=0), seed=0)
    out = E.generate_long(greedy, prompts, 40, 16)
    slid = slm.generate(model, tok, prompts, 40, temperature=0, context_overflow="slide")
    for (c, lp), g in zip(out, slid):
        assert c == g.text and len(c) == 40
        assert lp == pytest.approx(g.logprobs, abs=1e-5)


def test_generate_long_checks_what_the_decoder_returns(tok):
    with pytest.raises(RuntimeError, match="returned 3 characters for prompt 1, fewer than the 6"):
        E.generate_long(lambda contexts, n, segment: [("x" * n, [0.0] * n), ("xyz", [0.0] * 3)],
                        ["abcdefghijklmn", "abcdefghij"], 20, 16)


SETTINGS = [E._s("temperature", 1.0, temperature=1.0), E._s("min-p", 0.2, min_p=0.2),
            E._s("greedy", None, temperature=0)]


def _prompts():
    return E.heldout_prompts(PLAY, n=3, prompt_chars=12, new_chars=40)


def test_run_experiment_caches_and_regenerates_identically(tok, tmp_path):
    model = make_tiny(block_size=32)
    fresh = E.run_experiment(model, tok, SETTINGS, _prompts(), 40, cache_dir=tmp_path,
                             progress=False, workers=1)
    cached = E.run_experiment(model, tok, SETTINGS, _prompts(), 40, cache_dir=tmp_path,
                              progress=False, workers=1)
    forced = E.run_experiment(model, tok, SETTINGS, _prompts(), 40, cache_dir=tmp_path,
                              progress=False, workers=1, force=True)
    assert not fresh.from_cache and cached.from_cache and not forced.from_cache
    assert len(list(tmp_path.iterdir())) == 1
    for other in (cached, forced):
        assert other.texts == fresh.texts
        for lab in fresh.logprobs:
            assert all(np.array_equal(a, b)
                       for a, b in zip(fresh.logprobs[lab], other.logprobs[lab]))
    assert fresh.texts[E.Results.REFERENCE] == [p.reference for p in _prompts()]


def test_cache_key_changes_with_the_weights_and_the_settings(tok, tmp_path):
    a = E.run_experiment(make_tiny(block_size=32), tok, SETTINGS[:1], _prompts(), 40,
                         cache_dir=tmp_path, progress=False, workers=1)
    b = E.run_experiment(make_tiny(seed=5, block_size=32), tok, SETTINGS[:1], _prompts(), 40,
                         cache_dir=tmp_path, progress=False, workers=1)
    c = E.run_experiment(make_tiny(block_size=32), tok, SETTINGS[1:2], _prompts(), 40,
                         cache_dir=tmp_path, progress=False, workers=1)
    assert len({a.key, b.key, c.key}) == 3 and not (b.from_cache or c.from_cache)


def test_summary_reports_the_metrics_of_each_setting(tok):
    model = make_tiny(block_size=32)
    res = E.run_experiment(model, tok, SETTINGS, _prompts(), 40, cache_dir=None,
                           progress=False, workers=1)
    vocab = M.vocabulary(PLAY)
    rows = {r["label"]: r for r in res.table(vocab)}
    assert list(rows) == ["temperature 1", "min-p 0.2", "greedy", E.Results.REFERENCE]
    ref = rows[E.Results.REFERENCE]
    assert ref["real_words"] == 1.0                  # the reference is made of PLAY's words
    lps = [torch.from_numpy(x) for x in res.logprobs["greedy"]]
    assert rows["greedy"]["nats_per_char"] == pytest.approx(M.nats_per_char(lps))
    for key, fn in (("repeated_trigrams", M.repeated_trigram_share),
                    ("real_words", lambda t: M.real_word_share(t, vocab))):
        assert rows["temperature 1"][key] == pytest.approx(fn(res.texts["temperature 1"]),
                                                           nan_ok=True)


def test_two_worker_processes_give_the_same_results_as_one(tok):
    model = make_tiny(block_size=32)
    one = E.run_experiment(model, tok, SETTINGS, _prompts(), 40, cache_dir=None, progress=False,
                           workers=1)
    two = E.run_experiment(model, tok, SETTINGS, _prompts(), 40, cache_dir=None, progress=False,
                           workers=2)
    assert two.workers == 2 and two.texts == one.texts
    for lab in one.logprobs:
        assert all(np.array_equal(a, b) for a, b in zip(one.logprobs[lab], two.logprobs[lab]))


def test_bad_workers_is_refused(tiny, tok):
    with pytest.raises(ValueError, match="workers=0 is invalid"):
        E.run_experiment(tiny, tok, SETTINGS, _prompts(), 40, cache_dir=None, workers=0)


def test_duplicate_labels_are_refused(tiny, tok):
    with pytest.raises(ValueError, match="distinct labels"):
        E.run_experiment(tiny, tok, SETTINGS[:1] * 2, _prompts(), 40, cache_dir=None, workers=1)


def test_curve_at_interpolates_a_family_between_its_settings():
    table = [{"family": "top-p", "nats_per_char": 1.0, "real_words": 0.9},
             {"family": "top-p", "nats_per_char": 0.5, "real_words": 1.0},
             {"family": "temperature", "nats_per_char": 0.7, "real_words": 0.2}]
    xs, ys = E.family_curve(table, "top-p")
    assert xs.tolist() == [0.5, 1.0] and ys.tolist() == [1.0, 0.9]
    got = E.curve_at(table, "top-p", [0.5, 0.75, 1.0, 1.2, 0.4])
    assert got[:3] == pytest.approx([1.0, 0.95, 0.9]) and np.isnan(got[3:]).all()
    with pytest.raises(ValueError, match="family='eta' has no rows"):
        E.curve_at(table, "eta", 0.6)


# --- results committed under data/quality_likelihood/ ----------------------------------
def test_committed_results_are_found_first_and_validated(tok, tmp_path):
    model = make_tiny(block_size=32)
    run = dict(settings=SETTINGS, prompts=_prompts(), new_chars=40, progress=False, workers=1)
    fresh = E.run_experiment(model, tok, **run, cache_dir=None, results_dir=None)
    committed = tmp_path / "committed"
    E._save(committed / E._file_name(fresh.key), fresh)
    loaded = E.run_experiment(model, tok, **run, cache_dir=tmp_path / "cache",
                              results_dir=committed)
    assert loaded.from_cache and loaded.path.parent == committed
    assert loaded.texts == fresh.texts and not (tmp_path / "cache").exists()
    # a committed file whose contents are not this run's is an error, not a silent result
    fresh.texts["greedy"] = [t[:-1] + "#" for t in fresh.texts["greedy"]]
    fresh.texts[E.Results.REFERENCE] = ["x" * 40] * 3
    E._save(committed / E._file_name(fresh.key), fresh)
    with pytest.raises(ValueError, match="reference texts are not the prompts'.*--data"):
        E.run_experiment(model, tok, **run, cache_dir=None, results_dir=committed)
    other = E.run_experiment(make_tiny(seed=5, block_size=32), tok, **run, cache_dir=None,
                             results_dir=None)
    E._save(committed / E._file_name(fresh.key), other)   # another model's file, renamed
    with pytest.raises(ValueError, match="records the key"):
        E.run_experiment(model, tok, **run, cache_dir=None, results_dir=committed)


def test_committed_book_runs_match_a_regeneration():
    """The committed results of the shipped model are what the procedure generates: some
    settings of the grid (sampled, greedy, and the random or stateful rules of today's
    tools: XTC, DRY, mirostat) are regenerated and compared."""
    model, tok = slm.load_pretrained()
    for settings in E.BOOK_RUNS.values():
        res = E.run_experiment(model, tok, settings, cache_dir=None, progress=False)
        assert res.from_cache and res.path.parent == E.RESULTS_DIR, \
            ("no committed results for the shipped weights: "
             "python -m shakespeare_lm.analysis.experiment --data")
    grid = E.run_experiment(model, tok, cache_dir=None, progress=False)
    picked = [grid.setting(label) for label in
              ("top-p 0.9", "greedy", "XTC 0.2", "DRY 2", "mirostat 1.5")]
    again = E.run_experiment(model, tok, picked, cache_dir=None, results_dir=None,
                             progress=False, workers=1)
    for s in picked:
        assert again.texts[s.label] == grid.texts[s.label], s.label
        for a, b in zip(again.logprobs[s.label], grid.logprobs[s.label]):
            assert np.allclose(a, b, atol=1e-4), s.label
