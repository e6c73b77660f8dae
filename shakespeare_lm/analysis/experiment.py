"""The quality-likelihood experiment of chapter 4: many decoding rules, one set of prompts.

Prompts (``heldout_prompts``): 24 places in the held-out plays, chosen without randomness.
The held-out file is cut into 24 equal stretches; in each, the first speech that starts at
or after the stretch's middle is taken. The prompt is the 128 characters of held-out text
that end with that speech's speaker line (``...\\n\\nKATHARINA:\\n``), so every prompt asks
the model to write a speech for a named speaker; the reference is the 300 characters that
Shakespeare wrote next.

Generation (``run_experiment``): for every ``Setting`` (a rule family and its parameters)
the 24 prompts are continued by 300 characters as one batch on the KV cache. The model's
context is 256 characters, shorter than prompt plus continuation, so ``generate_long``
restarts generation every 128 characters with the last 128 characters as the new prompt,
exactly the windows in which ``metrics.char_logprobs`` scores a long text; the
per-character log-probabilities that generation returns are therefore the scores of the
text under the untruncated model.

Results on disk: ``quality_likelihood-<key>.npz``, ``<key>`` a hash of the model's weights
(sha256 of its tensors), the prompts, the settings, the length and the seed. They are looked
up first in ``data/quality_likelihood/`` (committed: the book's runs, ``BOOK_RUNS``, for the
shipped weights, so a fresh clone does not regenerate them), then in ``cache/``
(git-ignored, where every other run is saved). A committed file is validated when it is
loaded (its recorded key, labels, shapes, reference texts and log-probabilities) and a file
that fails is an error, never silently used. ``force=True`` (or ``python -m
shakespeare_lm.analysis.experiment --force``) regenerates into ``cache/``; ``python -m
shakespeare_lm.analysis.experiment --data`` regenerates the committed files (after retraining).
Sampling is seeded per setting, so a regenerated file holds exactly the same texts and
numbers; ``tests/analysis/test_experiment.py`` regenerates some settings and compares.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import re
import time
import zlib
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from ..decoding.beam import beam_search
from ..checks import check_count
from ..decoding.context_window import Window, WindowedRow, WindowPolicy, decode_in_windows
from ..decoding.contrastive import contrastive_search
from ..decoding.generate import generate
from ..model import ModelConfig, Transformer
from ..paths import CACHE_DIR, RESULTS_DIR
from ..tokenizer import CharTokenizer
from . import metrics

FORMAT_VERSION = 1        # bump when the generation procedure changes: old caches are ignored
N_PROMPTS = 24
PROMPT_CHARS = 128
NEW_CHARS = 300
SEED = 0

_SPEECH_START = re.compile(r"\n\n[A-Z][^\n]*:\n")   # a blank line, then "SPEAKER NAME:\n"


# --- prompts ----------------------------------------------------------------------------
@dataclass(frozen=True)
class HeldoutPrompt:
    """A prompt from the held-out plays and the text that followed it there."""

    position: int        # where the continuation starts in the held-out file
    prompt: str          # the PROMPT_CHARS characters before it, ending with a speaker line
    reference: str       # the next NEW_CHARS characters of the play

    @property
    def speaker(self) -> str:
        return self.prompt.rstrip("\n").rsplit("\n", 1)[-1].rstrip(":")


def heldout_prompts(text: str | None = None, n: int = N_PROMPTS, prompt_chars: int = PROMPT_CHARS,
                    new_chars: int = NEW_CHARS) -> list[HeldoutPrompt]:
    """The ``n`` fixed prompts (see the module docstring) from the held-out text."""
    for name, value in (("n", n), ("prompt_chars", prompt_chars), ("new_chars", new_chars)):
        check_count(name, value, 1)
    if text is None:
        from ..corpus import load_heldout
        text = load_heldout()
    starts = [m.end() for m in _SPEECH_START.finditer(text)
              if m.end() >= prompt_chars and m.end() + new_chars <= len(text)]
    chosen = []
    for i in range(n):
        middle = (2 * i + 1) * len(text) // (2 * n)
        later = [s for s in starts if s >= middle and (not chosen or s > chosen[-1])]
        if not later:
            raise ValueError(f"the held-out text ({len(text)} characters) has too few speeches "
                             f"for n={n} prompts of {prompt_chars}+{new_chars} characters")
        chosen.append(later[0])
    return [HeldoutPrompt(s, text[s - prompt_chars : s], text[s : s + new_chars]) for s in chosen]


# --- settings ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Setting:
    """One decoding rule with its parameters: ``family`` names the curve it belongs to."""

    family: str          # "temperature", "top-k", ..., "greedy", "beam", "contrastive"
    value: float | None  # the family's knob, for plotting (None for greedy)
    params: tuple        # keyword arguments of the decoder, as sorted (name, value) pairs

    @property
    def label(self) -> str:
        return self.family if self.value is None else f"{self.family} {self.value:g}"

    @property
    def kwargs(self) -> dict:
        return dict(self.params)


def _s(family: str, value, **params) -> Setting:
    return Setting(family, value, tuple(sorted(params.items())))


# the rule families of the curve (sampling at T = 1 unless the family is temperature)
SAMPLING_FAMILIES = ("temperature", "top-k", "top-p", "min-p", "typical", "eta")
DEFAULT_SETTINGS: tuple[Setting, ...] = (
    *(_s("temperature", t, temperature=t) for t in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.3)),
    *(_s("top-k", k, top_k=k) for k in (2, 3, 5, 10, 20)),
    *(_s("top-p", p, top_p=p) for p in (0.5, 0.7, 0.8, 0.9, 0.95)),
    *(_s("min-p", r, min_p=r) for r in (0.4, 0.2, 0.1, 0.05, 0.02)),
    *(_s("typical", m, typical_p=m) for m in (0.5, 0.7, 0.9)),
    *(_s("eta", e, eta=e) for e in (0.03, 0.01, 0.003)),
    _s("greedy", None, temperature=0),
    _s("beam", 4, beam_width=4),
    # the CTRL penalty on greedy decoding, as Keskar et al. (2019) used it
    *(_s("repetition penalty", r, temperature=0, repetition_penalty=r) for r in (1.2, 1.5)),
    *(_s("contrastive", a, num_candidates=5, alpha=a) for a in (0.3, 0.6)),
)
# the runs the book shows, committed under data/quality_likelihood/ for the shipped weights:
# the chapter's grid, and the temperature of its exercise that is not in the grid
BOOK_RUNS: dict[str, tuple[Setting, ...]] = {
    "grid": DEFAULT_SETTINGS,
    "exercise": (_s("temperature", 0.4, temperature=0.4),),
}


# --- generation past the context window -------------------------------------------------
SegmentDecoder = Callable[[list[str], int, int], list[tuple[str, list[float]]]]


@dataclass
class _LongText(WindowedRow):
    """One prompt and its continuation so far, decoded in windows."""

    prompt: str
    max_new: int
    new: str = ""
    logprobs: list[float] = field(default_factory=list)
    reason: str | None = None


class _Segments:
    """``generate_long``'s step of ``decode_in_windows``: one ``decode`` call per window,
    numbered from 0 (the segment a decoder seeds by)."""

    def __init__(self, decode: SegmentDecoder, rows: list[_LongText]):
        self.decode, self.rows, self.segment = decode, rows, 0

    def __call__(self, windows: list[Window | None]) -> None:
        live = [(i, w) for i, w in enumerate(windows) if w is not None]
        outs = self.decode([self.rows[i].context_of(w) for i, w in live],
                           max(w.budget for _, w in live), self.segment)
        for (i, w), (text, lps) in zip(live, outs):
            if len(text) < w.budget or len(lps) < w.budget:
                raise RuntimeError(f"the decoder returned {len(text)} characters for prompt {i}, "
                                   f"fewer than the {w.budget} asked for")
            row = self.rows[i]
            row.new += text[: w.budget]
            row.logprobs += list(lps[: w.budget])
        self.segment += 1


def generate_long(decode: SegmentDecoder, prompts: Sequence[str], max_new_tokens: int,
                  block_size: int) -> list[tuple[str, list[float]]]:
    """Continue each prompt by ``max_new_tokens`` characters with a decoder whose context
    is ``block_size``, restarting at the windows of ``shakespeare_lm.decoding.context_window``
    (its ``decode_in_windows`` loop, which ``generate(..., context_overflow="slide")`` runs
    too).

    ``decode(contexts, n, segment)`` continues every context by at least n characters
    (rows may stop at the context window) and returns (text, logprobs) per row. Returns
    (continuation, logprobs) per prompt.
    """
    rows = [_LongText(p, max_new_tokens) for p in prompts]
    decode_in_windows(WindowPolicy(block_size), rows, _Segments(decode, rows))
    return [(r.new, r.logprobs) for r in rows]


def setting_seed(setting: Setting, seed: int, segment: int) -> int:
    """A seed for one setting and segment that does not change when other settings do."""
    return zlib.crc32(f"{setting.label}|{seed}|{segment}".encode())


def segment_decoder(model, tok, setting: Setting, seed: int) -> SegmentDecoder:
    """The ``decode`` function of ``generate_long`` for one setting."""
    kw = setting.kwargs
    if setting.family == "beam":
        def decode(contexts, n, segment):
            outs = [beam_search(model, tok, c, n, **kw) for c in contexts]
            return [(g.text, g.logprobs) for g in outs]
    elif setting.family == "contrastive":
        def decode(contexts, n, segment):
            return [(g.text, g.logprobs) for g in contrastive_search(model, tok, contexts, n, **kw)]
    else:
        def decode(contexts, n, segment):
            outs = generate(model, tok, contexts, n, seed=setting_seed(setting, seed, segment),
                            **kw)
            return [(g.text, g.logprobs) for g in outs]
    return decode


# --- results and cache ------------------------------------------------------------------
def weights_sha256(model) -> str:
    """sha256 over the model's tensors (name, shape, dtype, bytes), in name order."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}|{tuple(t.shape)}|{t.dtype}|".encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


@dataclass
class Results:
    """Texts and per-character log-probabilities for every setting, plus the reference."""

    prompts: list[HeldoutPrompt]
    settings: list[Setting]
    texts: dict[str, list[str]]                   # label -> one continuation per prompt
    logprobs: dict[str, list[np.ndarray]]         # label -> one float32 array per prompt
    key: str
    from_cache: bool = False
    seconds: float = float("nan")                 # how long generating took (when it was done)
    workers: int = 1                              # processes it ran in (one thread each)
    path: Path | None = field(default=None, repr=False)

    REFERENCE = "held-out text"

    def setting(self, label: str) -> Setting:
        for s in self.settings:
            if s.label == label:
                return s
        raise KeyError(f"no setting {label!r}; known: {[s.label for s in self.settings]}")

    def probabilities(self, label: str) -> np.ndarray:
        """Model probability of every generated character of a setting (or the reference)."""
        return np.exp(np.concatenate(self.logprobs[label]).astype(np.float64))

    def summary(self, label: str, vocab) -> dict:
        """The metrics of one setting (or of ``Results.REFERENCE``)."""
        texts, lps = self.texts[label], self.logprobs[label]
        low, high = metrics.probability_shares([torch.from_numpy(lp) for lp in lps])
        s = None if label == self.REFERENCE else self.setting(label)
        return {
            "family": self.REFERENCE if s is None else s.family,
            "label": label,
            "value": None if s is None else s.value,
            "nats_per_char": metrics.nats_per_char([torch.from_numpy(lp) for lp in lps]),
            "real_words": metrics.real_word_share(texts, vocab),
            "repeated_trigrams": metrics.repeated_trigram_share(texts),
            "distinct_1": metrics.distinct_n(texts, 1),
            "distinct_2": metrics.distinct_n(texts, 2),
            "distinct_3": metrics.distinct_n(texts, 3),
            "p_below_0.1": low,
            "p_above_0.9": high,
        }

    def table(self, vocab) -> list[dict]:
        """``summary`` of every setting, then of the held-out reference."""
        labels = [s.label for s in self.settings] + [self.REFERENCE]
        return [self.summary(lab, vocab) for lab in labels]


def family_curve(table: Sequence[dict], family: str, x: str = "nats_per_char",
                 y: str = "real_words") -> tuple[np.ndarray, np.ndarray]:
    """The (x, y) points of one family's settings in a ``Results.table``, sorted by x."""
    pts = sorted((r[x], r[y]) for r in table if r["family"] == family)
    if not pts:
        raise ValueError(f"family={family!r} has no rows; families: "
                         f"{sorted({r['family'] for r in table})}")
    return np.array([p[0] for p in pts]), np.array([p[1] for p in pts])


def curve_at(table: Sequence[dict], family: str, at, x: str = "nats_per_char",
             y: str = "real_words") -> np.ndarray:
    """The family's curve (straight lines between its settings) evaluated at x = ``at``;
    nan outside the range of x its settings cover."""
    xs, ys = family_curve(table, family, x, y)
    at = np.asarray(at, dtype=float)
    return np.where((at >= xs[0]) & (at <= xs[-1]), np.interp(at, xs, ys), np.nan)


def cache_key(weights: str, prompts: Sequence[HeldoutPrompt], settings: Sequence[Setting],
              new_chars: int, seed: int) -> str:
    spec = {"version": FORMAT_VERSION, "weights": weights, "new_chars": new_chars, "seed": seed,
            "prompts": [(p.position, p.prompt, p.reference) for p in prompts],
            "settings": [(s.family, s.value, list(s.params)) for s in settings]}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:20]


def _file_name(key: str) -> str:
    return f"quality_likelihood-{key}.npz"


def _save(path: Path, res: Results) -> None:
    labels = list(res.texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez_compressed(
        tmp, labels=np.array(labels), key=np.array(res.key),
        texts=np.array([res.texts[lab] for lab in labels]),
        logprobs=np.array([np.stack(res.logprobs[lab]) for lab in labels], dtype=np.float32),
        seconds=np.array(res.seconds), workers=np.array(res.workers))
    tmp.replace(path)


def _problems(f, prompts, settings, key, new_chars: int) -> list[str]:
    """What is wrong with a results file ``f`` (an open npz) for this run; [] if nothing."""
    labels = [str(x) for x in f["labels"]]
    expected = [s.label for s in settings] + [Results.REFERENCE]
    shape = (len(expected), len(prompts))
    found_key = str(f["key"]) if "key" in f.files else None
    checks = [
        (found_key == key, f"it records the key {found_key!r}, not {key!r}"),
        (labels == expected, f"its settings are {labels}, not {expected}"),
        (f["texts"].shape == shape, f"its texts have shape {f['texts'].shape}, not {shape}"),
        (f["logprobs"].shape == (*shape, new_chars),
         f"its log-probabilities have shape {f['logprobs'].shape}, not {(*shape, new_chars)}"),
    ]
    problems = [why for ok, why in checks if not ok]
    if problems:
        return problems
    lps = f["logprobs"]
    if not (np.isfinite(lps).all() and (lps <= 0).all()):
        problems.append("its log-probabilities are not all finite and <= 0")
    if [str(t) for t in f["texts"][-1]] != [p.reference[:new_chars] for p in prompts]:
        problems.append("its reference texts are not the prompts' held-out continuations")
    if any(len(str(t)) != new_chars for t in f["texts"].reshape(-1)):
        problems.append(f"not every text has {new_chars} characters")
    return problems


def _load(path: Path, prompts, settings, key, new_chars: int, strict: bool) -> Results | None:
    """The results in ``path``, or None if it is unreadable or is not this run's. With
    ``strict`` (committed files) a file that fails validation is a ValueError instead."""
    try:
        with np.load(path, allow_pickle=False) as f:
            problems = _problems(f, prompts, settings, key, new_chars)
            labels = [str(x) for x in f["labels"]]
            texts = {lab: [str(t) for t in row] for lab, row in zip(labels, f["texts"])}
            lps = {lab: list(row) for lab, row in zip(labels, f["logprobs"])}
            seconds, workers = float(f["seconds"]), int(f["workers"])
    except (OSError, KeyError, ValueError) as e:
        problems = [f"it cannot be read ({e})"]
    if problems:
        if strict:
            raise ValueError(f"{path} is not the results of this run: {'; '.join(problems)}. "
                             "Regenerate it with "
                             "`python -m shakespeare_lm.analysis.experiment --data`")
        return None  # a stale or broken cache file: regenerate
    return Results(list(prompts), list(settings), texts, lps, key, True, seconds, workers, path)


# --- running: in this process or in a pool of worker processes -------------------------
@contextmanager
def _one_thread():
    """Generate on one torch thread, so results do not depend on the thread count."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _generate_setting(model, tok, setting: Setting, contexts: list[str], new_chars: int, seed: int):
    out = generate_long(segment_decoder(model, tok, setting, seed), contexts, new_chars,
                        model.config.block_size)
    return setting.label, [c for c, _ in out], [np.asarray(lp, dtype=np.float32) for _, lp in out]


_WORKER: dict = {}


def _init_worker(config: dict, state: dict, chars: str) -> None:
    torch.set_num_threads(1)
    model = Transformer(ModelConfig(**config))
    model.load_state_dict(state)
    _WORKER.update(model=model.eval(), tok=CharTokenizer(chars))


def _worker_setting(task):
    return _generate_setting(_WORKER["model"], _WORKER["tok"], *task)


def _generate_all(model, tok, settings, contexts, new_chars: int, seed: int, workers: int,
                  progress: bool) -> dict:
    """{label: (texts, log-probs)} of every setting, in this process or in ``workers``
    spawned ones (one torch thread each)."""
    # the slowest settings first, so that the workers finish together
    order = sorted(settings, key=lambda s: s.family not in ("beam", "contrastive"))
    tasks = [(s, contexts, new_chars, seed) for s in order]
    bar = tqdm(total=len(tasks), desc="settings", unit="setting", disable=not progress)
    done = {}
    if workers == 1 or len(tasks) < 2:
        with _one_thread():
            for task in tasks:
                label, texts, lps = _generate_setting(model, tok, *task)
                done[label] = (texts, lps)
                bar.update()
    else:
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(min(workers, len(tasks)), _init_worker,
                      (model.config.to_dict(), state, tok.chars)) as pool:
            for label, texts, lps in pool.imap_unordered(_worker_setting, tasks):
                done[label] = (texts, lps)
                bar.update()
    bar.close()
    return done


def run_experiment(model, tok, settings: Sequence[Setting] = DEFAULT_SETTINGS,
                   prompts: Sequence[HeldoutPrompt] | None = None, new_chars: int = NEW_CHARS,
                   seed: int = SEED, *, cache_dir: Path | str | None = CACHE_DIR,
                   results_dir: Path | str | None = RESULTS_DIR, force: bool = False,
                   progress: bool = True, workers: int | None = None) -> Results:
    """Generate ``new_chars`` characters after every prompt for every setting, batched
    across prompts, and score the held-out reference; load saved results when present.

    Saved results are looked up in ``results_dir`` (committed, validated strictly), then in
    ``cache_dir``; ``None`` skips either. A generated run is saved to ``cache_dir``.
    ``force=True`` regenerates. ``progress`` shows a tqdm bar over the settings. ``workers``
    processes (default: one per CPU core, at most 2) share the settings, one torch thread
    each; every setting has its own seed, so the results do not depend on their number.
    """
    prompts = heldout_prompts(new_chars=new_chars) if prompts is None else list(prompts)
    settings = list(settings)
    labels = [s.label for s in settings]
    if len(set(labels)) != len(labels) or Results.REFERENCE in labels:
        raise ValueError(f"settings must have distinct labels other than "
                         f"{Results.REFERENCE!r}: {labels}")
    if any(len(p.reference) < new_chars for p in prompts):
        raise ValueError(f"new_chars={new_chars} is longer than a prompt's reference text")
    workers = min(2, os.cpu_count() or 1) if workers is None else workers
    check_count("workers", workers, 1)
    key = cache_key(weights_sha256(model), prompts, settings, new_chars, seed)
    path = None if cache_dir is None else Path(cache_dir) / _file_name(key)
    saved = [] if force else [(Path(d) / _file_name(key), strict) for d, strict in
                              ((results_dir, True), (cache_dir, False)) if d is not None]
    for candidate, strict in saved:
        if candidate.exists():
            loaded = _load(candidate, prompts, settings, key, new_chars, strict)
            if loaded is not None:
                return loaded

    t0 = time.perf_counter()
    contexts = [p.prompt for p in prompts]
    done = _generate_all(model, tok, settings, contexts, new_chars, seed, workers, progress)
    texts = {label: done[label][0] for label in labels}
    lps = {label: done[label][1] for label in labels}
    refs = [p.reference[:new_chars] for p in prompts]
    texts[Results.REFERENCE] = refs
    with _one_thread():
        lps[Results.REFERENCE] = [lp.numpy().astype(np.float32)
                                  for lp in metrics.char_logprobs(model, tok, contexts, refs)]
    res = Results(prompts, settings, texts, lps, key, False, time.perf_counter() - t0, workers,
                  path)
    if path is not None:
        _save(path, res)
    return res


def write_book_runs(model, tok, dest: Path | str = RESULTS_DIR, workers: int | None = None,
                    progress: bool = True) -> list[Path]:
    """Regenerate every run of ``BOOK_RUNS`` and write it to ``dest`` (the committed
    results), removing the files there that belong to no current run. Returns the paths."""
    dest = Path(dest)
    written = []
    for settings in BOOK_RUNS.values():
        res = run_experiment(model, tok, settings, cache_dir=None, results_dir=None,
                             force=True, progress=progress, workers=workers)
        path = dest / _file_name(res.key)
        _save(path, res)
        written.append(path)
    for stale in set(dest.glob(_file_name("*"))) - set(written):
        stale.unlink()
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the chapter 4 experiment and time it.")
    parser.add_argument("--force", action="store_true", help="regenerate even if saved")
    parser.add_argument("--data", action="store_true",
                        help="regenerate the book's runs into data/quality_likelihood/ (commit "
                             "them after retraining the model)")
    parser.add_argument("--workers", type=int, default=None,
                        help="processes to generate in (default: one per core, at most 2)")
    args = parser.parse_args(argv)
    from ..corpus import load_train
    from ..weights import load_pretrained
    model, tok = load_pretrained()
    if args.data:
        for path in write_book_runs(model, tok, workers=args.workers):
            print(f"wrote {path}")
        return
    res = run_experiment(model, tok, force=args.force, workers=args.workers)
    how = f"loaded from {res.path}; generating it took" if res.from_cache else "generated in"
    print(f"{len(res.settings)} settings x {len(res.prompts)} prompts x {NEW_CHARS} characters: "
          f"{how} {res.seconds:.1f} s in {res.workers} process(es)")
    vocab = metrics.vocabulary(load_train())
    for row in res.table(vocab):
        print(f"{row['label']:<24} {row['nats_per_char']:.3f} nats/char  real words "
              f"{row['real_words']:.3f}  repeated trigrams {row['repeated_trigrams']:.3f}  "
              f"distinct-2 {row['distinct_2']:.3f}")


if __name__ == "__main__":
    main()
