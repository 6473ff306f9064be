"""CLI of the regen stage: `shrink regen [--to SPEC] [--adopt] [--no-apply]`."""

from __future__ import annotations

from typing import Optional

import typer

from shrinker.console import console, out
from shrinker.errors import CheckFailed


def register(app: typer.Typer) -> None:
    @app.command("regen")
    def regen(
        to: Optional[str] = typer.Option(None, "--to", help="Target upstream spec (default: newest sglang on PyPI); "
                                                            "every PyPI release between the pin and it is one step."),
        from_: Optional[str] = typer.Option(None, "--from", help="Start at this release instead of the pin "
                                                                 "(one an earlier walk passed): resumes a walk."),
        adopt: bool = typer.Option(False, "--adopt", help="Move upstream/UPSTREAM.toml to the last step that passed "
                                                          "(and the rules' roots to the successors followed)."),
        profile: str = typer.Option("deepseek", "--profile", "-p"),
        no_apply: bool = typer.Option(False, "--no-apply", help="Plan and diff each step only."),
        no_kernel: bool = typer.Option(False, "--no-kernel", help="Skip the sglang-kernel wheel."),
    ) -> None:
        """Follow upstream release by release: manifests, a diff, a verified tree and a report per step."""
        from shrinker.regen.walk import walk

        result = walk(to, from_spec=from_, profile=profile, adopt=adopt, with_kernel=not no_kernel, run_apply=not no_apply,
                      log=lambda msg: console.print(msg, markup=False))
        for step in result.steps:
            out.print(f"[bold]{step.from_spec} -> {step.to_spec}[/]: {step.verdict} · report {step.report}")
            for what, items in step.decided.items():
                out.print(f"  decided · {what.replace('_', ' ')}: {len(items)}")
            for what, items in step.warnings.items():
                if items:
                    out.print(f"  [yellow]noted · {what.replace('_', ' ')}: {len(items)}[/]")
                    for item in items[:10]:
                        out.print(f"    {item}", markup=False)
            for what, items in step.attention.items():
                if items:
                    out.print(f"  [red]{what.replace('_', ' ')}: {len(items)}[/]")
                    for item in items[:10]:
                        out.print(f"    {item}", markup=False)
        if result.report is not None:
            out.print(f"walk report {result.report}" + (f" · pin moved to {result.adopted}" if result.adopted else ""))
        elif not result.planned:
            out.print(f"{result.from_spec} is the newest release: nothing to walk")
        stop = result.stopped_at
        if stop is not None and any(stop.attention.values()):
            raise CheckFailed(f"regen needs a person at {stop.to_spec}: see {stop.report}")
        if not result.ok:  # nothing to ask, but no verified tree either
            raise CheckFailed("nothing needs a person, but the walk is not verified: "
                              + ("apply and verify were not run (--no-apply)" if no_apply
                                 else f"apply or verify failed at {stop.to_spec if stop else '?'} (see the report)"))
