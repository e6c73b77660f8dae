"""Run a kernel-free figure's Vega-Lite spec in node (vega and vega-lite from
node_modules, as the site vendors them) and read back what it draws, for each setting of
its sliders."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "node_modules"
NODE = shutil.which("node")
HARNESS = Path(__file__).resolve().parent / "vega_view.js"


def need_vega() -> None:
    """Skip (fail in CI) when node or the npm packages are missing."""
    missing = ("node is not installed" if NODE is None else
               None if (NODE_MODULES / "vega-lite" / "package.json").exists() else
               f"vega-lite is not in {NODE_MODULES}: run `npm ci`")
    if missing and os.environ.get("CI"):
        raise RuntimeError(f"{missing}: the kernel-free figures cannot be checked")
    if missing:
        pytest.skip(missing)


def drawn(spec: dict, settings: list[dict],
          fields: list[str] | None = None) -> list[list[dict]]:
    """For each setting ({parameter: value}), every mark item drawn: {mark, role, name,
    datum (only ``fields`` of it, if given), text}."""
    need_vega()
    payload = json.dumps({"root": str(NODE_MODULES), "spec": spec, "settings": settings,
                          "fields": fields})
    done = subprocess.run([NODE, str(HARNESS)], input=payload, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def param_setting(figure, **values) -> dict:
    """The parameter values that put ``figure``'s sliders at ``values`` (slider name ->
    value); sliders not named stay where they start."""
    out = {}
    for slider, param in zip(figure.sliders, figure.params):
        value = values.get(slider.name, slider.value)
        out[param] = value if slider.step() is not None else slider.values.index(value)
    return out
