"""The decoding rules as Vega-Lite transforms, for chapter 3's kernel-free explorer.

The explorer embeds the model's next-character logits at a few contexts; these
transforms compute, in the page (or in JupyterLab), the distribution a character is
drawn from under the sliders' settings, exactly as ``shakespeare_lm.decoding.rules`` does: the
same order (temperature, top-k, top-p, min-p, typical, epsilon, eta), ties to the lower
id, float64 thresholds and ``rules.TOL``. Each rule renormalises what survived before
the next looks at it; at temperature 0 all the mass goes to the argmax (greedy).
``tests/site/test_rules_js.py`` runs the chart in node (vega) and checks it against Python
on many settings.

Fields, per character row ``{ctx, id, ch, logit}`` of the chosen context: ``raw_p`` raw
probability, ``r0`` rank by raw probability, ``pf`` probability after the rules.
"""

from __future__ import annotations

from ..decoding import rules

TOL = rules.TOL
_DEAD = "-1e308"  # stands for -inf: below every finite logit, and exp() of it is 0


def calc(expr: str, as_: str) -> dict:
    return {"calculate": expr, "as": as_}


def joined(op: str, field: str | None, as_: str) -> dict:
    """``as_``: the ``op`` (max, sum, count) of ``field`` over all rows, on each row."""
    agg = {"op": op, "as": as_}
    if field is not None:
        agg["field"] = field
    return {"joinaggregate": [agg]}


def softmax(name: str, logit: str, alive: str | None) -> list[dict]:
    """Log-softmax of ``logit`` over the rows where ``alive`` (all if None), as JS
    computes it: ``{name}_mx`` the largest logit, ``{name}_lp`` log-probability,
    ``{name}_p`` probability (0 where not alive)."""
    a = f"datum.{alive}" if alive else "true"
    x, mx, se = f"datum.{logit}", f"datum.{name}_mx", f"datum.{name}_se"
    return [calc(f"{a} ? {x} : {_DEAD}", f"{name}_la"),
            joined("max", f"{name}_la", f"{name}_mx"),
            calc(f"{a} ? exp({x} - {mx}) : 0", f"{name}_e"),
            joined("sum", f"{name}_e", f"{name}_se"),
            calc(f"{a} ? {x} - ({mx} + log({se})) : {_DEAD}", f"{name}_lp"),
            calc(f"{a} ? exp(datum.{name}_lp) : 0", f"{name}_p")]


def entropy(name: str) -> list[dict]:
    """``{name}_h``: the entropy in nats of the distribution ``softmax(name, ...)``."""
    p, lp = f"datum.{name}_p", f"datum.{name}_lp"
    return [calc(f"{p} > 0 ? {p} * {lp} : 0", f"{name}_plp"),
            joined("sum", f"{name}_plp", f"{name}_nh"),
            calc(f"-datum.{name}_nh", f"{name}_h")]


def rank(as_: str, key: str, descending: bool) -> dict:
    """``as_``: 1-based rank of each row by ``key``, ties to the lower id."""
    order = "descending" if descending else "ascending"
    return {"window": [{"op": "row_number", "as": as_}],
            "sort": [{"field": key, "order": order},
                     {"field": "id", "order": "ascending"}]}


def cumulative(as_: str, field: str, key: str, descending: bool) -> dict:
    """``as_``: the running total of ``field`` in the order of ``key`` (ties: id)."""
    return {"window": [{"op": "sum", "field": field, "as": as_}],
            "sort": rank("", key, descending)["sort"], "frame": [None, 0]}


def _prefix_by_mass(name: str, alive: str, key: str, descending: bool, mass: str,
                    off: str) -> list[dict]:
    """``{name}_a``: alive rows kept, in the order of ``key``, while the probability of
    the rows before them is below ``mass`` (the first row always); ``off`` keeps all."""
    before = f"datum.{name}_c - datum.{name}_p"
    return [cumulative(f"{name}_c", f"{name}_p", key, descending),
            rank(f"{name}_r", key, descending),
            calc(f"datum.{alive} && ({off} || datum.{name}_r == 1 || "
                 f"{before} < {mass} - {TOL!r})", f"{name}_a")]


def _keep_top(name: str, alive: str, test: str, off: str) -> dict:
    """``{name}_a``: alive rows passing ``test``, and the most probable one(s)."""
    return calc(f"datum.{alive} && ({off} || {test} || datum.l == datum.{name}_mx)",
                f"{name}_a")


def _truncations(t: str, k: str, p: str, m: str) -> list[dict]:
    """Temperature, top-k, top-p and min-p: ``l`` the tempered logit, ``mp_a`` alive."""
    min_p = f"datum.mp_lp >= datum.mp_top + log({m}) - {TOL!r}"
    return ([calc(f"{t} == 0 ? datum.logit : datum.logit / {t}", "l"),
             rank("k_r", "l", True), joined("count", None, "n"),
             calc(f"{k} >= datum.n || datum.k_r <= {k}", "k_a")]
            + softmax("tp", "l", "k_a")
            + _prefix_by_mass("tp", "k_a", "tp_la", True, p, f"{p} >= 1")
            + softmax("mp", "l", "tp_a")
            + [joined("max", "mp_lp", "mp_top"),
               _keep_top("mp", "tp_a", min_p, f"{m} == 0")])


def _tail_rules(y: str, e: str, h: str) -> list[dict]:
    """Typical, epsilon and eta, after ``_truncations``: ``et_a`` alive."""
    eta = f"min({h}, sqrt({h}) * exp(-datum.et_h))"
    return (softmax("ty", "l", "mp_a") + entropy("ty")
            + [calc("datum.mp_a ? abs(-datum.ty_lp - datum.ty_h) : 1e308", "ty_d")]
            + _prefix_by_mass("ty", "mp_a", "ty_d", False, y, f"{y} >= 1")
            + softmax("ep", "l", "ty_a")
            + [_keep_top("ep", "ty_a", f"datum.ep_lp >= log({e}) - {TOL!r}",
                         f"{e} == 0")]
            + softmax("et", "l", "ep_a") + entropy("et")
            + [_keep_top("et", "ep_a", f"datum.et_lp >= log({eta}) - {TOL!r}",
                         f"{h} == 0")])


def rule_transforms(v: dict[str, str]) -> list[dict]:
    """The transforms that give every row ``raw_p``, ``r0`` and ``pf``; ``v`` maps each
    setting (temperature, top_k, top_p, min_p, typical_p, epsilon, eta) to a Vega
    expression of its value."""
    names = ("temperature", "top_k", "top_p", "min_p", "typical_p", "epsilon", "eta")
    t, k, p, m, y, e, h = (f"({v[n]})" for n in names)
    return (softmax("raw", "logit", None) + [rank("r0", "logit", True)]
            + _truncations(t, k, p, m) + _tail_rules(y, e, h)
            + softmax("fin", "l", "et_a")
            + [calc(f"{t} == 0 ? (datum.r0 == 1 ? 1 : 0) : datum.fin_p", "pf")])


def summary_transforms() -> list[dict]:
    """After ``rule_transforms``: one row (the most probable character now, ties to the
    one ranked first by raw probability) carrying ``kept``, ``mass`` (raw probability
    kept), ``bits`` and ``raw_bits`` (entropies) and ``best``, its probability."""
    best_first = [{"field": "pf", "order": "descending"},
                  {"field": "r0", "order": "ascending"}]
    return entropy("raw") + [
        calc("datum.pf > 0 ? 1 : 0", "kept1"),
        calc("datum.pf > 0 ? datum.raw_p : 0", "mass1"),
        calc("datum.pf > 0 ? datum.pf * log(datum.pf) : 0", "plp1"),
        {"joinaggregate": [{"op": "sum", "field": "kept1", "as": "kept"},
                           {"op": "sum", "field": "mass1", "as": "mass"},
                           {"op": "sum", "field": "plp1", "as": "nbits"}]},
        calc("-datum.nbits / LN2", "bits"), calc("datum.raw_h / LN2", "raw_bits"),
        {"window": [{"op": "row_number", "as": "best_r"}], "sort": best_first},
        {"filter": "datum.best_r == 1"}, calc("datum.pf", "best"),
    ]
