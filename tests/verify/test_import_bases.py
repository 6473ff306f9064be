"""Choosing shared bases for the pruned import check from upstream's recorded closures."""

from __future__ import annotations

from shrinker.verify import import_bases
from shrinker.verify.import_bases import assign_bases, choose_bases, static_importers


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


def test_a_base_only_for_modules_whose_closure_holds_it_and_never_for_itself():
    closures = _closures()
    bases = {"p.core.util": closures["p.core.util"], "p.core": closures["p.core"]}
    got = assign_bases(["p.a", "p.b", "p.c", "p.core.util", "p.unknown"], closures, bases)
    assert got == {"p.a": "p.core.util", "p.b": "p.core.util", "p.c": "", "p.core.util": "", "p.unknown": ""}
    # the pruned base loads a module upstream's p.a never did: not usable for p.a
    bigger = {"p.core.util": closures["p.core.util"] | {"p.extra"}}
    assert assign_bases(["p.a"], closures, bigger) == {"p.a": ""}


def test_static_importers_follow_module_level_imports_and_parents():
    from types import SimpleNamespace as NS

    from shrinker.verify.facts import ImportRef

    def facts(*refs):
        return NS(imports=list(refs))

    tree = {
        "p": facts(),
        "p.base": facts(),
        "p.mid": facts(ImportRef(1, "p", ["base"], "", False)),  # from p import base
        "p.top": facts(ImportRef(1, "p.mid", None, "", False)),
        "p.lazy": facts(ImportRef(1, "p.base", None, "", True)),  # inside a function: not at import
        "p.typed": facts(ImportRef(1, "p.base", None, "type_checking", False)),
        "p.ns.child": facts(),  # p.ns: a namespace package, no facts
    }
    got = static_importers(tree, [*tree, "p.ns"], ["p.base", "p"])
    assert got["p.base"] == {"p.base", "p.mid", "p.top"}
    assert {"p.ns", "p.ns.child", "p.lazy"} <= got["p"]  # every module imports its parents first


def _facts_tree():
    from types import SimpleNamespace as NS

    from shrinker.verify.facts import ImportRef

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
