"""Write the plan's committed artifacts: keep.txt, remove.txt, batches.json, summary.json.

They are deterministic (sorted, no timings, no absolute paths): regenerating them on any machine
gives the same bytes, so their git diff is the review of an upstream change. Timings go to reports/.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path, PurePosixPath

from shrinker.graph.records import Decision
from shrinker.plan.batches import BatchPlan


def area_of(path: str) -> str:
    """The folder a summary row stands for: sglang/<top> for the main package."""
    parts = PurePosixPath(path).parts
    for root in (("sgl-kernel", "python"), ("python",)):
        if parts[: len(root)] == root:
            inner = parts[len(root):]
            if len(inner) >= 3:
                return f"{inner[0]}/{inner[1]}"
            return f"{inner[0]} (top level)" if len(inner) == 2 else "(package roots)"
    return "(repo)"


def summarize(decisions: list[Decision], spec: str, version: str, profile: str) -> dict:
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for d in decisions:
        row = rows[area_of(d.path)]
        is_py = d.path.endswith(".py")
        row["files"] += 1
        row["py_files"] += is_py
        row["lines"] += d.lines
        row["kept_files" if d.keep else "removed_files"] += 1
        row["kept_lines" if d.keep else "removed_lines"] += d.lines
    total = defaultdict(int)
    for row in rows.values():
        for k, v in row.items():
            total[k] += v
    keys = ("files", "py_files", "lines", "kept_files", "kept_lines", "removed_files", "removed_lines")
    return {
        "profile": profile,
        "upstream": spec,
        "version": version,
        "total": {k: total[k] for k in keys},
        "kept_line_fraction": round(total["kept_lines"] / total["lines"], 4) if total["lines"] else 0.0,
        "by_area": {a: {k: rows[a][k] for k in keys} for a in sorted(rows)},
    }


def _lines(decisions: list[Decision], keep: bool) -> str:
    out = [f"{d.path}\t{d.lines}\t{d.reason}" for d in decisions if d.keep == keep]
    return "\n".join(out) + "\n"


def write_manifests(out_dir: Path, decisions: list[Decision], batches: list[BatchPlan], summary: dict,
                    extra: dict | None = None) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "keep.txt": "# path\tnon-blank lines\treason\n" + _lines(decisions, True),
        "remove.txt": "# path\tnon-blank lines\treason\n" + _lines(decisions, False),
        "batches.json": json.dumps({"batches": [b.to_dict() for b in batches], **(extra or {})},
                                   indent=1, sort_keys=False) + "\n",
        "summary.json": json.dumps(summary, indent=1) + "\n",
    }
    written = []
    for name, text in files.items():
        path = out_dir / name
        path.write_text(text)
        written.append(path)
    return written
