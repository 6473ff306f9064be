"""reports/<profile>/v<version>/plan.md and plan.json: the summary table, timings, cuts, parse errors."""

from __future__ import annotations

import json
from pathlib import Path

from shrinker import paths


def write_plan_report(result) -> Path:
    summary = result.summary
    out_dir = paths.reports_dir(summary["profile"], result.upstream.version)
    out_dir.mkdir(parents=True, exist_ok=True)
    stats = result.graph.stats
    lines = [
        f"# Plan: {summary['profile']} on {summary['upstream']}",
        "",
        f"Kept {summary['total']['kept_files']:,} of {summary['total']['files']:,} files and "
        f"{summary['total']['kept_lines']:,} of {summary['total']['lines']:,} non-blank Python lines "
        f"({100 * summary['kept_line_fraction']:.1f} %). Manifests: `manifests/{summary['profile']}/"
        f"v{result.upstream.version}/`.",
        "",
        "| area | files | kept files | kept lines | removed files | removed lines | kept % |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for area, row in list(summary["by_area"].items()) + [("**total**", summary["total"])]:
        pct = f"{100 * row['kept_lines'] / row['lines']:.0f}" if row["lines"] else "-"
        lines.append(f"| {area} | {row['files']} | {row['kept_files']} | {row['kept_lines']:,} | "
                     f"{row['removed_files']} | {row['removed_lines']:,} | {pct} |")
    lines += ["", "## Batches", "", "| # | name | risk | files deleted | lines | codemod targets |",
              "|---:|---|---|---:|---:|---|"]
    for b in result.batches:
        mods = ", ".join(f"{k} ({len(v)})" for k, v in b.codemods.items()) or "-"
        lines.append(f"| {b.number} | {b.name} | {b.risk} | {len(b.delete)} | {b.lines:,} | {mods} |")
    if result.reach.kernels is not None:
        counts = result.reach.kernels.counts()
        lines += ["", "## Kernels", "", "Kernel manifest (`kernels.txt`, report `kernels.md`): "
                  + ", ".join(f"{k} {v['kept']} kept / {v['removed']} removed" for k, v in counts.items()) + "."]
    lines += ["", f"## Kept code importing removed modules ({len(result.reach.cuts)}; the codemods rewrite these)", ""]
    for u, v, line, why in sorted(result.reach.cuts):
        lines.append(f"- `{u}`:{line} → `{v}` — {why}")
    errors = [f for f in result.graph.facts.values() if f.parse_error]
    lines += ["", f"## Files libcst could not parse ({len(errors)}; kept as is)", ""]
    lines += [f"- `{f.path}`: {f.parse_error}" for f in sorted(errors, key=lambda f: f.path)] or ["- none"]
    lines += ["", "## Run", "",
              f"- parsed {stats.parsed} files, {stats.cached} from cache ({100 * stats.hit_rate:.0f} % hits), "
              f"parse {stats.seconds:.1f}s, whole plan {result.seconds:.1f}s"]
    path = out_dir / "plan.md"
    path.write_text("\n".join(lines) + "\n")
    if result.reach.kernels is not None:
        from shrinker.plan.kernel_report import write_kernel_report

        write_kernel_report(out_dir, summary["upstream"], result.reach.kernels.entries, result.upstream.root,
                            result.rules.kernels.packages, {d.path for d in result.decisions if d.keep})
    (out_dir / "plan.json").write_text(json.dumps({
        "seconds": round(result.seconds, 2), "parse_seconds": round(stats.seconds, 2),
        "files_parsed": stats.parsed, "files_cached": stats.cached, "parse_errors": len(errors),
        "cuts": len(result.reach.cuts), "summary": summary}, indent=1) + "\n")
    return path
