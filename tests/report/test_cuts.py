"""`shrink report cuts`: dominator subtrees, import sites, feature cuts, on a small fixture tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shrinker.errors import ShrinkError
from shrinker.graph.build import build_graph
from shrinker.graph.cache import FactsCache
from shrinker.plan.reach import compute_reach
from shrinker.report.cut_features import Feature, load_features
from shrinker.report.cuts import VROOT, dominator_tree, module_cuts, planned_graph, set_cut, sites_into
from shrinker.report.cuts_report import build_report, render_markdown, to_json, top_cuts, write_cuts
from shrinker.rules.load import load_rules

RULES = """
[profile]
name = "tiny"
description = "cuts fixture"
package = "pkg"

[[roots]]
module = "pkg.server"
reason = "the server"

[architectures]
keep = []
reason = "none"

[platform]
methods = []
packages = []
[platform.strings]
strings = []
reason = "none"
[[platform.predicates]]
name = "is_npu"
value = false
reason = "npu"

[[batches]]
name = "rest"
risk = "low"
categories = ["unreachable", "platform_guard"]
description = "rest"
"""

# server imports a and b; a alone imports only_a (and only_a imports deep); a and b both import shared.
TREE = {
    "pkg/__init__.py": "",
    "pkg/server.py": "import pkg.a\nimport pkg.b\n\nx = 1\n",
    "pkg/a.py": "from pkg import only_a\nfrom pkg import shared\n" + "a = 1\n" * 8,
    "pkg/b.py": "from pkg import shared\n\n" + "b = 1\n" * 3,
    "pkg/only_a.py": "import pkg.deep\n" + "o = 1\n" * 19,
    "pkg/deep.py": "d = 1\n" * 30,
    "pkg/shared.py": "s = 1\n" * 50,
    "pkg/opt.py": (  # imported by b only: inside a function, under try/except and a flag
        "o = 1\n"),
    "pkg/typing_only.py": "t = 1\n" * 7,  # only under TYPE_CHECKING: not on the planned graph
    "pkg/npu_only.py": "n = 1\n" * 9,  # only under `if is_npu()`: folded away on CUDA
}
B_EXTRA = """
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pkg.typing_only

def is_npu():
    return False

if is_npu():
    import pkg.npu_only

def load(flag):
    if flag:
        try:
            from pkg import opt
        except ImportError:
            opt = None
"""


@pytest.fixture
def tiny(tmp_path: Path):
    root = tmp_path / "tree"
    for rel, text in {**TREE, "pkg/b.py": TREE["pkg/b.py"] + B_EXTRA}.items():
        path = root / "python" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "rules.toml").write_text(RULES)
    rules = load_rules(path=tmp_path / "rules.toml")
    graph = build_graph(root, jobs=1, cache=FactsCache(tmp_path / "facts.pickle"))
    reach = compute_reach(graph, rules)
    return planned_graph(graph, reach, rules)


def _cut(pg, module):
    return next(c for c in module_cuts(pg) if c.module == module)


def test_planned_graph_has_only_live_edges(tiny):
    assert "pkg.typing_only" not in tiny.lines and "pkg.npu_only" not in tiny.lines
    assert tiny.roots == ["pkg.server"]
    assert tiny.graph.has_edge(VROOT, "pkg.server") and tiny.graph.has_edge("pkg.b", "pkg.opt")


def test_module_reachable_through_one_module_counts_in_its_dominator(tiny):
    idom = dominator_tree(tiny)
    assert idom["pkg.only_a"] == "pkg.a" and idom["pkg.deep"] == "pkg.only_a"
    a = _cut(tiny, "pkg.a")
    # a (10 lines) + only_a (20) + deep (30): what no root reaches once pkg.a is gone.
    assert a.freed_lines == 10 + 20 + 30 and a.freed_modules == 3
    assert set(a.subtree) == {"pkg.a", "pkg.only_a", "pkg.deep"}


def test_module_with_two_independent_importers_is_not_counted(tiny):
    idom = dominator_tree(tiny)
    assert idom["pkg.shared"] == "pkg.server"  # reached through a and through b
    assert "pkg.shared" not in _cut(tiny, "pkg.a").subtree
    assert "pkg.shared" not in _cut(tiny, "pkg.b").subtree
    assert _cut(tiny, "pkg.shared").freed_lines == 50  # itself only
    # Removing a and b together frees shared too: a set cut sees what single dominators cannot.
    both = set_cut(tiny, "a+b", {"pkg.a", "pkg.b"})
    assert set(both.freed) == {"pkg.a", "pkg.only_a", "pkg.deep", "pkg.b", "pkg.shared", "pkg.opt"}
    assert both.freed_lines == sum(tiny.lines[m] for m in both.freed) and both.sites[0].importer == "pkg.server"


def test_sites_say_where_the_import_stands(tiny):
    (site,) = sites_into(tiny, {"pkg.opt"})
    assert (site.importer, site.kind, site.top_level) == ("pkg.b", "from_submodule", False)
    assert "in function load" in site.context and "try/except ImportError" in site.context
    assert "if flag" in site.context
    shared = sites_into(tiny, {"pkg.shared"})
    assert {(s.importer, s.line, s.top_level) for s in shared} == {("pkg.a", 2, True), ("pkg.b", 1, True)}
    # A set cut lists only importers that survive it.
    cut = set_cut(tiny, "a", {"pkg.a"})
    assert [(s.importer, s.target, s.line) for s in cut.sites] == [("pkg.server", "pkg.a", 1)]
    assert set(cut.freed) == {"pkg.a", "pkg.only_a", "pkg.deep"}


def test_top_cuts_group_dominated_entries(tiny):
    top = top_cuts(tiny, module_cuts(tiny), 4)
    by = {t.cut.module: t for t in top}
    assert "pkg.server" not in by  # roots are excluded
    assert by["pkg.only_a"].group == "pkg.a" and by["pkg.only_a"].depth == 1
    assert by["pkg.a"].group == "" and [s.importer for s in by["pkg.a"].sites] == ["pkg.server"]
    # only_a's own importer (a) is inside a's subtree but outside its own: it is still a site of only_a.
    assert [s.importer for s in by["pkg.only_a"].sites] == ["pkg.a"]


def test_report_files(tiny, tmp_path):
    feature = Feature(name="the a feature", patterns=["pkg.a", "pkg.only_a"], keep=["pkg.only_a"], story="s",
                      rule="r", codemods="c", risk="low")
    applied = {tiny.paths[m]: n for m, n in tiny.lines.items() if m != "pkg.deep"}  # deep already gone
    report = build_report(tiny, [feature], applied, upstream_total=500, top=5)
    (fr,) = report.features
    assert fr.cut.members == ["pkg.a"] and fr.cut.freed_lines == 60 and fr.cut.applied_lines == 30
    assert report.union is not None and report.union.freed_lines == 60
    md = render_markdown(report)
    assert "| 1 | the a feature | 60 | 30 | 3 | 1 / 1 | 1 | low |" in md
    assert "`pkg.server:1` → `pkg.a` (import, top-level)" in md
    paths = write_cuts(report, tmp_path / "out")
    data = json.loads(paths[1].read_text())
    assert data["features"][0]["freed_lines"] == 60 and data["top"][0]["module"] == "pkg.a"
    assert to_json(report)["lines"]["upstream"] == 500


def test_every_candidate_counts_features_not_recommended(tiny):
    """The ceiling line counts every feature; the ladder and the recommended union only the recommended."""
    a = Feature(name="a", patterns=["pkg.a"], story="s", rule="r", codemods="c", risk="low")
    b = Feature(name="b", patterns=["pkg.b"], story="s", rule="r", codemods="c", risk="high", recommend=False)
    report = build_report(tiny, [a, b], None, upstream_total=500, top=5)
    assert report.union is not None and report.union.members == ["pkg.a"]
    assert report.every is not None and report.every.members == ["pkg.a", "pkg.b"]
    assert report.every.freed_lines > report.union.freed_lines
    assert "**Every candidate feature together**" in render_markdown(report)
    assert to_json(report)["every_feature"]["freed_lines"] == report.every.freed_lines


def test_feature_file_is_validated(tmp_path):
    path = tmp_path / "x-cuts.toml"
    assert load_features(path=path) == []
    path.write_text('[[feature]]\nname = "n"\npatterns = ["a.**"]\nstory = "s"\nrule = "r"\ncodemods = "c"\n'
                    'risk = "tiny"\n')
    with pytest.raises(ShrinkError, match="risk"):
        load_features(path=path)


def test_profile_feature_file_loads():
    features = load_features("deepseek")
    assert features and all(f.patterns for f in features)


def test_cli(tiny, tmp_path, monkeypatch, capsys):
    import sys

    import shrinker.report.cut_features as cut_features
    import shrinker.rules.load as rules_load
    import shrinker.upstream as upstream
    from shrinker import cli
    from tests.conftest import FakeUpstream

    rules = rules_load.load_rules(path=tmp_path / "rules.toml")
    monkeypatch.setattr(upstream, "load", lambda spec=None: FakeUpstream(tmp_path / "tree"))
    monkeypatch.setattr(rules_load, "load_rules", lambda profile="deepseek", path=None: rules)
    monkeypatch.setattr(cut_features, "load_features", lambda profile="deepseek", path=None: [])
    monkeypatch.setattr(sys, "argv", ["shrink", "report", "cuts", "--top", "3", "--tree", str(tmp_path / "none"),
                                      "--out", str(tmp_path / "out")])
    cli.main()
    printed = capsys.readouterr().out
    assert "pkg.a" in printed and "60" in printed
    md = (tmp_path / "out" / "cuts.md").read_text()
    assert "work tree `none`" in md and "| 1 | `pkg.a` | 60 | – | 3 |" in md
