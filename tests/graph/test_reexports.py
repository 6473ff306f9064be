"""graph/reexports: where a module-level name comes from, through re-exports."""

from __future__ import annotations

from shrinker.graph.records import FUNCTION, MODULE, FileFacts, ImportRecord, Where
from shrinker.graph.reexports import defining_modules, import_origins


def _facts(module: str, imports: list[tuple[str, list[str], str]], defined: list[str]) -> FileFacts:
    return FileFacts(path=module.replace(".", "/") + ".py", module=module, is_package=False, lines=1,
                     imports=[ImportRecord(t, names, 1, True, Where(scope=scope)) for t, names, scope in imports],
                     defined=defined)


def test_top_level_from_imports_under_their_own_name_are_origins():
    facts = [
        _facts("pkg.args", [("pkg.choices", ["CHOICES", "OTHER"], MODULE), ("pkg.late", ["LATE"], FUNCTION)],
               defined=["CHOICES", "RENAMED"]),  # OTHER was imported `as RENAMED`
        _facts("pkg.choices", [("pkg.base", ["CHOICES"], MODULE)], defined=["CHOICES"]),
    ]
    origins = import_origins(facts)
    assert origins == {"pkg.args": {"CHOICES": "pkg.choices"}, "pkg.choices": {"CHOICES": "pkg.base"}}
    assert defining_modules(origins, "pkg.args", "CHOICES") == ["pkg.args", "pkg.choices", "pkg.base"]
    assert defining_modules(origins, "pkg.args", "LATE") == ["pkg.args"]


def test_an_import_cycle_ends_the_chain():
    origins = {"a": {"X": "b"}, "b": {"X": "a"}}
    assert defining_modules(origins, "a", "X") == ["a", "b"]
