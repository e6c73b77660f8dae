"""Run the site's JavaScript (shakespeare_lm/site/static/*.js) in node and talk to it.

``converse(body, payload, answer)`` starts node on the harness below followed by ``body``,
which defines ``main(input)``. Node reads ``payload`` as ``input`` (and ``rules.js``, which
decoding.js needs first, from ``input.rules``); whenever the JavaScript
calls ``ask(question)``, Python answers with ``answer(question)`` (node reads the reply
line synchronously, so the modules' algorithms run unchanged on a model that answers at
once: Python runs the model, the JavaScript searches). ``main``'s return value, or the
error it threw ({error, name}), comes back.

JSON has no NaN or infinities: Python sends them as {"float": "nan" | "inf" | "-inf"}, node
as the strings "NaN", "Infinity", "-Infinity"; typed arrays arrive as lists."""

from __future__ import annotations

import atexit
import functools
import json
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import torch

from shakespeare_lm.site import browser_rules
from shakespeare_lm.site.figures import STATIC_DIR

NODE = shutil.which("node")


def module_path(name: str) -> str:
    """The path of a module of shakespeare_lm/site/static (``"beam"`` -> .../beam.js)."""
    return str(STATIC_DIR / f"{name}.js")


@functools.cache
def rules_script() -> str:
    """``rules.js`` (what decoding.js reads of the registry of the rules), as make book writes
    it, in a folder of this process's own: its path."""
    folder = tempfile.mkdtemp(prefix="slm-rules-")
    atexit.register(shutil.rmtree, folder, True)
    return str(browser_rules.write(Path(folder)))


def require_node() -> None:
    """Skip the calling test module without node (fail in CI, where node must be there)."""
    if NODE is None:
        if os.environ.get("CI"):
            raise RuntimeError("node is needed to test the site's JavaScript "
                               "(apt-get install nodejs)")
        pytest.skip("node is not installed: the site's JavaScript cannot be checked",
                    allow_module_level=True)


def json_safe(value):
    """``value`` with non-finite floats as {"float": ...} and tuples as lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"}
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


PRELUDE = r"""
const fs = require("fs");
const special = { nan: NaN, inf: Infinity, "-inf": -Infinity };
const chunks = [];
function readLine() {
  const buf = Buffer.alloc(1 << 16);
  for (;;) {
    let n;
    try { n = fs.readSync(0, buf, 0, buf.length, null); }
    catch (e) { if (e.code === "EAGAIN") continue; throw e; }
    if (n === 0) throw new Error("Python closed the conversation");
    const text = buf.toString("latin1", 0, n), i = text.indexOf("\n");
    if (i < 0) { chunks.push(text); continue; }
    const line = chunks.join("") + text.slice(0, i);
    chunks.length = 0;
    if (i + 1 < text.length) chunks.push(text.slice(i + 1));
    return line;
  }
}
function parse(text) {
  return JSON.parse(text,
    (k, v) => v && typeof v === "object" && "float" in v ? special[v.float] : v);
}
function send(value) {
  const text = JSON.stringify(value, (k, v) => ArrayBuffer.isView(v) ? Array.from(v)
    : typeof v === "number" && !isFinite(v) ? String(v) : v) + "\n";
  const bytes = Buffer.from(text);
  for (let off = 0; off < bytes.length;) {
    try { off += fs.writeSync(1, bytes, off, bytes.length - off); }
    catch (e) { if (e.code !== "EAGAIN") throw e; }
  }
}
function ask(question) { send({ ask: question }); return parse(readLine()); }
function attempt(f) { try { return f(); } catch (e) { return { error: e.message, name: e.name }; } }
const input = parse(readLine());
globalThis.SlmRules = require(input.rules);  // what decoding.js reads of the registry, first
"""

EPILOGUE = r"""
let out;
try { out = { result: main(input) }; }
catch (e) { out = { error: e.message, name: e.name, stack: e.stack }; }
send(out);
"""


def converse(body: str, payload, answer: Callable[[dict], object], timeout: float = 900):
    """Run ``body`` (defining ``main(input)``) in node with ``payload``, answering each
    ``ask(question)`` with ``answer(question)``; returns what ``main`` returned."""
    assert NODE is not None, "node is not installed"
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([NODE, "-e", PRELUDE + body + EPILOGUE], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, text=True, encoding="utf-8")
        try:
            proc.stdin.write(json.dumps(json_safe({"rules": rules_script(), **payload})) + "\n")
            proc.stdin.flush()
            message = None
            for line in proc.stdout:
                message = json.loads(line)
                if "ask" not in message:
                    break
                proc.stdin.write(json.dumps(json_safe(answer(message["ask"]))) + "\n")
                proc.stdin.flush()
            proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    assert message is not None and "ask" not in message, f"node ended without a result: {stderr}"
    assert "error" not in message, f"{message['name']}: {message['error']}\n{message.get('stack')}"
    return message["result"]


class ModelLogits:
    """A model's next-token logits after each context asked for, one full forward pass per
    context (those of one length batched), remembered: node's JavaScript and Python's
    reference read the same numbers. ``contexts`` lists every context asked for, in order."""

    def __init__(self, model):
        self.model, self.memo, self.contexts = model, {}, []

    @torch.no_grad()
    def rows(self, contexts: Sequence[Sequence[int]]) -> list[list[float]]:
        keys = [tuple(c) for c in contexts]
        self.contexts += keys
        missing = sorted({k for k in keys if k not in self.memo}, key=len)
        for length in sorted({len(k) for k in missing}):
            batch = [k for k in missing if len(k) == length]
            logits = self.model(torch.tensor(batch))[:, -1].double()        # (B, V)
            self.memo.update(zip(batch, logits.tolist()))
        return [self.memo[k] for k in keys]

    def tensor(self, contexts) -> torch.Tensor:
        """The rows of ``contexts`` as a float64 tensor (N, V)."""
        return torch.tensor(self.rows(contexts), dtype=torch.float64)
