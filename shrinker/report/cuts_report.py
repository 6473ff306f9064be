"""Assemble and write reports/<profile>/v<version>/cuts.{md,json} from the measures of cuts.py."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from shrinker.report.cut_features import Feature
from shrinker.report.cuts import (VROOT, ModuleCut, PlannedGraph, SetCut, Site, match_modules, module_cuts,
                                  package_cuts, set_cut, sites_into)

TARGET_REMOVED = 0.80  # issue #7: at least 80 % of upstream's non-blank Python lines removed (#3 asked 60 %)


@dataclass
class TopCut:
    cut: ModuleCut
    sites: list[Site]  # importer edges from outside the dominator subtree: what the cut must rewrite
    group: str  # the nearest module above it in the dominator tree that is also a top entry ("" = a head)
    depth: int = 0


@dataclass
class FeatureResult:
    feature: Feature
    cut: SetCut


@dataclass
class Totals:
    upstream: int  # every .py of upstream, as layers.md counts them
    kept_plan: int  # kept modules' upstream lines (the plan's figure)
    applied: int | None  # the applied work tree, if there is one

    def removed_after(self, freed_applied: int | None) -> float | None:
        """Fraction of upstream removed once `freed_applied` more lines of the work tree go."""
        if self.applied is None or freed_applied is None or not self.upstream:
            return None
        return (self.upstream - self.applied + freed_applied) / self.upstream

    @property
    def needed(self) -> int | None:
        """Work-tree lines still to remove for TARGET_REMOVED."""
        if self.applied is None:
            return None
        return max(0, self.applied - int(self.upstream * (1 - TARGET_REMOVED)))


RISK_ORDER = {"low": 0, "medium": 1, "high": 2}


@dataclass
class Step:
    """One rung of the ladder: the recommended features up to this one, removed together."""

    feature: str
    risk: str
    cut: SetCut


@dataclass
class CutsReport:
    graph_nodes: int
    graph_edges: int
    roots: list[str]
    totals: Totals
    top: list[TopCut]
    all_cuts: list[ModuleCut]
    features: list[FeatureResult]
    union: SetCut | None
    packages: list[SetCut]
    ladder: list[Step] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    every: SetCut | None = None  # every candidate feature, recommended or not: the ceiling of feature cuts


def one_line(text: str, limit: int = 0) -> str:
    """Guards span lines in the source; a table cell wants one short line."""
    text = re.sub(r"\s+", " ", text).replace("( ", "(").replace(" )", ")")
    return text if not limit or len(text) <= limit else text[:limit - 1] + "…"


def top_cuts(pg: PlannedGraph, cuts: list[ModuleCut], top: int) -> list[TopCut]:
    """The `top` largest non-root cuts, each with the top entry that dominates it (its group)."""
    roots = set(pg.roots)
    chosen = [c for c in cuts if c.module not in roots][:top]
    names = {c.module for c in chosen}
    idom = {c.module: c.idom for c in cuts}
    out = []
    for c in chosen:
        group, depth, up = "", 0, c.idom
        while up != VROOT and up in idom:
            if up in names:
                group = group or up
                depth += 1
            up = idom[up]
        inside = set(c.subtree)
        sites = [s for s in sites_into(pg, {c.module}) if s.importer not in inside]
        out.append(TopCut(c, sites, group, depth))
    return out


def feature_cut(pg: PlannedGraph, f: Feature, applied: dict[str, int] | None) -> SetCut:
    members = match_modules(pg, f.patterns) - match_modules(pg, f.keep)
    return set_cut(pg, f.name, members, applied)


def build_report(pg: PlannedGraph, features: list[Feature], applied: dict[str, int] | None,
                 upstream_total: int, *, top: int = 60, packages: int = 30) -> CutsReport:
    cuts = module_cuts(pg, applied)
    results = [FeatureResult(f, feature_cut(pg, f, applied)) for f in features]
    # Cheapest first: by risk, then by lines; each rung removes every feature above it too.
    chosen = sorted((r for r in results if r.feature.recommend),
                    key=lambda r: (RISK_ORDER[r.feature.risk], -r.cut.freed_lines))
    ladder, members = [], set()
    for r in chosen:
        members |= set(r.cut.members)
        ladder.append(Step(r.feature.name, r.feature.risk, set_cut(pg, f"up to {r.feature.name}", members, applied)))
    union = ladder[-1].cut if ladder else None
    totals = Totals(upstream_total, sum(pg.lines.values()), sum(applied.values()) if applied is not None else None)
    edges = pg.graph.number_of_edges() - len(pg.roots)  # without the virtual root's edges
    every = set().union(*(r.cut.members for r in results)) if results else set()
    return CutsReport(pg.graph.number_of_nodes() - 1, edges, pg.roots, totals, top_cuts(pg, cuts, top), cuts,
                      results, union, _distinct(package_cuts(pg, applied))[:packages], ladder,
                      every=set_cut(pg, "every candidate feature", every, applied) if every else None)


def _distinct(cuts: list[SetCut]) -> list[SetCut]:
    """A package whose cut frees exactly what its parent's does (a wrapper package) is listed once."""
    seen: dict[tuple[str, ...], SetCut] = {}
    for c in cuts:
        key = tuple(c.freed)
        if key not in seen or len(c.name) < len(seen[key].name):
            seen[key] = c
    kept = {id(c) for c in seen.values()}
    return [c for c in cuts if id(c) in kept]


# ------------------------------------------------------------------------------------------------
# Markdown


def _n(x: int | None) -> str:
    return "–" if x is None else f"{x:,}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def _sites_md(sites: list[Site], limit: int) -> list[str]:
    lines = []
    for s in sites[:limit]:
        top = "top-level" if s.top_level else "guarded/local"
        lines.append(f"  - `{s.importer}:{s.line}` → `{s.target}` ({s.kind}, {top}): {one_line(s.context, 160)}")
    if len(sites) > limit:
        lines.append(f"  - … and {len(sites) - limit} more (cuts.json lists every one)")
    return lines


def _importers(sites: list[Site]) -> int:
    return len({s.importer for s in sites})


def _feature_section(report: CutsReport) -> list[str]:
    t = report.totals
    rows = sorted(report.features, key=lambda r: -r.cut.freed_lines)
    md = ["## Feature cuts (rules/deepseek-cuts.toml)", "",
          "Each feature is a set of kept modules removed together; *freed* counts them plus everything the roots "
          "then no longer reach. *Sites* are the live import records from modules that stay: what the codemods "
          "would rewrite. Lines of the work tree are what the cut would add to apply's figure.", "",
          "| # | feature | freed upstream lines | freed work-tree lines | modules | importer modules / sites "
          "| top-level sites | risk | removed after (alone) | recommended |",
          "|---:|---|---:|---:|---:|---:|---:|---|---:|---|"]
    for i, r in enumerate(rows, 1):
        c = r.cut
        top = sum(1 for s in c.sites if s.top_level)
        md.append(f"| {i} | {r.feature.name} | {c.freed_lines:,} | {_n(c.applied_lines)} | {len(c.freed)} | "
                  f"{_importers(c.sites)} / {len(c.sites)} | {top} | {r.feature.risk} | "
                  f"{_pct(t.removed_after(c.applied_lines))} | {'yes' if r.feature.recommend else 'no'} |")
    if report.every:
        e = report.every
        md += ["", f"**Every candidate feature together**, recommended or not (the ceiling of whole-module feature "
                   f"cuts): {e.freed_lines:,} upstream lines, {_n(e.applied_lines)} work-tree lines, {len(e.freed)} "
                   f"modules; removed after: **{_pct(t.removed_after(e.applied_lines))}** "
                   f"(target {100 * TARGET_REMOVED:.0f} %)."]
    if report.union:
        u = report.union
        md += ["", f"**All recommended features together** (overlaps counted once): {u.freed_lines:,} upstream lines, "
                   f"{_n(u.applied_lines)} work-tree lines, {len(u.freed)} modules, {_importers(u.sites)} importer "
                   f"modules / {len(u.sites)} sites; removed after: **{_pct(t.removed_after(u.applied_lines))}** "
                   f"(target {100 * TARGET_REMOVED:.0f} %).", "",
               "Ladder, cheapest first (by risk, then lines); each row removes every feature above it as well:", "",
               "| step | adds | risk | freed work-tree lines (cumulative) | importer modules / sites | removed after |",
               "|---:|---|---|---:|---:|---:|"]
        for i, step in enumerate(report.ladder, 1):
            c = step.cut
            md.append(f"| {i} | {step.feature} | {step.risk} | {_n(c.applied_lines)} | {_importers(c.sites)} / "
                      f"{len(c.sites)} | {_pct(t.removed_after(c.applied_lines))} |")
    md += ["", "### Recommendations", ""]
    for i, r in enumerate(rows, 1):
        f, c = r.feature, r.cut
        md += [f"#### {i}. {f.name} — {c.freed_lines:,} lines, risk {f.risk}"
               f"{'' if f.recommend else ' (not recommended)'}", "",
               f"- Patterns: {', '.join(f'`{p}`' for p in f.patterns)}"
               + (f"; spared: {', '.join(f'`{p}`' for p in f.keep)}" if f.keep else ""),
               f"- Why a DeepSeek-on-NVIDIA user can do without it: {one_line(f.story)}",
               f"- Rule: {one_line(f.rule)}",
               f"- Codemods: {one_line(f.codemods)}"]
        if c.roots_hit:
            md.append(f"- **Blocked**: the patterns name roots {', '.join(c.roots_hit)}")
        md.append(f"- Import sites from modules that stay ({_importers(c.sites)} modules, {len(c.sites)} sites):")
        md += _sites_md(c.sites, 14)
        md.append("")
    return md


def _top_section(report: CutsReport) -> list[str]:
    md = ["## Top module cuts (dominator tree)", "",
          "Rows are grouped: a module indented under another is dominated by it (its lines are inside the "
          "row above). *Importers to cut* are modules outside the subtree with a live import of the row's module "
          "(every edge into a dominator subtree enters at its head).", "",
          "| # | module | freed upstream lines | freed work-tree lines | modules | own lines | importers to cut "
          "(modules / sites, top-level) | immediate dominator |",
          "|---:|---|---:|---:|---:|---:|---:|---|"]
    order = _grouped(report.top)
    rank = {t.cut.module: i for i, t in enumerate(report.top, 1)}
    for t in order:
        c = t.cut
        indent = "&emsp;" * t.depth + ("└ " if t.depth else "")
        top = sum(1 for s in t.sites if s.top_level)
        md.append(f"| {rank[c.module]} | {indent}`{c.module}` | {c.freed_lines:,} | {_n(c.applied_lines)} | "
                  f"{c.freed_modules} | {c.own_lines:,} | {_importers(t.sites)} / {len(t.sites)}, {top} | "
                  f"{'(roots)' if c.idom == VROOT else f'`{c.idom}`'} |")
    md += ["", "### Import sites of the top 20", ""]
    for t in report.top[:20]:
        md.append(f"- **`{t.cut.module}`** ({t.cut.freed_lines:,} lines):")
        md += _sites_md(t.sites, 8)
    return md


def _grouped(top: list[TopCut]) -> list[TopCut]:
    """Heads by freed lines, each followed by the entries it dominates (depth first)."""
    children: dict[str, list[TopCut]] = {}
    for t in top:
        children.setdefault(t.group, []).append(t)
    out: list[TopCut] = []

    def walk(name: str) -> None:
        for t in children.get(name, []):  # already sorted by freed lines
            out.append(t)
            walk(t.cut.module)

    walk("")
    return out


def _package_section(report: CutsReport) -> list[str]:
    md = ["## Whole kept packages", "",
          "Each kept package (with at least 1,500 lines, holding no root) removed with its subpackages; a "
          "package that is core plumbing shows as many sites.", "",
          "| package | freed upstream lines | freed work-tree lines | modules | importer modules / sites |",
          "|---|---:|---:|---:|---:|"]
    for c in report.packages:
        md.append(f"| `{c.name}` | {c.freed_lines:,} | {_n(c.applied_lines)} | {len(c.freed)} | "
                  f"{_importers(c.sites)} / {len(c.sites)} |")
    return md


def render_markdown(report: CutsReport) -> str:
    t, lab = report.totals, report.labels
    needed = t.needed
    md = ["# Cut candidates: lines freed by removing one module or one feature", "",
          f"Planned import graph of `{lab.get('upstream', '?')}` under `{lab.get('rules', '?')}`: "
          f"{report.graph_nodes:,} kept modules, {report.graph_edges:,} live import edges (the records the "
          f"planner keeps: not TYPE_CHECKING, not folded away on CUDA, not in a removed registry factory; registry "
          f"scan edges included), {len(report.roots)} roots and pinned modules joined under one virtual root.", "",
          f"Lines are non-blank Python lines (`count_lines`). Upstream: {t.upstream:,}; kept by the plan: "
          f"{t.kept_plan:,}; work tree `{lab.get('tree', '–')}`: {_n(t.applied)} "
          f"(removed {_pct(t.removed_after(0))}). For {100 * TARGET_REMOVED:.0f} % removed the work tree must lose "
          f"another **{_n(needed)}** lines.", "",
          "What this measures, and what it does not:",
          "- A module's *freed lines* are its dominator-tree subtree: the modules no root reaches once it is "
          "gone (networkx `immediate_dominators`). A module two independent paths reach frees only itself.",
          "- Whole modules only. A module kept for one helper counts nothing here, and the lines a cut leaves "
          "behind in its importers (the `if server_args.enable_x:` branches, fields, CLI options) are not "
          "counted; that is symbol-level removal (`shrink symbols measure`), a separate pass.",
          "- *Work-tree lines* count the same modules in the applied tree (after the codemods), so they add "
          "directly to apply's figure; upstream lines are the plan's unit.",
          "- Nothing here changes the plan: a cut becomes real only as a rule in rules/deepseek.toml plus "
          "codemods at the listed sites.", ""]
    md += _feature_section(report) + [""] + _top_section(report) + [""] + _package_section(report)
    return "\n".join(md) + "\n"


# ------------------------------------------------------------------------------------------------
# JSON


def _site_json(s: Site) -> dict:
    return {"importer": s.importer, "line": s.line, "target": s.target, "kind": s.kind,
            "context": one_line(s.context), "top_level": s.top_level}


def _set_json(c: SetCut) -> dict:
    return {"name": c.name, "members": c.members, "freed_modules": c.freed, "freed_lines": c.freed_lines,
            "freed_work_tree_lines": c.applied_lines, "roots_hit": c.roots_hit,
            "sites": [_site_json(s) for s in c.sites]}


def to_json(report: CutsReport) -> dict:
    t = report.totals
    return {
        **report.labels,
        "graph": {"modules": report.graph_nodes, "edges": report.graph_edges, "roots": report.roots},
        "lines": {"upstream": t.upstream, "kept_plan": t.kept_plan, "work_tree": t.applied,
                  "needed_for_target": t.needed, "target_removed": TARGET_REMOVED},
        "features": [{**_set_json(r.cut), "risk": r.feature.risk, "recommend": r.feature.recommend,
                      "patterns": r.feature.patterns, "keep": r.feature.keep,
                      "removed_after": t.removed_after(r.cut.applied_lines)} for r in report.features],
        "every_feature": ({**_set_json(report.every), "removed_after": t.removed_after(report.every.applied_lines)}
                          if report.every else None),
        "recommended_union": ({**_set_json(report.union), "removed_after": t.removed_after(report.union.applied_lines)}
                              if report.union else None),
        "ladder": [{"adds": s.feature, "risk": s.risk, "freed_lines": s.cut.freed_lines,
                    "freed_work_tree_lines": s.cut.applied_lines, "sites": len(s.cut.sites),
                    "removed_after": t.removed_after(s.cut.applied_lines)} for s in report.ladder],
        "top": [{"module": x.cut.module, "path": x.cut.path, "freed_lines": x.cut.freed_lines,
                 "freed_work_tree_lines": x.cut.applied_lines, "freed_modules": x.cut.freed_modules,
                 "own_lines": x.cut.own_lines, "idom": x.cut.idom, "group": x.group,
                 "sites": [_site_json(s) for s in x.sites]} for x in report.top],
        # Packages: counts only (their member and site lists run to megabytes; the command recomputes them).
        "packages": [{"name": c.name, "freed_lines": c.freed_lines, "freed_work_tree_lines": c.applied_lines,
                      "freed_modules": len(c.freed), "importers": _importers(c.sites), "sites": len(c.sites)}
                     for c in report.packages],
        # Every kept module, compactly: [module, freed lines, freed modules, immediate dominator]; a subtree
        # is every module whose idom chain reaches it.
        "modules": [[c.module, c.freed_lines, c.freed_modules, c.idom] for c in report.all_cuts],
    }


def write_cuts(report: CutsReport, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = out_dir / "cuts.md", out_dir / "cuts.json"
    md.write_text(render_markdown(report))
    js.write_text(json.dumps(to_json(report), indent=1) + "\n")
    return [md, js]
