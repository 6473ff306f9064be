"""graph/bindings: the names a statement binds where it stands (verify's module names and class attributes)."""

from __future__ import annotations

import ast

from shrinker.graph.bindings import statement_bindings


def _bound(source: str) -> list[list[str]]:
    return [statement_bindings(stmt) for stmt in ast.parse(source).body]


def test_each_statement_kind_binds_its_names_and_not_its_blocks() -> None:
    source = (
        "import os.path\n"
        "import numpy as np\n"
        "from x import a, b as c\n"
        "from y import *\n"
        "d, (e, *f) = g = 1\n"
        "h: int = 2\n"
        "i += 1\n"
        "for j, k in []:\n    inner = 1\n"
        "with open(p) as (l, m), open(q):\n    inner = 2\n"
        "try:\n    inner = 3\nexcept E as n:\n    pass\nexcept F:\n    pass\n"
        "def o():\n    inner = 4\n"
        "class P:\n    inner = 5\n"
        "if q:\n    inner = 6\n"
        "x.y = 1\n"
    )
    assert _bound(source) == [["os"], ["np"], ["a", "c"], [], ["d", "e", "f", "g"], ["h"], ["i"], ["j", "k"],
                              ["l", "m"], ["n"], ["o"], ["P"], [], []]
