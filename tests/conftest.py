from pathlib import Path

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


TESTS_DIR = Path(__file__).resolve().parent
PORTABLE_TEST = "test_stored_outputs_reproduce_under_native_kernels"
SHOWN_TEST = "test_shown_cells_run_alone"


@pytest.hookimpl(trylast=True)  # after -m / -k have deselected what they deselect
def pytest_collection_modifyitems(session, config, items):
    """Move the cross-environment output check and the shown-cells run to the end of the
    session. Both re-execute every chapter on one thread, in the background: they start
    when the tests of tests/ are done (``pytest_runtest_teardown``), beside nbval's chapters,
    which are on one thread too, so the three fill both cores while the browser tests,
    which use both cores themselves, run alone before them."""
    late = {PORTABLE_TEST, SHOWN_TEST}
    config.background_runs = [item.name for item in items if item.name in late]
    items[:] = ([item for item in items if item.name not in late]
                + [item for item in items if item.name == PORTABLE_TEST]
                + [item for item in items if item.name == SHOWN_TEST])


def pytest_runtest_teardown(item, nextitem):
    """Start the background chapter runs once the next test is a chapter's (nbval) or one of
    their own: the last of the other tests in tests/ is done."""
    config = item.config
    names = getattr(config, "background_runs", [])
    if not names or item.name in names or (
            nextitem is not None and nextitem.name not in names
            and TESTS_DIR in nextitem.path.parents):
        return  # (a background run's own test, run first, starts its run itself)
    config.background_runs = []
    if PORTABLE_TEST in names:
        from tests.site.test_portable_outputs import start_native_compare

        proc, work = start_native_compare()
        config.portable_compare = (proc, work)
        config.add_cleanup(lambda: proc.poll() is None and proc.kill())
    if SHOWN_TEST in names:
        from tests.site.test_shown_cells import start_shown_run

        shown_proc, shown_work = start_shown_run()
        config.shown_run = (shown_proc, shown_work)
        config.add_cleanup(lambda: shown_proc.poll() is None and shown_proc.kill())
