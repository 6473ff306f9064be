"""CLI of the regen stage: `shrink regen [--to SPEC] [--adopt]`."""

from __future__ import annotations

from typing import Optional

import typer

from shrinker.console import out
from shrinker.errors import CheckFailed


def register(app: typer.Typer) -> None:
    @app.command("regen")
    def regen(
        to: Optional[str] = typer.Option(None, "--to", help="New upstream spec (default: newest sglang on PyPI)."),
        adopt: bool = typer.Option(False, "--adopt", help="Move upstream/UPSTREAM.toml to the new release."),
        profile: str = typer.Option("deepseek", "--profile", "-p"),
        no_apply: bool = typer.Option(False, "--no-apply", help="Plan and diff only."),
        no_kernel: bool = typer.Option(False, "--no-kernel", help="Skip the sglang-kernel wheel."),
    ) -> None:
        """Follow upstream: new manifests, their diff against the pin, a verified tree, a report."""
        from shrinker.regen.run import regen as run_regen

        result = run_regen(to, profile=profile, adopt=adopt, with_kernel=not no_kernel, run_apply=not no_apply)
        for what, items in result.changes.items():
            out.print(f"{what.replace('_', ' ')}: {len(items)}")
        for what, items in result.decided.items():
            out.print(f"decided · {what.replace('_', ' ')}: {len(items)}")
        for what, items in result.warnings.items():
            out.print(f"{'[yellow]' if items else ''}noted · {what.replace('_', ' ')}: {len(items)}{'[/]' if items else ''}")
            for item in items[:10]:
                out.print(f"  {item}", markup=False)
        for what, items in result.attention.items():
            colour = "red" if items else "green"
            out.print(f"[{colour}]{what.replace('_', ' ')}: {len(items)}[/]")
            for item in items[:10]:
                out.print(f"  {item}", markup=False)
        out.print(f"parse cache hits {100 * result.cache_hit_rate:.0f} % · report {result.report}")
        if any(result.attention.values()):
            raise CheckFailed("regen needs a person: see the report")
        if not result.ok:  # nothing to ask, but no verified tree either
            raise CheckFailed("nothing needs a person, but the new release is not verified: "
                              + ("apply and verify were not run (--no-apply)" if not result.apply_run
                                 else "apply or verify failed (see the report)"))
