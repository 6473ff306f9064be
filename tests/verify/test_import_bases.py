"""Choosing shared bases for the import check from the closures a tree's source makes certain."""

from __future__ import annotations

from shrinker.verify import import_bases
from shrinker.verify.import_bases import choose_bases


def _closures() -> dict[str, frozenset[str]]:
    base = {"p", "p.core", "p.core.util"}
    return {
        "p.core.util": frozenset(base),
        "p.core": frozenset({"p", "p.core"}),
        "p.a": frozenset(base | {"p.a"}),
        "p.b": frozenset(base | {"p.b", "p.x"}),
        "p.d": frozenset(base | {"p.d"}),
        "p.c": frozenset({"p", "p.c"}),  # does not load p.core.util: it must not get it as a base
        "p.x": frozenset({"p", "p.x"}),
    }


def test_picks_the_closure_most_modules_hold(monkeypatch):
    monkeypatch.setattr(import_bases, "MIN_CLOSURE", 2)
    monkeypatch.setattr(import_bases, "MIN_GAIN", 1)
    closures = _closures()
    picks = choose_bases(closures, sorted(closures), sorted(closures))
    assert picks[0] == "p.core.util"
    monkeypatch.setattr(import_bases, "MIN_GAIN", 100)  # too little to save: no base at all
    assert choose_bases(closures, sorted(closures), sorted(closures)) == []


def _facts_tree():
    from types import SimpleNamespace as NS

    from shrinker.checks.facts import ImportRef

    def facts(*refs):
        return NS(imports=list(refs))

    def ref(module, names=None, certain=True, guard=""):
        return ImportRef(1, module, names, guard, False, certain)

    return {
        "p": facts(),
        "p.core": facts(ref("p.util")),
        "p.util": facts(),
        "p.mid": facts(ref("p", ["core"])),  # from p import core: the module p.core
        "p.top": facts(ref("p.mid"), ref("p.maybe", certain=False)),  # under an if: not certain
        "p.maybe": facts(),
        "p.opt": facts(ref("p.core", guard="try")),
    }


def test_certain_closures_follow_certain_imports_parents_and_from_imports_of_modules():
    from shrinker.verify.import_bases import certain_closures

    tree = _facts_tree()
    got = certain_closures(tree, list(tree), ["p.top", "p.opt", "p.core"])
    assert got["p.top"] == {"p", "p.top", "p.mid", "p.core", "p.util"}  # not p.maybe
    assert got["p.opt"] == {"p", "p.opt"}  # a try import may not run
    assert got["p.core"] == {"p", "p.core", "p.util"}


def test_assign_certain_takes_the_largest_base_the_module_loads_anyway():
    from shrinker.verify.import_bases import assign_certain, certain_closures

    tree = _facts_tree()
    certain = certain_closures(tree, list(tree), list(tree))
    bases = {"p.core": frozenset({"p", "p.core", "p.util"}), "p.mid": frozenset({"p", "p.mid", "p.core", "p.util"}),
             "p.maybe": frozenset({"p", "p.maybe"})}
    got = assign_certain(["p.top", "p.opt", "p.mid", "p.util"], certain, bases)
    assert got == {"p.top": "p.mid", "p.opt": "", "p.mid": "p.core", "p.util": ""}
