"""Rules that follow a module move: when a module or package a rule names is gone from a release and
the release before it shows where it went, the rules follow it (reported, never silent).

0.5.17 moved `sglang.jit_kernel.*` under `sglang.kernels.*`: the FA4 removal rules
(`sglang.jit_kernel.flash_attn.**`) then matched nothing and the FA4 kernels stayed, quietly. A rule
names a release's layout, not what the profile is, so a move must not need a new rule.

A module's successor is clear when exactly one module new in the release has its last name part and
the longest dotted tail in common with it, and its source is alike (the same bytes, or most lines in
common: an import path rewritten by the move is fine). A package moved when its modules' successors
agree on one new package. Every dotted name of the rules under the profile's package is followed
(remove/keep patterns, feature modules, fixed parameters' functions, registry modules) except the
roots, which follow their shims (roots.py).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache

from shrinker.graph.build import ImportGraph
from shrinker.plan.roots import Move, root_moves
from shrinker.rules.schema import Rules

ALIKE = 0.5  # share of lines in common (difflib's quick ratio) for a file to count as moved, not rewritten


@dataclass(frozen=True)
class RuleMove:
    old: str  # the module or package prefix the rules named
    new: str
    evidence: str

    def note(self, version: str = "") -> str:
        before = f" since {version}" if version else ""
        return f"rules naming {self.old} follow it to {self.new} ({self.evidence}{before})"


class Successors:
    """Where modules of `previous` went in `graph` (only modules `graph` lacks have one)."""

    def __init__(self, previous: ImportGraph, graph: ImportGraph) -> None:
        self.previous, self.graph = previous, graph
        self.by_last: dict[str, list[str]] = {}
        for module in sorted(set(graph.module_path) - set(previous.module_path)):
            self.by_last.setdefault(module.rsplit(".", 1)[-1], []).append(module)

    def of(self, module: str) -> str | None:
        if module in self.graph.module_path or module not in self.previous.module_path:
            return None
        parts = module.split(".")
        scored: dict[int, list[str]] = {}
        for candidate in self.by_last.get(parts[-1], ()):
            scored.setdefault(_common_tail(parts, candidate.split(".")), []).append(candidate)
        if not scored:
            return None
        best = scored[max(scored)]
        if len(best) != 1 or not self._alike(module, best[0]):
            return None
        return best[0]

    def _alike(self, old: str, new: str) -> bool:
        a, b = _lines(self.previous, old), _lines(self.graph, new)
        if a == b:
            return True
        return difflib.SequenceMatcher(None, a, b, autojunk=False).quick_ratio() >= ALIKE

    def of_prefix(self, prefix: str) -> RuleMove | None:
        """Where the module or package `prefix` went, when the release has nothing under it any more."""
        if any(_under(m, prefix) for m in self.graph.module_path):
            return None
        before = [m for m in self.previous.module_path if _under(m, prefix)]
        if not before:
            return None
        targets: dict[str, int] = {}
        for module in before:
            successor = self.of(module)
            tail = module[len(prefix):]
            if successor and successor.endswith(tail):
                target = successor[:len(successor) - len(tail)]
                targets[target] = targets.get(target, 0) + 1
        if len(targets) != 1:
            return None
        ((target, found),) = targets.items()
        if 2 * found < len(before):
            return None
        what = "the same module moved" if len(before) == 1 else f"{found} of its {len(before)} modules moved there"
        return RuleMove(prefix, target, what)


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _common_tail(a: list[str], b: list[str]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def _lines(graph: ImportGraph, module: str) -> tuple[str, ...]:
    rel = graph.module_path.get(module)
    return _read_lines(str(graph.tree / rel)) if rel else ()


@lru_cache(maxsize=4096)
def _read_lines(path: str) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return tuple(line.strip() for line in f)
    except OSError:
        return ()


def _literal_prefix(name: str) -> tuple[str, str]:
    """(`sglang.a.b`, the rest) of a dotted rule name: a pattern's parts before its first glob, a
    `module:qualname` function's module."""
    module, colon, qual = name.partition(":")
    parts = module.split(".")
    literal = []
    for part in parts:
        if any(c in part for c in "*?["):
            break
        literal.append(part)
    prefix = ".".join(literal)
    return prefix, name[len(prefix):]


@lru_cache(maxsize=8)
def _dotted_name(package: str) -> re.Pattern:
    """A module, a module pattern or a `module:qualname` under `package`."""
    return re.compile(rf"^{re.escape(package)}(\.[\w*?\[\]]+)+(:[\w.]+)?$")


def _map_rule_names(rules: Rules, change) -> dict:
    """The rules' data with `change` applied to every dotted name under the profile's package, roots aside."""
    name_re = _dotted_name(rules.profile.package)

    def walk(value):
        if isinstance(value, dict):
            return {k: (v if k == "roots" else walk(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str) and name_re.match(value):
            return change(value)
        return value

    return walk(rules.model_dump(exclude_none=True))


def _rule_names(rules: Rules) -> set[str]:
    """Every dotted name under the profile's package in the rules, roots aside."""
    names: set[str] = set()
    _map_rule_names(rules, lambda name: names.add(name) or name)
    return names


def find_moves(rules: Rules, previous: ImportGraph, graph: ImportGraph) -> list[RuleMove]:
    """The moves the rules follow into `graph`: one for each module or package prefix a rule names
    that `graph` lost and `previous` shows clearly where it went. Names with no clear successor stay
    as they are (a warning or a rule problem of the plan, as before)."""
    successors = Successors(previous, graph)
    prefixes = sorted({_literal_prefix(name)[0] for name in _rule_names(rules)})
    return [m for m in map(successors.of_prefix, prefixes) if m is not None]


def rewrite_rules(rules: Rules, moves: dict[str, str]) -> Rules:
    """The rules with every dotted name under a moved prefix (roots aside) rewritten to its new place."""
    if not moves:
        return rules

    def follow(name: str) -> str:
        prefix, rest = _literal_prefix(name)
        return moves[prefix] + rest if prefix in moves else name

    return Rules.model_validate(_map_rule_names(rules, follow))


def adopt_moves(text: str, moves: dict[str, str]) -> tuple[str, list[str]]:
    """Rewrite, in a rules file's text, every quoted dotted name under a moved prefix (exact string
    edits: comments and every other byte stay)."""
    done = []
    for old, new in sorted(moves.items()):
        pattern = re.compile(rf'"{re.escape(old)}(?=[".:*])')
        text, n = pattern.subn(f'"{new}', text)
        if n:
            done.append(f"{old} -> {new} ({n}x)")
    return text, done


def follow_roots(rules: Rules, successors: dict[str, str]) -> Rules:
    """The rules with each root a release dropped replaced by the successor the plan followed (roots.py),
    so that the next release of a walk starts from it."""
    if not successors:
        return rules
    roots = [r.model_copy(update={"module": successors.get(r.module, r.module)}) for r in rules.roots]
    return rules.model_copy(update={"roots": roots})


def follow_release(rules: Rules, previous: ImportGraph, graph: ImportGraph) -> tuple[Rules, dict[str, Move], list[RuleMove]]:
    """What the rules become from the release `previous` to `graph`: the rules with the other names'
    moves followed (roots as written: the plan follows them and notes it), the roots' moves, the names'."""
    roots = root_moves(previous, graph, [r.module for r in rules.roots])
    names = find_moves(rules, previous, graph)
    return rewrite_rules(rules, {m.old: m.new for m in names}), roots, names
