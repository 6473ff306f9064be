"""CLI of the symbol stage: `shrink symbols dead|measure`, and `shrink why PATH|MODULE:SYMBOL` (a path or
module is the plan's question, plan/why.py; a symbol the symbol graph's, symbols/why.py): this floor sees both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from shrinker import paths
from shrinker.console import console, out
from shrinker.errors import ShrinkError

symbols_app = typer.Typer(no_args_is_help=True, help="Symbol-level dead code (functions, classes, methods) in a tree.")


def default_tree(profile: str, tree: Optional[Path]) -> Path:
    """--tree, else the work tree build/<profile>-v<version>/ (read only), else the pinned upstream."""
    if tree is not None:
        if not tree.is_dir():
            raise ShrinkError(f"--tree {tree}: no such folder")
        return tree
    from shrinker.upstream import load

    up = load()
    work = paths.work_tree_dir(profile, up.version)
    return work if work.is_dir() else Path(up.root)


def planned_removals(profile: str) -> list[str]:
    """Tree paths the plan's remove.txt lists (what the remaining batches delete)."""
    from shrinker.upstream import load

    manifest = paths.manifests_dir(profile, load().version) / "remove.txt"
    if not manifest.exists():
        raise ShrinkError(f"no {manifest}: run `shrink plan` first")
    return [line.split("\t", 1)[0] for line in manifest.read_text().splitlines()
            if line and not line.startswith("#")]


def why_symbol(target: str, profile: str = "deepseek", tree: Optional[Path] = None) -> None:
    from shrinker.symbols.graph import build_symbol_graph
    from shrinker.symbols.rules import load_symbol_rules
    from shrinker.symbols.why import explain_symbol, render

    root = default_tree(profile, tree)
    rules = load_symbol_rules(profile)
    with console.status(f"symbol graph of {root} ..."):
        graph = build_symbol_graph(root, rules)
    try:
        answer = explain_symbol(graph, target)
    except ShrinkError:
        if _explain_removed(root, target, rules):
            return
        raise
    lines = render(answer)
    verdict = "[green]kept[/]" if answer.kept else "[red]removed[/]"
    out.print(f"{answer.symbol} [dim]({answer.path}:{answer.line}, {answer.lines} lines)[/]: {verdict} — "
              f"{answer.reason}", highlight=False, soft_wrap=True)
    for line in lines[1:]:
        out.print(line, highlight=False, soft_wrap=True)
    out.print(f"[dim]tree {root}[/]")


def _explain_removed(root: Path, target: str, rules) -> bool:
    """Print which work-tree commit removed TARGET (a symbol upstream defines); False when none did."""
    from shrinker.graph.discover import module_paths, path_candidates
    from shrinker.symbols.removed_in import removed_in

    module, _, qualname = target.strip().partition(":")
    if not qualname:
        return False
    gone = removed_in(root, path_candidates(module) if module.endswith(".py") else module_paths(module), qualname)
    if gone is None:
        return False
    how = "with its whole file" if gone.file_deleted else "from its file"
    out.print(f"{module}:{qualname} [dim]({gone.path}:{gone.line} before)[/]: [red]removed[/] {how} by work-tree "
              f"commit {gone.commit[:10]} \"{gone.subject}\"", highlight=False, soft_wrap=True)
    if gone.file_deleted:
        out.print(f"  `shrink why {gone.path}` gives the plan's reason for the file", highlight=False, soft_wrap=True)
    cls = qualname.rpartition(".")[0]
    table = rules.attribute_table(f"{module}:{cls}") if cls else None
    if table is not None and not gone.file_deleted:
        out.print(f"  an entry of {module}:{cls}, an attribute table: it goes when no kept code names it "
                  f"({table.reason})", highlight=False, soft_wrap=True)
    out.print(f"[dim]tree {root}[/]")
    return True


def register(app: typer.Typer) -> None:
    @app.command("why")
    def why(
        target: str = typer.Argument(..., help="A path (sglang/srt/x.py or python/sglang/...) or a module; "
                                               "MODULE:SYMBOL for a function, class or method."),
        profile: str = typer.Option("deepseek", "--profile", "-p"),
        spec: Optional[str] = typer.Option(None, "--upstream", help="Upstream spec (default: the pin)."),
        tree: Optional[Path] = typer.Option(None, "--tree", help="MODULE:SYMBOL only: the tree to analyse "
                                                                 "(default: the work tree, read only)."),
    ) -> None:
        """Why a file is kept (shortest import chain from a root) or removed (which rule);
        for MODULE:SYMBOL, why a symbol is kept (the chain of references, or the rule) or removed."""
        if ":" in target:  # a symbol: the symbol graph answers (shrinker/symbols/why.py)
            why_symbol(target, profile, tree)
            return
        from shrinker.plan.run import analyse
        from shrinker.plan.why import explain
        from shrinker.rules.load import load_rules
        from shrinker.upstream import load

        up = load(spec)
        graph, reach, decisions, _ = analyse(up, load_rules(profile))
        ans = explain(graph, reach, decisions, target)
        verdict = "[green]kept[/]" if ans.kept else "[red]removed[/]"
        out.print(f"{ans.path}: {verdict} — {ans.reason}")
        if ans.chain:
            out.print("shortest import chain from a root:")
            for i, (module, path, line) in enumerate(ans.chain):
                at = f"  (line {line} imports the next)" if line else ""
                out.print(f"  {'  ' * min(i, 12)}{module}  [dim]{path}[/]{at}")
        elif not ans.kept:
            kept_importers = [m for m in ans.importers if m in reach.kept]
            removed_importers = [m for m in ans.importers if m not in reach.kept]
            out.print(f"kept importers: {', '.join(kept_importers[:8]) or 'none'}")
            out.print(f"removed importers: {', '.join(removed_importers[:8]) or 'none'}"
                      + (f" (+{len(removed_importers) - 8})" if len(removed_importers) > 8 else ""))

    app.add_typer(symbols_app, name="symbols")

    @symbols_app.command("dead")
    def dead(
        profile: str = typer.Option("deepseek", "--profile", "-p"),
        tree: Optional[Path] = typer.Option(None, "--tree", help="Tree to analyse (default: the work tree)."),
        top: int = typer.Option(25, "--top", help="Modules shown."),
        json_out: Optional[Path] = typer.Option(None, "--json", help="Write {module: {names, members, imports, lines}}."),
        jobs: int = typer.Option(2, "--jobs", "-j"),
    ) -> None:
        """What the symbol graph finds unreferenced in TREE (nothing is changed)."""
        from shrinker.symbols.graph import build_symbol_graph
        from shrinker.symbols.rules import load_symbol_rules

        root = default_tree(profile, tree)
        graph = build_symbol_graph(root, load_symbol_rules(profile), jobs=jobs)
        found = graph.dead()
        table = Table(title=f"dead symbols in {root}")
        for col in ("module", "defs/classes", "members", "import aliases", "lines"):
            table.add_column(col, justify="left" if col == "module" else "right")
        for module, d in sorted(found.items(), key=lambda kv: -kv[1].lines)[:top]:
            table.add_row(module, str(len(d.names)), str(len(d.members)), str(len(d.imports)), f"{d.lines:,}")
        out.print(table)
        total = sum(m.lines for m in graph.modules.values())
        gone = sum(d.lines for d in found.values())
        s = graph.stats
        out.print(f"{len(found)} modules, {gone:,} of {total:,} non-blank lines unreferenced; "
                  f"{s.files} files ({s.parsed} parsed, {s.cached} cached) in {s.parse_seconds:.1f}s, "
                  f"live set in {s.live_seconds:.1f}s")
        if json_out is not None:
            json_out.write_text(json.dumps({m: {"names": sorted(d.names), "members": sorted(d.members),
                                                "imports": sorted(map(list, d.imports)), "lines": d.lines}
                                            for m, d in found.items()}, indent=1) + "\n")

    @symbols_app.command("measure")
    def measure_cmd(
        profile: str = typer.Option("deepseek", "--profile", "-p"),
        tree: Optional[Path] = typer.Option(None, "--tree", help="Tree to copy and measure (default: the work tree)."),
        after_plan: bool = typer.Option(False, "--after-plan", help="Delete the plan's remove.txt files from the copy first."),
        unused_names: bool = typer.Option(True, "--unused-names/--no-unused-names",
                                          help="Run remove_unused_names after remove_dead_symbols, as a batch would."),
        keep: Optional[Path] = typer.Option(None, "--keep", help="Leave the pruned copy here."),
        json_out: Optional[Path] = typer.Option(None, "--json", help="Write the passes as JSON."),
        jobs: int = typer.Option(2, "--jobs", "-j"),
    ) -> None:
        """Remove dead symbols to a fixpoint on a COPY of TREE; report lines and seconds per pass."""
        from shrinker.symbols.fixpoint import measure

        root = default_tree(profile, tree)
        delete = planned_removals(profile) if after_plan else []
        codemods = ("remove_dead_symbols", "remove_unused_names") if unused_names else ("remove_dead_symbols",)
        result = measure(root, profile=profile, jobs=jobs, keep_copy=keep, delete=delete, codemods=codemods)
        table = Table(title=f"dead symbols to a fixpoint · copy of {root}")
        for col in ("pass", "symbols", "files", "lines before", "lines after", "analysis s", "transform s",
                    "failures", "undefined"):
            table.add_column(col, justify="right")
        for p in result.passes:
            table.add_row(str(p.number), str(p.dead_symbols), str(p.files_changed), f"{p.lines_before:,}",
                          f"{p.lines_after:,}", f"{p.analysis_seconds:.1f}", f"{p.transform_seconds:.1f}",
                          str(len(p.failures)), str(len(p.undefined)))
        out.print(table)
        pct = 100 * result.removed / result.lines_before if result.lines_before else 0
        out.print(f"removed {result.removed:,} of {result.lines_before:,} non-blank lines ({pct:.1f} %) in "
                  f"{result.seconds:.1f}s; {'converged' if result.converged else 'NOT converged'}")
        if json_out is not None:
            json_out.write_text(json.dumps(result.to_dict(), indent=1) + "\n")
