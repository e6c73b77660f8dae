"""Numbers in the prose, in JupyterLab and on the static site alike.

A chapter's Markdown shows a computed value with MyST's inline expression role,
``{eval}`glued.ch3_tail_count```. Two readers see it:

* **JupyterLab** (with jupyterlab-myst, installed by ``make lab``) evaluates the expression in
  the reader's kernel when the Markdown cell is rendered, and shows the value it had stored in
  the cell's ``user_expressions`` metadata until then.
* **The static site** has no kernel: ``book/_ext/inline_values.py`` reads the same
  ``user_expressions`` metadata, which :class:`InlineClient` stores while it executes the
  notebook top to bottom (``python -m shakespeare_lm.site.book execute``), each Markdown cell
  evaluated right after the code cells above it, as Run All does in JupyterLab.

The stored form is jupyterlab-myst's: ``[{"expression": str, "result": {"status": "ok",
"data": {mime: text}, "metadata": {}}}, ...]``.
"""

from __future__ import annotations

import re

from nbclient import NotebookClient

EVAL_ROLE = re.compile(r"\{eval\}`([^`]+)`")


def expressions(source: str) -> list[str]:
    """The distinct ``{eval}`` expressions of a Markdown source, in order."""
    return list(dict.fromkeys(m.group(1) for m in EVAL_ROLE.finditer(source)))


class InlineClient(NotebookClient):
    """An nbclient that also evaluates each Markdown cell's ``{eval}`` expressions, in order."""

    async def async_execute_cell(self, cell, cell_index, execution_count=None,
                                 store_history=True):
        if cell.cell_type != "markdown":
            return await super().async_execute_cell(cell, cell_index, execution_count,
                                                    store_history)
        exprs = expressions(cell.source)
        cell.metadata.pop("user_expressions", None)
        if not exprs:
            return cell
        keys = {f"e{i}": e for i, e in enumerate(exprs)}
        msg_id = self.kc.execute("", silent=True, store_history=False, user_expressions=keys)
        reply = await self.async_wait_for_reply(msg_id, cell)
        results = reply["content"].get("user_expressions", {})
        stored = []
        for key, expr in keys.items():
            result = results.get(key, {"status": "error", "ename": "NoReply", "evalue": expr})
            if result.get("status") != "ok":
                raise RuntimeError(
                    f"cell {cell_index}: the inline expression {{eval}}`{expr}` failed with "
                    f"{result.get('ename')}: {result.get('evalue')}. Glue the value in a code "
                    "cell above this Markdown cell (Run All evaluates prose in order)")
            stored.append({"expression": expr, "result": result})
        cell.metadata["user_expressions"] = stored
        return cell


def stored_text(result: dict) -> tuple[str, str]:
    """(mime, text) a page shows for one stored result: Markdown if given, else plain text."""
    data = result.get("data", {})
    for mime in ("text/markdown", "text/plain"):
        if mime in data:
            text = data[mime]
            return mime, "".join(text) if isinstance(text, list) else text
    raise ValueError(f"stored inline result has no text/markdown or text/plain: {sorted(data)}")
