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


PORTABLE_TEST = "test_stored_outputs_reproduce_under_native_kernels"
SHOWN_TEST = "test_shown_cells_run_alone"


@pytest.hookimpl(trylast=True)  # after -m / -k have deselected what they deselect
def pytest_collection_modifyitems(session, config, items):
    """Start the background re-executions of the chapters as soon as the session is
    collected, and move their tests to the end: the cross-environment output check and the
    shown-cells run (both marked ``portable``: make test-portable runs them side by side, one
    a core). A second pytest process takes nbval's chapters from the last one backwards while
    the session takes them from the first (tests/site/test_late_nbval.py): at once in make
    test, which starts no background run, or once the background runs have ended; its test
    goes last of all."""
    portable = [item for item in items if item.name == PORTABLE_TEST]
    if portable:
        from tests.site.test_portable_outputs import start_native_compare

        proc, work = start_native_compare()
        config.portable_compare = (proc, work)
        config.add_cleanup(lambda: proc.poll() is None and proc.kill())
    # the shown cells of every chapter, run alone: in the background too
    shown = [item for item in items if item.name == SHOWN_TEST]
    if shown:
        from tests.site.test_shown_cells import start_shown_run

        shown_proc, shown_work = start_shown_run()
        config.shown_run = (shown_proc, shown_work)
        config.add_cleanup(lambda: shown_proc.poll() is None and shown_proc.kill())
    # nbval's chapters: shared with a second process once both background runs have ended
    from tests.site.test_late_nbval import LATE_TEST, start_late_nbval

    waits = [run[0] for run in (getattr(config, "portable_compare", None),
                                getattr(config, "shown_run", None)) if run]
    start_late_nbval(config, items, waits)
    late_nbval = [item for item in items if item.name == LATE_TEST]
    late = {PORTABLE_TEST, SHOWN_TEST, LATE_TEST}
    items[:] = [item for item in items if item.name not in late] + portable + shown + late_nbval
