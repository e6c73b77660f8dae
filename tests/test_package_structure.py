"""The package's shape, read from its source with ``ast`` (CONTRIBUTING.md, "Package"):
its floor plan (a few modules at the top, the rest in wings, each wing importing only the
wings below it, the presentation wing never imported by the library), no import cycle, no
module importing another's private names, no function longer than a screen, no closure
that rebinds an outer variable. One test imports the package in a fresh interpreter and
checks that it loads no presentation code and no heavy optional library."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "shakespeare_lm"
MAX_FUNCTION_LINES = 60
MAX_TOP_MODULES = 10
# The wings from the bottom up: a module imports only from its own layer or a lower one.
# "core" is the model and what a student reads first, at the package's top.
LAYERS = {"core": 0, "decoding": 1, "speculative": 2, "cost": 2, "analysis": 2,
          "interop": 3, "bench": 4, "site": 5}
CORE = {"model", "tokenizer", "weights", "corpus", "train", "paths", "timing", "checks"}
PRESENTATION = "shakespeare_lm.site"
HEAVY = ["altair", "matplotlib", "ipywidgets", "IPython", "pandas", "transformers", "onnx",
         "onnxruntime", "nbformat", "vega_datasets"]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
TREES = {name: ast.parse(path.read_text(), str(path)) for name, path in MODULES.items()}


def is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def resolve(importer: str, node: ast.ImportFrom) -> str | None:
    """The package module a ``from ... import`` names (None if outside the package)."""
    if node.level == 0:
        base = node.module or ""
        return base if base.split(".")[0] == PACKAGE.name else None
    here = importer.split(".") if is_package(importer) else importer.split(".")[:-1]
    here = here[: len(here) - (node.level - 1)]
    return ".".join(here + ([node.module] if node.module else []))


def imported_modules(importer: str) -> list[tuple[str, list[str]]]:
    """(module, names taken from it) for every import of a package module, lazy ones too;
    ``from pkg import submodule`` counts as an import of the submodule."""
    out = []
    for node in ast.walk(TREES[importer]):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name in MODULES]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(importer, node)
            if base is None or base not in MODULES:
                continue
            names = []
            for a in node.names:
                if f"{base}.{a.name}" in MODULES:
                    out.append((f"{base}.{a.name}", []))
                else:
                    names.append(a.name)
            if names or not node.names:
                out.append((base, names))
    return out


def import_graph() -> dict[str, set[str]]:
    return {m: {t for t, _ in imported_modules(m) if t != m} for m in MODULES}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None (depth-first search)."""
    colour, stack = {}, []

    def visit(node):
        colour[node] = "grey"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if colour.get(nxt) == "grey":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in colour and (cycle := visit(nxt)):
                return cycle
        colour[node] = "black"
        stack.pop()
        return None

    for start in sorted(graph):
        if start not in colour and (cycle := visit(start)):
            return cycle
    return None


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def functions():
    for name, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield name, node


def layer(module: str) -> str | None:
    """The layer of a package module (None for the package itself, the public API)."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    if parts[1] in CORE:
        return "core"
    return parts[1]


def test_the_top_holds_at_most_ten_modules_and_the_rest_lie_in_wings():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    wings = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
    assert len(top) <= MAX_TOP_MODULES, f"{len(top)} modules at the top: {top}"
    assert len(wings) >= 4, f"only {wings}"
    unknown = {layer(m) for m in MODULES} - set(LAYERS) - {None}
    assert not unknown, f"modules outside every layer of LAYERS: {sorted(unknown)}"


def layering_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for importer, targets in graph.items():
        here = layer(importer)
        for target in targets:
            there = layer(target)
            if here is None:  # the public API: anything but the presentation wing
                if target.startswith(PRESENTATION):
                    bad.append(f"{importer} (the public API) imports {target}")
            elif there is not None and LAYERS[there] > LAYERS[here]:
                bad.append(f"{importer} ({here}) imports {target} ({there}, a higher layer)")
    return bad


def test_the_layering_check_catches_an_upward_import():
    graph = {"shakespeare_lm.decoding.generate": {"shakespeare_lm.site.figures"},
             "shakespeare_lm": {"shakespeare_lm.site.live"},
             "shakespeare_lm.site.figures": {"shakespeare_lm.decoding.rules"}}
    assert len(layering_violations(graph)) == 2


def test_each_wing_imports_only_the_wings_below_it():
    bad = layering_violations(import_graph())
    assert not bad, "\n".join(sorted(bad))


def test_the_library_never_imports_the_presentation_wing():
    bad = [f"{m} imports {t}" for m, ts in import_graph().items() for t in ts
           if not m.startswith(PRESENTATION) and t.startswith(PRESENTATION)]
    assert not bad, "\n".join(sorted(bad))


def test_importing_the_package_loads_no_presentation_and_no_heavy_library():
    probe = ("import json, sys; import shakespeare_lm as slm; "
             "slm.generate, slm.beam_search, slm.rules, slm.speculative, slm.constrained; "
             "print(json.dumps(sorted(sys.modules)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], check=True,
                                       capture_output=True, text=True).stdout)
    site = [m for m in loaded if m.startswith(PRESENTATION)]
    heavy = [h for h in HEAVY if h in loaded]
    assert not site and not heavy, f"loaded by import shakespeare_lm: {site + heavy}"


def test_finding_a_cycle_works_on_a_known_graph():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_sees_the_package_imports():
    graph = import_graph()
    assert "shakespeare_lm.decoding.sampler" in graph["shakespeare_lm.decoding.generate"]
    assert "shakespeare_lm.cost.roofline" in graph["shakespeare_lm.cost"]


def test_no_import_cycle_between_package_modules():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_module_imports_another_modules_private_names():
    bad = []
    for importer in MODULES:
        module_aliases = {}
        for target, names in imported_modules(importer):
            bad += [f"{importer} imports {target}.{n}" for n in names if is_private(n)]
        for node in ast.walk(TREES[importer]):
            if isinstance(node, ast.ImportFrom):
                base = resolve(importer, node)
                for a in node.names:
                    if base and f"{base}.{a.name}" in MODULES:
                        module_aliases[a.asname or a.name] = f"{base}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in MODULES and a.asname:
                        module_aliases[a.asname] = a.name
        for node in ast.walk(TREES[importer]):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in module_aliases and is_private(node.attr)):
                bad.append(f"{importer} uses {module_aliases[node.value.id]}.{node.attr}")
    assert not bad, "\n".join(sorted(set(bad)))


def test_no_function_is_longer_than_a_screen():
    long = [f"{m}.{f.name} ({f.end_lineno - f.lineno + 1} lines)" for m, f in functions()
            if f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"over {MAX_FUNCTION_LINES} lines: " + ", ".join(long)


@pytest.mark.parametrize("statement", [ast.Nonlocal, ast.Global])
def test_no_function_rebinds_outer_variables(statement):
    found = [f"{m}.{f.name}" for m, f in functions()
             if any(isinstance(n, statement) for n in ast.walk(f))]
    assert not found, f"{statement.__name__.lower()} in: " + ", ".join(found)
