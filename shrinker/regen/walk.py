"""`shrink regen --to SPEC`: walk every release between the pin and the target, one step each.

Each step (run.regen) plans the next release against the one before, applies every batch and runs the
CPU verify. The walk stops at the first step that needs a person, or whose apply or verify fails, and
writes one row per step to reports/<profile>/regen-<pin>-to-<target>.{md,json} (each step's details
are in reports/<profile>/v<release>/regen.md). `--adopt` then moves the pin to the last step that
passed and rewrites the rules' roots that followed a move.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from shrinker import paths
from shrinker.graph.build import build_graph
from shrinker.plan.moves import adopt_moves, follow_release, follow_roots
from shrinker.regen.run import RegenResult, check_target, newest_on_pypi, pinned_spec, pypi_releases, regen
from shrinker.rules.load import load_rules
from shrinker.rules.schema import Rules
from shrinker.upstream import fetch
from shrinker.upstream.spec import parse_spec


@dataclass
class WalkResult:
    from_spec: str
    to_spec: str
    steps: list[RegenResult] = field(default_factory=list)
    planned: list[str] = field(default_factory=list)  # every release the walk meant to visit
    adopted: str = ""
    report: Path | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return len(self.steps) == len(self.planned) and all(s.ok for s in self.steps)

    @property
    def stopped_at(self) -> RegenResult | None:
        return next((s for s in self.steps if not s.ok), None)


def releases_between(from_spec: str, to_spec: str) -> list[str]:
    """The specs one step each: every final PyPI release after `from_spec` up to `to_spec`; a
    non-PyPI target (a git tag, a local tree) is one step."""
    old, new = parse_spec(from_spec), parse_spec(to_spec)
    if new.source != "pypi" or old.source != "pypi" or old.name != new.name:
        return [to_spec]
    low, high = Version(old.version), Version(new.version)
    return [f"pypi:{new.name}=={v}" for v in pypi_releases(new.name) if low < v <= high]


def walk(to_spec: str | None = None, *, from_spec: str | None = None, profile: str = "deepseek",
         adopt: bool = False, with_kernel: bool = True, run_apply: bool = True, jobs: int = 2,
         log=lambda msg: None) -> WalkResult:
    """`from_spec` (default: the pin) resumes a walk at a release an earlier walk passed."""
    start = time.perf_counter()
    pin = pinned_spec()
    origin = from_spec or pin
    if from_spec and from_spec != pin:
        check_target(pin, from_spec)  # a release after the pin, one PyPI has
    if to_spec is None:
        to_spec = newest_on_pypi()
        if to_spec == origin:  # nothing newer: an up-to-date pin is a walk that passed, not bad input
            log(f"{origin} is the newest release on PyPI: nothing to walk")
            return WalkResult(origin, to_spec)
    check_target(origin, to_spec)
    result = WalkResult(origin, to_spec, planned=releases_between(origin, to_spec))
    previous, rules = origin, load_rules(profile)
    carried: list[tuple[dict[str, str], dict[str, str]]] = []  # (roots, names) moved from the pin to origin
    if origin != pin:
        rules, carried = rules_at(rules, pin, origin, with_kernel=with_kernel, jobs=jobs, log=log)
    for i, spec in enumerate(result.planned, 1):
        log(f"step {i}/{len(result.planned)}: {previous} -> {spec}")
        step = regen(spec, from_spec=previous, profile=profile, with_kernel=with_kernel, run_apply=run_apply,
                     jobs=jobs, rules=rules, log=log)
        result.steps.append(step)
        rules = step.rules or rules  # moved roots and rule names carry on to the next release
        log(f"step {i}/{len(result.planned)}: {step.verdict} ({step.seconds:.0f} s)")
        if any(step.attention.values()) or (run_apply and not step.ok):
            break  # a later release builds on this one: nothing past it can be trusted
        previous = spec
    passed = []
    for step in result.steps:  # the steps before the first that did not pass
        if not step.ok:
            break
        passed.append(step)
    if adopt and passed:
        # the moves of a resumed walk's releases before `origin` too: the rules file still names the pin's
        moves = carried + [(step.moves, step.rule_moves) for step in passed]
        fetch(passed[-1].to_spec, with_kernel=with_kernel, pin=True)
        follow_moved_roots(paths.rules_dir() / f"{profile}.toml", [roots for roots, _ in moves])
        follow_moved_names(paths.rules_dir() / f"{profile}.toml", [names for _, names in moves])
        follow_moved_surface(paths.rules_dir() / f"{profile}-verify.toml", [roots for roots, _ in moves])
        result.adopted = passed[-1].to_spec
    result.seconds = round(time.perf_counter() - start, 2)
    result.report = write_walk_report(result, profile)
    return result


def rules_at(rules: Rules, pin: str, origin: str, *, with_kernel: bool, jobs: int, log=lambda msg: None
             ) -> tuple[Rules, list[tuple[dict[str, str], dict[str, str]]]]:
    """The rules as a walk from the pin carries them to `origin` (a resumed walk): the roots and
    names every release in between moved, followed (plans only: graphs from the parse cache); and
    those moves, release by release ((roots, names)), for --adopt to write."""
    previous = build_graph(fetch(pin, with_kernel=with_kernel, pin=False).root, jobs=jobs)
    moves = []
    for spec in releases_between(pin, origin):
        log(f"following moves to {spec}")
        graph = build_graph(fetch(spec, with_kernel=with_kernel, pin=False).root, jobs=jobs)
        rules, roots, names = follow_release(rules, previous, graph)
        successors = {root: move.successor for root, move in roots.items()}
        rules = follow_roots(rules, successors)
        moves.append((successors, {m.old: m.new for m in names}))
        previous = graph
    return rules, moves


ROOT_LINE = 'module = "{}"'


def follow_moved_roots(rules_file: Path, moves_per_step: list[dict[str, str]]) -> list[str]:
    """Rewrite `module = "<root>"` to its successor for every root a step followed (exact line edits:
    the rest of the file, comments included, stays byte for byte)."""
    text = rules_file.read_text()
    done = []
    for moves in moves_per_step:
        for old, new in moves.items():
            line = ROOT_LINE.format(old)
            if re.search(rf"^{re.escape(line)}$", text, flags=re.M):
                text = re.sub(rf"^{re.escape(line)}$", ROOT_LINE.format(new), text, flags=re.M)
                done.append(f"{old} -> {new}")
    if done:
        rules_file.write_text(text)
    return done


def follow_moved_names(rules_file: Path, moves_per_step: list[dict[str, str]]) -> list[str]:
    """Rewrite the quoted rule names under every prefix a step followed to its new place, step by
    step (a -> b, then b -> c gives c); the rest of the file stays byte for byte."""
    return _rewrite_moves(rules_file, moves_per_step)


def follow_moved_surface(surface_file: Path, moves_per_step: list[dict[str, str]]) -> list[str]:
    """The verify surface's names of roots that moved (its CLI modules), rewritten as the rules' roots
    are (exact string edits, step by step)."""
    if not surface_file.exists():
        return []
    return _rewrite_moves(surface_file, moves_per_step)


def _rewrite_moves(path: Path, moves_per_step: list[dict[str, str]]) -> list[str]:
    """adopt_moves for each step's moves in turn, written back only when something moved."""
    text, done = path.read_text(), []
    for moves in moves_per_step:
        text, moved = adopt_moves(text, moves)
        done += moved
    if done:
        path.write_text(text)
    return done


def step_row(step: RegenResult, profile: str) -> dict:
    detail = step.report.relative_to(paths.reports_dir(profile)).as_posix() if step.report else ""
    return {"from": step.from_spec, "to": step.to_spec, "from_version": step.versions[0], "version": step.versions[1], "verdict": step.verdict,
            "decided": {k: len(v) for k, v in step.decided.items()},
            "for_a_person": [i for items in step.attention.values() for i in items],
            "warnings": sum(len(v) for v in step.warnings.values()),
            "apply": ("passed" if step.apply_ok else "failed") if step.apply_run else "not run",
            "verify": ("passed" if step.verify_ok else "failed") if step.verify_run else "not run",
            "removed_fraction": step.removed_fraction, "seconds": step.seconds, "details": detail}


def write_walk_report(result: WalkResult, profile: str) -> Path:
    old = result.steps[0].versions[0] if result.steps else parse_spec(result.from_spec).version
    reached = result.steps and result.steps[-1].to_spec == result.to_spec
    new = parse_spec(result.to_spec).version or (result.steps[-1].versions[1] if reached else "target")
    folder = paths.reports_dir(profile)
    folder.mkdir(parents=True, exist_ok=True)
    md, js = folder / f"regen-{old}-to-{new}.md", folder / f"regen-{old}-to-{new}.json"
    rows = [step_row(s, profile) for s in result.steps]
    not_reached = result.planned[len(result.steps):]
    data = {"from": result.from_spec, "to": result.to_spec, "ok": result.ok, "steps": rows,
            "not_reached": not_reached, "adopted": result.adopted, "seconds": result.seconds}
    js.write_text(json.dumps(data, indent=1) + "\n")
    stop = result.stopped_at
    planned_only = bool(result.steps) and not any(s.apply_run or any(s.attention.values()) for s in result.steps)
    verdict = ("OK: every step applied and verified" if result.ok else
               "planned only (--no-apply): nothing for a person" if planned_only else
               f"stopped at {stop.to_spec}: {stop.verdict}" if stop else "not verified (--no-apply)")
    lines = [f"# Regen walk {result.from_spec} → {result.to_spec}", "", f"Verdict: **{verdict}**; "
             f"{len(result.steps)} of {len(result.planned)} steps run; {result.seconds:.0f} s."
             + (f" Pin moved to {result.adopted}." if result.adopted else ""), "",
             "| step | verdict | decided | for a person | apply | verify | removed % | seconds | details |",
             "|---|---|---|---:|---|---|---:|---:|---|"]
    for r in rows:
        decided = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in r["decided"].items() if n) or "nothing"
        removed = "—" if r["removed_fraction"] is None else f"{100 * r['removed_fraction']:.1f}"
        lines.append(f"| {r['from_version']} → {r['version']} | {r['verdict']} | {decided} | "
                     f"{len(r['for_a_person'])} | {r['apply']} | {r['verify']} | {removed} | {r['seconds']:.0f} | "
                     f"[{r['details']}]({r['details']}) |")
    lines += ["", "## For a person", ""]
    lines += [f"- {r['version']}: {q}" for r in rows for q in r["for_a_person"]] or ["- nothing"]
    if not_reached:
        lines += ["", "## Not reached", "", *[f"- {s}" for s in not_reached]]
    md.write_text("\n".join(lines) + "\n")
    return md
