"""Turn reachability into one Decision per file of the tree (Python and data alike), with a reason."""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from shrinker.graph.build import ImportGraph
from shrinker.graph.records import Decision
from shrinker.plan.reach import FEATURE, UNREACHABLE, Reach
from shrinker.rules.schema import Rules

# Removal categories (batches select on these): UNREACHABLE, FEATURE, `registry:<name>` for registry-driven
# removals, those of the rules.


def _importers_text(g: ImportGraph, module: str, limit: int = 3) -> str:
    names = sorted({u for u, _ in g.importers(module) if g.module_path.get(u)})
    if not names:
        return "nothing imports it"
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return "imported only by removed " + ", ".join(names[:limit]) + more


def _python_decisions(g: ImportGraph, reach: Reach) -> tuple[dict[str, Decision], dict[str, str]]:
    decisions: dict[str, Decision] = {}
    category: dict[str, str] = {}
    for module, path in g.module_path.items():
        if not path:
            continue  # namespace package: no file
        facts = g.facts[module]
        if facts.parse_error:
            decisions[path] = Decision(path, True, "parse_error",
                                       f"libcst cannot parse it ({facts.parse_error}); kept as is", lines=facts.lines)
        elif module in reach.kept:
            decisions[path] = Decision(path, True, reach.kept_code[module], reach.kept[module], lines=facts.lines)
        elif module in reach.cut_by_rule:
            code, reason, cat = reach.cut_by_rule[module]
            decisions[path] = Decision(path, False, code, reason, rule=cat, lines=facts.lines)
            category[module] = cat
        else:
            decisions[path] = Decision(path, False, "unreachable", "", lines=facts.lines)
            category[module] = UNREACHABLE
    _explain_unreachable(g, reach, decisions, category)
    return decisions, category


def _explain_unreachable(g: ImportGraph, reach: Reach, decisions: dict[str, Decision],
                         category: dict[str, str]) -> None:
    """Say why each unreachable module goes; one only used by one removal category joins it."""
    kept = reach.kept
    for module, cat in list(category.items()):
        if cat != UNREACHABLE:
            continue
        path = g.module_path[module]
        dead_from_kept = [(u, reach.dead_edges[(u, module)]) for u, _ in g.importers(module)
                          if u in kept and (u, module) in reach.dead_edges]
        if dead_from_kept:
            # reached only under a feature guard (and registry re-exports): the features batch folds it
            codes = {why.code for _, why in dead_from_kept}
            if "feature_guard" in codes and "platform_guard" not in codes:
                dead_from_kept.sort(key=lambda pair: pair[1].code != "feature_guard")
            importer, why = dead_from_kept[0]
            decisions[path].reason = f"imported by kept {importer} {why.text}"
            decisions[path].code = why.code
            category[module] = {"platform_guard": "platform_guard", "feature_guard": FEATURE}.get(why.code) or (
                f"registry:{why.registry}" if why.code == "registry" else UNREACHABLE)
        else:
            decisions[path].reason = f"unreachable from the roots: {_importers_text(g, module)}"
    # Modules imported only by removed modules of one category go with that category (fixpoint).
    changed = True
    while changed:
        changed = False
        for module, cat in category.items():
            if cat != UNREACHABLE:
                continue
            cats = {category.get(u) for u, _ in g.importers(module) if g.module_path.get(u) and u not in kept}
            cats.discard(None)
            if len(cats) == 1 and UNREACHABLE not in cats:
                (only,) = cats
                category[module] = only
                changed = True


def _data_decision(path: str, g: ImportGraph, reach: Reach, rules: Rules) -> Decision:
    """A non-Python file: kept with its nearest package, or by a keep_files rule."""
    for pattern in rules.data.keep_files:
        if fnmatchcase(path, pattern):
            return Decision(path, True, "data", f"rule data.keep_files {pattern}")
    if any(path.endswith(s) for s in rules.data.drop_suffixes):
        return Decision(path, False, "rule", "build leftover (rule data.drop_suffixes)", rule="data")
    root = next((r for r in ("sgl-kernel/python", "python") if path.startswith(r + "/")), None)
    if root is None:
        return Decision(path, False, "rule", "outside the Python packages and not named by data.keep_files",
                        rule="repo")
    parts = PurePosixPath(path[len(root) + 1:]).parent.parts
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        if module in g.module_path:
            if module in reach.kept:
                return Decision(path, True, "data", f"data file of kept package {module}")
            if module in reach.cut_by_rule:
                return Decision(path, False, "rule", f"data file of removed {module}: {reach.cut_by_rule[module][1]}",
                                rule=reach.cut_by_rule[module][2])
            # A namespace folder is kept when any module directly in it is.
            if not g.module_path[module]:
                children = [m for m in reach.kept if m.rsplit(".", 1)[0] == module]
                if children:
                    return Decision(path, True, "data", f"data file beside kept {sorted(children)[0]}")
            return Decision(path, False, "unreachable", f"data file of removed package {module}", rule=UNREACHABLE)
    return Decision(path, False, "unreachable", "data file outside any package", rule=UNREACHABLE)


def decide(g: ImportGraph, reach: Reach, rules: Rules) -> tuple[list[Decision], dict[str, str]]:
    """Every file's decision (sorted by path) and the removal category of each removed module."""
    py, category = _python_decisions(g, reach)
    for module, cat in category.items():
        py[g.module_path[module]].rule = cat
    out: list[Decision] = []
    for f in g.files:
        if f.path in py:
            out.append(py[f.path])
        else:
            out.append(_data_decision(f.path, g, reach, rules))
    return out, category
