"""CLI of the apply stage: `shrink apply --batch N | --all | --dry-run | --reset`."""

from __future__ import annotations

from typing import Optional

import typer
from rich.table import Table

from shrinker.console import out
from shrinker.errors import CheckFailed


def register(app: typer.Typer) -> None:
    @app.command("apply")
    def apply(
        batch: Optional[int] = typer.Option(None, "--batch", "-b", help="Apply batch N (1..N-1 must be applied)."),
        all_batches: bool = typer.Option(False, "--all", help="Apply every batch not applied yet."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Print the unified diff; change nothing."),
        reset: bool = typer.Option(False, "--reset", help="Re-create the work tree from upstream first."),
        profile: str = typer.Option("deepseek", "--profile", "-p"),
        spec: Optional[str] = typer.Option(None, "--upstream",
                                           help="Upstream spec whose plan to apply (default: the pin); "
                                                "`shrink plan --upstream` with the same spec first."),
        jobs: int = typer.Option(2, "--jobs", "-j"),
        no_verify: bool = typer.Option(False, "--no-verify", help="Gate with the built-in checks only."),
        keep_failed: bool = typer.Option(False, "--keep-failed",
                                         help="Keep a failed batch's state on branch failed/batch-N to inspect."),
    ) -> None:
        """Apply plan batches to build/<profile>-v<version>/: one verified git commit per batch."""
        from shrinker.apply.run import apply_batches

        outcomes = apply_batches(profile, batch=batch, all_batches=all_batches, dry_run=dry_run, reset=reset,
                                 jobs=jobs, use_verify=not no_verify, keep_failed=keep_failed, spec=spec)
        table = Table(title="apply")
        for col in ("#", "batch", "deleted", "edited", "lines removed", "gate", "commit", "s"):
            table.add_column(col, no_wrap=True)
        for o in outcomes:
            colour = "green" if o.gate == "passed" else "red"
            table.add_row(str(o.number), o.name, str(o.files_deleted), str(o.files_edited),
                          f"{o.lines_removed:,}", f"[{colour}]{o.gate}[/]", o.commit[:10], f"{o.seconds:.1f}")
            if dry_run:
                out.print(o.diff, markup=False, highlight=False)
        out.print(table)
        failed = [o for o in outcomes if o.gate == "failed"]
        if failed:
            o = failed[0]
            for f in o.findings[:15]:
                out.print(f"  {f}", markup=False)
            raise CheckFailed(f"batch {o.number} failed its gate ({len(o.findings)} findings)"
                              + ("" if dry_run else f"; rolled back, see reports/.../batch-{o.number}.md"))
