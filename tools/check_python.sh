#!/bin/sh
# Before any target installs or runs anything: is the environment's Python one this book supports,
# and is it the one the reader asked for?
#
#   tools/check_python.sh KIND ENV PYTHON ORIGIN [GOAL]
#
# KIND ENV: "venv .venv" (a venv that make creates from PYTHON, here or .venv-gpu), or
# "conda PREFIX" (the active conda environment, which has its own Python).
# PYTHON: the interpreter that makes the venv; ORIGIN: make's $(origin PYTHON), which is "file"
# when the reader left PYTHON= out; GOAL: the make targets asked for, for the messages.
# Exits 2 with a message that says what to do, and never removes anything.
set -u
KIND=$1 ENV=$2 PYTHON=$3 ORIGIN=$4 GOAL=${5:-book}
SUPPORTED="3.11 to 3.13"
EXAMPLE="make $GOAL PYTHON=python3.12"

supported() {  # a version string such as 3.12.1
    case "$1" in 3.11.*|3.12.*|3.13.*) return 0 ;; *) return 1 ;; esac
}

venv_version() {  # the Python that made a venv, from its pyvenv.cfg
    sed -n 's/^version[_info]* *= *\([0-9]*\.[0-9]*\.[0-9]*\).*/\1/p' "$1/pyvenv.cfg" | head -n 1
}

fail() {
    echo "make: $*" >&2
    exit 2
}

if [ "$KIND" = "conda" ]; then  # the conda environment: its own Python, whatever PYTHON says
    have=$("$ENV/bin/python" -c 'import platform; print(platform.python_version())' 2>/dev/null) \
        || fail "the active conda environment ($ENV) has no working bin/python."
    supported "$have" || fail "the active conda environment ($ENV) has Python $have; this book \
supports Python $SUPPORTED. Make it again with environment.yml's python (conda env remove -n \
shakespeare-lm, then conda env create -f environment.yml)."
    exit 0
fi

asked=""
if [ ! -e "$ENV" ] || [ "$ORIGIN" != "file" ]; then  # the venv is to be made, or PYTHON= was given
    asked=$("$PYTHON" -c 'import platform; print(platform.python_version())' 2>&1) \
        || fail "PYTHON=$PYTHON cannot be run ($(echo "$asked" | head -n 1)). Name an \
installed Python $SUPPORTED, e.g. $EXAMPLE, or give its full path (with pyenv: \
PYTHON=\$(pyenv root)/versions/3.12.1/bin/python)."
    supported "$asked" || fail "PYTHON=$PYTHON is Python $asked; this book supports Python \
$SUPPORTED. Name one of those, e.g. $EXAMPLE (pyenv versions, or ls /usr/bin/python3.*, \
lists the ones you have)."
fi
[ -e "$ENV" ] || exit 0

made=$(venv_version "$ENV")
if [ -n "$asked" ] && [ "$made" != "$asked" ]; then
    fail "$ENV was made by Python ${made:-of an unknown version}, and PYTHON=$PYTHON is Python \
$asked. To switch, remove it and run again (everything is installed anew): \
rm -rf $ENV && make $GOAL PYTHON=$PYTHON. To keep $ENV, leave PYTHON= out."
fi
supported "$made" || fail "$ENV was made by Python ${made:-of an unknown version}; this book \
supports Python $SUPPORTED. Remove it and make it again with one of those: \
rm -rf $ENV && $EXAMPLE."
"$ENV/bin/python" -c '' 2>/dev/null || fail "$ENV/bin/python no longer runs (was the Python \
$made that made it removed?). Remove it and make it again: rm -rf $ENV && $EXAMPLE."
exit 0
