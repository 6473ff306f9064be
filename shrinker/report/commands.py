"""CLI of the report stage: `shrink report layers`, `shrink report cuts`, `shrink report index` and
`shrink requirements [--write]`.

Both read a tree (default: the work tree build/<profile>-v<version>/, else the pinned upstream) and
write into reports/<profile>/v<version>/; only `requirements --write` changes the tree, and only its
python/pyproject.toml.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from shrinker import paths
from shrinker.console import console, out
from shrinker.errors import ShrinkError

report_app = typer.Typer(no_args_is_help=True,
                         help="Reports over the work tree (lines by folder and layer, cut candidates).")




def _tree_label(path: Path) -> str:
    """`paths.project_label`, with the commit when the tree is a git work tree (read only: rev-parse takes no lock)."""
    import subprocess

    label = paths.project_label(path)
    if (Path(path) / ".git").exists():
        proc = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        if proc.returncode == 0 and proc.stdout.strip():
            label += f" @ {proc.stdout.strip()}"
    return label


def _trees(profile: str, tree: Optional[Path], upstream: Optional[Path],
           out_dir: Optional[Path]) -> tuple[Path, Path, Path]:
    """(tree, upstream, report folder); the pin is read only for what the options leave out."""
    if tree is None or upstream is None or out_dir is None:
        from shrinker.upstream import load

        up = load()
        upstream = upstream or Path(up.root)
        out_dir = out_dir or paths.reports_dir(profile, up.version)
        if tree is None:
            work = paths.work_tree_dir(profile, up.version)
            tree = work if work.is_dir() else Path(upstream)
    for p, what in ((tree, "--tree"), (upstream, "--upstream")):
        if not Path(p).is_dir():
            raise ShrinkError(f"{what} {p}: no such folder")
    return Path(tree), Path(upstream), Path(out_dir)


def layers_command(tree: Optional[Path] = None, upstream: Optional[Path] = None, profile: str = "deepseek",
                   out_dir: Optional[Path] = None) -> None:
    from shrinker.report.layers import LayerSpec, layers_report, total
    from shrinker.rules.load import load_rules

    tree, up_root, target = _trees(profile, tree, upstream, out_dir)
    rule = load_rules(profile).report_layers  # what counts as a layer ([report_layers]; none: folders only)
    spec = LayerSpec(rule.root, tuple(rule.split)) if rule is not None else None
    with console.status(f"counting lines of {tree} and {up_root} ..."):
        folders, layers, written = layers_report(tree, up_root, target, spec, tree_label=_tree_label(tree),
                                                 upstream_label=paths.project_label(up_root))
    t = total(folders)
    table = Table(title=f"kept {t.kept:,} of {t.upstream:,} lines ({100 * t.fraction:.1f} %)")
    for col in ("layer", "upstream", "kept", "kept %"):
        table.add_column(col, no_wrap=True, justify="left" if col == "layer" else "right")
    for r in layers[:20]:
        table.add_row(r.name, f"{r.upstream:,}", f"{r.kept:,}", f"{100 * r.fraction:.0f}")
    out.print(table)
    for p in written:
        out.print(f"[green]wrote[/] {paths.project_label(p)}")


def cuts_command(profile: str = "deepseek", tree: Optional[Path] = None, out_dir: Optional[Path] = None,
                 top: int = 60, jobs: int = 2) -> None:
    from shrinker.plan.run import analyse
    from shrinker.report.cut_features import features_path, load_features
    from shrinker.report.cuts import planned_graph
    from shrinker.report.cuts_report import build_report, write_cuts
    from shrinker.report.layers import python_lines
    from shrinker.rules.load import load_rules
    from shrinker.upstream import load

    up = load()
    rules = load_rules(profile)
    features = load_features(profile)
    work = Path(tree) if tree else paths.work_tree_dir(profile, up.version)
    with console.status("planning (import graph + reachability) ..."):
        graph, reach, _, _ = analyse(up, rules, jobs=jobs)
        pg = planned_graph(graph, reach, rules)
    # Work-tree lines say what a cut adds to apply's figure; without a work tree only upstream lines.
    applied = python_lines(work) if work.is_dir() else None
    report = build_report(pg, features, applied, sum(python_lines(Path(up.root)).values()), top=top)
    report.labels = {"upstream": paths.project_label(Path(up.root)), "rules": paths.project_label(Path(rules.source or "")),
                     "features": paths.project_label(features_path(profile)),
                     "tree": _tree_label(work) if applied is not None else "none"}
    written = write_cuts(report, out_dir or paths.reports_dir(profile, up.version))
    table = Table(title=f"largest module cuts ({report.graph_nodes:,} kept modules)")
    for col in ("module", "freed lines", "modules", "importers"):
        table.add_column(col, no_wrap=True, justify="left" if col == "module" else "right")
    for t in report.top[:15]:
        table.add_row(t.cut.module, f"{t.cut.freed_lines:,}", str(t.cut.freed_modules),
                      str(len({s.importer for s in t.sites})))
    out.print(table)
    for r in sorted(report.features, key=lambda r: -r.cut.freed_lines):
        out.print(f"feature {r.feature.name}: {r.cut.freed_lines:,} lines, {len(r.cut.sites)} sites, "
                  f"risk {r.feature.risk}", soft_wrap=True)
    for p in written:
        out.print(f"[green]wrote[/] {paths.project_label(p)}")


def server_args_command(profile: str = "deepseek", tree: Optional[Path] = None, upstream: Optional[Path] = None,
                        out_dir: Optional[Path] = None) -> None:
    from shrinker.report.server_args import server_args_reads, write_report
    from shrinker.verify.run import load_surface

    tree, up_root, target_dir = _trees(profile, tree, upstream, out_dir)
    target = load_surface(profile)["server_args"]["target"]
    with console.status(f"reading {target}'s fields in {tree} and {up_root} ..."):
        reads = server_args_reads(tree, up_root, target)
    written = write_report(reads, target_dir, target, {"tree": _tree_label(tree),
                                                        "upstream": paths.project_label(up_root)})
    removed = [r.name for r in reads if not r.kept_declared]
    left = [r.name for r in reads if r.only_removed_code and r.kept_declared]
    out.print(f"{target}: {len(removed)} of {len(reads)} fields removed; {len(left)} still declared that only "
              f"removed code read elsewhere: {', '.join(left)}", soft_wrap=True)
    for p in written:
        out.print(f"[green]wrote[/] {paths.project_label(p)}")


def index_command(reports_root: Optional[Path] = None, check: bool = False) -> None:
    """Write reports/index.html from the JSON reports; with `check`, only say whether it is current."""
    from shrinker.errors import CheckFailed
    from shrinker.report.index_page import INDEX_NAME, render_index, write_index

    root = Path(reports_root) if reports_root else paths.reports_dir()
    if check:  # CI: a page that no longer matches its JSON fails instead of being rewritten
        path = root / INDEX_NAME
        if not path.is_file() or path.read_text(encoding="utf-8") != render_index(root):
            raise CheckFailed(f"{paths.project_label(path)} is stale: run `shrink report index`")
        out.print(f"[green]current[/] {paths.project_label(path)}")
        return
    path, changed = write_index(root)
    out.print(f"[green]{'wrote' if changed else 'unchanged'}[/] {paths.project_label(path)}")


def register(app: typer.Typer) -> None:
    app.add_typer(report_app, name="report")

    @report_app.command("layers")
    def layers(
        tree: Optional[Path] = typer.Option(None, "--tree", help="The pruned tree (default: the work tree)."),
        upstream: Optional[Path] = typer.Option(None, "--upstream", help="Upstream tree (default: the pin)."),
        profile: str = typer.Option("deepseek", "--profile", "-p"),
        out_dir: Optional[Path] = typer.Option(None, "--out", help="Folder for layers.{md,svg,json} "
                                                                    "(default: reports/<profile>/v<version>/)."),
    ) -> None:
        """Kept vs upstream non-blank Python lines by top-level folder and by layer: layers.{md,svg,json}."""
        layers_command(tree, upstream, profile, out_dir)

    @report_app.command("server-args")
    def server_args(
        tree: Optional[Path] = typer.Option(None, "--tree", help="The pruned tree (default: the work tree)."),
        upstream: Optional[Path] = typer.Option(None, "--upstream", help="Upstream tree (default: the pin)."),
        profile: str = typer.Option("deepseek", "--profile", "-p"),
        out_dir: Optional[Path] = typer.Option(None, "--out", help="Report folder (default: reports/<profile>/v<version>)."),
    ) -> None:
        """ServerArgs fields upstream reads outside server_args.py and the kept tree no longer does."""
        server_args_command(profile, tree, upstream, out_dir)

    @report_app.command("index")
    def index(
        reports_root: Optional[Path] = typer.Option(None, "--reports", help="The reports folder (default: reports/)."),
        check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 when index.html is stale."),
    ) -> None:
        """reports/index.html: one static page over every release's JSON reports, linking the markdown ones."""
        index_command(reports_root, check)

    @report_app.command("cuts")
    def cuts(
        profile: str = typer.Option("deepseek", "--profile", "-p"),
        tree: Optional[Path] = typer.Option(None, "--tree", help="The applied tree whose lines each cut would "
                                                                 "remove (default: the work tree, if any)."),
        top: int = typer.Option(60, "--top", help="How many module cuts to list."),
        jobs: int = typer.Option(2, "--jobs", "-j", help="Parser processes (a cold plan parses upstream)."),
        out_dir: Optional[Path] = typer.Option(None, "--out", help="Folder for cuts.{md,json} "
                                                                    "(default: reports/<profile>/v<version>/)."),
    ) -> None:
        """Lines each kept module (its dominator subtree) and each feature of rules/<profile>-cuts.toml would
        free if cut, with the import sites to rewrite: cuts.{md,json}."""
        cuts_command(profile, tree, out_dir, top, jobs)

    @app.command("requirements")
    def requirements(
        tree: Optional[Path] = typer.Option(None, "--tree", help="The pruned tree (default: the work tree)."),
        write: bool = typer.Option(False, "--write", help="Rewrite the tree's python/pyproject.toml "
                                                          "(only its [project].dependencies lines)."),
        upstream: Optional[Path] = typer.Option(None, "--upstream", help="Upstream tree (default: the pin)."),
        profile: str = typer.Option("deepseek", "--profile", "-p"),
        jobs: int = typer.Option(2, "--jobs", "-j"),
        out_dir: Optional[Path] = typer.Option(None, "--out", help="Folder for requirements.{md,json} "
                                                                    "(default: reports/<profile>/v<version>/)."),
    ) -> None:
        """Prune [project].dependencies to what the kept code imports; report what goes and the MB saved."""
        from shrinker.apply.requirements import run_requirements, write_reports
        from shrinker.rules.load import load_rules
        from shrinker.upstream.distributions import load_index

        tree_root, up_root, target = _trees(profile, tree, upstream, out_dir)
        rules = load_rules(profile)
        with console.status("reading upstream's declared distributions from PyPI (once per release) ..."):
            index = load_index(up_root, rules.requirements.target)
        with console.status(f"reading the imports of {tree_root} ..."):
            result, _ = run_requirements(tree_root, up_root, index=index, keep_rules=rules.requirements.keep,
                                         write=write, jobs=jobs, tree_label=_tree_label(tree_root))
        md, js = write_reports(result, target)
        dropped = sum(d.size or 0 for d in result.dropped)
        out.print(f"upstream declares {result.upstream_declared}; kept {len(result.kept)}, dropped "
                  f"{len(result.dropped)}: {', '.join(d.name for d in result.dropped)}", soft_wrap=True)
        out.print(f"install size saved (unpacked wheels): {dropped / 1e6:.1f} MB in the dropped distributions, "
                  f"{sum(result.freed.values()) / 1e6:.1f} MB with their freed dependencies; not measured: "
                  f"{', '.join(result.unmeasured) or 'none'}", soft_wrap=True)
        look = [i.name for i in result.indirect if i.needs_a_look]
        if look:
            out.print(f"[yellow]needs a look[/] (imported, no declared distribution pulls it in on the target): "
                      f"{', '.join(look)}", soft_wrap=True)
        state = ("[green]rewrote[/]" if result.written else "[yellow]would rewrite[/] (use --write)") \
            if result.changed else "[green]already pruned:[/]"
        out.print(f"{state} {paths.project_label(tree_root / 'python' / 'pyproject.toml')}")
        out.print(f"[green]wrote[/] {paths.project_label(md)}, {paths.project_label(js)}")
