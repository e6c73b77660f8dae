"""Install the pinned PyTorch, the CPU-only build where PyTorch's CPU index can be reached.

Run by the Makefile with the environment's own Python, before anything else is installed:

    python tools/install_torch.py torch==2.13.0 [--index URL]

PyTorch publishes CPU-only wheels (``2.13.0+cpu``, about 190 MB) on an index of its own; the
public package index (PyPI) has, for Linux on x86-64, the CUDA build, which pulls in about
5 GB of NVIDIA libraries that this book never uses. So the CPU index is offered to pip as an
extra index: where both answer, pip takes ``2.13.0+cpu`` (it sorts above ``2.13.0``). Where
the CPU index cannot be reached (a machine that sees only PyPI or a mirror of it), pip is
asked once more without it, and the line printed at the end says which build was installed.
An ``--index ''`` skips the CPU index altogether. Nothing is downloaded if the pin is
already installed.
"""
import argparse
import subprocess
import sys
import urllib.error
import urllib.request

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def index_answers(index: str, project: str = "torch", timeout: float = 15.0) -> bool:
    """Whether a PEP 503 simple index lists ``project`` (proxies from the environment apply)."""
    url = f"{index.rstrip('/')}/{project}/"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def installed_version(project: str = "torch") -> str | None:
    """The installed version of ``project``, or None."""
    from importlib import metadata
    try:
        return metadata.version(project)
    except metadata.PackageNotFoundError:
        return None


def describe(version: str, cuda: str | None) -> str:
    """One line that says which build of torch this environment has."""
    if cuda is None:
        return f"torch {version}: the CPU-only build."
    return (f"torch {version}: a build for CUDA {cuda}, with NVIDIA's libraries (several GB). "
            "The book runs on the CPU and never uses them; PyTorch's CPU-only wheels are on "
            f"{CPU_INDEX}.")


def _pip(*args: str) -> int:
    return subprocess.call([sys.executable, "-m", "pip", "install", "-q", *args])


def install(requirement: str, index: str) -> int:
    """Install ``requirement`` (``torch==X``), the CPU build from ``index`` where it answers."""
    wanted = requirement.partition("==")[2]
    have = installed_version()
    if have is not None and have.split("+")[0] == wanted:
        print(f"Already installed: torch {have}.")
        return 0
    if index and index_answers(index):
        print(f"Installing {requirement}, the CPU-only build, from {index} ...")
        if _pip("--extra-index-url", index, requirement) == 0:
            return 0
        print(f"pip could not install {requirement} with {index}; trying the default index alone.")
    elif index:
        print(f"PyTorch's CPU index ({index}) cannot be reached from here, so {requirement} "
              "comes from the default package index instead, whichever build it has.")
    return _pip(requirement)


def report() -> None:
    """Print which build of torch is installed (in a new process: this one never imports it)."""
    code = "import torch; print(torch.__version__, torch.version.cuda or '')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    print(describe(out[0], out[1] if len(out) > 1 else None))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requirement", help="the pin, e.g. torch==2.13.0")
    parser.add_argument("--index", default=CPU_INDEX,
                        help="PyTorch's CPU-only index; '' for the default index alone")
    args = parser.parse_args(argv)
    if not args.requirement.startswith("torch=="):
        parser.error(f"requirement={args.requirement!r} is not a pin: give torch==X.Y.Z")
    status = install(args.requirement, args.index)
    if status == 0:
        report()
    return status


if __name__ == "__main__":
    sys.exit(main())
