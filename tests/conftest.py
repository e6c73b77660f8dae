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
    session; both re-execute every chapter on one thread, in the background. The check
    starts now, beside the unit and browser tests, which leave a core idle much of the time
    (they wait on pages). The shown-cells run starts when the tests of tests/ are done
    (``pytest_runtest_teardown``), beside nbval's chapters, which use one thread."""
    portable = [item for item in items if item.name == PORTABLE_TEST]
    if portable:
        from tests.site.test_portable_outputs import start_native_compare

        proc, work = start_native_compare()
        config.portable_compare = (proc, work)
        config.add_cleanup(lambda: proc.poll() is None and proc.kill())
    shown = [item for item in items if item.name == SHOWN_TEST]
    config.shown_pending = bool(shown)
    late = {PORTABLE_TEST, SHOWN_TEST}
    items[:] = [item for item in items if item.name not in late] + portable + shown


def pytest_runtest_teardown(item, nextitem):
    """Start the shown-cells run once the next test is a chapter's (nbval) or one of the two
    moved to the end: the other tests in tests/ are done."""
    config = item.config
    late = (PORTABLE_TEST, SHOWN_TEST)
    if not getattr(config, "shown_pending", False) or item.name in late or (
            nextitem is not None and nextitem.name not in late
            and TESTS_DIR in nextitem.path.parents):
        return  # (the shown-cells test, run first, starts its run itself)
    config.shown_pending = False
    from tests.site.test_shown_cells import start_shown_run

    proc, work = start_shown_run()
    config.shown_run = (proc, work)
    config.add_cleanup(lambda: proc.poll() is None and proc.kill())
