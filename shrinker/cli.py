"""`shrink`: a thin typer CLI. Each command parses options, calls one stage function, renders with rich.

Errors from the stages (`ShrinkError`) become one red line and their exit code, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from typing import Optional

import typer

from shrinker.console import console, out
from shrinker.errors import ShrinkError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="shrinker: turn upstream SGLang into a DeepSeek-only, NVIDIA-CUDA-only tree, verified at each step.")
upstream_app = typer.Typer(no_args_is_help=True, help="Get and pin an upstream SGLang release.")
app.add_typer(upstream_app, name="upstream")

PROFILE_OPT = typer.Option("deepseek", "--profile", "-p", help="Rules profile in rules/<profile>.toml.")
SPEC_HELP = "pypi:sglang==VERSION or git+URL@REF (default: the pin in upstream/UPSTREAM.toml)."


@upstream_app.command("fetch")
def upstream_fetch(
    spec: Optional[str] = typer.Argument(None, help=SPEC_HELP),
    no_kernel: bool = typer.Option(False, "--no-kernel", help="Skip the sglang-kernel wheel."),
    no_pin: bool = typer.Option(False, "--no-pin", help="Fetch without changing upstream/UPSTREAM.toml."),
) -> None:
    """Download SPEC once into upstream/cache/ (a git repo, one commit) and pin it."""
    from shrinker.upstream import fetch

    with console.status(f"fetching {spec or 'the pinned upstream'} ..."):
        up = fetch(spec, with_kernel=not no_kernel, pin=not no_pin)
    out.print(f"[green]upstream[/] {up.spec}  version {up.version}  commit {up.commit[:12]}  at {up.root}")


# Later stages register their commands here, each in its own module, to keep this file thin.
def _register_stage_commands() -> None:
    import importlib

    for name in ("shrinker.plan.commands", "shrinker.apply.commands", "shrinker.verify.commands",
                 "shrinker.gpu.commands", "shrinker.regen.commands", "shrinker.report.commands",
                 "shrinker.symbols.commands"):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if not exc.name or not name.startswith(exc.name):  # a stage not built yet
                raise
            continue
        module.register(app)


_register_stage_commands()


def main() -> None:
    try:
        app(standalone_mode=False)
    except ShrinkError as exc:
        console.print(f"[red]error:[/] {exc}", soft_wrap=True, highlight=False)  # one line, never wrapped
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        console.print("[red]aborted[/]")
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as exc:  # click usage errors and the like (exit 2, one line)
        if isinstance(exc, _click_exceptions()):
            exc.show()
            sys.exit(exc.exit_code)
        raise


def _click_exceptions() -> tuple[type, ...]:
    """ClickException as click has it, and as typer >= 0.29 vendors it (typer._click): the app raises
    the vendored one, which is not click's."""
    found = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(importlib.import_module(name).ClickException)
        except ImportError:
            continue
    return tuple(found)


if __name__ == "__main__":
    main()
