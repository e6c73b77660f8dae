"""Where the package's files live: the one definition of the repository's folders.

The package sits in the repository (``pip install -e .``), so the data, the run folders and
the notebooks are found from this file's place, never from the working directory.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent      # the repository
DATA_DIR = ROOT / "data"                           # corpus and shipped weights
TRAIN_FILE = DATA_DIR / "shakespeare_train.txt"
HELDOUT_FILE = DATA_DIR / "shakespeare_heldout.txt"
CACHE_DIR = ROOT / "cache"                         # chapter 4's results (git-ignored)
RUNS_DIR = ROOT / "runs"                           # training runs (git-ignored)
NOTEBOOKS_DIR = ROOT / "notebooks"
