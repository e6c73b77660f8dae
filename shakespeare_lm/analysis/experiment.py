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

Settings (``DEFAULT_SETTINGS``): every tuned family (``TUNED_FAMILIES``: chapter 3's six
and five from today's tools) at the same number of settings, ``BUDGET``, so that no family
has more tries at a lucky setting; then greedy decoding, beam search, the repetition
penalty and contrastive search as reference points.

Results on disk: ``quality_likelihood-<key>.npz``, ``<key>`` a hash of the model's weights
(sha256 of its tensors), the prompts, the settings, the length and the seed; each setting's
own key (the same hash for that setting alone) and generation time are recorded beside it.
They are looked up first in ``data/quality_likelihood/`` (committed: the book's runs,
``BOOK_RUNS``, for the shipped weights, so a fresh clone does not regenerate them), then in
``cache/`` (git-ignored, where every other run is saved). A committed file is validated when
it is loaded (its recorded keys, labels, shapes, reference texts and log-probabilities) and a
file that fails is an error, never silently used. A run that is not saved generates only the
settings no saved file holds under their own key (each setting is seeded by its label, so its
texts do not depend on the rest of the grid). ``force=True`` (or ``python -m
shakespeare_lm.analysis.experiment --force``) regenerates every setting into ``cache/``;
``python -m shakespeare_lm.analysis.experiment --data`` writes the committed files (after
retraining, or after changing the grid; add ``--force`` to regenerate every setting).
Sampling is seeded per setting, so a regenerated file holds exactly the same texts and
numbers; ``tests/analysis/test_experiment.py`` regenerates some settings and compares.

The equal-budget comparison (``bootstrap_prompts``): a family's best setting is the one
lying furthest above the temperature curve at its NLL (``offsets_above``); a statistic of
such offsets, as the difference between two families' best, gets a percentile interval
from resampling the prompts with replacement, the best settings chosen again each time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import re
import time
import zipfile
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

# what np.load raises on a file that is not a readable npz (empty, cut short, not a zip)
_UNREADABLE = (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile)
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


# The rule families of the curve, each at BUDGET settings of its knob and otherwise sampling
# at T = 1 (unless the family is temperature): chapter 3's six, then five from today's tools.
# Every family gets the same number of settings, so that none has more tries at a lucky
# setting (the equal tuning budget that Schaeffer et al. 2025, arXiv 2506.13681, ask of
# the min-p comparison). Greedy decoding, beam search, the repetition penalty and
# contrastive search are reference points and remedies, not tuned families of the curve.
SAMPLING_FAMILIES = ("temperature", "top-k", "top-p", "min-p", "typical", "eta")
MODERN_FAMILIES = ("top-nσ", "top-H", "XTC", "DRY", "mirostat")
TUNED_FAMILIES = SAMPLING_FAMILIES + MODERN_FAMILIES
BUDGET = 6                 # settings per tuned family
YARDSTICK = "temperature"  # the family the others are measured against (``offsets_above``)
XTC_THRESHOLD = 0.1        # llama.cpp's default; the family's knob is the probability
# DRY at llama.cpp's defaults (base 1.75, allowed length 2, its sequence breakers: the
# DecodingConfig's); the family's knob is the multiplier
TUNED_SETTINGS: tuple[Setting, ...] = (
    *(_s("temperature", t, temperature=t) for t in (0.4, 0.6, 0.8, 0.9, 1.0, 1.2)),
    *(_s("top-k", k, top_k=k) for k in (2, 3, 5, 10, 20, 40)),
    *(_s("top-p", p, top_p=p) for p in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)),
    *(_s("min-p", r, min_p=r) for r in (0.4, 0.3, 0.2, 0.1, 0.05, 0.02)),
    *(_s("typical", m, typical_p=m) for m in (0.2, 0.35, 0.5, 0.7, 0.9, 0.95)),
    *(_s("eta", e, eta=e) for e in (0.3, 0.1, 0.03, 0.01, 0.003, 0.001)),
    *(_s("top-nσ", n, top_n_sigma=n) for n in (0.25, 0.5, 0.75, 1.0, 1.25, 1.5)),
    *(_s("top-H", h, top_h=h) for h in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)),
    *(_s("XTC", x, xtc_probability=x, xtc_threshold=XTC_THRESHOLD)
      for x in (0.02, 0.05, 0.1, 0.2, 0.3, 0.4)),
    *(_s("DRY", m, dry_multiplier=m) for m in (0.25, 0.5, 1.0, 2.0, 3.0, 4.0)),
    *(_s("mirostat", tau, mirostat_tau=tau) for tau in (0.75, 1.0, 1.25, 1.5, 1.75, 2.0)),
)
DEFAULT_SETTINGS: tuple[Setting, ...] = (
    *TUNED_SETTINGS,
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
    "exercise": (_s("temperature", 0.5, temperature=0.5),),
}


def settings_per_family(settings: Sequence[Setting] = DEFAULT_SETTINGS,
                        families: Sequence[str] = TUNED_FAMILIES) -> dict[str, int]:
    """How many of ``settings`` each family of ``families`` has: the tuning budget."""
    return {f: sum(s.family == f for s in settings) for f in families}


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
    setting_keys: dict[str, str] = field(default_factory=dict, repr=False)  # label -> key
    # label -> seconds its generation took on one thread (nan: not recorded)
    setting_seconds: dict[str, float] = field(default_factory=dict, repr=False)
    reused: tuple[str, ...] = ()                  # labels taken from earlier saved runs

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


# --- the equal-budget comparison: a bootstrap over the prompts -----------------------------
def prompt_parts(results: Results, vocab, labels: Sequence[str] | None = None) -> np.ndarray:
    """(settings, prompts, 4): for each setting of ``labels`` (default: all, in order) and
    each prompt, the real words found, the complete words, the summed NLL in nats and the
    characters. The pooled measures are ratios of sums of these over prompts, so a resample
    of the prompts is a weighted sum (``pooled``)."""
    labels = [s.label for s in results.settings] if labels is None else list(labels)
    out = np.empty((len(labels), len(results.prompts), 4))
    for i, label in enumerate(labels):
        for j, (text, lp) in enumerate(zip(results.texts[label], results.logprobs[label])):
            found, total = metrics.real_word_counts([text], vocab)
            out[i, j] = found, total, -np.asarray(lp, dtype=np.float64).sum(), len(lp)
    return out


def pooled(parts: np.ndarray, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(real-word share, NLL per character) of every setting of ``parts`` (settings,
    prompts, 4), each prompt counted ``counts`` times (prompts,) or (resamples, prompts);
    default once. Returns arrays of shape (settings,) or (resamples, settings)."""
    counts = np.ones(parts.shape[1]) if counts is None else np.asarray(counts, dtype=float)
    sums = np.einsum("...p,spk->...sk", counts, parts)
    return sums[..., 0] / sums[..., 1], sums[..., 2] / sums[..., 3]


def offsets_above(real: np.ndarray, nll: np.ndarray, families: Sequence[str],
                  yardstick: str = YARDSTICK) -> np.ndarray:
    """Each setting's real-word share minus the ``yardstick`` family's curve (straight lines
    between its settings, by NLL) at the setting's NLL: how many more real words it writes
    than the yardstick does at the same likelihood. nan outside the NLL range that the
    yardstick's settings cover, where the curve is not measured. Arrays of shape (settings,)."""
    real, nll = np.asarray(real, dtype=float), np.asarray(nll, dtype=float)
    mine = np.array([f == yardstick for f in families])
    if mine.sum() < 2:
        raise ValueError(f"yardstick={yardstick!r} needs at least 2 settings, "
                         f"found {int(mine.sum())}")
    order = np.argsort(nll[mine])
    xs, ys = nll[mine][order], real[mine][order]
    inside = (nll >= xs[0]) & (nll <= xs[-1])
    return np.where(inside, real - np.interp(nll, xs, ys), np.nan)


def best_setting(offsets: np.ndarray, families: Sequence[str], family: str) -> int | None:
    """Index of the family's setting that lies furthest above the yardstick (its best by
    the chapter's criterion), or None when none of its settings lies inside its range."""
    mine = [i for i, f in enumerate(families) if f == family and not np.isnan(offsets[i])]
    if not any(f == family for f in families):
        raise ValueError(f"family={family!r} has no settings; families: {sorted(set(families))}")
    return max(mine, key=lambda i: offsets[i]) if mine else None


def best_offset(real: np.ndarray, nll: np.ndarray, families: Sequence[str], family: str,
                yardstick: str = YARDSTICK) -> float:
    """The offset above the yardstick of the family's best setting (nan if none is inside)."""
    offsets = offsets_above(real, nll, families, yardstick)
    i = best_setting(offsets, families, family)
    return np.nan if i is None else float(offsets[i])


@dataclass(frozen=True)
class BootstrapInterval:
    """A statistic on all the prompts, and its percentile interval over resamples."""

    estimate: float
    low: float
    high: float
    level: float
    samples: np.ndarray = field(repr=False)  # the statistic on each resample (nan: undefined)

    @property
    def n_undefined(self) -> int:
        """Resamples on which the statistic was nan (left out of the quantiles)."""
        return int(np.isnan(self.samples).sum())


def resample_counts(n_prompts: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """(n_boot, n_prompts): how often each prompt is drawn in each resample of
    ``n_prompts`` drawn with replacement (numpy's ``default_rng(seed)``)."""
    check_count("n_prompts", n_prompts, 1)
    check_count("n_boot", n_boot, 1)
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_prompts, np.full(n_prompts, 1 / n_prompts), size=n_boot)


def bootstrap_prompts(parts: np.ndarray, statistic: Callable[[np.ndarray, np.ndarray], float],
                      n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> BootstrapInterval:
    """``statistic(real, nll)`` (arrays over the settings of ``parts``, see ``pooled``) on
    all the prompts, and its ``level`` percentile interval over ``n_boot`` resamples of the
    prompts, drawn with replacement (``resample_counts(seed)``). Whatever the statistic
    chooses, such as a family's best setting, it chooses again on every resample, so the
    interval includes the luck of that choice. Resamples where the statistic is nan are
    left out of the quantiles (``n_undefined`` counts them)."""
    if not (isinstance(level, float) and 0 < level < 1):
        raise ValueError(f"level={level!r} is invalid: level must be a float in (0, 1), "
                         "such as 0.95")
    parts = np.asarray(parts, dtype=float)
    if parts.ndim != 3 or parts.shape[2] != 4:
        raise ValueError(f"parts has shape {parts.shape}: expected (settings, prompts, 4), "
                         "as prompt_parts returns")
    estimate = float(statistic(*pooled(parts)))
    real, nll = pooled(parts, resample_counts(parts.shape[1], n_boot, seed))
    samples = np.array([float(statistic(r, n)) for r, n in zip(real, nll)])
    defined = samples[~np.isnan(samples)]
    if defined.size == 0:
        raise ValueError("the statistic is nan on every resample")
    tail = (1 - level) / 2
    low, high = np.quantile(defined, [tail, 1 - tail])
    return BootstrapInterval(estimate, float(low), float(high), level, samples)


def cache_key(weights: str, prompts: Sequence[HeldoutPrompt], settings: Sequence[Setting],
              new_chars: int, seed: int) -> str:
    spec = {"version": FORMAT_VERSION, "weights": weights, "new_chars": new_chars, "seed": seed,
            "prompts": [(p.position, p.prompt, p.reference) for p in prompts],
            "settings": [(s.family, s.value, list(s.params)) for s in settings]}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:20]


def setting_key(weights: str, prompts: Sequence[HeldoutPrompt], setting: Setting,
                new_chars: int, seed: int) -> str:
    """The key of one setting's results: what ``cache_key`` hashes, for that setting alone.
    Each setting is seeded by its own label, so its texts do not depend on the other
    settings of a run, and a later run can take them from any saved file that records them."""
    return cache_key(weights, prompts, [setting], new_chars, seed)


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
        seconds=np.array(res.seconds), workers=np.array(res.workers),
        setting_keys=np.array([res.setting_keys.get(lab, "") for lab in labels]),
        setting_seconds=np.array([res.setting_seconds.get(lab, np.nan) for lab in labels]))
    tmp.replace(path)


def _problems(f, prompts, settings, key, new_chars: int, keys: dict | None = None) -> list[str]:
    """What is wrong with a results file ``f`` (an open npz) for this run; [] if nothing.
    ``keys``: each setting's ``setting_key``, checked where the file records them."""
    labels = [str(x) for x in f["labels"]]
    expected = [s.label for s in settings] + [Results.REFERENCE]
    shape = (len(expected), len(prompts))
    found_key = str(f["key"]) if "key" in f.files else None
    recorded = [str(x) for x in f["setting_keys"]] if "setting_keys" in f.files else None
    wanted = None if keys is None else [keys[s.label] for s in settings] + [""]
    checks = [
        (found_key == key, f"it records the key {found_key!r}, not {key!r}"),
        (recorded is None or wanted is None or recorded == wanted,
         "its settings' keys are not this run's"),
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


def _load(path: Path, prompts, settings, key, new_chars: int, strict: bool,
          keys: dict | None = None) -> Results | None:
    """The results in ``path``, or None if it is unreadable or is not this run's. With
    ``strict`` (committed files) a file that fails validation is a ValueError instead."""
    try:
        with np.load(path, allow_pickle=False) as f:
            problems = _problems(f, prompts, settings, key, new_chars, keys)
            labels = [str(x) for x in f["labels"]]
            texts = {lab: [str(t) for t in row] for lab, row in zip(labels, f["texts"])}
            lps = {lab: list(row) for lab, row in zip(labels, f["logprobs"])}
            seconds, workers = float(f["seconds"]), int(f["workers"])
            times = ({lab: float(x) for lab, x in zip(labels, f["setting_seconds"])}
                     if "setting_seconds" in f.files else {})
    except _UNREADABLE as e:
        problems = [f"it cannot be read ({e})"]
    if problems:
        if strict:
            raise ValueError(f"{path} is not the results of this run: {'; '.join(problems)}. "
                             "Regenerate it with "
                             "`python -m shakespeare_lm.analysis.experiment --data`")
        return None  # a stale or broken cache file: regenerate
    times.pop(Results.REFERENCE, None)
    return Results(list(prompts), list(settings), texts, lps, key, True, seconds, workers, path,
                   dict(keys or {}), times)


def _saved_settings(dirs: Sequence[Path], wanted: dict[str, str], n_prompts: int,
                    new_chars: int) -> dict[str, tuple[list[str], list[np.ndarray], float]]:
    """Settings of ``wanted`` (label -> ``setting_key``) found in the results files of
    ``dirs`` that record their settings' keys: label -> (texts, log-probs, seconds)."""
    by_key = {k: lab for lab, k in wanted.items()}
    found: dict[str, tuple] = {}
    for d in dirs:
        for path in sorted(Path(d).glob(_file_name("*"))):
            try:
                with np.load(path, allow_pickle=False) as f:
                    if "setting_keys" not in f.files:
                        continue
                    keys = [str(x) for x in f["setting_keys"]]
                    hits = [(i, by_key[k]) for i, k in enumerate(keys)
                            if k in by_key and by_key[k] not in found]
                    if not hits or f["logprobs"].shape[1:] != (n_prompts, new_chars):
                        continue
                    for i, lab in hits:
                        lps = f["logprobs"][i].astype(np.float32)
                        texts = [str(t) for t in f["texts"][i]]
                        if (np.isfinite(lps).all() and (lps <= 0).all()
                                and all(len(t) == new_chars for t in texts)):
                            seconds = (float(f["setting_seconds"][i])
                                       if "setting_seconds" in f.files else np.nan)
                            found[lab] = (texts, list(lps), seconds)
            except _UNREADABLE:
                continue  # an unreadable file offers nothing
    return found


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
    t0 = time.perf_counter()
    out = generate_long(segment_decoder(model, tok, setting, seed), contexts, new_chars,
                        model.config.block_size)
    return (setting.label, [c for c, _ in out], [np.asarray(lp, dtype=np.float32) for _, lp in out],
            time.perf_counter() - t0)


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
    """{label: (texts, log-probs, seconds)} of every setting, in this process or in
    ``workers`` spawned ones (one torch thread each)."""
    # the slowest settings first, so that the workers finish together
    order = sorted(settings, key=lambda s: s.family not in ("beam", "contrastive"))
    tasks = [(s, contexts, new_chars, seed) for s in order]
    bar = tqdm(total=len(tasks), desc="settings", unit="setting", disable=not progress)
    done = {}
    if workers == 1 or len(tasks) < 2:
        with _one_thread():
            for task in tasks:
                label, *out = _generate_setting(model, tok, *task)
                done[label] = tuple(out)
                bar.update()
    else:
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(min(workers, len(tasks)), _init_worker,
                      (model.config.to_dict(), state, tok.chars)) as pool:
            for label, *out in pool.imap_unordered(_worker_setting, tasks):
                done[label] = tuple(out)
                bar.update()
    bar.close()
    return done


def _check_run(prompts: list, settings: list[Setting], new_chars: int) -> list[str]:
    """The settings' labels, once they are known to be distinct and the references long
    enough."""
    labels = [s.label for s in settings]
    if len(set(labels)) != len(labels) or Results.REFERENCE in labels:
        raise ValueError(f"settings must have distinct labels other than "
                         f"{Results.REFERENCE!r}: {labels}")
    if any(len(p.reference) < new_chars for p in prompts):
        raise ValueError(f"new_chars={new_chars} is longer than a prompt's reference text")
    return labels


def run_experiment(model, tok, settings: Sequence[Setting] = DEFAULT_SETTINGS,
                   prompts: Sequence[HeldoutPrompt] | None = None, new_chars: int = NEW_CHARS,
                   seed: int = SEED, *, cache_dir: Path | str | None = CACHE_DIR,
                   results_dir: Path | str | None = RESULTS_DIR, force: bool = False,
                   progress: bool = True, workers: int | None = None,
                   reuse_dirs: Sequence[Path | str] | None = None) -> Results:
    """Generate ``new_chars`` characters after every prompt for every setting, batched
    across prompts, and score the held-out reference; load saved results when present.

    Saved results are looked up in ``results_dir`` (committed, validated strictly), then in
    ``cache_dir``; ``None`` skips either. A generated run is saved to ``cache_dir``.
    Before generating, each setting is looked up on its own (by ``setting_key``) in the
    saved files of ``reuse_dirs`` (default: ``results_dir`` and ``cache_dir``), so a grid
    that grows generates only its new settings. ``force=True`` regenerates everything.
    ``progress`` shows a tqdm bar over the settings. ``workers`` processes (default: one per
    CPU core, at most 2) share the settings, one torch thread each; every setting has its
    own seed, so the results do not depend on their number.
    """
    prompts = heldout_prompts(new_chars=new_chars) if prompts is None else list(prompts)
    settings = list(settings)
    labels = _check_run(prompts, settings, new_chars)
    workers = min(2, os.cpu_count() or 1) if workers is None else workers
    check_count("workers", workers, 1)
    weights = weights_sha256(model)
    key = cache_key(weights, prompts, settings, new_chars, seed)
    keys = {s.label: setting_key(weights, prompts, s, new_chars, seed) for s in settings}
    path = None if cache_dir is None else Path(cache_dir) / _file_name(key)
    saved = [] if force else [(Path(d) / _file_name(key), strict) for d, strict in
                              ((results_dir, True), (cache_dir, False)) if d is not None]
    for candidate, strict in saved:
        if candidate.exists():
            loaded = _load(candidate, prompts, settings, key, new_chars, strict, keys)
            if loaded is not None:
                return loaded

    t0 = time.perf_counter()
    if reuse_dirs is None:
        reuse_dirs = [d for d in (results_dir, cache_dir) if d is not None]
    reused = {} if force else _saved_settings([Path(d) for d in reuse_dirs], keys,
                                              len(prompts), new_chars)
    contexts = [p.prompt for p in prompts]
    todo = [s for s in settings if s.label not in reused]
    done = {**reused,
            **_generate_all(model, tok, todo, contexts, new_chars, seed, workers, progress)}
    texts = {label: done[label][0] for label in labels}
    lps = {label: done[label][1] for label in labels}
    refs = [p.reference[:new_chars] for p in prompts]
    texts[Results.REFERENCE] = refs
    with _one_thread():
        lps[Results.REFERENCE] = [lp.numpy().astype(np.float32)
                                  for lp in metrics.char_logprobs(model, tok, contexts, refs)]
    res = Results(prompts, settings, texts, lps, key, False, time.perf_counter() - t0, workers,
                  path, keys, {label: done[label][2] for label in labels},
                  tuple(label for label in labels if label in reused))
    if path is not None:
        _save(path, res)
    return res


def write_book_runs(model, tok, dest: Path | str = RESULTS_DIR, workers: int | None = None,
                    progress: bool = True, force: bool = False,
                    prompts: Sequence[HeldoutPrompt] | None = None,
                    new_chars: int = NEW_CHARS) -> list[Results]:
    """Write every run of ``BOOK_RUNS`` to ``dest`` (the committed results), taking each
    setting already saved for these weights from ``dest`` or ``CACHE_DIR`` and generating
    the rest (``force=True``: all of them), then remove the files there that belong to no
    current run. Returns the runs, each with the ``path`` it was written to."""
    dest = Path(dest)
    written = []
    for settings in BOOK_RUNS.values():
        res = run_experiment(model, tok, settings, prompts, new_chars, cache_dir=None,
                             results_dir=None, force=force, progress=progress,
                             workers=workers, reuse_dirs=[dest, CACHE_DIR])
        res.path = dest / _file_name(res.key)
        _save(res.path, res)
        written.append(res)
    for stale in set(dest.glob(_file_name("*"))) - {r.path for r in written}:
        stale.unlink()
    return written


def _report(res: Results) -> str:
    """How a run came about: loaded, or generated (what it took, what it reused)."""
    n = f"{len(res.settings)} settings x {len(res.prompts)} prompts x {NEW_CHARS} characters"
    if res.from_cache:
        return f"{n}: loaded from {res.path}"
    times = [t for lab, t in res.setting_seconds.items() if lab not in res.reused]
    return (f"{n}: {len(res.settings) - len(res.reused)} settings generated in "
            f"{res.seconds:.1f} s in {res.workers} process(es) ({sum(times):.1f} s on one "
            f"thread, setting by setting), {len(res.reused)} taken from earlier saved runs")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the chapter 4 experiment and time it.")
    parser.add_argument("--force", action="store_true",
                        help="regenerate every setting, even those already saved")
    parser.add_argument("--data", action="store_true",
                        help="write the book's runs into data/quality_likelihood/ (commit them "
                             "after retraining the model or changing the grid)")
    parser.add_argument("--workers", type=int, default=None,
                        help="processes to generate in (default: one per core, at most 2)")
    args = parser.parse_args(argv)
    from ..corpus import load_train
    from ..weights import load_pretrained
    model, tok = load_pretrained()
    if args.data:
        for res in write_book_runs(model, tok, workers=args.workers, force=args.force):
            print(f"wrote {res.path}: {_report(res)}")
        return
    res = run_experiment(model, tok, force=args.force, workers=args.workers)
    print(_report(res))
    vocab = metrics.vocabulary(load_train())
    for row in res.table(vocab):
        print(f"{row['label']:<24} {row['nats_per_char']:.3f} nats/char  real words "
              f"{row['real_words']:.3f}  repeated trigrams {row['repeated_trigrams']:.3f}  "
              f"distinct-2 {row['distinct_2']:.3f}")


if __name__ == "__main__":
    main()
