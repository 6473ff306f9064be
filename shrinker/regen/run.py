"""One regen step: follow upstream from one release to the next.

Fetch the new release, plan it with the current rules (leniently: a rule whose target vanished is
reported, not fatal), diff against the plan of the release before it, apply every batch to a fresh
work tree and verify it, then write reports/<profile>/v<new>/regen.{md,json}. walk.py runs one step
per release between the pin and the target.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from shrinker import paths
from shrinker.errors import ShrinkError
from shrinker.plan.manifests import summarize, write_manifests
from shrinker.plan.moves import follow_roots
from shrinker.plan.run import analyse, plan_extra
from shrinker.plan.serving import architecture_selections
from shrinker.regen.predicates import uncovered_predicates
from shrinker.regen.signals import key_evidence, module_evidence
from shrinker.rules.predicates import PredicateTable
from shrinker.rules.load import load_rules
from shrinker.rules.schema import Rules
from shrinker.upstream import fetch
from shrinker.upstream.distributions import simple_files
from shrinker.upstream.pin import read_pin
from shrinker.upstream.spec import parse_spec


@dataclass
class RegenResult:
    from_spec: str
    to_spec: str
    changes: dict[str, list] = field(default_factory=dict)
    attention: dict[str, list] = field(default_factory=dict)  # what a person must decide, with the rule to write
    decided: dict[str, list] = field(default_factory=dict)  # what the rules decided, with the rule that did
    warnings: dict[str, list] = field(default_factory=dict)  # noted, never a stop
    cache_hit_rate: float = 0.0
    apply_run: bool = False
    apply_ok: bool = False
    verify_run: bool = False
    verify_ok: bool = False
    removed_fraction: float | None = None  # of upstream's Python lines, after apply
    moves: dict[str, str] = field(default_factory=dict)  # root -> the successor it was followed to
    rule_moves: dict[str, str] = field(default_factory=dict)  # a module/package other rules name -> where it went
    rules: Rules | None = None  # the rules after this step: moves followed (a walk's next step starts from them)
    versions: tuple[str, str] = ("", "")  # (from, to) as the trees name them
    seconds: float = 0.0
    report: Path | None = None

    @property
    def verdict(self) -> str:
        if any(self.attention.values()):
            return "needs a person"
        return "OK" if self.ok else "not verified"

    @property
    def ok(self) -> bool:
        return self.apply_ok and self.verify_ok and not any(self.attention.values())


def newest_on_pypi(name: str = "sglang") -> str:
    proc = subprocess.run([sys.executable, "-m", "pip", "index", "versions", name, "--disable-pip-version-check"],
                          capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith(f"{name} (") or line.startswith(f"{name.replace('_', '-')} ("):
            return f"pypi:{name}=={line.split('(')[1].split(')')[0]}"
    raise ShrinkError(f"could not ask PyPI for the newest {name} (no network?)")


def pypi_releases(name: str) -> list[Version]:
    """Every final release of `name` PyPI has a wheel of, oldest first (ShrinkError: PyPI unreachable)."""
    versions = set()
    for f in simple_files(name):
        try:
            if f["filename"].endswith(".whl") and not (v := parse_wheel_filename(f["filename"])[1]).is_prerelease:
                versions.add(v)
        except (InvalidWheelFilename, InvalidVersion):
            continue
    return sorted(versions)


def check_target(pin_spec: str, to_spec: str) -> None:
    """A PyPI target must be a release PyPI has, newer than the pin: else one line, exit 2."""
    try:
        old, new = parse_spec(pin_spec), parse_spec(to_spec)
    except ValueError as exc:
        raise ShrinkError(str(exc)) from None
    if new.source != "pypi":
        return
    try:
        wanted = Version(new.version)
    except InvalidVersion:
        raise ShrinkError(f"{to_spec}: {new.version!r} is not a version") from None
    if old.source == "pypi" and old.name == new.name and wanted <= Version(old.version):
        raise ShrinkError(f"{to_spec} is not newer than the pin {pin_spec}: regen follows upstream forward")
    releases = pypi_releases(new.name)
    if wanted not in releases:
        newest = f"the newest is {releases[-1]}" if releases else "it lists no release"
        raise ShrinkError(f"{to_spec}: PyPI has no release {new.version} of {new.name} ({newest})")


def _decided(decisions) -> dict[str, bool]:
    return {d.path: d.keep for d in decisions}


def diff_plans(old: dict, new: dict, old_py: set[str], new_py: set[str]) -> dict[str, list]:
    both = old.keys() & new.keys()
    return {
        "newly_kept": sorted(p for p in both if new[p] and not old[p]),
        "newly_removed": sorted(p for p in both if old[p] and not new[p]),
        "new_modules_kept": sorted(p for p in new_py - old_py if new[p]),
        "new_modules_removed": sorted(p for p in new_py - old_py if not new[p]),
        "modules_gone": sorted(old_py - new_py),
    }


def pinned_spec() -> str:
    pin = read_pin()
    if pin is None:
        raise ShrinkError("no pin in upstream/UPSTREAM.toml: run `shrink upstream fetch` first")
    return pin.spec


def regen(to_spec: str | None = None, *, from_spec: str | None = None, profile: str = "deepseek",
          with_kernel: bool = True, run_apply: bool = True, run_verify: bool = True, jobs: int = 2,
          rules: Rules | None = None, log=lambda msg: None) -> RegenResult:
    """One step from `from_spec` (default: the pin) to `to_spec` (default: the newest release).
    `rules`: the rules as the step before left them (a walk), else the profile's file."""
    start = time.perf_counter()
    from_spec = from_spec or pinned_spec()
    to_spec = to_spec or newest_on_pypi()
    check_target(from_spec, to_spec)
    rules = rules or load_rules(profile)
    old_up = fetch(from_spec, with_kernel=with_kernel, pin=False)
    new_up = fetch(to_spec, with_kernel=with_kernel, pin=False)
    old_graph, old_reach, old_decisions, _ = analyse(old_up, rules, jobs=jobs, strict=False)
    new_graph, new_reach, new_decisions, new_batches = analyse(new_up, rules, jobs=jobs, strict=False,
                                                               previous=old_graph)
    rules = new_reach.rules or rules  # from here on with the moves followed: judged, applied, verified so
    result = RegenResult(old_up.spec, new_up.spec, cache_hit_rate=new_graph.stats.hit_rate,
                         versions=(old_up.version, new_up.version))
    old_py = {p for p in old_graph.module_path.values() if p}
    new_py = {p for p in new_graph.module_path.values() if p}
    result.changes = diff_plans(_decided(old_decisions), _decided(new_decisions), old_py, new_py)
    # What a person must decide: new predicates, new registry keys, rules pointing at nothing.
    old_preds = uncovered_predicates(old_graph, set(old_reach.kept), rules)
    new_preds = uncovered_predicates(new_graph, set(new_reach.kept), rules)
    fresh = {name: uses for name, uses in new_preds.items() if name not in old_preds}
    # An inventory's keys (kind "records") are decided by what code asks for, not by a keep list: no question.
    asked_for = {r.name for r in rules.registries if r.kind == "records"}
    new_keys = {reg: sorted(keys - old_reach.registries.all_keys.get(reg, set()))
                for reg, keys in new_reach.registries.all_keys.items() if reg not in asked_for}
    kept_paths = {d.path for d in new_decisions if d.keep}
    evidence = key_evidence(new_up.root, kept_paths, rules.regen.signal_paths, new_keys)
    scans = {r.name: r.package for r in rules.registries if r.kind == "module_scan"}
    own, other_family = module_evidence(new_graph, scans, new_keys, rules.regen.signal_modules,
                                        rules.regen.family_words)
    for pair, why in own.items():
        evidence.setdefault(pair, []).extend(why)
    questions, decided = _judge_new_keys(new_keys, new_reach.registries.removed_keys, evidence,
                                         {c.key: c.reason for c in rules.regen.confirmed_removed}, other_family,
                                         rules.regen.draft_suffixes)
    table = PredicateTable(rules.platform)
    folded = {n: u for n, u in fresh.items() if table.rule_for(n) is not None}
    result.attention = {
        "new_registry_keys": questions,
        "rules_whose_targets_vanished": list(new_reach.rule_problems),
        "kept_architectures_select_removed_keys": architecture_selections(
            new_up.root, kept_paths, new_reach.rules or rules, new_reach.registries.removed_keys),
    }
    result.moves = {root: move.successor for root, move in new_reach.moves.items()}
    result.rule_moves = {m.old: m.new for m in new_reach.rule_moves}
    result.rules = follow_roots(rules, result.moves)
    result.decided = {"roots_followed": [m.note(old_up.version) for m in new_reach.moves.values()],
                      "rule_names_followed": [m.note(new_up.version) for m in new_reach.rule_moves],
                      "new_registry_keys": decided,
                      "platform_predicates_folded": [f"{n}() is False on CUDA: {table.rule_for(n).reason} "
                                                     f"(tested in {', '.join(u[:3])})" for n, u in sorted(folded.items())]}
    result.warnings = {"rules_with_nothing_left_to_act_on": list(new_reach.rule_warnings),
                       "predicates_kept_as_runtime_checks": [f"{n} (tested in {', '.join(u[:3])}; no platform word)"
                                                             for n, u in sorted(fresh.items()) if n not in folded]}
    out_dir = paths.manifests_dir(profile, new_up.version)
    summary = summarize(new_decisions, new_up.spec, new_up.version, profile)
    extra = plan_extra(new_reach, new_up.root, rules, problems=result.attention["rules_whose_targets_vanished"],
                       version=new_up.version)
    write_manifests(out_dir, new_decisions, new_batches, summary, extra)
    if run_apply and not (result.attention["rules_whose_targets_vanished"]
                          or result.attention["kept_architectures_select_removed_keys"]):
        from shrinker.apply.run import apply_batches

        result.apply_run = True
        outcomes = apply_batches(profile, all_batches=True, reset=True, jobs=jobs, spec=new_up.spec, rules=rules)
        result.apply_ok = bool(outcomes) and all(o.gate == "passed" for o in outcomes)
        result.removed_fraction = _removed_fraction(profile, new_up.version)
        failed = [o for o in outcomes if o.gate == "failed"]
        if failed:  # what the failing gate found, each with the rule that could settle it
            result.attention["apply_gate_findings"] = [
                f"batch {failed[0].number} ({failed[0].name}): {f}{settling_rule(f, new_up.version)}"
                for f in failed[0].findings]
        if run_verify and result.apply_ok:
            result.verify_run = True
            result.verify_ok = _verify(profile, new_up, rules, log=log)
    result.seconds = round(time.perf_counter() - start, 2)
    result.report = write_regen_report(result, profile, old_up.version, new_up.version)
    return result


def _judge_new_keys(new_keys: dict[str, list[str]], removed: dict[str, set[str]],
                    evidence: dict[tuple[str, str], list[str]], confirmed: dict[str, str],
                    other_family: dict[tuple[str, str], list[str]] | None = None,
                    draft_suffixes: list[str] = ()) -> tuple[list[str], list[str]]:
    """(questions for a person, decided lines): a new key the keep list names is kept, one it does not
    is removed; a removed one that kept signal code names is a question, with the rule settling it.
    `confirmed`: `registry:key` -> the reason a person gave for removing it anyway; a draft model
    (`<key><suffix>`, [regen].draft_suffixes) of a confirmed key is settled with it. `other_family`: another model
    family's architectures built on kept code (removed, with that evidence, no question)."""
    other_family = other_family or {}
    questions, decided = [], []
    for reg, keys in sorted(new_keys.items()):
        for key in keys:
            base = _draft_base(key, reg, confirmed, draft_suffixes)
            if base:
                confirmed = {**confirmed, f"{reg}:{key}": f"the draft model of {base}: {confirmed[f'{reg}:{base}']}"}
            if key not in removed.get(reg, set()):
                decided.append(f"{reg}: {key} kept (named by the {reg} keep rule)")
            elif (reg, key) in other_family and (reg, key) not in evidence:
                decided.append(f"{reg}: {key} removed (not in the {reg} keep list; built on kept-architecture code "
                               f"({', '.join(other_family[reg, key])}) but named for another model family: "
                               f"no [regen].family_words word in its name or module)")
            elif (reg, key) in evidence and f"{reg}:{key}" not in confirmed:
                questions.append(f"{reg}: {key} is removed, but kept code selects it or it belongs to a kept architecture ({', '.join(evidence[reg, key])}); "
                                 f"settle with one line: add \"{key}\" to the {reg} keep list, or "
                                 f"{{key = \"{reg}:{key}\", reason = \"...\"}} to [regen].confirmed_removed")
            else:
                why = (f"confirmed by [regen].confirmed_removed: {confirmed[f'{reg}:{key}']}" if (reg, key) in evidence
                       else "no kept signal code selects it, no kept-architecture module registers it")
                decided.append(f"{reg}: {key} removed (not in the {reg} keep list; {why})")
    return questions, decided


def _draft_base(key: str, reg: str, confirmed: dict[str, str], suffixes: list[str]) -> str:
    """The confirmed-removed architecture `key` is the draft (MTP) model of, or ""."""
    for suffix in suffixes:
        if key.endswith(suffix) and f"{reg}:{key[:-len(suffix)]}" in confirmed:
            return key[:-len(suffix)]
    return ""


USED_REMOVED = re.compile(r"from removed module (?P<module>[\w.]+) is still used")


def settling_rule(finding: str, version: str) -> str:
    """For a name kept code still uses from a removed module: the one rule that keeps the module (when
    kept code truly needs it; else a rule removing the user settles it)."""
    m = USED_REMOVED.search(finding)
    if m is None:
        return ""
    return (f"; settle with [[keep]] pattern = \"{m['module']}\", since = \"{version}\", reason = \"...\" "
            "if kept code needs it, or a rule that removes its user")


def _removed_fraction(profile: str, version: str) -> float | None:
    """From the line counts, not apply.json's 4-digit fraction: rounding that again for a percentage
    could show 62.9 % where the apply report says 62.8 %."""
    try:
        totals = json.loads((paths.reports_dir(profile, version) / "apply.json").read_text())["totals"]
        return round(totals["removed_lines"] / totals["upstream_python_lines"], 8)
    except (OSError, ValueError, KeyError, ZeroDivisionError):
        return None


def followed_surface(surface: dict, written: Rules, followed: Rules) -> dict:
    """The verify surface (rules/<profile>-verify.toml) with each CLI module that is a root the walk
    followed to a successor replaced by it (0.5.21 moved `sglang.bench_one_batch` to
    `sglang.benchmark.one_batch`; `--help` of a module gone upstream would fail on both sides)."""
    renamed = {a.module: b.module for a, b in zip(written.roots, followed.roots) if a.module != b.module}
    cli = surface.get("cli", {})
    if not renamed or not cli.get("modules"):
        return surface
    return {**surface, "cli": {**cli, "modules": [renamed.get(m, m) for m in cli["modules"]]}}


def _verify(profile: str, upstream, rules: Rules, log=lambda msg: None) -> bool:
    from shrinker.verify import verify_tree  # type: ignore[attr-defined]
    from shrinker.verify.env import ensure_env
    from shrinker.verify.run import load_surface

    env = ensure_env(upstream.root, log=log)  # the release's own pins (made once per set of pins)
    surface = followed_surface(load_surface(profile), load_rules(profile), rules)
    outcome = verify_tree(paths.work_tree_dir(profile, upstream.version), upstream.root, profile=profile,
                          report_dir=paths.reports_dir(profile, upstream.version), rules=rules, env=env,
                          surface=surface)
    return bool(getattr(outcome, "passed", outcome))


def write_regen_report(result: RegenResult, profile: str, old: str, new: str) -> Path:
    """reports/<profile>/v<new>/regen.{md,json}: the step's details (the walk report has its row)."""
    folder = paths.reports_dir(profile, new)
    folder.mkdir(parents=True, exist_ok=True)
    md, js = folder / "regen.md", folder / "regen.json"
    data = {"from": result.from_spec, "to": result.to_spec, "ok": result.ok, "verdict": result.verdict,
            "apply_run": result.apply_run, "apply_ok": result.apply_ok, "verify_run": result.verify_run,
            "verify_ok": result.verify_ok, "removed_fraction": result.removed_fraction,
            "parse_cache_hit_rate": round(result.cache_hit_rate, 4),
            "seconds": result.seconds, "changes": result.changes, "needs_attention": result.attention,
            "decided": result.decided, "warnings": result.warnings}
    js.write_text(json.dumps(data, indent=1) + "\n")
    lines = [f"# Regen {result.from_spec} → {result.to_spec}", "",
             f"Verdict: **{result.verdict}** — "
             + (f"apply {'passed' if result.apply_ok else 'did not pass'}, verify {'passed' if result.verify_ok else 'did not pass'}"
                if result.apply_run else "apply and verify not run (--no-apply, or rules need a person first)")
             + f"; parse cache hits "
             f"{100 * result.cache_hit_rate:.0f} %; {result.seconds:.0f} s.", "", "## Needs attention", ""]
    for what, items in result.attention.items():
        lines.append(f"### {what.replace('_', ' ')} ({len(items)})")
        lines += [f"- {i}" for i in items[:200]] or ["- none"]
        lines.append("")
    for title, groups in (("Decided by the rules", result.decided), ("Warnings (never a stop)", result.warnings)):
        lines += [f"## {title}", ""]
        for what, items in groups.items():
            lines.append(f"### {what.replace('_', ' ')} ({len(items)})")
            lines += [f"- {i}" for i in items[:300]] or ["- none"]
            lines.append("")
    lines += ["## Changes", ""]
    for what, items in result.changes.items():
        lines.append(f"### {what.replace('_', ' ')} ({len(items)})")
        lines += [f"- `{i}`" for i in items[:300]] or ["- none"]
        if len(items) > 300:
            lines.append(f"- ... {len(items) - 300} more (see the .json)")
        lines.append("")
    md.write_text("\n".join(lines) + "\n")
    return md
