"""analyse -> remove -> analyse to a fixpoint on a small tree; `shrink why MODULE:SYMBOL` on it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from shrinker.errors import ShrinkError
from shrinker.symbols.fixpoint import run_fixpoint
from shrinker.symbols.graph import build_symbol_graph
from shrinker.symbols.why import explain_symbol, render
from tests.symbols.test_graph import rules

TREE = {
    "pyproject.toml": """
        [project]
        name = "pkg"
        [project.scripts]
        pkg-cli = "pkg.cli:main"
        """,
    "python/pkg/__init__.py": """
        from pkg.engine import Engine

        __all__ = ["Engine"]
        """,
    "python/pkg/cli.py": """
        def main():
            from pkg.engine import Engine
            Engine().generate("hi")


        def unused_cli_helper():
            pass
        """,
    "python/pkg/engine.py": """
        from pkg.util import fmt, parse, legacy


        class Engine:
            def generate(self, prompt):
                return self._tokenize(fmt(prompt))

            def _tokenize(self, text):
                return parse(text)

            def _old_path(self, text):
                return legacy(text)
        """,
    "python/pkg/util.py": """
        def fmt(x):
            return x


        def parse(x):
            return x


        # Only the old path used this.
        def legacy(x):
            return _FLAG and x


        _FLAG = compute_flag()


        def compute_flag():
            return True
        """,
}


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("SHRINK_PARSE_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "tree"
    for rel, text in TREE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


def test_fixpoint_removes_what_nothing_reaches_then_what_that_left(tree: Path) -> None:
    result = run_fixpoint(tree, symbol_rules=rules(), jobs=1)
    assert result.converged
    util = (tree / "python/pkg/util.py").read_text()
    engine = (tree / "python/pkg/engine.py").read_text()
    assert "legacy" not in util and "Only the old path" not in util
    assert "_old_path" not in engine and "legacy" not in engine
    assert "def fmt" in util and "def parse" in util
    assert "unused_cli_helper" not in (tree / "python/pkg/cli.py").read_text()
    # Pass 1 removed legacy; remove_unused_names then dropped `_FLAG = compute_flag()`, which it
    # alone used; pass 2 found compute_flag unreferenced.
    assert len(result.passes) == 2
    assert "compute_flag" not in util
    assert result.removed > 0 and result.lines_after == result.lines_before - result.removed
    for path in tree.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")
    # A fixpoint: analysing again finds nothing.
    assert build_symbol_graph(tree, rules(), jobs=1).dead() == {}


def test_fixpoint_refuses_the_work_tree() -> None:
    from shrinker import paths

    with pytest.raises(ShrinkError, match="under build/"):
        run_fixpoint(paths.project_root() / "build" / "deepseek-v0.5.16")


def test_why_kept_gives_the_chain_back_to_a_root(tree: Path) -> None:
    g = build_symbol_graph(tree, rules(), jobs=1)
    answer = explain_symbol(g, "pkg.util:parse")
    assert answer.kept
    chain = [step.symbol for step in answer.chain]
    # parse <- engine's import alias <- Engine._tokenize <- ... <- a root (rule or module code)
    assert chain[:3] == ["pkg.util:parse", "pkg.engine:parse", "pkg.engine:Engine._tokenize"]
    text = "\n".join(render(answer))
    assert "kept" in text and "chain back to a root" in text


def test_why_kept_by_an_entry_point(tree: Path) -> None:
    g = build_symbol_graph(tree, rules(), jobs=1)
    answer = explain_symbol(g, "python/pkg/cli.py:main")
    assert answer.kept and "entry point" in answer.reason


def test_why_removed_names_what_still_mentions_it(tree: Path) -> None:
    g = build_symbol_graph(tree, rules(), jobs=1)
    answer = explain_symbol(g, "pkg.util:legacy")
    assert not answer.kept
    assert ("pkg.engine:legacy", "import", 1) in answer.referrers
    assert ("pkg.engine:Engine._old_path", "name of alias pkg.engine:legacy", 12) in answer.referrers
    assert "removed" in render(answer)[0]


def test_why_unknown_symbol_is_one_line_error(tree: Path) -> None:
    g = build_symbol_graph(tree, rules(), jobs=1)
    with pytest.raises(ShrinkError, match="closest: parse"):
        explain_symbol(g, "pkg.util:parsee")
    with pytest.raises(ShrinkError, match="MODULE:SYMBOL"):
        explain_symbol(g, "pkg.util")


def test_shrink_why_module_symbol_on_the_command_line(tree: Path) -> None:
    from typer.testing import CliRunner

    from shrinker.cli import app

    res = CliRunner().invoke(app, ["why", "pkg.util:legacy", "--tree", str(tree)])
    assert res.exit_code == 0, res.output
    assert "removed" in res.output and "pkg.engine:Engine._old_path" in res.output
    res = CliRunner().invoke(app, ["why", "pkg.engine:Engine.generate", "--tree", str(tree)])
    assert res.exit_code == 0, res.output
    assert "kept" in res.output


def test_symbols_dead_and_measure_commands(tree: Path, tmp_path: Path) -> None:
    import json

    import typer
    from typer.testing import CliRunner

    from shrinker.symbols.commands import register

    app = typer.Typer()
    register(app)
    before = {p: p.read_text() for p in tree.rglob("*.py")}
    res = CliRunner().invoke(app, ["symbols", "dead", "--tree", str(tree), "-j", "1"])
    assert res.exit_code == 0, res.output
    assert "pkg.util" in res.output and "unreferenced" in res.output
    out = tmp_path / "m.json"
    res = CliRunner().invoke(app, ["symbols", "measure", "--tree", str(tree), "-j", "1", "--json", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["converged"] and data["removed"] > 0
    assert {p: p.read_text() for p in tree.rglob("*.py")} == before  # measured on a copy
