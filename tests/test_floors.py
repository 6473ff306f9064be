"""The package's floors follow the data: upstream -> graph -> rules -> plan -> codemods/symbols/checks -> apply ->
verify (and gpu) -> report/regen, and a module imports only from its own floor or a lower one (a helper two floors
share lives on the floor that owns its data). console, errors, paths and filehash are the ground floor;
cli and bench stand on top."""

from __future__ import annotations

import ast
from pathlib import Path

import shrinker

FLOORS = {"console": 0, "errors": 0, "paths": 0, "filehash": 0, "upstream": 1, "graph": 2, "rules": 3, "plan": 4,
          "codemods": 5, "symbols": 5, "checks": 5, "apply": 6, "verify": 7, "gpu": 7, "report": 8, "regen": 8, "cli": 9,
          "bench": 9}


# Upward imports not yet moved, each with its reason (none may be added): none left.
KNOWN: set[str] = set()


def _floor(module: str) -> int:
    return FLOORS[module.split(".")[1]]


def test_no_module_imports_from_a_higher_floor() -> None:
    root = Path(shrinker.__file__).parent
    upward = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        if len(parts) < 2:
            continue  # shrinker/__init__.py
        module = ".".join(parts)
        for node in ast.walk(ast.parse(path.read_text())):
            targets = ([node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                       else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for target in targets:
                if target.startswith("shrinker.") and _floor(target) > _floor(module):
                    upward.append(f"{module} imports {target}")
    assert sorted(set(upward) - KNOWN) == [], "a module imports from a higher floor"
    assert sorted(KNOWN - set(upward)) == [], "a known upward import is gone: drop it from KNOWN"
