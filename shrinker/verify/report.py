"""verify.json and verify.md: counts per check, regressions, seconds."""

from __future__ import annotations

import json
from pathlib import Path

from shrinker.paths import project_label
from shrinker.verify.result import VerifyResult

MAX_LISTED = 200  # findings/notes per check in the markdown (the JSON has all)


def write_report(result: VerifyResult, report_dir: Path) -> tuple[Path, Path]:
    report_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = report_dir / "verify.json", report_dir / "verify.md"
    json_path.write_text(json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(result), encoding="utf-8")
    return json_path, md_path


def _environment_line(environment: dict) -> str:
    held = environment.get("held_pins") or []
    return (f"- environment: torch {environment['torch']}"
            + (f" (the release pins {', '.join(held)}: not installed, verify imports on CPU and keeps the base "
               f"list's CPU build, `shrinker/verify/env.py`)" if held else "")
            + f"; the release's own pins: {', '.join(environment['release_pins']) or 'none beyond the base list'}")


def render_markdown(result: VerifyResult) -> str:
    status = "PASSED" if result.passed else "FAILED"
    lines = [
        "# shrink verify",
        "",
        f"- tree: `{project_label(result.tree)}`",
        f"- upstream: `{project_label(result.upstream_root)}`",
        f"- result: **{status}**, {result.regressions} regressions, {result.seconds:.1f} s",
        *([_environment_line(result.environment)] if result.environment else []),
        "",
        "| check | result | counts | seconds |",
        "| --- | --- | --- | ---: |",
    ]
    for c in result.checks:
        counts = ", ".join(f"{k} {v}" for k, v in c.counts.items())
        lines.append(f"| {c.name} | {'pass' if c.passed else 'FAIL'} | {counts} | {c.seconds:.1f} |")
    for c in result.checks:
        if c.findings:
            lines += ["", f"## {c.name}: regressions ({len(c.findings)})", ""]
            lines += [f"- `{f}`" for f in c.findings[:MAX_LISTED]]
            if len(c.findings) > MAX_LISTED:
                lines.append(f"- ... and {len(c.findings) - MAX_LISTED} more (verify.json)")
    for c in result.checks:
        if c.notes:
            lines += ["", f"## {c.name}: notes ({len(c.notes)}, not failures)", ""]
            lines += [f"- {n}" for n in c.notes[:MAX_LISTED]]
            if len(c.notes) > MAX_LISTED:
                lines.append(f"- ... and {len(c.notes) - MAX_LISTED} more (verify.json)")
    return "\n".join(lines) + "\n"
