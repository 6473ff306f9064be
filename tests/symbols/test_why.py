"""`shrink why MODULE:SYMBOL` on the small tree of tests/symbols/conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from shrinker.errors import ShrinkError
from shrinker.symbols.graph import build_symbol_graph
from shrinker.symbols.why import explain_symbol, render
from tests.symbols.test_graph import rules


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
    assert ("pkg.engine:legacy", "import", 2) in answer.referrers
    assert ("pkg.engine:Engine._old_path", "name of alias pkg.engine:legacy", 15) in answer.referrers
    assert "removed" in render(answer)[0]


def test_why_unknown_symbol_is_one_line_error(tree: Path) -> None:
    g = build_symbol_graph(tree, rules(), jobs=1)
    with pytest.raises(ShrinkError, match="closest: parse"):
        explain_symbol(g, "pkg.util:parsee")
    with pytest.raises(ShrinkError, match="MODULE:SYMBOL"):
        explain_symbol(g, "pkg.util")
