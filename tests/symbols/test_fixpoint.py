"""analyse -> remove -> analyse to a fixpoint on a small tree (tests/symbols/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shrinker.errors import ShrinkError
from shrinker.symbols.fixpoint import run_fixpoint
from shrinker.symbols.graph import build_symbol_graph
from tests.symbols.test_graph import rules


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
    # `_HIP = is_hip()` went with legacy, then the public import it alone used: engine holds util as
    # an object and reads some `.is_hip`, but through its binding of util it reads only `fmt`, so no
    # module takes `is_hip` from util; `CUDA = is_cuda()` keeps its import
    assert "is_hip" not in util and "from pkg.platform import is_cuda\n" in util
    assert result.removed > 0 and result.lines_after == result.lines_before - result.removed
    for path in tree.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")
    # A fixpoint: analysing again finds nothing.
    assert build_symbol_graph(tree, rules(), jobs=1).dead() == {}


def test_fixpoint_refuses_the_work_tree() -> None:
    from shrinker import paths

    with pytest.raises(ShrinkError, match="under build/"):
        run_fixpoint(paths.project_root() / "build" / "deepseek-v0.5.16")
