"""What the browser's decoding needs of the registry of the rules
(``shakespeare_lm.decoding.registry``), written by ``make book`` as the script ``rules.js``
(``book/_vendor/live/rules.js``, published as ``_static/live/rules.js``).

The script defines ``window.SlmRules`` (under node, ``module.exports``); every page with a
live explorer loads it first (``book/_ext/live_explorers.py``), so ``decoding.js`` and
``slm_explorers.js`` read their lists from it instead of typing them:

    fields       DecodingConfig's fields, in its order
    defaults     their defaults where not None (a tuple as a list)
    python_only  the fields the browser's sampler does not have: refused there
    order        the chain's default order, without the rules the browser lacks
    params       the browser's rules' settings other than the one that turns a rule on
    fallbacks    what such a setting is when left out
    controls     the explorers' sliders: {name, label, min, max, step, off}, "V" standing for
                 the vocabulary's size, ``off`` where the setting is left out; chapter 3's
                 rules, then today's samplers, then the penalties, each in the chain's order
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from ..decoding import registry
from ..decoding.sampler import DecodingConfig

# DecodingConfig's fields that are no rule's setting and that the browser's sampler takes
# (it has one order of the chain, transformers', so not ``order``)
BROWSER_FIELDS = ("seed", "stop")
NAME = "rules.js"


def in_browser(field: str) -> bool:
    """Whether the browser's sampler takes DecodingConfig's ``field``."""
    rule = registry.RULE_OF.get(field)
    return rule.browser if rule is not None else field in BROWSER_FIELDS


def controls() -> list[dict]:
    """The browser's sliders, as the registry describes them (see the module docstring)."""
    rules = [r for r in registry.RULES if r.browser]
    rules.sort(key=lambda r: registry.KINDS.index(r.kind))  # stable: chain order within a kind
    out = []
    for rule in rules:
        for name in rule.names:
            setting = registry.SETTINGS[name]
            if setting.slider is not None:
                s = setting.slider
                out.append({"name": name, "label": s.label, "min": s.low, "max": s.high,
                            "step": s.step, "off": setting.rest})
    return out


def browser_rules() -> dict:
    """What ``rules.js`` holds (see the module docstring)."""
    config = fields(DecodingConfig)
    browser = [r for r in registry.RULES if r.browser]
    return {
        "fields": [f.name for f in config],
        "defaults": {f.name: list(f.default) if isinstance(f.default, tuple) else f.default
                     for f in config if f.default is not None},
        "python_only": [f.name for f in config if not in_browser(f.name)],
        "order": [name for name in registry.ORDERS["transformers"] if registry.RULE[name].browser],
        "params": [name for r in browser for name in r.names[1:]],
        "fallbacks": {name: registry.SETTINGS[name].fallback for r in browser
                      for name in r.names[1:] if registry.SETTINGS[name].fallback is not None},
        "controls": controls(),
    }


def script() -> str:
    """``rules.js``: a classic script that defines ``SlmRules`` (``module.exports`` in node)."""
    def dumps(value) -> str:
        return json.dumps(value)  # ASCII: the page's encoding cannot garble it

    lines = [f"  {dumps(key)}: " + ("[\n" + ",\n".join(f"    {dumps(v)}" for v in value) + "\n  ]"
                                    if key == "controls" else dumps(value))
             for key, value in browser_rules().items()]
    body = "{\n" + ",\n".join(lines) + "\n}"
    return ("/* Written by make book from shakespeare_lm/decoding/registry.py "
            "(shakespeare_lm/site/browser_rules.py): do not edit. */\n"
            f"var SlmRules = {body};\n"
            'if (typeof module !== "undefined" && module.exports) module.exports = SlmRules;\n')


def write(folder: Path) -> Path:
    """Write ``rules.js`` into ``folder``; its path."""
    path = Path(folder) / NAME
    path.write_text(script(), "utf-8")
    return path
