"""CLI commands of the plan stage: `shrink plan` and `shrink why`."""

from __future__ import annotations

from typing import Optional

import typer
from rich.table import Table

from shrinker.console import out


def _summary_table(summary: dict) -> Table:
    table = Table(title=f"plan {summary['profile']} · {summary['upstream']}", show_lines=False)
    for col in ("area", "files", "kept", "kept lines", "removed", "removed lines", "kept %"):
        table.add_column(col, justify="right" if col != "area" else "left", no_wrap=True)
    rows = list(summary["by_area"].items()) + [("TOTAL", summary["total"])]
    for area, row in rows:
        pct = f"{100 * row['kept_lines'] / row['lines']:.0f}%" if row["lines"] else "-"
        table.add_row(area, str(row["files"]), str(row["kept_files"]), f"{row['kept_lines']:,}",
                      str(row["removed_files"]), f"{row['removed_lines']:,}", pct)
    return table


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def plan(
        profile: str = typer.Option("deepseek", "--profile", "-p", help="Rules profile (rules/<profile>.toml)."),
        spec: Optional[str] = typer.Option(None, "--upstream", help="Upstream spec (default: the pin)."),
        jobs: int = typer.Option(2, "--jobs", "-j", help="Parser processes."),
        kernels_only: bool = typer.Option(False, "--kernels-only",
                                          help="Write kernels.txt and kernels.md alone; keep.txt, remove.txt, "
                                               "batches and plan.md stay as they are."),
    ) -> None:
        """Trace the import graph from the roots and write keep/remove manifests and batches."""
        from shrinker.plan.report import write_plan_report
        from shrinker.plan.run import make_kernel_manifest, make_plan

        if kernels_only:
            manifest, report = make_kernel_manifest(profile, spec, jobs=jobs)
            out.print(f"kernel manifest {manifest} · report {report}")
            return

        result = make_plan(profile, spec, jobs=jobs)
        report = write_plan_report(result)
        out.print(_summary_table(result.summary))
        s = result.graph.stats
        out.print(f"parsed {s.parsed} files, {s.cached} from cache, {s.errors} parse errors, "
                  f"{result.seconds:.1f}s · manifests in {result.manifest_dir} · report {report}")

