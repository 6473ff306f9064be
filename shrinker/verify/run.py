"""verify_tree: run the checks on a pruned tree against upstream and gather one VerifyResult."""

from __future__ import annotations

import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from shrinker import paths
from shrinker.errors import ShrinkError
from shrinker.checks import static
from shrinker.verify import behaviour, cli_surface
from shrinker.upstream.distributions import load_index
from shrinker.verify.env import VerifyEnv, held_pins, load_env, read_requirements, requirements_for
from shrinker.checks.factcache import tree_facts
from shrinker.verify.imports import compare_imports
from shrinker.verify.probe import ProbeFailed, cached, probe_key, run_probe
from shrinker.verify.result import CheckResult, VerifyResult
from shrinker.checks.tree import SourceTree

if TYPE_CHECKING:
    from shrinker.rules.schema import Rules

STATIC = list(static.STATIC_CHECKS)
DYNAMIC = ["imports", "cli", "server_args", "behaviour"]
ALL_CHECKS = STATIC + DYNAMIC
GROUPS = {"static": STATIC, "quick": STATIC, "dynamic": DYNAMIC, "all": ALL_CHECKS}
DATA = Path(__file__).parent / "data"


def resolve_checks(names: Sequence[str] | None) -> list[str]:
    if not names:
        return list(ALL_CHECKS)
    out: list[str] = []
    for name in names:
        for check in GROUPS.get(name, [name]):
            if check not in ALL_CHECKS:
                raise ShrinkError(f"unknown check {name!r} (checks: {', '.join(ALL_CHECKS)}; groups: {', '.join(GROUPS)})")
            if check not in out:
                out.append(check)
    return [c for c in ALL_CHECKS if c in out]


def clean_commit(root: Path) -> str | None:
    """HEAD of a git tree with no changes (safe to cache results by), else None."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel", "HEAD"],
                              capture_output=True, text=True)
        lines = head.stdout.split()
        if head.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != root.resolve():
            return None  # not a repo of its own (e.g. a copy inside another checkout)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True)
        if dirty.returncode != 0 or dirty.stdout.strip():
            return None
        return lines[1]
    except OSError:
        return None


def load_surface(profile: str) -> dict:
    """rules/<profile>-verify.toml: the SGLang names verify exercises (its data files stay in verify/data)."""
    path = paths.rules_dir() / f"{profile}-verify.toml"
    if not path.exists():
        raise ShrinkError(f"no verify data for profile {profile!r}: {path}")
    return tomllib.loads(path.read_text())


def removed_modules(profile: str, version: str) -> list[str]:
    """Modules the plan removed (manifests/<profile>/v<version>/remove.txt), as dotted names."""
    path = paths.manifests_dir(profile, version) / "remove.txt"
    if not path.exists():
        return []
    out = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        line = line.split()[0]
        if line.endswith(".py") or "/" in line:
            parts = Path(line).with_suffix("").parts
            if "python" in parts:
                parts = parts[parts.index("python") + 1:]
            if parts and parts[-1] == "__init__":
                parts = parts[:-1]
            line = ".".join(parts)
        out.append(line)
    return out


class _Timer:
    def __enter__(self):
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc):
        self.seconds = round(time.monotonic() - self.start, 2)


def verify_tree(tree: Path, upstream_root: Path, *, checks: Sequence[str] | None = None, jobs: int = 2,
                report_dir: Path | None = None, profile: str = "deepseek", env: VerifyEnv | None = None,
                reuse: bool = True, timeout: float = 60.0, upstream_commit: str | None = "auto",
                only: Sequence[str] | None = None, surface: dict | None = None,
                rules: "Rules | None" = None, bases: bool = True) -> VerifyResult:
    """Verify TREE (pruned) against UPSTREAM_ROOT; `checks` picks checks or groups (static, quick, dynamic).

    Static checks need nothing but the two trees; the others need the verify environment
    (`shrink verify env`). Upstream results are cached per upstream commit when upstream is a clean
    git tree (`upstream_commit="auto"`) or under the commit given; None disables the caches.
    `reuse`: take an earlier run's pruned import result while everything that import read is unchanged.
    `only`: module prefixes the import check is limited to (quick runs, tests); default all.
    `bases`: pruned imports fork from shared bases (imports.run_on_certain_bases); False: each from scratch.
    `surface` / `rules`: what the CLI, ServerArgs and behaviour checks use instead of
    data/<profile>.toml and rules/<profile>.toml (fixture trees in tests).
    """
    start = time.monotonic()
    wanted = resolve_checks(checks)
    pruned_tree, upstream_tree = SourceTree.load(tree), SourceTree.load(upstream_root)
    commit = clean_commit(upstream_tree.root) if upstream_commit == "auto" else upstream_commit
    result = VerifyResult(tree=pruned_tree.root, upstream_root=upstream_tree.root)

    if any(c in DYNAMIC for c in wanted):
        env = env or load_env(reqs=requirements_for(upstream_tree.root))
        if env is None:
            raise ShrinkError(f"no verify environment for {upstream_tree.root}: run `shrink verify env "
                              f"--upstream {upstream_tree.root}` first (make verify-env for the pin)")
        base = read_requirements()
        result.environment = {"torch": env.torch_version,
                              "release_pins": [r for r in requirements_for(upstream_tree.root) if r not in base],
                              "held_pins": held_pins(upstream_tree.root)}

    if any(c in STATIC for c in wanted):
        with _Timer() as t:
            facts_up = tree_facts(upstream_tree, jobs=jobs)
            facts_pr = tree_facts(pruned_tree, jobs=jobs)
            from shrinker.rules.load import load_rules

            # import names -> distributions as upstream's declared wheels provide them (never what is installed)
            rules = rules or load_rules(profile)
            dist_map = load_index(upstream_tree.root, rules.requirements.target).import_map
            found_up = static.collect(upstream_tree, facts_up, dist_map, rules.registries)
            found_pr = static.collect(pruned_tree, facts_pr, dist_map, rules.registries)
        for check in (c for c in STATIC if c in wanted):
            new = static.regressions(found_pr.by_check[check], found_up.by_check[check])
            notes = list(found_pr.notes[check])
            if check in ("undefined_names", "self_attributes"):
                new, unbound = static.split_platform(check, new, upstream_tree.root, rules or load_rules(profile))
                notes += unbound
            counts = dict(found_pr.counts[check])
            counts.update({"upstream_findings": len(found_up.by_check[check]),
                           "pruned_findings": len(found_pr.by_check[check]), "regressions": len(new)})
            result.checks.append(CheckResult(check, passed=not new, counts=counts, findings=[f.text for f in new],
                                             notes=notes, seconds=t.seconds if check == STATIC[0] else 0.0))

    if surface is None and any(c in ("imports", "cli", "server_args", "behaviour") for c in wanted):
        surface = load_surface(profile)
    needs_cuda = tuple((surface or {}).get("needs_cuda", ()))
    pretend = (surface or {}).get("pretend")  # both trees import as on this GPU (imports, cli, server_args)

    if "imports" in wanted:
        with _Timer() as t:
            cmp = compare_imports(pruned_tree, upstream_tree, env, commit=commit, jobs=jobs, timeout=timeout,
                                  reuse=reuse, only=only, needs_cuda=needs_cuda, pretend=pretend, bases=bases)
        result.checks.append(CheckResult(
            "imports", passed=not cmp.regressions,
            counts={"pretend_gpu": int(bool(pretend)), "modules": cmp.modules, "import_pruned": cmp.pruned_ok,
                    "fail_pruned_compared_upstream": cmp.compared, "import_upstream_of_those": cmp.upstream_ok,
                    "regressions": len(cmp.regressions), "needs_cuda": len(cmp.needs_cuda),
                    "reused_earlier_run": cmp.cached, "upstream_run": cmp.upstream_run},
            findings=cmp.regressions,
            notes=[f"needs CUDA, not comparable on this machine: {n}" for n in cmp.needs_cuda],
            seconds=t.seconds))
    gone: tuple[dict[str, str], list[str]] = ({}, [])  # ServerArgs fields removed: (why, unexplained)
    if "cli" in wanted or "server_args" in wanted:
        gone = _removed_fields(pruned_tree, upstream_tree, surface, profile)
    if "cli" in wanted:
        with _Timer() as t:
            result.checks.append(_check_cli(pruned_tree, upstream_tree, env, commit, surface, profile, rules,
                                            gone[0]))
        result.checks[-1].seconds = t.seconds
    if "server_args" in wanted:
        with _Timer() as t:
            result.checks.append(_check_server_args(pruned_tree, upstream_tree, env, commit, surface, gone))
        result.checks[-1].seconds = t.seconds
    if "behaviour" in wanted:
        with _Timer() as t:
            result.checks.append(_check_behaviour(pruned_tree, upstream_tree, env, commit, surface))
        result.checks[-1].seconds = t.seconds

    result.seconds = time.monotonic() - start
    if report_dir is not None:
        from shrinker.verify.report import write_report

        write_report(result, report_dir)
    return result


@dataclass(frozen=True)
class _Probe:
    """One probe run: the same script, arguments and inputs in both trees (upstream's answer cached)."""

    script: str
    name: str
    args: tuple[str, ...]
    inputs: dict | None = None

    def upstream(self, upstream: SourceTree, env: VerifyEnv, commit: str | None) -> dict:
        key = probe_key(self.script, env, {"args": list(self.args), "inputs": self.inputs})
        return cached(commit, self.name, key,
                      lambda: run_probe(self.script, upstream, env, list(self.args), inputs=self.inputs))

    def both(self, pruned: SourceTree, upstream: SourceTree, env: VerifyEnv, commit: str | None) -> tuple[dict, dict]:
        """(upstream's answer, pruned's): the two probe processes run side by side (each is one
        interpreter importing its tree: one core each)."""
        with ThreadPoolExecutor(max_workers=2) as pool:
            up = pool.submit(self.upstream, upstream, env, commit)
            pr = pool.submit(run_probe, self.script, pruned, env, list(self.args), inputs=self.inputs)
            return up.result(), pr.result()


def _cli_probes(surface: dict) -> list[tuple[str, _Probe]]:
    pretend = surface.get("pretend")
    out = []
    for module in surface.get("cli", {}).get("modules", []):
        args, inputs = (("{out}", module, "{input:pretend}"), {"pretend": pretend}) if pretend else (("{out}", module), None)
        out.append((module, _Probe("cli_probe.py", f"cli-{module}", args, inputs)))
    return out


def _server_args_probe(surface: dict) -> _Probe | None:
    spec_data = surface.get("server_args")
    if not spec_data:
        return None
    model_dir = cli_surface.model_dir_for(DATA / spec_data["config"], paths.cache_dir() / "verify")
    spec = {"target": spec_data["target"], "model_dir": str(model_dir), "kwargs": spec_data.get("kwargs", {}),
            "pretend": surface.get("pretend")}
    return _Probe("serverargs_probe.py", "server-args", ("{input:spec}", "{out}"), {"spec": spec})


def _behaviour_probe(surface: dict) -> _Probe | None:
    if not surface.get("behaviour", {}).get("cases"):
        return None
    cases = behaviour.load_cases(surface["behaviour"]["cases"])
    return _Probe("behaviour_probe.py", "behaviour", ("{input:cases}", "{out}"), {"cases": cases})


def _removed_fields(pruned: SourceTree, upstream: SourceTree, surface: dict | None,
                    profile: str) -> tuple[dict[str, str], list[str]]:
    """ServerArgs fields the pruned tree dropped: why (the symbol rules' attribute table), and those
    no rule explains (see cli_surface.removed_fields)."""
    target = ((surface or {}).get("server_args") or {}).get("target")
    if not target:
        return {}, []
    from shrinker.symbols.rules import load_symbol_rules

    try:
        table = load_symbol_rules(profile).attribute_table(target)
    except ShrinkError:  # a profile without symbol rules: no table explains a removal
        table = None
    return cli_surface.removed_fields(upstream.root, pruned.root, target, table)


def _check_cli(pruned: SourceTree, upstream: SourceTree, env: VerifyEnv, commit: str | None, surface: dict,
               profile: str, rules: "Rules | None", removed: dict[str, str] | None = None) -> CheckResult:
    from shrinker.rules.load import load_rules

    version = _version(upstream)
    rules = rules or load_rules(profile)
    index = cli_surface.RuleIndex(rules, removed_modules(profile, version) if version else [],
                                  cli_surface.registry_keys(rules, upstream))
    findings, notes = [], []
    pretend = surface.get("pretend")
    counts = {"pretend_gpu": int(bool(pretend)), "options_upstream": 0, "options_pruned": 0, "choices_upstream": 0, "choices_pruned": 0}
    for module, probe in _cli_probes(surface):
        where = pruned.rel(module) if pruned.has(module) else module
        try:
            up, pr = probe.both(pruned, upstream, env, commit)
        except ProbeFailed as exc:
            findings.append(f"{where}:1 {exc}")
            continue
        diff = cli_surface.compare_help(module, up, pr, index, where, removed)
        findings += diff.findings
        notes += diff.explained
        counts["options_upstream"] += diff.options_upstream
        counts["options_pruned"] += diff.options_pruned
        counts["choices_upstream"] += diff.choices_upstream
        counts["choices_pruned"] += diff.choices_pruned
    findings, cuda = split_needs_cuda(findings, surface.get("needs_cuda", ()))
    counts.update({"removed_explained": len(notes), "unexplained": len(findings), "needs_cuda": len(cuda)})
    return CheckResult("cli", passed=not findings, counts=counts, findings=findings, notes=notes + cuda)


def split_needs_cuda(findings: list[str], signatures: Sequence[str]) -> tuple[list[str], list[str]]:
    """Findings whose error says "no GPU here" (verify data `needs_cuda`) become notes."""
    cuda = [f for f in findings if any(sig in f for sig in signatures)]
    return [f for f in findings if f not in cuda], [f"needs CUDA, not comparable on this machine: {f}" for f in cuda]


def _version(tree: SourceTree) -> str | None:
    pyproject = tree.root / "python" / "pyproject.toml"
    if pyproject.exists():
        return tomllib.loads(pyproject.read_text()).get("project", {}).get("version")
    return None


def _check_server_args(pruned: SourceTree, upstream: SourceTree, env: VerifyEnv, commit: str | None,
                       surface: dict, removed: tuple[dict[str, str], list[str]] = ({}, [])) -> CheckResult:
    probe = _server_args_probe(surface)
    if probe is None:
        return CheckResult("server_args", passed=True, skipped="no server_args in the verify data")
    spec_data, spec = surface["server_args"], probe.inputs["spec"]
    where = pruned.rel(spec["target"].partition(":")[0]) if pruned.has(spec["target"].partition(":")[0]) else spec["target"]
    try:
        up, pr = probe.both(pruned, upstream, env, commit)
    except ProbeFailed as exc:
        return CheckResult("server_args", passed=False, findings=[f"{where}:1 {exc}"])
    findings, notes, compared, equal = cli_surface.compare_server_args(up, pr, where, spec_data.get("differ", {}),
                                                                       removed[0])
    findings += [f"{where}:1 {text}" for text in removed[1]]
    findings, cuda = split_needs_cuda(findings, surface.get("needs_cuda", ()))
    return CheckResult("server_args", passed=not findings,
                       counts={"pretend_gpu": int(bool(spec["pretend"])), "fields_upstream": len(up.get("fields", {})),
                               "fields_pruned": len(pr.get("fields", {})), "fields_compared": compared,
                               "fields_equal": equal, "differences": len(findings), "needs_cuda": len(cuda)},
                       findings=findings, notes=notes + cuda)


def _check_behaviour(pruned: SourceTree, upstream: SourceTree, env: VerifyEnv, commit: str | None,
                     surface: dict) -> CheckResult:
    probe = _behaviour_probe(surface)
    if probe is None:
        return CheckResult("behaviour", passed=True, skipped="no behaviour cases in the verify data")
    try:
        up, pr = probe.both(pruned, upstream, env, commit)
    except ProbeFailed as exc:
        return CheckResult("behaviour", passed=False, findings=[f"behaviour:1 {exc}"])
    findings, counts = behaviour.compare_cases(up, pr, "behaviour")
    counts["differences"] = len(findings)
    return CheckResult("behaviour", passed=not findings, counts=counts, findings=findings)
