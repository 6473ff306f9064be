"""Evidence that a new upstream registry key needs a person: kept code that serves the kept
architectures selects it.

A registry's `keep` list is an allowlist, so a new key it does not name is removed by the rules
already; regen reports that as decided. Only where a kept file matching the rules' `[regen]
signal_paths` *selects* the key may the removal break a kept deployment: the key's string is
assigned (`self.attention_backend = "newattn"` in ServerArgs' auto-selection), returned (a default
picker), a parameter default or a keyword argument's value, directly or as a branch of `x if c else
y` / `a or b`. A key merely listed (CLI choices, a table of architectures) or compared
(`if backend == "newattn":` validation) selects nothing. Then a person is asked, with the lines.

A new architecture (a module-scan registry's key) is evidence of itself when the module that
registers it is kept-architecture code or imports it (`[regen].signal_modules`: a DeepSeek V4 draft
model in `models/deepseek_v4_dspark.py` importing `configs.deepseek_v4`).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from shrinker.plan.serving import SelectionVisitor, selected_strings
from shrinker.rules.patterns import pattern_matches


class _Selections(SelectionVisitor):
    def __init__(self, wanted: set[str]) -> None:
        self.wanted = wanted
        self.found: list[tuple[str, int]] = []  # (key, line)

    def _take(self, expr: cst.BaseExpression | None) -> None:
        for s in selected_strings(expr) if expr is not None else []:
            try:
                value = s.evaluated_value
            except Exception:  # a bytes or odd literal: not a key
                continue
            if isinstance(value, str) and value in self.wanted:
                self.found.append((value, self.get_metadata(PositionProvider, s).start.line))


def key_evidence(tree: Path, kept_paths: set[str], signal_paths: list[str],
                 keys: dict[str, list[str]]) -> dict[tuple[str, str], list[str]]:
    """(registry, key) -> up to three "path:line" places where a kept signal file selects the key."""
    files = sorted(p for p in kept_paths if any(fnmatchcase(p, g) for g in signal_paths))
    wanted = {key for ks in keys.values() for key in ks}
    places: dict[str, list[str]] = {}
    for path in files if wanted else []:
        text = (tree / path).read_text(errors="replace")
        if not any(key in text for key in wanted):
            continue
        try:
            wrapper = MetadataWrapper(cst.parse_module(text))
        except cst.ParserSyntaxError:
            continue
        visitor = _Selections(wanted)
        wrapper.visit(visitor)
        for key, line in visitor.found:
            if len(places.setdefault(key, [])) < 3:
                places[key].append(f"{path}:{line}")
    return {(reg, key): places[key] for reg, ks in keys.items() for key in ks if key in places}


def module_evidence(g, scan_packages: dict[str, str], keys: dict[str, list[str]], signal_modules: list[str],
                    family_words: list[str] = ()) -> tuple[dict[tuple[str, str], list[str]], dict[tuple[str, str], list[str]]]:
    """(registry, key) -> why the module registering a new architecture ties it to the kept ones, in two
    parts: (the profile's own family: the key or its module names one of `family_words`, or no words
    are given; another family's model built on kept code). The first is a question, the second is not.

    scan_packages: module-scan registry name -> the package whose modules' EntryClass are its keys."""
    own: dict[tuple[str, str], list[str]] = {}
    other: dict[tuple[str, str], list[str]] = {}
    words = [w.lower() for w in family_words]
    for reg, package in scan_packages.items():
        wanted = set(keys.get(reg, ()))
        for module in sorted(m for m in g.facts if m.startswith(package + ".")):
            facts = g.facts[module]
            for key in sorted(wanted & set(facts.entry_class)):
                if any(pattern_matches(p, module) for p in signal_modules):
                    why = f"registered by {module}, a kept-architecture module"
                else:
                    tied = sorted({i.target for i in facts.imports
                                   if any(pattern_matches(p, i.target) for p in signal_modules)})
                    if not tied:
                        continue
                    why = f"registered by {module}, which imports {', '.join(tied[:2])}"
                family = not words or any(w in key.lower() or w in module.rsplit(".", 1)[-1].lower() for w in words)
                (own if family else other).setdefault((reg, key), []).append(why)
    return own, other
