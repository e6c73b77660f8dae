"""make audit serves the built site as a static host would (tools/audit/audit.py): text,
scripts, styles, SVG and WebAssembly gzip-compressed when the browser accepts gzip, the
same bytes once decompressed; images and the model's graphs as they are; and a browser
that does not accept gzip gets every file plain."""

from __future__ import annotations

import gzip
import importlib.util
import sys
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def audit():
    spec = importlib.util.spec_from_file_location("audit", ROOT / "tools" / "audit" / "audit.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["audit"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def fetch(url: str, gzip_ok: bool) -> tuple[bytes, str | None]:
    headers = {"Accept-Encoding": "gzip, deflate, br"} if gzip_ok else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as response:
        return response.read(), response.headers.get("Content-Encoding")


def test_text_comes_gzip_compressed_and_binary_files_as_they_are(audit, tmp_path):
    files = {"page.html": b"<p>" + b"To be, or not to be " * 400 + b"</p>",
             "app.js": b"var x = 1;\n" * 500, "style.css": b"p { color: #222 }\n" * 300,
             "icon.svg": b"<svg xmlns='http://www.w3.org/2000/svg'></svg>" * 20,
             "runtime.wasm": b"\0asm\1\0\0\0" * 400,
             "figure.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8,
             "model.onnx": bytes(range(256)) * 16}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    with audit.serve_like_a_host(tmp_path) as base:
        for name, data in files.items():
            sent, encoding = fetch(f"{base}/{name}", gzip_ok=True)
            if name.endswith((".png", ".onnx")):
                assert (sent, encoding) == (data, None), name
            else:
                assert encoding == "gzip" and len(sent) < len(data), name
                assert gzip.decompress(sent) == data, name
            assert fetch(f"{base}/{name}", gzip_ok=False) == (data, None), name
        with pytest.raises(urllib.error.HTTPError, match="404"):
            fetch(f"{base}/no-such-page.html", gzip_ok=True)


def test_the_audit_times_the_live_model_from_the_first_click(audit):
    """The ready time make audit prints: the built live page served as a host serves it, a
    click on its first explorer, the page's own clock from that ask to the model ready."""
    from tests.browser.test_site import CHROMIUM, SITE, missing

    if not (Path(CHROMIUM).exists() and (SITE / audit.LIVE_PAGE).exists()):
        missing(f"needs Debian's chromium and a built site ({SITE / audit.LIVE_PAGE})")
    seconds = audit.ready_times(SITE, repeats=1)
    assert len(seconds) == 1 and 0 < seconds[0] < 60, seconds
    line = audit.ready_line([1.234, 0.5, 2.0])
    assert "ready 1.23 s after the first click, median of 3 (range 0.50-2.00 s)" in line, line
