"""JupyterLab, where students read the book, in a real headless Chromium.

``make lab`` starts JupyterLab on the chapters with jupyterlab-myst active, the chapters
trusted and the defaults of ``lab/overrides.json``. This test does the same on a
temporary root that holds a copy of ``notebooks/``: the kernel finds the package and its
``data/`` through ``shakespeare_lm.paths``, never through the working directory. The
server listens on a free port of 127.0.0.1, with a token, and keeps its configuration,
user settings, workspace and signatures in the temporary folder. In Chromium:

* chapter 7 stays unrun: its prose shows the values stored in ``user_expressions``, its
  citations read as author and year, no raw ``{eval}``, ``{glue}`` or ``{cite}`` role is
  left, and every figure that needs no kernel is mounted (a Vega chart, or a
  ``.kernel-free-figure``); its prefill/decode player plays, pauses and steps;
* every chapter that has a live panel (``shakespeare_lm.site.lab.panel``), opened unrun,
  shows the panel's one-line note, not an ipywidgets panel restored from saved widget
  state (controls that move and change nothing). It fails on chapters executed before
  ``make execute`` stored panels as their notes: re-execute them;
* chapter 1, opened beside it, runs with Run All in a fresh kernel: no cell ends in an
  error, its prose values are evaluated again in the kernel (the stored ones were
  replaced by a marker that must disappear; the committed values must come back), and
  its live widget answers its slider.

``SLM_LAB_CHAPTERS=/some/folder`` runs it on other executed chapters than ``notebooks/``
(the folder must hold chapters 1 and 7).

The test stops only the server it started. Run it under the pinned numerics, as ``make
test`` does (``set -a; . ./numerics.env; set +a``): the kernel then computes the
committed values exactly, on one thread.
"""

from __future__ import annotations

import json
import os
import platform
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from shakespeare_lm.site import roofline_charts as charts
from shakespeare_lm.site.citations import bibliography
from shakespeare_lm.site.lab import WIDGET_VIEW, panel_name

from .test_site import CHROMIUM, CHROMIUM_ARGS, missing, offline_router

ROOT = Path(__file__).resolve().parents[2]
# the chapters the server opens (a copy of them): the committed ones, or another folder
# of executed chapters, e.g. one executed by a changed `python -m shakespeare_lm.site.book`
CHAPTERS = Path(os.environ.get("SLM_LAB_CHAPTERS", ROOT / "notebooks"))
JUPYTER = Path(sys.executable).with_name("jupyter")
LAB_SETTINGS = ROOT / "lab"  # overrides.json: the defaults that `make lab` sets
UNRUN, RUN = "07_cost_of_generation.ipynb", "01_generation_loop.ipynb"
MARKER = "STORED-VALUE-NOT-YET-EVALUATED"
# Rendered Markdown: jupyterlab-myst's widget, or JupyterLab's own renderer (without
# MyST, whose raw roles the checks below then find)
RENDERED = ".myst, .jp-RenderedMarkdown"
RAW_ROLES = re.compile(r"\{(eval|glue|cite)[:}]")
STDERR = "[data-mime-type='application/vnd.jupyter.stderr']"  # errors, tracebacks
MOUNTED_FIGURES = (  # a Vega chart drawn (its own marks: the action menu's icon is an svg
    # too, so a chart that failed to draw would pass ":has(svg)"), or a kernel-free figure
    ".vega-embed :is(svg, canvas).marks, "
    ".kernel-free-figure[data-state]:not([data-state='failed'])")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lab_env(state: Path) -> dict:
    """This environment (pinned numerics included), Jupyter's folders in ``state``."""
    env = dict(os.environ)
    env.update(JUPYTER_CONFIG_DIR=str(state / "config"),
               JUPYTER_DATA_DIR=str(state / "data"),
               JUPYTER_RUNTIME_DIR=str(state / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(state / "settings"))
    return env


def _replace_stored_values(path: Path) -> int:
    """Replace every stored prose value of a notebook by MARKER; return how many."""
    nb = json.loads(path.read_text("utf-8"))
    count = 0
    for cell in nb["cells"]:
        for entry in cell.get("metadata", {}).get("user_expressions", []):
            entry["result"]["data"] = {"text/plain": MARKER}
            count += 1
    path.write_text(json.dumps(nb, indent=1))
    return count


class LabServer:
    """``jupyter lab`` on a copy of the chapters, started as ``make lab`` starts it."""

    def __init__(self, work: Path, chapters: Path = CHAPTERS):
        self.root, state = work / "root", work / "state"
        shutil.copytree(chapters, self.root)
        self.marked = _replace_stored_values(self.root / RUN)
        self.env = _lab_env(state)
        chapters = [str(p) for p in sorted(self.root.glob("*.ipynb"))]
        subprocess.run([str(JUPYTER), "trust", *chapters], env=self.env, check=True,
                       capture_output=True)
        self.token, port = secrets.token_hex(16), _free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = work / "lab.log"
        command = [str(JUPYTER), "lab", "--no-browser", "--allow-root",
                   "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
                   "--ServerApp.port_retries=0",
                   f"--IdentityProvider.token={self.token}",
                   f"--ServerApp.root_dir={self.root}",
                   f"--LabApp.app_settings_dir={LAB_SETTINGS}",
                   f"--LabApp.workspaces_dir={state / 'workspaces'}"]
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(command, env=self.env, stdout=log,
                                         stderr=subprocess.STDOUT, cwd=self.root)
        self._wait_ready(timeout=90)

    def _wait_ready(self, timeout: float):
        request = urllib.request.Request(
            f"{self.url}/api/status", headers={"Authorization": f"token {self.token}"})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(request, timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        self.stop()
        pytest.fail(f"JupyterLab did not answer on {self.url} within {timeout:.0f} s "
                    f"(exit code {self.proc.returncode}); its log ends:\n"
                    + self.log_path.read_text(errors="replace")[-3000:])

    def end_session(self, name: str) -> None:
        """Shut down the kernel of chapter ``name`` (its tab closed), as a reader's closing
        and shutting it would: with 29 chapter pages open, each kernel holding torch and the
        model, a 2-core machine spends the next test's minutes on them."""
        headers = {"Authorization": f"token {self.token}"}
        with urllib.request.urlopen(urllib.request.Request(
                f"{self.url}/api/sessions", headers=headers), timeout=10) as response:
            sessions = json.loads(response.read())
        for session in sessions:
            if session.get("path", "").endswith(name):
                urllib.request.urlopen(urllib.request.Request(
                    f"{self.url}/api/sessions/{session['id']}", headers=headers,
                    method="DELETE"), timeout=30).close()

    def stop(self):
        """Terminate this server only (it shuts down the kernels it started)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


class LabPage:
    """A Chromium page on the server; records uncaught errors, off-machine requests."""

    def __init__(self, browser, server: LabServer):
        self.server, self.errors, self.external = server, [], []
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.page.on("pageerror", lambda e: self.errors.append(f"{e}\n{e.stack}"))
        self.page.route("**/*", offline_router(self.external))
        self.page.goto(f"{server.url}/lab/tree/{UNRUN}?token={server.token}")
        self.panels = {UNRUN: self._panel(UNRUN, kernel=False)}

    def open(self, name: str):
        """Open a second chapter from the file browser, beside the first."""
        self.page.locator(".jp-DirListing-itemText", has_text=name).dblclick()
        self.panels[name] = self._panel(name, kernel=True)
        return self.panels[name]

    def tab(self, name: str):
        return self.page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=name)

    def _panel(self, name: str, kernel: bool):
        """The panel of tab ``name``, once its cells are in (and its kernel is idle)."""
        tab = self.tab(name)
        tab.wait_for(timeout=60_000)
        panel = self.page.locator(f"[id='{tab.get_attribute('data-id')}']")
        panel.locator(".jp-MarkdownCell").first.wait_for(timeout=60_000)
        if kernel:
            self.wait_idle(panel)
        return panel

    def wait_idle(self, panel, timeout: float = 120_000):
        """Until the panel's kernel is idle. The indicator's status is read whether or not
        it is shown: a panel in a background tab, or one whose toolbar is folded, hides it."""
        indicator = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
        panel.locator(indicator).wait_for(state="attached", timeout=timeout)

    def menu(self, menu: str, item: str):
        for where, label in ((".lm-MenuBar-itemLabel", menu),
                             (".lm-Menu-itemLabel", item)):
            self.page.locator(where, has_text=re.compile(f"^{label}$")).click()

    def snapshot(self, what: str) -> Path:
        """A screenshot beside the server's log, for a failure message."""
        path = self.server.log_path.with_name(f"{what}.png")
        self.page.screenshot(path=str(path))
        return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not (JUPYTER.exists() and Path(CHROMIUM).exists()):
        missing(f"needs {JUPYTER} and Debian's chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed")
    server = LabServer(tmp_path_factory.mktemp("jupyterlab"))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = LabPage(browser, server)
            yield page
            page.page.unroute_all(behavior="ignoreErrors")
            browser.close()
    finally:
        server.stop()


def _markdown_texts(panel) -> list[str | None]:
    """The rendered text of every cell of a panel, in order (None for code cells)."""
    return panel.evaluate(
        "(p, sel) => [...p.querySelectorAll('.jp-Notebook .jp-Cell')].map(c => "
        "c.classList.contains('jp-MarkdownCell') ? "
        "((c.querySelector(sel) || {}).textContent || '') : null)", RENDERED)


def _shown(result: dict) -> str:
    """The text jupyterlab-myst shows for a stored result: a Markdown one rendered (code
    spans and emphasis lose their marks), a plain-text one unquoted."""
    data = result["data"]
    if "text/markdown" in data:
        return re.sub(r"`([^`]*)`|\*\*?([^*]+)\*\*?", lambda m: m.group(1) or m.group(2),
                      data["text/markdown"])
    return re.sub(r"^([\"'])(.*)\1$", r"\2", data["text/plain"], flags=re.DOTALL)


def _prose_problems(nb: dict, texts: list[str | None], skip=frozenset()) -> list[str]:
    """What is wrong with a notebook's rendered Markdown: raw roles, bib keys shown as
    text (an unresolved citation), stored values missing from their cell (except the
    values of glue names in ``skip``)."""
    assert len(texts) == len(nb["cells"]), (len(texts), len(nb["cells"]))
    problems, keys = [], sorted(bibliography())
    for i, (cell, text) in enumerate(zip(nb["cells"], texts)):
        if cell["cell_type"] != "markdown":
            continue
        if not text:
            problems.append(f"cell {i}: Markdown not rendered")
            continue
        if RAW_ROLES.search(text):
            problems.append(f"cell {i}: raw role {RAW_ROLES.search(text).group(0)!r}")
        if shown_keys := [k for k in keys if k in text]:
            problems.append(f"cell {i}: citation keys shown as text {shown_keys} "
                            "(an unresolved {cite})")
        for entry in cell.get("metadata", {}).get("user_expressions", []):
            if set(re.findall(r"glued\.(\w+)", entry["expression"])) & skip:
                continue
            if (shown := _shown(entry["result"])) not in text:
                expr = entry["expression"]
                problems.append(f"cell {i}: {{eval}}`{expr}` should show {shown!r}, "
                                f"and the cell reads {text[:300]!r}")
    return problems


def _figure_count(nb: dict) -> int:
    """How many figures needing no kernel the stored outputs hold (Vega or not)."""
    count = 0
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            vega = ("application/vnd.vegalite.", "application/vnd.vega.")
            html = "".join(data.get("text/html", ""))
            if any(mime.startswith(vega) for mime in data) or "kernel-free-figure" in html:
                count += 1
    return count


def test_unrun_chapter_shows_stored_values_citations_and_figures(lab):
    panel = lab.panels[UNRUN]
    nb = json.loads((lab.server.root / UNRUN).read_text("utf-8"))
    lab.page.wait_for_function(
        "([p, sel]) => [...p.querySelectorAll('.jp-MarkdownCell')]"
        ".every(c => c.querySelector(sel))",
        arg=[panel.element_handle(), RENDERED], timeout=60_000)
    problems = _prose_problems(nb, _markdown_texts(panel))
    assert problems == [], "\n".join(problems)
    expected = _figure_count(nb)
    assert expected >= 1, f"{UNRUN} stores no figure that needs no kernel"
    lab.page.wait_for_function(
        "([p, sel, n]) => p.querySelectorAll(sel).length >= n",
        arg=[panel.element_handle(), MOUNTED_FIGURES, expected], timeout=30_000)
    assert panel.locator(MOUNTED_FIGURES).count() == expected
    assert lab.external == [], f"requests that would leave the machine: {lab.external}"


# --- the prefill/decode player: a kernel-free figure, drawn by JupyterLab's Vega renderer ---
STEP_CONTROL = "step (0 = prefill)"  # the player's slider (roofline_charts)


def _player_output(lab):
    """The output of the unrun chapter that draws the player, in view, its buttons shown
    (they stay transparent until the player's timer first fires)."""
    lab.tab(UNRUN).click()
    panel = lab.panels[UNRUN]
    bind = panel.locator(".vega-bind").filter(
        has=lab.page.locator(".vega-bind-name", has_text=STEP_CONTROL))
    bind.wait_for(timeout=30_000)
    output = bind.locator("xpath=ancestor::*[contains(@class, 'jp-OutputArea-output')][1]")
    output.scroll_into_view_if_needed()
    output.locator(":is(svg, canvas).marks").wait_for(timeout=30_000)
    lab.page.wait_for_timeout(2 * charts.STEP_INTERVAL_MS)
    return output, bind.locator("input[type='range']")


def _buttons(lab, output) -> list[tuple[float, float]]:
    """The middles of the player's buttons, left to right, in page pixels. JupyterLab
    draws Vega on a canvas, so the buttons are found as a reader finds them: where the
    pointer turns into a hand (Vega sets the cursor of the chart's container)."""
    marks = output.locator(":is(svg, canvas).marks")
    box = marks.bounding_box()
    pointer = "m => m.parentElement.style.cursor === 'pointer'"
    for y in range(2, min(160, int(box["height"])), 4):  # the row of buttons, at the top
        xs = []
        for x in range(2, min(400, int(box["width"])), 3):
            lab.page.mouse.move(box["x"] + x, box["y"] + y)
            if marks.evaluate(pointer):
                xs.append(x)
        if xs:
            runs = [[xs[0]]]
            for x in xs[1:]:
                if x - runs[-1][-1] > 3:
                    runs.append([])
                runs[-1].append(x)
            y_mid = box["y"] + y + 8  # a few pixels below the buttons' top edge
            return [(box["x"] + (r[0] + r[-1]) / 2, y_mid) for r in runs]
    raise AssertionError(f"no button of the player under the pointer; see {lab.snapshot('player')}")


def _step(slider) -> int:
    return int(slider.input_value())


def test_the_prefill_decode_player_plays_pauses_and_steps_in_jupyterlab(lab):
    """Chapter 7's player, unrun: "▶ play" moves the step on by itself, "❚❚ pause" (the
    same button) stops it, "step ▸" moves it by one and leaves it paused; the slider
    follows. The same checks as on the site (test_cost_widgets), by the pointer."""
    output, slider = _player_output(lab)
    assert _step(slider) == 0, f"the player starts at step {_step(slider)}, not the prefill"
    buttons = _buttons(lab, output)
    assert len(buttons) == 2, f"{len(buttons)} buttons found at {buttons}"
    play, next_step = buttons
    lab.page.mouse.click(*play)
    lab.page.wait_for_function("s => Number(s.value) >= 2", arg=slider.element_handle(),
                               timeout=4 * charts.STEP_INTERVAL_MS + 5000)
    lab.page.mouse.click(*play)  # now "❚❚ pause"
    paused = _step(slider)
    lab.page.wait_for_timeout(2 * charts.STEP_INTERVAL_MS + 300)
    assert _step(slider) == paused, f"pause did not stop it: {paused} -> {_step(slider)}"
    lab.page.mouse.click(*next_step)
    steps = int(slider.get_attribute("max")) + 1  # after the last, the player wraps to 0
    lab.page.wait_for_function(f"s => Number(s.value) === {(paused + 1) % steps}",
                               arg=slider.element_handle(), timeout=5000)
    stepped = _step(slider)
    lab.page.wait_for_timeout(charts.STEP_INTERVAL_MS + 300)
    assert _step(slider) == stepped, f"a step left it playing: {stepped} -> {_step(slider)}"
    slider.fill("0")  # the slider still goes anywhere
    assert _step(slider) == 0
    assert lab.errors == [], f"uncaught errors in the page: {lab.errors}"


# --- live panels: a chapter not yet run shows each one's note, never a dead widget ---------
WIDGET_CONTROLS = ".jupyter-widgets, .widget-slider, .widget-hslider, .widget-text, .widget-button"
LOADING = "Loading widget"  # what the ipywidgets renderer shows until its models are in


def _stored_panels(nb: dict) -> dict[int, str]:
    """The cells that store a live panel (its note, or any ipywidgets view), with the note
    each should show before it runs ("" where the view has none)."""
    panels = {}
    for index, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            text = "".join(out.get("data", {}).get("text/plain", ""))
            if panel_name(text) or WIDGET_VIEW in out.get("data", {}):
                panels[index] = text if panel_name(text) else ""
    return panels


def _panel_outputs(lab, panel, cells: list[int]) -> list[dict]:
    """What each of the given cells shows under it once JupyterLab has drawn it: its
    text and how many ipywidgets controls it holds."""
    lab.page.wait_for_function(
        "([p, cells, loading]) => cells.every(i => { const c = p.querySelectorAll("
        "'.jp-Notebook .jp-Cell')[i], o = c && c.querySelector('.jp-OutputArea');"
        " return o && o.innerText.trim() && !o.innerText.includes(loading); })",
        arg=[panel.element_handle(), cells, LOADING], timeout=30_000, polling=250)
    lab.page.wait_for_timeout(1000)  # a view restored late would mount by now
    return panel.evaluate(
        "(p, [cells, controls]) => cells.map(i => { const o = p.querySelectorAll("
        "'.jp-Notebook .jp-Cell')[i].querySelector('.jp-OutputArea');"
        " return {text: o.innerText, controls: o.querySelectorAll(controls).length}; })",
        [cells, WIDGET_CONTROLS])


def test_unrun_chapters_show_each_live_panel_as_its_note(lab):
    """Before a chapter runs, each live panel is its one-line note (lab.panel), not an
    ipywidgets panel restored from saved widget state, whose sliders move and change
    nothing. Passes on chapters executed by ``make execute`` since it stores panels as
    their notes (shakespeare_lm.site.lab.without_widget_views). The chapters stay open
    for the next test."""
    problems, seen = [], 0
    for path in sorted(lab.server.root.glob("[0-9]*.ipynb")):
        nb = json.loads(path.read_text("utf-8"))
        if not (panels := _stored_panels(nb)):
            continue
        panel = lab.panels.get(path.name) or lab.open(path.name)
        shown = _panel_outputs(lab, panel, list(panels))
        for (index, note), out in zip(panels.items(), shown):
            seen += 1
            if out["controls"] or not note or note not in out["text"]:
                cell = panel.locator(".jp-Notebook .jp-Cell").nth(index)
                cell.scroll_into_view_if_needed()
                problems.append(
                    f"{path.name}, cell {index}: shows {out['controls']} ipywidgets "
                    f"element(s) and the text {out['text'][:120]!r}, not its note {note!r} "
                    f"(see {lab.snapshot(f'panel-{path.stem}-{index}')})")
        if extra := panel.locator(f".jp-OutputArea :is({WIDGET_CONTROLS})").count():
            problems.append(f"{path.name}: {extra} ipywidgets element(s) before it runs")
    assert seen, f"no chapter in {CHAPTERS} stores a live panel"
    assert problems == [], ("live panels restored as dead widgets (re-execute the chapters "
                            "with `make execute`, which stores each as its note):\n"
                            + "\n".join(problems))


VEGA_PNG = re.compile(r"/cells\[\d+\]/outputs\[\d+\]/data/image/png$")
THIS_PYTHON = platform.python_version()  # the kernel's: JupyterLab runs this environment's


def _differences(a, b, path: str = "") -> list[str]:
    """Where two notebooks' JSON differ, as paths (numbers compared as numbers: JupyterLab
    writes 2.0 as 2)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in (
            [f"{path}/{k}"] if (k in a) != (k in b) else _differences(a[k], b[k], f"{path}/{k}"))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path]


def _saved(path: Path, timeout: float = 15) -> dict:
    """The notebook at ``path`` once the server has finished writing it. Jupyter's save
    rewrites the file in place (its backup copy aside), so a read while the save is under
    way can find it empty or cut short: read again until it parses, or fail with the
    parse error after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return json.loads(path.read_text("utf-8"))
        except json.JSONDecodeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_opening_a_chapter_changes_nothing_jupyterlab_writes(lab):
    """JupyterLab writes the kernel's display name and marks folded cells when a chapter
    opens; if the stored chapter differed, the tab would turn dirty, closing it would ask
    "Save your work?", and autosave would rewrite the reader's checkout. Each chapter is
    opened (its kernel started) and saved, and the saved file must equal the stored one,
    but for one thing we cannot store: the PNG that JupyterLab's Vega renderer adds beside
    every chart it draws (it adds it only when missing, and a stored PNG would take the
    interactive chart's place elsewhere). And on a Python other than the one that executed
    the chapters (any of 3.11 to 3.13 runs them), JupyterLab records the kernel's version in
    ``language_info``: that one field may change, to this Python's version."""
    problems = []
    for path in sorted(lab.server.root.glob("[0-9]*.ipynb")):
        before = json.loads(path.read_text("utf-8"))
        panel = lab.panels.get(path.name) or lab.open(path.name)
        lab.tab(path.name).click()  # a chapter an earlier test opened may be in the background
        if path.name != UNRUN:
            lab.wait_idle(panel)
        lab.page.wait_for_timeout(1500)  # the renderers' and the kernel's updates land
        lab.tab(path.name).click()
        # the save's own request, answered: a tab closed while its save is still on its way
        # disposes the document under it ("File Save Error ... Disposed", a dialog that then
        # blocks every click), and a chapter that JupyterLab left unchanged is never marked
        # dirty, so the mark alone cannot say when the save is done
        with lab.page.expect_response(
                lambda r, name=path.name: r.request.method == "PUT"
                and r.url.split("?")[0].endswith(f"/api/contents/{name}"), timeout=30_000):
            lab.page.keyboard.press("Control+s")
        lab.page.wait_for_function("t => !t.classList.contains('jp-mod-dirty')",
                                   arg=lab.tab(path.name).element_handle(), timeout=15_000)
        lab.page.wait_for_timeout(300)  # the answer reaches the document before its tab closes
        after = _saved(path)
        changed = [d for d in _differences(before, after) if not VEGA_PNG.search(d)
                   and not (d == "/metadata/language_info/version" and
                            after["metadata"]["language_info"]["version"] == THIS_PYTHON)]
        if changed:
            problems.append(f"{path.name}: JupyterLab changed {changed[:6]}")
        lab.tab(path.name).locator(".lm-TabBar-tabCloseIcon").click()
        lab.panels.pop(path.name, None)
        lab.tab(path.name).wait_for(state="detached", timeout=15_000)
        lab.server.end_session(path.name)
    assert problems == [], "\n".join(problems)


def _run_all(lab, panel):
    """Clear the outputs, Run All, and wait until every cell has run."""
    panel.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
    lab.menu("Edit", "Clear Outputs of All Cells")
    lab.menu("Run", "Run All Cells")
    try:
        lab.page.wait_for_function(  # a number in every code cell's prompt: none queued
            # (a folded check cell shows a placeholder whose own prompt never updates)
            "p => [...p.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]"
            ".every(e => /\\[\\d+\\]/.test(e.textContent))",
            arg=panel.element_handle(), timeout=150_000, polling=500)
        lab.wait_idle(panel)
        lab.page.wait_for_function(  # and the Markdown below the last code cell too
            "([p, m]) => !p.textContent.includes(m)",
            arg=[panel.element_handle(), MARKER], timeout=30_000)
    except Exception as e:
        raise AssertionError(f"Run All did not finish: {e}; "
                             f"see {lab.snapshot('run-all')}") from e


def _varying(nb: dict) -> set[str]:
    """Glue names whose values vary by run (timings): glued in a code cell tagged
    nbval-ignore-output, or shown in prose tagged so."""
    names = set()
    for cell in nb["cells"]:
        if "nbval-ignore-output" in cell.get("metadata", {}).get("tags", []):
            source = "".join(cell["source"])
            names.update(re.findall(r"glue\(\s*[\"'](\w+)[\"']", source))
            names.update(re.findall(r"glued\.(\w+)", source))
    return names


def _move_slider(lab, panel) -> tuple[str, str]:
    """Press the right arrow on the first ipywidgets slider: the text of the widget
    views beside it (not the slider's own readout) before and after."""
    handle = panel.locator(".widget-slider .noUi-handle, "
                           ".widget-slider [role='slider']").first
    handle.wait_for(timeout=30_000)
    box = handle.locator(
        "xpath=ancestor::*[contains(@class, 'jp-OutputArea-output')][1]")
    views = ".widget-html-content, .widget-image, .widget-output"
    before = box.locator(views).all_inner_texts()
    handle.focus()
    for _ in range(3):
        lab.page.keyboard.press("ArrowRight")
    lab.page.wait_for_function(
        "([b, sel, s]) => JSON.stringify("
        "[...b.querySelectorAll(sel)].map(e => e.innerText)) !== s",
        arg=[box.element_handle(), views, json.dumps(before)], timeout=30_000)
    return "\n".join(before), "\n".join(box.locator(views).all_inner_texts())


def test_run_all_evaluates_the_prose_and_drives_the_widgets(lab):
    """Run All in a fresh kernel: no error, every prose value evaluated again (to its
    committed value, unless glued from a timing cell), a widget answers its slider."""
    earlier = len(lab.errors)  # this test's own errors: closing 29 tabs in a row in the test
    # before can leave jupyterlab-myst's "Host is not attached" for a cell rendered after
    # its tab closed, which no reader's Run All meets
    panel = lab.open(RUN)
    assert lab.server.marked > 0, f"{RUN} stores no prose values: re-execute it"
    deadline = time.monotonic() + 60  # jupyterlab-myst renders the cells one by one
    while MARKER not in (shown := "".join(t or "" for t in _markdown_texts(panel))):
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert MARKER in shown, "before running, the prose should show the stored values"
    start = time.monotonic()
    _run_all(lab, panel)
    seconds = time.monotonic() - start
    errors = panel.locator(f".jp-OutputArea-output{STDERR}, .jp-MarkdownCell {STDERR}")
    assert errors.count() == 0, "\n".join(errors.all_inner_texts())
    committed = json.loads((ROOT / "notebooks" / RUN).read_text("utf-8"))
    problems = _prose_problems(committed, _markdown_texts(panel), _varying(committed))
    assert problems == [], "\n".join(problems)
    before, after = _move_slider(lab, panel)
    assert before != after and after.strip(), (before, after)
    assert lab.errors[earlier:] == [], f"uncaught errors in the page: {lab.errors[earlier:]}"
    assert lab.external == [], f"requests that would leave the machine: {lab.external}"
    print(f"{RUN}: Run All took {seconds:.0f} s")
