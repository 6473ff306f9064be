"""`shrink verify` (and `shrink verify env`): the checks, a rich table of counts, exit 0/1/2."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from shrinker import paths
from shrinker.console import console, out
from shrinker.errors import CheckFailed, ShrinkError

SHOWN_FINDINGS = 15


def _upstream(upstream_root: Optional[Path]):
    """(upstream root, version) from --upstream or the pinned upstream."""
    if upstream_root is not None:
        if not upstream_root.is_dir():
            raise ShrinkError(f"--upstream {upstream_root}: no such folder")
        from shrinker.verify.run import _version
        from shrinker.checks.tree import SourceTree

        return upstream_root, _version(SourceTree.load(upstream_root)) or "unknown"
    from shrinker.upstream import load

    up = load()
    return up.root, up.version


def _pinned_root_if_fetched() -> Optional[Path]:
    """The pinned upstream's tree when it is in the cache (its pins choose the environment), else None."""
    from shrinker.upstream import load

    try:
        root = load().root
    except ShrinkError:
        return None
    return root if (root / "python" / "pyproject.toml").is_file() else None


def _gpu_runner():
    try:
        module = importlib.import_module("shrinker.gpu.verify")
    except ModuleNotFoundError as exc:
        if exc.name and "shrinker.gpu.verify".startswith(exc.name):
            raise ShrinkError("--gpu: shrinker.gpu.verify is not available in this checkout (the GPU stage is not built)") from None
        raise
    runner = getattr(module, "run_gpu_verify", None)
    if runner is None:
        raise ShrinkError("--gpu: shrinker.gpu.verify has no run_gpu_verify(tree, upstream_root)")
    return runner


def _require_gpu() -> None:
    """`--gpu` on a machine without a usable NVIDIA GPU: one line, exit 2, before any other work."""
    module = importlib.import_module("shrinker.gpu.verify")
    probe = getattr(module, "gpu_missing_reason", None)
    reason = probe() if probe is not None else None
    if reason:
        raise ShrinkError(reason)


def _env_if_needed(checks, upstream_root: Path):
    """The verify environment of the release when a check needs it: made on first use (a few
    minutes, once)."""
    from shrinker.verify.run import DYNAMIC, resolve_checks

    if not any(c in DYNAMIC for c in resolve_checks(checks)):
        return None
    return _ensure_env(upstream_root)


def _ensure_env(upstream_root: Optional[Path], force: bool = False):
    """The verify environment under the release's own pins, made when missing (progress on stderr)."""
    from shrinker.verify.env import ensure_env, env_dir, requirements_for

    with console.status(f"verify environment {env_dir(requirements_for(upstream_root))} (made once) ..."):
        env = ensure_env(upstream_root, force=force, log=lambda msg: console.log(msg))
    for req, why in env.failed.items():
        console.print(f"[yellow]could not install[/] {req}: {why}")
    return env


def render(result) -> Table:
    table = Table(title=f"shrink verify  {result.tree}", title_justify="left")
    for col in ("check", "result", "counts", "regressions", "seconds"):
        table.add_column(col, justify="right" if col in ("regressions", "seconds") else "left")
    for c in result.checks:
        shown = {k: v for k, v in c.counts.items() if k != "regressions"}
        table.add_row(c.name, "[green]pass[/]" if c.passed else "[red]FAIL[/]",
                      ", ".join(f"{k} {v}" for k, v in shown.items()), str(len(c.findings)), f"{c.seconds:.1f}")
    return table


def register(app: typer.Typer) -> None:
    verify_app = typer.Typer(invoke_without_command=True, no_args_is_help=False,
                             help="Check the pruned tree against upstream: static, imports, CLI, behaviour.")
    app.add_typer(verify_app, name="verify")

    @verify_app.callback()
    def verify(
        ctx: typer.Context,
        tree: Optional[Path] = typer.Option(None, "--tree", help="Tree to verify (default: build/<profile>-v<version>)."),
        check: Optional[list[str]] = typer.Option(None, "--check", "-c",
                                                  help="Check or group to run (repeatable): static, quick, dynamic, all, or a check name."),
        gpu: bool = typer.Option(False, "--gpu", help="Also run the GPU verification (shrinker.gpu)."),
        profile: str = typer.Option("deepseek", "--profile", "-p", help="Rules profile in rules/<profile>.toml."),
        upstream: Optional[Path] = typer.Option(None, "--upstream", help="Upstream tree (default: the pinned upstream)."),
        jobs: int = typer.Option(2, "--jobs", "-j", min=1, help="Parallel workers."),
        no_reuse: bool = typer.Option(False, "--no-reuse", help="Re-import every module instead of reusing an earlier run's results where what the import read is unchanged."),
        no_bases: bool = typer.Option(False, "--no-bases", help="Import every module from scratch instead of forking from shared bases (slower; same outcomes)."),
        only: Optional[list[str]] = typer.Option(None, "--only", help="Limit the import check to modules under this prefix (repeatable)."),
        report_dir: Optional[Path] = typer.Option(None, "--report-dir", help="Where verify.json/md go (default: reports/<profile>/v<version>)."),
        no_report: bool = typer.Option(False, "--no-report", help="Write no report files."),
    ) -> None:
        if ctx.invoked_subcommand is not None:
            return
        runner = _gpu_runner() if gpu else None  # fail fast, before minutes of CPU checks
        if runner is not None:
            _require_gpu()
        from shrinker.verify.run import verify_tree

        upstream_root, version = _upstream(upstream)
        tree = tree or paths.work_tree_dir(profile, version)
        if not tree.is_dir():
            raise ShrinkError(f"no tree at {tree}: run `shrink apply` first, or pass --tree")
        reports = None if no_report else (report_dir or paths.reports_dir(profile, version))
        env = _env_if_needed(check, upstream_root)
        result = verify_tree(tree, upstream_root, checks=check, jobs=jobs, report_dir=reports, profile=profile,
                             reuse=not no_reuse, only=only, env=env, bases=not no_bases)
        out.print(render(result))
        for c in result.checks:
            for finding in c.findings[:SHOWN_FINDINGS]:
                out.print(f"[red]{c.name}[/] {finding}", markup=True, highlight=False, soft_wrap=True)
            if len(c.findings) > SHOWN_FINDINGS:
                out.print(f"[red]{c.name}[/] ... {len(c.findings) - SHOWN_FINDINGS} more in the report")
        if reports:
            console.print(f"report: {reports / 'verify.md'}")
        code = 0 if result.passed else 1
        if runner is not None:
            gpu_code = int(runner(tree, upstream_root))
            code = code or gpu_code
        if code == 1 and not result.passed:
            raise CheckFailed(f"verify failed: {result.regressions} regressions")
        if code:
            err = ShrinkError(f"gpu verify failed (exit {code})")
            err.exit_code = code
            raise err
        out.print(f"[green]verify passed[/]: {len(result.checks)} checks, 0 regressions, {result.seconds:.1f} s")

    @verify_app.command("env")
    def env_cmd(force: bool = typer.Option(False, "--force", help="Rebuild even when up to date."),
                upstream: Optional[Path] = typer.Option(
                    None, "--upstream",
                    help="Upstream tree whose pins the environment takes (default: the pinned upstream, when fetched).")
                ) -> None:
        """Create the verify environment (CPU torch + what sglang needs to import, under the release's own
        pins: .venv-verify, or .venv-verify-<hash> for other pins); a second run does nothing."""
        env = _ensure_env(_pinned_root_if_fetched() if upstream is None else _upstream(upstream)[0], force=force)
        out.print(f"[green]verify env[/] {env.root}  torch {env.torch_version}  {len(env.installed)} requirements")
