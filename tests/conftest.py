import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm.corpus import ALPHABET

torch.set_num_threads(1)  # tests are tiny; keep them from fighting over the cores


@pytest.fixture(scope="session")
def tok():
    return slm.CharTokenizer(ALPHABET)


def make_tiny(seed=0, **overrides):
    """A tiny seeded model with random weights (context 128): builds and runs in milliseconds."""
    overrides = {"block_size": 128, "vocab_size": len(ALPHABET), **overrides}
    return slm.make_model("tiny", seed=seed, **overrides)


@pytest.fixture(scope="session")
def tiny():
    return make_tiny()
