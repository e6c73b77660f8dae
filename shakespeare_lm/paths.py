"""Where the package's files live: the one definition of the repository's folders.

The package sits in the repository (``pip install -e .``), so the data, the run folders and
the notebooks are found from this file's place, never from the working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent      # the repository
DATA_DIR = ROOT / "data"                           # corpus and shipped weights
TRAIN_FILE = DATA_DIR / "shakespeare_train.txt"
HELDOUT_FILE = DATA_DIR / "shakespeare_heldout.txt"
# chapter 4's results (git-ignored); SLM_CACHE_DIR moves them (the cross-environment output
# check of tests/site/test_portable_outputs.py starts from an empty one)
CACHE_DIR = Path(os.environ.get("SLM_CACHE_DIR") or ROOT / "cache")
# chapter 4's results as committed, so a fresh clone need not regenerate them (keyed by the
# weights' hash; `python -m shakespeare_lm.analysis.experiment --data` rewrites them)
RESULTS_DIR = DATA_DIR / "quality_likelihood"
RUNS_DIR = ROOT / "runs"                           # training runs (git-ignored)
NOTEBOOKS_DIR = ROOT / "notebooks"
# the exported graphs (python -m shakespeare_lm.interop.export)
ONNX_DIR = ROOT / "_build" / "onnx"
NUMERICS_ENV = ROOT / "numerics.env"                # the pinned numerics (see outputs.py)
BIB_FILE = ROOT / "book" / "references.bib"         # the papers cited (citations.py)
