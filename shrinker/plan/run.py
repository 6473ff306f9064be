"""`shrink plan`: upstream → graph → reachability → decisions → batches → manifests + report."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from shrinker import paths
from shrinker.errors import ShrinkError
from shrinker.graph.build import ImportGraph, build_graph
from shrinker.graph.records import Decision
from shrinker.plan.batches import BatchPlan, make_batches
from shrinker.plan.decide import decide
from shrinker.plan.kernels import apply_to_decisions, kernel_manifest
from shrinker.plan.manifests import summarize, write_manifests
from shrinker.plan.reach import Reach, active_rules, compute_reach
from shrinker.plan.serving import architecture_selections
from shrinker.plan.moves import follow_release
from shrinker.rules.load import load_rules
from shrinker.rules.parameters import check_parameters
from shrinker.rules.schema import Rules
from shrinker.upstream import Upstream, load


@dataclass
class PlanResult:
    upstream: Upstream
    rules: Rules
    graph: ImportGraph
    reach: Reach
    decisions: list[Decision]
    batches: list[BatchPlan]
    summary: dict
    manifest_dir: Path
    seconds: float


def analyse(upstream: Upstream, rules: Rules, *, jobs: int = 2, strict: bool = True,
            previous: ImportGraph | None = None) -> tuple[ImportGraph, Reach, list[Decision], list[BatchPlan]]:
    """The whole decision without writing anything (regen and tests use it on other trees).
    `previous`: the release before (regen): a root this one lacks follows its successor there, and
    a module or package another rule names follows its move (reach.rule_moves; reach.rules has them)."""
    graph = build_graph(upstream.root, jobs=jobs)
    moves, rule_moves = None, []
    if previous is not None:
        rules, moves, rule_moves = follow_release(rules, previous, graph)
    reach = compute_reach(graph, rules, strict=strict, moves=moves, version=upstream.version)
    reach.rule_moves, reach.rules = rule_moves, rules
    decisions, _ = decide(graph, reach, rules)
    # binaries no kept op lives in and JIT sources only removed code names go as removed files
    reach.kernels = kernel_manifest(graph, reach, rules, upstream.version)
    apply_to_decisions(decisions, reach.kernels)
    batches = make_batches(graph, reach, rules, decisions)
    return graph, reach, decisions, batches


def plan_extra(reach: Reach, root: Path | None = None, rules: Rules | None = None, *,
               problems: list[str] | None = None, version: str = "") -> dict:
    """What apply's codemods need beyond the file lists: removed registry keys and the cut imports;
    with `root` and `rules`, the call sites that bear out each fixed-parameter rule
    (shrinker/rules/parameters.py), which raises ShrinkError when one does not hold — or, given a
    `problems` list (regen's lenient plan), appends the error there and records none."""
    parameters: dict = {}
    if root is not None and rules is not None:
        try:
            parameters = check_parameters(root, active_rules(rules, version),
                                          removed_keys=reach.registries.removed_keys)
        except ShrinkError as err:
            if problems is None:
                raise
            problems.append(str(err))
    extra = {
        "removed_registry_keys": {k: sorted(v) for k, v in sorted(reach.registries.removed_keys.items())},
        "cuts": [{"importer": u, "removed": v, "line": line, "why": why}
                 for u, v, line, why in sorted(reach.cuts)],
    }
    if reach.reexports:  # imports of a removed module's re-exports, redirected to the defining module
        extra["reexports_of_removed"] = {m: dict(sorted(names.items())) for m, names in sorted(reach.reexports.items())}
    if reach.rule_warnings:
        extra["rule_warnings"] = list(reach.rule_warnings)
    if parameters:
        extra["fixed_parameters"] = {key: [f"{s.path}:{s.line} passes {s.passed}" for s in sites]
                                     for key, sites in sorted(parameters.items())}
    return extra


def make_plan(profile: str = "deepseek", spec: str | None = None, *, jobs: int = 2,
              out_dir: Path | None = None, strict: bool = True) -> PlanResult:
    start = time.perf_counter()
    upstream = load(spec)
    rules = load_rules(profile)
    graph, reach, decisions, batches = analyse(upstream, rules, jobs=jobs, strict=strict)
    broken = architecture_selections(upstream.root, [d.path for d in decisions if d.keep], reach.rules or rules,
                                     reach.registries.removed_keys)
    if broken:
        raise ShrinkError(f"a kept architecture selects a removed registry key ({len(broken)}): "
                          + "; ".join(broken[:3]))
    summary = summarize(decisions, upstream.spec, upstream.version, profile)
    out_dir = out_dir or paths.manifests_dir(profile, upstream.version)
    # fails, naming the call, when a fixed-parameter rule does not hold
    write_manifests(out_dir, decisions, batches, summary, plan_extra(reach, upstream.root, rules, version=upstream.version))
    (out_dir / "kernels.txt").write_text(reach.kernels.text())
    seconds = time.perf_counter() - start
    return PlanResult(upstream, rules, graph, reach, decisions, batches, summary, out_dir, seconds)


KERNELS_ONLY_NOTE = ("Made by `shrink plan --kernels-only`: the kernel manifest of this checkout's rules. This "
                     "release's keep.txt and remove.txt beside it came from its own plan (the regen walk, under "
                     "the rules of that day) and decide its tree; where the rules changed since, the two may "
                     "differ on a few files.")


def make_kernel_manifest(profile: str = "deepseek", spec: str | None = None, *, jobs: int = 2,
                         out_dir: Path | None = None, report_dir: Path | None = None) -> tuple[Path, Path]:
    """kernels.txt and kernels.{md,json} alone, for a release whose manifests stay as they are."""
    from shrinker.plan.kernel_report import write_kernel_report

    upstream = load(spec)
    rules = load_rules(profile)
    _, reach, decisions, _ = analyse(upstream, rules, jobs=jobs)
    out_dir = out_dir or paths.manifests_dir(profile, upstream.version)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = out_dir / "kernels.txt"
    manifest.write_text(reach.kernels.text())
    report = write_kernel_report(report_dir or paths.reports_dir(profile, upstream.version), upstream.spec,
                                 reach.kernels.entries, upstream.root, rules.kernels.packages,
                                 {d.path for d in decisions if d.keep}, note=KERNELS_ONLY_NOTE)
    return manifest, report


def load_batches(profile: str, version: str) -> dict:
    """The committed batches.json of a plan (apply reads it)."""
    from shrinker.errors import ShrinkError

    path = paths.manifests_dir(profile, version) / "batches.json"
    if not path.exists():
        raise ShrinkError(f"no plan for {profile} v{version}: run `shrink plan` first")
    return json.loads(path.read_text())
