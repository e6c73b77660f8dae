"""The decoding rules as Vega-Lite transforms, for chapter 3's kernel-free explorer.

The explorer embeds the model's next-character logits at a few contexts; these transforms
compute, in the page (or in JupyterLab), the distribution a character is drawn from under
the sliders' settings, exactly as ``shakespeare_lm.rules`` does: the same order
(temperature, top-k, top-p, min-p, typical, epsilon, eta), ties to the lower id, float64
thresholds and ``rules.TOL``. Each rule renormalises what survived before the next looks
at it; at temperature 0 all the mass goes to the argmax (greedy). ``tests/test_rules_js.py``
runs the chart in node (vega) and checks it against Python on many settings.

Fields, per character row ``{ctx, id, ch, logit}`` of the chosen context: ``p0`` raw
probability, ``r0`` rank by raw probability, ``pf`` probability after the rules.
"""

from __future__ import annotations

from . import rules

TOL = rules.TOL
_DEAD = "-1e308"  # stands for -inf: below every finite logit, and exp() of it is 0


def softmax(name: str, logit: str, alive: str | None) -> list[dict]:
    """Log-softmax of ``logit`` over the rows where ``alive`` (all if None), as JS computes
    it: ``{name}_mx`` the largest logit, ``{name}_lp`` log-probability, ``{name}_p``
    probability (0 where not alive)."""
    a = f"datum.{alive}" if alive else "true"
    return [
        {"calculate": f"{a} ? datum.{logit} : {_DEAD}", "as": f"{name}_la"},
        {"joinaggregate": [{"op": "max", "field": f"{name}_la", "as": f"{name}_mx"}]},
        {"calculate": f"{a} ? exp(datum.{logit} - datum.{name}_mx) : 0", "as": f"{name}_e"},
        {"joinaggregate": [{"op": "sum", "field": f"{name}_e", "as": f"{name}_se"}]},
        {"calculate": f"{a} ? datum.{logit} - (datum.{name}_mx + log(datum.{name}_se)) : {_DEAD}",
         "as": f"{name}_lp"},
        {"calculate": f"{a} ? exp(datum.{name}_lp) : 0", "as": f"{name}_p"},
    ]


def entropy(name: str) -> list[dict]:
    """``{name}_h``: the entropy in nats of the distribution ``softmax(name, ...)`` made."""
    return [
        {"calculate": f"datum.{name}_p > 0 ? datum.{name}_p * datum.{name}_lp : 0",
         "as": f"{name}_plp"},
        {"joinaggregate": [{"op": "sum", "field": f"{name}_plp", "as": f"{name}_nh"}]},
        {"calculate": f"-datum.{name}_nh", "as": f"{name}_h"},
    ]


def rank(as_: str, key: str, descending: bool) -> dict:
    """``as_``: 1-based rank of each row by ``key``, ties to the lower id."""
    return {"window": [{"op": "row_number", "as": as_}],
            "sort": [{"field": key, "order": "descending" if descending else "ascending"},
                     {"field": "id", "order": "ascending"}]}


def cumulative(as_: str, field: str, key: str, descending: bool) -> dict:
    """``as_``: the running total of ``field`` in the order of ``key`` (ties to lower id)."""
    return {"window": [{"op": "sum", "field": field, "as": as_}],
            "sort": rank("", key, descending)["sort"], "frame": [None, 0]}


def _prefix_by_mass(name: str, alive: str, key: str, descending: bool, mass: str,
                    off: str) -> list[dict]:
    """``{name}_a``: alive rows kept, in the order of ``key``, while the probability of the
    rows before them is below ``mass`` (the first row always); ``off`` keeps them all."""
    return [cumulative(f"{name}_c", f"{name}_p", key, descending),
            rank(f"{name}_r", key, descending),
            {"calculate": f"datum.{alive} && ({off} || datum.{name}_r == 1 || "
                          f"datum.{name}_c - datum.{name}_p < {mass} - {TOL!r})",
             "as": f"{name}_a"}]


def _keep_top(name: str, alive: str, test: str, off: str) -> dict:
    """``{name}_a``: alive rows passing ``test``, and the most probable row(s) always."""
    return {"calculate": f"datum.{alive} && ({off} || {test} || datum.l == datum.{name}_mx)",
            "as": f"{name}_a"}


def rule_transforms(v: dict[str, str]) -> list[dict]:
    """The transforms that give every row ``pf``; ``v`` maps each setting (temperature,
    top_k, top_p, min_p, typical_p, epsilon, eta) to a Vega expression of its value."""
    t, k, p, m, y, e, h = (f"({v[n]})" for n in ("temperature", "top_k", "top_p", "min_p",
                                                  "typical_p", "epsilon", "eta"))
    out = softmax("raw", "logit", None) + [rank("r0", "logit", True)]
    out += [{"calculate": f"{t} == 0 ? datum.logit : datum.logit / {t}", "as": "l"},
            rank("k_r", "l", True), {"joinaggregate": [{"op": "count", "as": "n"}]},
            {"calculate": f"{k} >= datum.n || datum.k_r <= {k}", "as": "k_a"}]
    out += softmax("tp", "l", "k_a") + _prefix_by_mass("tp", "k_a", "tp_la", True, p, f"{p} >= 1")
    out += softmax("mp", "l", "tp_a") + [
        {"joinaggregate": [{"op": "max", "field": "mp_lp", "as": "mp_top"}]},
        _keep_top("mp", "tp_a", f"datum.mp_lp >= datum.mp_top + log({m}) - {TOL!r}", f"{m} == 0")]
    out += softmax("ty", "l", "mp_a") + entropy("ty") + [
        {"calculate": f"datum.mp_a ? abs(-datum.ty_lp - datum.ty_h) : 1e308", "as": "ty_d"}]
    out += _prefix_by_mass("ty", "mp_a", "ty_d", False, y, f"{y} >= 1")
    out += softmax("ep", "l", "ty_a") + [
        _keep_top("ep", "ty_a", f"datum.ep_lp >= log({e}) - {TOL!r}", f"{e} == 0")]
    eta = f"min({h}, sqrt({h}) * exp(-datum.et_h))"
    out += softmax("et", "l", "ep_a") + entropy("et") + [
        _keep_top("et", "ep_a", f"datum.et_lp >= log({eta}) - {TOL!r}", f"{h} == 0")]
    out += softmax("fin", "l", "et_a") + [
        {"calculate": f"{t} == 0 ? (datum.r0 == 1 ? 1 : 0) : datum.fin_p", "as": "pf"}]
    return out


def summary_transforms() -> list[dict]:
    """After ``rule_transforms``: one row (the most probable character now, ties to the one
    ranked first by raw probability) carrying ``kept``, ``mass`` (raw probability kept),
    ``bits`` and ``raw_bits`` (entropies) and ``best``, its probability."""
    return entropy("raw") + [
        {"calculate": "datum.pf > 0 ? 1 : 0", "as": "kept1"},
        {"calculate": "datum.pf > 0 ? datum.raw_p : 0", "as": "mass1"},
        {"calculate": "datum.pf > 0 ? datum.pf * log(datum.pf) : 0", "as": "plp1"},
        {"joinaggregate": [{"op": "sum", "field": "kept1", "as": "kept"},
                           {"op": "sum", "field": "mass1", "as": "mass"},
                           {"op": "sum", "field": "plp1", "as": "nbits"}]},
        {"calculate": "-datum.nbits / LN2", "as": "bits"},
        {"calculate": "datum.raw_h / LN2", "as": "raw_bits"},
        {"window": [{"op": "row_number", "as": "best_r"}],
         "sort": [{"field": "pf", "order": "descending"}, {"field": "r0", "order": "ascending"}]},
        {"filter": "datum.best_r == 1"},
        {"calculate": "datum.pf", "as": "best"},
    ]
