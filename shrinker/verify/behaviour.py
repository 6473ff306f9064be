"""Behaviour on CPU: recorded model outputs through the kept parsers, chat encoding and protocol models.

Both trees get the same cases (data/behaviour_cases.json); every case's JSON result must be equal.
"""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).parent / "data"


def load_cases(name: str) -> dict:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _first_difference(a, b, path: str = "") -> str:
    if type(a) is not type(b):
        return f"{path or '.'}: {_short(a)} vs {_short(b)}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: {'missing upstream' if k not in a else 'missing pruned'}"
            if a[k] != b[k]:
                return _first_difference(a[k], b[k], f"{path}.{k}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path or '.'}: {_short(a)} vs {_short(b)}"


def _short(value) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."


def compare_cases(upstream: dict, pruned: dict, where: str) -> tuple[list[str], dict[str, int]]:
    findings = []
    counts = {"cases": len(upstream), "identical": 0, "raised_upstream": 0}
    for case_id in sorted(upstream):
        u, p = upstream[case_id], pruned.get(case_id)
        counts["raised_upstream"] += "raised" in u
        if p == u:
            counts["identical"] += 1
            continue
        if p is None:
            findings.append(f"{where}:1 case {case_id}: no result pruned")
        elif "raised" in p and "raised" not in u:
            findings.append(f"{where}:1 case {case_id}: works upstream, pruned raises {p['message']}")
        else:
            findings.append(f"{where}:1 case {case_id}: upstream and pruned differ at "
                            f"{_first_difference(u, p)} (upstream vs pruned)")
    return findings, counts
