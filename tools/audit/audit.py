"""Google Lighthouse over the built site (``make audit``).

Serves the built site on 127.0.0.1 as a static host would (text, scripts, styles, JSON, SVG
and WebAssembly gzip-compressed for a browser that accepts it) and runs Lighthouse
(tools/audit/node_modules: its own npm package, never a dependency of the book) over each
page, one page at a time, in Debian's headless Chromium, twice: as a phone (Lighthouse's
default: a 412 px screen, slow 4G and a CPU 4 times slower, all simulated) and as a desktop
(its desktop preset). Each report goes to
OUT/<form factor>/<page>.json; the table goes to OUT/scores.md and is printed: per page and
form factor, the four category scores (performance, accessibility, best practices, SEO), the
metric that costs the performance score the most points and the kB the page transferred.
Then the live model's ready time: book/live.html served the same way, each time in a fresh
browser (an empty cache), its first explorer clicked; the page's own clock from that first ask
to the model's session ready (what the explorer prints as "ready in ... s").

Lighthouse simulates the slow network and CPU from what it observes, so a busy machine scores
lower: run it on a quiet one. Nothing leaves the machine: Chromium resolves no host name, and
a report that lists a request to any host but 127.0.0.1 fails the audit (exit status 1).

    python tools/audit/audit.py [PAGE ...] [--site DIR] [--out DIR] [--before DIR]

PAGEs are paths in the site (default: those of _toc.yml in order, and book/live.html).
``--before DIR`` puts an earlier audit's numbers beside each score and kB, "now (before)":
audit the old site first with ``--site OLD --out DIR``.
"""

from __future__ import annotations

import argparse
import gzip
import http.server
import json
import mimetypes
import os
import statistics
import subprocess
import threading
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script: the pages and the server come from the tests
from tests.browser.test_site import CHROMIUM, CHROMIUM_ARGS, serve, toc_pages  # noqa: E402

LIGHTHOUSE = ROOT / "tools" / "audit" / "node_modules" / ".bin" / "lighthouse"
CATEGORIES = {"performance": "perf", "accessibility": "a11y", "best-practices": "bp",
              "seo": "seo"}
FORM_FACTORS = {"mobile": [], "desktop": ["--preset=desktop"]}
# Chromium maps every host name to nothing, so a request off the machine fails at once;
# the site is served on the address 127.0.0.1, which needs no name
CHROME_FLAGS = ("--headless=new --no-sandbox "
                "--host-resolver-rules='MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'")
RUN_TIMEOUT_S = 300  # one page, one form factor; a run takes about 20 s on 2 busy cores
LOCAL_SCHEMES = ("data", "blob", "chrome-extension")


class AuditError(Exception):
    """A run that gave no usable report: the message says which and why."""


@dataclass
class Summary:
    """What the table shows of one report, and what fails the audit."""
    scores: dict[str, int | None]  # CATEGORIES' keys, 0 to 100 (None: the category failed)
    bound: str  # the performance metric that costs the most points, with its value
    kilobytes: float  # transferred while the page loaded (Lighthouse's total-byte-weight)
    external: list[str]  # requests to a host other than 127.0.0.1
    warnings: list[str]


# what a static host compresses: text of every kind, and WebAssembly; not images, fonts or
# the model's graphs (already dense binary)
COMPRESSED_TYPES = ("text/", "application/javascript", "application/json", "image/svg+xml",
                    "application/wasm", "application/xml")


class HostHandler(http.server.SimpleHTTPRequestHandler):
    """The site's files, gzip-compressed (level 6, as web servers' defaults go) when the type is
    one of COMPRESSED_TYPES and the request accepts gzip; each file is compressed once."""

    cache: dict[tuple[str, float], bytes] = {}
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def do_GET(self):
        self._send(body=True)

    def do_HEAD(self):
        self._send(body=False)

    def _send(self, body: bool) -> None:
        path = self.translate_path(self.path)
        kind = mimetypes.guess_type(path)[0] or ""
        if (not os.path.isfile(path) or "gzip" not in self.headers.get("Accept-Encoding", "")
                or not kind.startswith(COMPRESSED_TYPES)):
            return super().do_GET() if body else super().do_HEAD()
        key = (path, os.path.getmtime(path))
        with self.lock:
            if key not in self.cache:
                self.cache[key] = gzip.compress(Path(path).read_bytes(), compresslevel=6)
            data = self.cache[key]
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        if body:
            self.wfile.write(data)


def serve_like_a_host(directory: Path):
    """Serve ``directory`` on 127.0.0.1 (a free port) with HostHandler; yields its base URL."""
    return serve(directory, HostHandler)


def default_pages() -> list[str]:
    """The pages of _toc.yml in their order, then book/live.html unless it is among them."""
    return list(dict.fromkeys([*toc_pages(), "book/live.html"]))


def report_path(out: Path, form: str, page: str) -> Path:
    return out / form / Path(page).with_suffix(".json")


def run_lighthouse(url: str, form: str, report: Path) -> float:
    """Lighthouse over ``url`` as ``form`` into ``report`` (JSON); the seconds it took."""
    report.parent.mkdir(parents=True, exist_ok=True)
    report.unlink(missing_ok=True)  # an old report must not pass for this run's
    command = ["node", str(LIGHTHOUSE), url, "--output=json", f"--output-path={report}",
               f"--chrome-flags={CHROME_FLAGS}", f"--only-categories={','.join(CATEGORIES)}",
               *FORM_FACTORS[form]]
    start = time.monotonic()
    try:
        done = subprocess.run(command, env={**os.environ, "CHROME_PATH": CHROMIUM},
                              capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as stop:
        raise AuditError(f"{url} ({form}): Lighthouse took over {RUN_TIMEOUT_S} s") from stop
    if done.returncode != 0 or not report.exists():
        log = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise AuditError(f"{url} ({form}): Lighthouse exited with {done.returncode}:\n{log}")
    return time.monotonic() - start


def bounding_metric(report: dict) -> str:
    """The performance metric that costs the score the most points (a metric's weight times
    one minus its score; the weights add up to 100), as "LCP 7.6 s (-24)"; "none" where
    none costs a whole point."""
    refs = [ref for ref in report["categories"]["performance"]["auditRefs"] if ref["weight"]]

    def lost(ref) -> float:
        return ref["weight"] * (1 - (report["audits"][ref["id"]]["score"] or 0))

    worst = max(refs, key=lost)
    if round(lost(worst)) == 0:
        return "none"
    shown = report["audits"][worst["id"]].get("displayValue", "?")
    return f"{worst.get('acronym', worst['id'])} {shown} (-{lost(worst):.0f})"


def summarize(report: dict) -> Summary:
    """The table's numbers from one Lighthouse JSON report; AuditError if the page did not
    load (Lighthouse's runtimeError)."""
    if report.get("runtimeError"):
        error = report["runtimeError"]
        raise AuditError(f"{report['requestedUrl']}: {error['code']}: {error['message']}")
    scores = {name: None if report["categories"][name]["score"] is None
              else round(100 * report["categories"][name]["score"]) for name in CATEGORIES}
    requests = report["audits"]["network-requests"]["details"]["items"]
    external = [item["url"] for item in requests
                if urlparse(item["url"]).scheme not in LOCAL_SCHEMES
                and urlparse(item["url"]).hostname != "127.0.0.1"]
    bound = "-" if scores["performance"] is None else bounding_metric(report)
    return Summary(scores, bound, report["audits"]["total-byte-weight"]["numericValue"] / 1e3,
                   external, report.get("runWarnings", []))


def earlier(before: Path | None, form: str, page: str) -> Summary | None:
    """The page's summary in an earlier audit's reports (None: no report, or a failed run)."""
    path = before and report_path(before, form, page)
    try:
        return summarize(json.loads(path.read_text())) if path and path.exists() else None
    except AuditError:
        return None


def cells(now: Summary | None, before: Summary | None) -> list[str]:
    """One form factor's cells: the four scores, the bound and the kB; a score and the kB
    followed by the earlier audit's "(before)" where there is one. A failed run: dashes."""
    if now is None:
        return ["-"] * (len(CATEGORIES) + 2)

    def shown(value) -> str:
        if value is None:
            return "-"
        return f"{value:,.0f}" if isinstance(value, float) else str(value)

    def pair(value, old) -> str:
        return shown(value) if before is None else f"{shown(value)} ({shown(old)})"

    old = before or now
    return [*(pair(now.scores[c], old.scores[c]) for c in CATEGORIES), now.bound,
            pair(now.kilobytes, old.kilobytes)]


Rows = dict[str, dict[str, Summary | None]]  # page -> form factor -> summary (None: failed)


def table(rows: Rows, before: Rows) -> str:
    """A Markdown table: a row per page, a group of columns per form factor."""
    heads = ["page", *(f"{form} {name}" for form in FORM_FACTORS
                       for name in [*CATEGORIES.values(), "bound", "kB"])]
    body = [[page, *(cell for form in FORM_FACTORS
                     for cell in cells(summaries[form], before[page][form]))]
            for page, summaries in rows.items()]
    widths = [max(len(row[i]) for row in [heads, *body]) for i in range(len(heads))]
    lines = [[c.ljust(w) for c, w in zip(row, widths)]
             for row in [heads, ["-" * w for w in widths], *body]]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def notes(rows: Rows, before_dir: Path | None) -> list[str]:
    """What the table's columns mean, then each of Lighthouse's warnings once (with how many
    runs gave it) and each request that would have left the machine."""
    lines = ["", "perf, a11y, bp, seo: Lighthouse's scores (0-100) for performance, "
             "accessibility, best practices and SEO; bound: the performance metric that costs "
             "the score the most points (its value, the points out of 100); kB: transferred "
             "while the page loaded; a dash: the run failed (its error is above the table)."]
    if before_dir:
        lines.append(f"A cell \"A (B)\": A now, B in the reports in {before_dir}.")
    runs = [(page, form, summary) for page, summaries in rows.items()
            for form, summary in summaries.items() if summary]
    warnings: dict[str, int] = {}
    for _, _, summary in runs:
        for warning in summary.warnings:
            warnings[warning] = warnings.get(warning, 0) + 1
    lines += [f"Lighthouse warned ({n} of {len(runs)} runs): {w}" for w, n in warnings.items()]
    lines += [f"REQUEST OFF THE MACHINE: {page} ({form}): {url}"
              for page, form, summary in runs for url in summary.external]
    return lines


def check_setup(site: Path, pages: list[str]) -> None:
    """Stop with a clear message if the site, a page, Lighthouse or Chromium is missing."""
    if not (site / "index.html").exists():
        raise AuditError(f"no built site at {site}: run `make book` first")
    missing = [page for page in pages if not (site / page).is_file()]
    if missing:
        raise AuditError(f"not in {site}: {', '.join(missing)}")
    if not LIGHTHOUSE.exists():
        raise AuditError(f"no Lighthouse at {LIGHTHOUSE}: `npm ci --prefix tools/audit` "
                         "(make audit runs it)")
    if not Path(CHROMIUM).exists():
        raise AuditError(f"no Chromium at {CHROMIUM}: apt-get install chromium")


def audit(site: Path, pages: list[str], out: Path) -> Rows:
    """Lighthouse over each page and form factor, one run at a time (a run keeps both cores
    of a small machine busy, and a second at once would slow both: their scores would drop).
    A failed run is said at once, and the others go on."""
    rows: Rows = {}
    with serve_like_a_host(site) as base:
        for page in pages:
            rows[page] = {}
            for form in FORM_FACTORS:
                report = report_path(out, form, page)
                try:
                    seconds = run_lighthouse(f"{base}/{page}", form, report)
                    rows[page][form] = summarize(json.loads(report.read_text()))
                    print(f"{page} ({form}): {seconds:.1f} s", file=sys.stderr, flush=True)
                except AuditError as error:
                    rows[page][form] = None
                    print(f"make audit: {error}", file=sys.stderr, flush=True)
    return rows


LIVE_PAGE = "book/live.html"
READY_REPEATS = 5


def ready_times(site: Path, repeats: int = READY_REPEATS) -> list[float]:
    """Seconds from the reader's first ask (a click on the live page's first explorer) to the
    model ready, by the page's own clock (slm_runtime.js's timings), ``repeats`` times, each in
    a fresh browser context (an empty cache) at 1280 x 720, served by HostHandler."""
    from playwright.sync_api import sync_playwright

    seconds = []
    with serve_like_a_host(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(repeats):
                context = browser.new_context(viewport={"width": 1280, "height": 720})
                page = context.new_page()
                page.goto(f"{base}/{LIVE_PAGE}", wait_until="networkidle")
                box = page.locator(".slm-live").first
                box.locator(".slm-sample").click(force=True)  # disabled until ready: still asks
                page.wait_for_function("el => el.hasAttribute('data-ready')",
                                       arg=box.element_handle(), timeout=120_000)
                t = page.evaluate("slm.timings")
                seconds.append((t["shakespeare session"] - t["asked"]) / 1000)
                context.close()
        finally:
            browser.close()
    return seconds


def ready_line(seconds: list[float]) -> str:
    """The ready times in a line: their median and range."""
    ordered = sorted(seconds)
    return (f"The live model ({LIVE_PAGE}, served compressed, an empty cache each time): ready "
            f"{statistics.median(ordered):.2f} s after the first click, median of "
            f"{len(ordered)} (range {ordered[0]:.2f}-{ordered[-1]:.2f} s).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/audit/audit.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pages", nargs="*", help="pages of the site (default: every page)")
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "audit",
                        help="where the JSON reports and scores.md go")
    parser.add_argument("--before", type=Path, help="an earlier audit's --out, to compare")
    args = parser.parse_args(argv)
    pages = args.pages or default_pages()
    try:
        check_setup(args.site, pages)
    except AuditError as error:
        print(f"make audit: {error}", file=sys.stderr)
        return 2
    start = time.monotonic()
    rows = audit(args.site, pages, args.out)
    before = {page: {form: earlier(args.before, form, page) for form in FORM_FACTORS}
              for page in pages}
    args.out.mkdir(parents=True, exist_ok=True)
    text = "\n".join([table(rows, before), *notes(rows, args.before)])
    if LIVE_PAGE in pages:
        text += "\n" + ready_line(ready_times(args.site))
    (args.out / "scores.md").write_text(text + "\n")
    print(text)
    print(f"Lighthouse over {len(pages)} page(s) in {time.monotonic() - start:.0f} s; the "
          f"reports are in {args.out}", file=sys.stderr)
    runs = [summary for summaries in rows.values() for summary in summaries.values()]
    if any(summary is None for summary in runs):
        return 2
    return 1 if any(summary.external for summary in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
