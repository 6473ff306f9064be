"""The CLI: `shrink why MODULE:SYMBOL`, `shrink symbols dead|measure` (on tests/symbols/conftest.py's tree)."""

from __future__ import annotations

from pathlib import Path


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


def _batch_removes_parse(tree: Path) -> None:
    """The tree as a work tree: an upstream commit, then a batch commit that removes pkg.util:parse."""
    import git

    repo = git.Repo.init(tree)
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "t").set_value("user", "email", "t@t")
    repo.git.add(A=True)
    repo.index.commit("upstream")
    util = tree / "python" / "pkg" / "util.py"
    util.write_text(util.read_text().replace("def parse(x):\n    return x\n", ""))
    repo.git.add(A=True)
    repo.index.commit("shrink: batch 7 — dead symbols (pass 1)")


def test_shrink_why_a_symbol_a_batch_removed(tree: Path) -> None:
    """A symbol no longer in the tree: the work-tree commit that removed it; unknown ones stay an error."""
    from typer.testing import CliRunner

    from shrinker.cli import app

    _batch_removes_parse(tree)

    res = CliRunner().invoke(app, ["why", "pkg.util:parse", "--tree", str(tree)])
    assert res.exit_code == 0, res.output
    assert "removed from its file" in res.output and "batch 7 — dead symbols (pass 1)" in res.output
    res = CliRunner().invoke(app, ["why", "pkg.util:never_there", "--tree", str(tree)])
    assert res.exit_code != 0 and "no module-level symbol" in str(res.exception)


def test_shrink_why_a_removed_symbol_by_file_path(tree: Path) -> None:
    """A removed symbol named by its file (relative to an import root) finds the same commit."""
    from typer.testing import CliRunner

    from shrinker.cli import app

    _batch_removes_parse(tree)
    res = CliRunner().invoke(app, ["why", "pkg/util.py:parse", "--tree", str(tree)])
    assert res.exit_code == 0, res.output
    assert "python/pkg/util.py" in res.output and "batch 7 — dead symbols (pass 1)" in res.output
