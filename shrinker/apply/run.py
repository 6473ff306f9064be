"""Apply batches to the work tree: delete files, run codemods, gate, then commit or roll back."""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from shrinker import paths
from shrinker.apply.deferral import defer_dead_functions
from shrinker.rules.predicates import PredicateTable, attribute_vocabulary, feature_class_globs
from shrinker.rules.patterns import pure_ast_calls
from shrinker.apply.gate import GateResult, missing_names, run_gate, unresolved_imports
from shrinker.apply.worktree import (applied_batches, commit_all, keep_on_branch, mark_stopped, open_symbol_batch,
                                     open_worktree, roll_back)
from shrinker.apply.platform_references import PlatformReferences, model_references, platform_references
from shrinker.codemods.constant_calls import constant_words
from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.pipeline import FileItem, transform_files
from shrinker.console import console
from shrinker.errors import ShrinkError
from shrinker.graph.constant_functions import called_methods, constant_functions
from shrinker.graph.constant_parameters import ConstantParameters, constant_parameters
from shrinker.graph.returned_literals import returned_literals
from shrinker.graph.unset_attributes import unset_attributes
from shrinker.graph.discover import module_of
from shrinker.graph.parse import count_lines
from shrinker.graph.sources import method_definitions, name_table, python_sources, single_file_words
from shrinker.plan.run import load_batches
from shrinker.rules.load import load_rules
from shrinker.upstream import load
from shrinker.upstream.distributions import prefetch_index


@dataclass
class BatchOutcome:
    number: int
    name: str
    files_deleted: int = 0
    files_edited: int = 0
    lines_removed: int = 0
    gate: str = "not run"
    commit: str = ""
    seconds: float = 0.0
    codemods: dict = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    diff: str = ""
    symbol_pass: int = 0  # a symbol batch's pass (1, 2 ...); 0 for a file batch
    tree_lines: int = 0  # non-blank Python lines of the tree once committed
    deferred: list[str] = field(default_factory=list)  # findings a later dead-symbol batch settles (deferral.py)


def python_lines(tree: Path) -> int:
    return sum(count_lines(text) for _, text in python_sources(tree))


def batch_class_globs(rules, batch: dict) -> list[str]:
    """The class globs the batch's class codemods remove: rules.platform.classes in a platform batch
    (remove_platform_classes), [[features]].classes in a features batch (remove_feature_classes)."""
    names = {e["name"] for e in batch["codemods"]}
    globs = list(rules.platform.classes) if "remove_platform_classes" in names else []
    if "remove_feature_classes" in names:
        globs += feature_class_globs(rules)
    return globs


def platform_classes_by_module(tree: Path, globs: list[str]) -> dict[str, frozenset[str]]:
    """Kept module -> the module-level classes in it that `globs` names (text scan of the tree)."""
    from shrinker.codemods.platform_classes import platform_classes_defined
    from shrinker.rules.predicates import MethodNames

    if not globs:
        return {}
    names = MethodNames(globs)
    found = ((rel, platform_classes_defined(text, names)) for rel, text in python_sources(tree))
    return {module_of(rel): frozenset(classes) for rel, classes in found if classes}


def removed_through(plan: dict, number: int, tree: Path, class_globs: list[str] = ()) -> Removed:
    """What batches 1..number remove, with the cross-file facts the codemods read."""
    from shrinker.codemods.removed_imports import lost_names_from_facts
    from shrinker.codemods.unused_names import imported_names_from_facts
    from shrinker.graph.build import build_graph
    from shrinker.graph.sources import tree_source_reader
    from shrinker.graph.reexports import import_origins

    modules = {module_of(p) for b in plan["batches"][:number] for p in b["delete"]}
    modules.discard("")
    keys = {k: frozenset(v) for k, v in plan.get("removed_registry_keys", {}).items()}
    removed = Removed(modules=frozenset(modules), registry_keys=keys,
                      reexports=plan.get("reexports_of_removed", {}))
    graph = build_graph(tree)  # cached: only files edited so far re-parse
    facts = list(graph.facts.values())
    # the batch's class codemods drop these classes (batch_class_globs); their importers follow
    seed = platform_classes_by_module(tree, list(class_globs))
    removed.names = lost_names_from_facts(facts, removed, seed)
    removed.imported = imported_names_from_facts(facts, removed, tree_source_reader(tree, graph.module_path))
    removed.origins = import_origins(facts)
    return removed


def _folds(batch: dict) -> bool:
    """The batch runs a folding codemod (the only readers of single_file_words)."""
    return any(e["name"] in ("fold_platform", "fold_features") for e in batch["codemods"])


def plan_digest(plan: dict) -> str:
    """A short hash of the plan a batch was applied from: a changed plan needs --reset."""
    import hashlib

    return hashlib.sha256(json.dumps(plan, sort_keys=True).encode()).hexdigest()[:16]


def _check_same_plan(repo, plan: dict) -> None:
    digest = plan_digest(plan)
    for commit in repo.iter_commits("HEAD"):
        if commit.summary.startswith("shrink: batch ") and f"Plan: {digest}" not in commit.message:
            raise ShrinkError("the plan changed since the applied batches were made: use --reset")


def _deleted_after(plan: dict, number: int) -> set[str]:
    return {p for b in plan["batches"][number:] for p in b["delete"]}


def gate_findings(findings: list[str], rel: str, tree: Path, later: set[str]) -> list[str]:
    """A codemod's findings for one file as the gate weighs them: none for a file a later batch
    deletes (like the gate's import checks), and paths relative to the tree (reports name no machine)."""
    if rel in later:
        return []
    return [f.replace(f"{tree}/", "") for f in findings]


def _importers_of_lost_names(tree: Path, removed: Removed) -> list[str]:
    """Kept files that take a name some kept module no longer provides (a re-export of removed code)."""
    from shrinker.graph.build import build_graph

    if not removed.names:
        return []
    g = build_graph(tree)
    out = set()
    for facts in g.facts.values():
        for imp in facts.imports:
            if imp.is_from and set(imp.names) & removed.names.get(imp.target, frozenset()):
                out.add(facts.path)
    return sorted(out)


def _codemod_work(batch: dict, tree: Path, extra: list[str] = ()) -> dict[tuple[str, ...], list[str]]:
    """Group target files by the exact codemod list they get (one pipeline run per group)."""
    per_file: dict[str, list[str]] = defaultdict(list)
    for entry in batch["codemods"]:
        for path in entry["files"]:
            if (tree / path).exists():
                per_file[path].append(entry["name"])
    # Importers of lost names get the import codemods too, in the batch's own order.
    wanted = [n for n in (e["name"] for e in batch["codemods"]) if n in ("remove_dead_imports", "remove_unused_names")]
    for path in extra:
        if (tree / path).exists():
            per_file[path].extend(n for n in wanted if n not in per_file[path])
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for path, names in per_file.items():
        groups[tuple(names)].append(path)
    return groups


def batch_table(rules, batch: dict, removed: Removed):
    """The predicates a batch folds: a features batch folds the feature decisions alone (the platform's
    fold in their own batch), every other batch the platform's; every batch knows the architectures
    the plan removes (a test for one of them is False)."""
    from shrinker.rules.predicates import profile_table, without_predicates

    if batch.get("features"):
        return profile_table(rules, removed.registry_keys, without_predicates(rules.platform), rules.features)
    return profile_table(rules, removed.registry_keys)


def apply_one(repo, tree: Path, plan: dict, number: int, rules, *, jobs: int, dry_run: bool,
              baseline: set, use_verify: bool, name_baseline: set = frozenset(),
              upstream_root: Path | None = None, keep_failed: bool = False) -> BatchOutcome:
    batch = plan["batches"][number - 1]
    outcome = BatchOutcome(number, batch["name"])
    start = time.perf_counter()
    before = {p: count_lines((tree / p).read_text(errors="replace")) for p in batch["delete"]
              if p.endswith(".py") and (tree / p).exists()}
    for path in batch["delete"]:
        target = tree / path
        if target.exists():
            target.unlink()
            outcome.files_deleted += 1
    removed = removed_through(plan, number, tree, batch_class_globs(rules, batch))
    folds = _folds(batch)
    inputs = tree_inputs(tree, rules, removed, batch_table(rules, batch, removed), folds=folds)
    failures, findings = [], []
    later = _deleted_after(plan, number)
    work = _codemod_work(batch, tree, _importers_of_lost_names(tree, inputs.removed))
    edited_removed = run_codemods(work, tree, inputs, number, outcome, failures, findings, later, jobs=jobs)
    if folds:
        # A function the fold just made constant (`return is_hip() and ...` -> `return False`) folds at the
        # call sites of every module in a second round, which reads the tables of the folded tree; so does an
        # attribute whose literals the fold just narrowed (`self.chat_encoding_spec` without "kimi_k3").
        # Bool attributes and constant parameters take new files into the round only in the plan's last folding
        # batch (the platform batch, whose codemods take a platform's definitions and their users together):
        # folded earlier, a module would lose a HIP-only definition while its user waits for that batch
        # (0.5.17's sgl_kernel `gelu_quick`, imported by a ROCm fused op's backend method).
        last = number == max(i for i, b in enumerate(plan["batches"], 1) if _folds(b))
        edited_removed += run_codemods(_constant_call_work(batch, tree, inputs, last), tree, inputs, number,
                                        outcome, failures, findings, later, jobs=jobs, label="constant calls: ")
        if last:  # a parameter that round's fold left unread leaves its signature and every call
            inputs.constant_parameters = tree_constant_parameters(tree, rules)
            edited_removed += run_codemods(parameter_work(tree, inputs.constant_parameters), tree, inputs, number,
                                            outcome, failures, findings, later, jobs=jobs,
                                            label="constant parameters: ")
    outcome.lines_removed = sum(before.values()) + edited_removed
    return gate_and_commit(repo, tree, plan, number, rules, outcome, failures, findings,
                           f"shrink: batch {number} — {batch['name']}", start, dry_run=dry_run, baseline=baseline,
                           use_verify=use_verify, name_baseline=name_baseline, upstream_root=upstream_root,
                           keep_failed=keep_failed)


def tree_inputs(tree: Path, rules, removed: Removed, table: PredicateTable, *, folds: bool,
                literals: bool = False) -> CodemodInputs:
    """The codemods' inputs read from the tree as it stands: the method tables every batch uses and, for a
    folding run (`folds`), the cross-file tables the fold reads (and the literal tables when `literals`)."""
    methods = method_definitions(tree)
    words = single_file_words(tree) if folds else None
    functions = constant_functions(tree, pure_ast_calls(rules.platform.pure_methods)) if folds else None
    return CodemodInputs(rules=rules, removed=removed, defined_methods=frozenset(methods),
                         shared_methods=frozenset(n for n, c in methods.items() if c > 1),
                         table=table,
                         single_file_words=words,
                         unset_attributes=unset_attributes(tree, words) if folds else None,
                         backend_methods=(name_table(tree, rules.platform.backend_methods)
                                          if rules.platform.backend_methods else None),
                         constant_functions=functions,
                         called_methods=(called_methods(tree, functions, attribute_vocabulary(rules).search)
                                         if functions is not None else None),
                         returned_literals=returned_literals(tree) if folds and literals else None,
                         constant_parameters=tree_constant_parameters(tree, rules) if folds else None)


def tree_constant_parameters(tree: Path, rules) -> ConstantParameters:
    """The tree's constant parameters (graph/constant_parameters) among those named for another platform or
    model family (the profile's vocabulary, or a platform predicate's name: `is_cpu`): only those, since code
    outside the tree may call a public function with any value."""
    vocabulary = attribute_vocabulary(rules)
    predicates = frozenset(p.name for p in rules.platform.predicates)
    return constant_parameters(tree, lambda name: name in predicates or vocabulary.search(name) is not None)


def _constant_call_work(batch: dict, tree: Path, inputs: CodemodInputs, last: bool = True
                        ) -> dict[tuple[str, ...], list[str]]:
    """The second round of a folding batch: the files that call a function of the folded tree's constant
    functions and the modules whose attributes hold known literals (graph/returned_literals) get the batch's
    fold and import codemods again (inputs now hold those tables). In the `last` folding batch also the modules
    of attributes holding one bool and of functions with constant parameters (graph/constant_parameters), and
    the files calling a function whose constant parameters are unread already (they leave it)."""
    inputs.constant_functions = constant_functions(tree, pure_ast_calls(inputs.rules.platform.pure_methods))
    inputs.called_methods = called_methods(tree, inputs.constant_functions, attribute_vocabulary(inputs.rules).search)
    inputs.returned_literals = returned_literals(tree)
    inputs.constant_parameters = tree_constant_parameters(tree, inputs.rules) if last else None
    # A call of a function that returns None takes no file into this round: 0.5.23 has some in 270 files, and
    # their platform codemods would run here before the platform batch (batch 3 took rocm_linear_utils' aiter
    # import while forward_mla_rocm still imported from it). The symbol batch's refold folds them everywhere.
    words = constant_words(inputs, none=False)
    attributes = inputs.returned_literals.attributes
    modules = {m for m, table in attributes.items()
               if last or any(not isinstance(v, bool) for values in table.values() for v in values)}
    unread: list[str] = []
    if inputs.constant_parameters is not None:
        modules |= inputs.constant_parameters.folding_modules()
        unread = sorted(inputs.constant_parameters.unread())
    if not words and not modules and not unread:
        return {}
    calls = re.compile(r"\b(?:%s)\s*\(" % "|".join(map(re.escape, words))) if words else None
    callers = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, unread))) if unread else None
    files = sorted(rel for rel, text in python_sources(tree)
                   if (calls is not None and calls.search(text)) or module_of(rel) in modules
                   or (callers is not None and callers.search(text)))
    wanted = ("fold_platform", "fold_features", "remove_dead_imports", "remove_unused_names")
    names = tuple(e["name"] for e in batch["codemods"] if e["name"] in wanted) + (
        ("remove_constant_parameters",) if unread else ())
    return {names: files} if files else {}


def parameter_work(tree: Path, table: ConstantParameters) -> dict[tuple[str, ...], list[str]]:
    """The files that define or call a function whose constant parameters nothing reads any more."""
    unread = table.unread()
    if not unread:
        return {}
    calls = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(unread))))
    files = sorted(rel for rel, text in python_sources(tree) if calls.search(text))
    return {("remove_constant_parameters",): files} if files else {}


def run_codemods(work: dict[tuple[str, ...], list[str]], tree: Path, inputs: CodemodInputs, number: int,
                  outcome: BatchOutcome, failures: list[str], findings: list[str], later: set[str], *, jobs: int,
                  label: str = "", finding_files: set[str] | None = None) -> int:
    """Run each group of codemods on its files and write the results (counted in `outcome` under `label`
    and the group's names); the lines the edits removed. `finding_files` collects the tree-relative paths of
    the files whose codemods reported a finding."""
    edited_removed = 0
    for names, files in sorted(work.items()):
        items = [FileItem(path=str(tree / p), module=module_of(p)) for p in sorted(files)]
        results = transform_files(items, inputs, list(names), jobs=jobs,
                                  description=f"batch {number}: {label}{'+'.join(names)}")
        for res in results:
            rel = Path(res.path).relative_to(tree).as_posix()
            stats = outcome.codemods.setdefault(label + "+".join(names), {"files": 0, "success": 0, "failure": 0, "skip": 0})
            stats["files"] += 1
            stats[res.status] += 1
            if res.status == "failure":
                failures.append(f"{rel}: {res.error}")
            weighed = gate_findings(res.findings, rel, tree, later)
            findings.extend(weighed)
            if finding_files is not None and weighed:
                finding_files.add(rel)
            if res.status == "success":
                old = count_lines(Path(res.path).read_text(errors="replace"))
                Path(res.path).write_text(res.code)
                edited_removed += old - count_lines(res.code)
                outcome.files_edited += 1
    return edited_removed


def gate_and_commit(repo, tree: Path, plan: dict, number: int, rules, outcome: BatchOutcome,
                    failures: list[str], findings: list[str], subject: str, start: float, *, dry_run: bool,
                    baseline: set, use_verify: bool, name_baseline: set = frozenset(),
                    upstream_root: Path | None = None, keep_failed: bool = False) -> BatchOutcome:
    """Gate the tree's uncommitted state: commit it as `subject` when it passes, else roll back."""
    gate: GateResult = run_gate(tree, [rules.profile.package, *rules.profile.extra_packages], failures,
                                findings, baseline, later=_deleted_after(plan, number), use_verify=use_verify,
                                name_baseline=name_baseline, upstream_root=upstream_root, rules=rules)
    from shrinker.apply.symbol_batch import is_symbol_batch

    if not gate.passed and any(is_symbol_batch(b) for b in plan["batches"][number:]):
        standing, outcome.deferred = defer_dead_functions(gate.findings, tree, _deleted_after(plan, number),
                                                          PredicateTable(rules.platform))
        gate.findings, gate.passed = standing, not standing
    outcome.findings = gate.findings
    outcome.seconds = round(time.perf_counter() - start, 2)
    if dry_run:
        outcome.diff = repo.git.diff()
        outcome.gate = "passed" if gate.passed else "failed"
        roll_back(repo)
        return outcome
    if gate.passed:
        outcome.gate = "passed"
        message = (f"{subject}\n\n"
                   f"deleted {outcome.files_deleted} files, edited {outcome.files_edited}, "
                   f"removed {outcome.lines_removed} non-blank Python lines; gate passed\n\n"
                   f"Plan: {plan_digest(plan)}")
        outcome.commit = commit_all(repo, message)
        outcome.tree_lines = python_lines(tree)
    else:
        outcome.gate = "failed"
        if keep_failed:  # inspection aid: the failed state is kept on a side branch, the tree still rolls back
            outcome.commit = keep_on_branch(repo, f"failed/batch-{number}", f"shrink: failed batch {number}")
        roll_back(repo)
    return outcome


def _write_batch_failure(report_dir: Path, outcome: BatchOutcome) -> Path:
    path = report_dir / f"batch-{outcome.number}.md"
    lines = [f"# Batch {outcome.number} ({outcome.name}): gate failed, rolled back", "",
             "The work tree stays at the previous commit. Failing checks:", ""]
    lines += [f"- {f}" for f in outcome.findings[:500]]
    if len(outcome.findings) > 500:
        lines.append(f"- ... and {len(outcome.findings) - 500} more")
    path.write_text("\n".join(lines) + "\n")
    return path


def nothing_dead(repo, tree: Path, plan: dict, number: int) -> BatchOutcome:
    """A symbol batch whose first pass finds nothing: an empty commit, so the batch counts as applied."""
    outcome = BatchOutcome(number, f"{plan['batches'][number - 1]['name']} (nothing dead)", gate="passed")
    outcome.commit = commit_all(repo, f"shrink: batch {number} — {outcome.name}\n\nPlan: {plan_digest(plan)}")
    outcome.tree_lines = python_lines(tree)
    return outcome


def _references_section(title: str, references: PlatformReferences, allowed_by: str) -> list[str]:
    lines = ["", f"{title}: {len(references.code)} lines in {references.files} files; "
                 f"{references.comment_lines} comment lines name one too, and {references.prose_lines} code lines "
                 "only in prose (a help text's or message's words)."]
    if references.code:
        lines += ["", "<details><summary>the lines</summary>", ""]
        lines += [f"- `{path}:{number}` `{text[:120]}`" for path, number, text in references.code]
        lines += ["", "</details>"]
    if references.allowed:
        lines += ["", f"Allowed by the rules ({allowed_by}), {sum(map(len, references.allowed.values()))} "
                      "lines, not counted above:"]
        lines += [f"- {len(found)} lines: {reason}" for reason, found in sorted(references.allowed.items())]
    return lines


def _write_apply_report(report_dir: Path, outcomes: list[dict], upstream_lines: int, tree_lines: int,
                        spec: str, requirements: dict | None = None,
                        references: PlatformReferences | None = None,
                        models: PlatformReferences | None = None) -> None:
    removed = upstream_lines - tree_lines
    data = {"upstream": spec, "batches": outcomes, "requirements": requirements,
            "totals": {"upstream_python_lines": upstream_lines, "tree_python_lines": tree_lines,
                       "removed_lines": removed,
                       "removed_fraction": round(removed / upstream_lines, 4) if upstream_lines else 0.0}}
    if references is not None:
        data["platform_references"] = references.to_json()
    if models is not None:
        data["model_references"] = models.to_json()
    (report_dir / "apply.json").write_text(json.dumps(data, indent=1) + "\n")
    lines = [f"# Apply: {spec}", "",
             f"Non-blank Python lines: upstream {upstream_lines:,}, work tree {tree_lines:,}, removed {removed:,} "
             f"({100 * removed / upstream_lines if upstream_lines else 0.0:.1f} %).", "",  # not the rounded fraction
             "| # | batch | deleted | edited | lines removed | removed after it | gate | commit | seconds |",
             "|---:|---|---:|---:|---:|---:|---|---|---:|"]
    for o in outcomes:
        after = o.get("tree_lines") or 0
        share = f"{100 * (upstream_lines - after) / upstream_lines:.1f} %" if after and upstream_lines else ""
        lines.append(f"| {o['number']} | {o['name']} | {o['files_deleted']} | {o['files_edited']} | "
                     f"{o['lines_removed']:,} | {share} | {o['gate']} | {o['commit'][:10]} | {o['seconds']} |")
    for o in outcomes:
        if o.get("deferred"):
            lines += ["", f"Batch {o['number']}: {len(o['deferred'])} findings deferred to the dead-symbol batch "
                          "(inside functions nothing references; `shrinker/apply/deferral.py`):",
                      *[f"- {d}" for d in o["deferred"]]]
    tables: dict[str, list[str]] = {}
    for o in outcomes:
        for table, names in (o.get("codemods") or {}).get("table entries removed", {}).items():
            tables.setdefault(table, []).extend(names)
    for table, names in sorted(tables.items()):
        lines += ["", f"Entries of `{table}` no kept code reads, removed by the dead-symbol batch "
                      f"(rules: attribute_tables), {len(names)}: " + ", ".join(f"`{n}`" for n in sorted(names)) + "."]
    if requirements:
        lines += ["", f"Requirements (`python/pyproject.toml` [project].dependencies, final step): "
                      f"{requirements['kept']} kept, {len(requirements['dropped'])} dropped "
                      f"({', '.join(requirements['dropped']) or 'none'}; {requirements['dropped_mb']} MB installed, "
                      f"{requirements['freed_mb']} MB with the dependencies they alone pull in); gate "
                      f"{requirements['gate']}{', commit ' + requirements['commit'][:10] if requirements['commit'] else ''}"
                      f" (`requirements.md`)."]
    if references is not None:
        lines += _references_section("Platform references left (code lines naming another platform by the rules' "
                                     "vocabulary, `shrinker/apply/platform_references.py`)", references,
                                     "[[platform.allowed]]")
    if models is not None:
        lines += _references_section("Other model families named (code lines naming a family of the rules' "
                                     "[architectures].other_families)", models, "[[architectures.allowed]]")
    (report_dir / "apply.md").write_text("\n".join(lines) + "\n")


def _write_kernel_report(report_dir: Path, profile: str, upstream, rules, tree: Path) -> None:
    """kernels.md again, with what the work tree holds once every batch is applied."""
    from shrinker.plan.kernel_report import write_kernel_report
    from shrinker.plan.kernels import read_manifest

    manifest_dir = paths.manifests_dir(profile, upstream.version)
    kernels, keep = manifest_dir / "kernels.txt", manifest_dir / "keep.txt"
    if not kernels.exists() or not keep.exists():
        return
    kept = {line.split("\t", 1)[0] for line in keep.read_text().splitlines() if line and not line.startswith("#")}
    write_kernel_report(report_dir, upstream.spec, read_manifest(kernels.read_text()), upstream.root,
                        rules.kernels.packages, kept, tree)


def apply_batches(profile: str = "deepseek", *, batch: int | None = None, all_batches: bool = False,
                  dry_run: bool = False, reset: bool = False, jobs: int = 2,
                  use_verify: bool = True, spec: str | None = None,
                  keep_failed: bool = False, rules=None) -> list[BatchOutcome]:
    """`rules`: the rules the plan used, when not the profile's file (a regen step's, moves followed)."""
    from shrinker.apply.requirements_step import apply_requirements
    from shrinker.apply.symbol_batch import apply_symbol_batch, is_symbol_batch

    upstream = load(spec)
    rules = rules or load_rules(profile)
    plan = load_batches(profile, upstream.version)
    tree = paths.work_tree_dir(profile, upstream.version)
    repo = open_worktree(tree, upstream.root, upstream.commit, reset=reset)
    done = applied_batches(repo)
    if done:
        _check_same_plan(repo, plan)
    total = len(plan["batches"])
    # a symbol batch whose later pass failed: its committed passes stay, it resumes at the next one
    resume = open_symbol_batch(repo) if done else None
    first_pass = {resume[0]: resume[1]} if resume else {}
    if resume:
        done = done[:-1]
    if all_batches:
        todo = list(range(len(done) + 1, total + 1))
    elif batch is not None:
        if batch < 1 or batch > total:
            raise ShrinkError(f"no batch {batch}: the plan has batches 1..{total}")
        if batch in done:
            raise ShrinkError(f"batch {batch} is already applied (applied: {done}); use --reset to start over")
        if batch != len(done) + 1:
            raise ShrinkError(f"batch {batch} needs batches 1..{batch - 1} applied first (applied: {done or 'none'})")
        todo = [batch]
    else:
        if reset:
            return []
        raise ShrinkError("say which: --batch N, --all, or --reset")
    report_dir = paths.reports_dir(profile, upstream.version)
    report_dir.mkdir(parents=True, exist_ok=True)
    prefetch_index(upstream.root, rules.requirements.target)  # the gates and the requirements step read it
    packages = [rules.profile.package, *rules.profile.extra_packages]
    baseline = set(unresolved_imports(upstream.root, packages))
    name_baseline = set(missing_names(upstream.root, packages))
    outcomes: list[BatchOutcome] = []
    gate = dict(baseline=baseline, use_verify=use_verify, name_baseline=name_baseline,
                upstream_root=upstream.root, keep_failed=keep_failed)
    renamed: dict[str, str] = {}  # a stopped batch's newest pass: its commit before the trailer -> after
    for number in todo:
        first = first_pass.get(number, 1)
        resumed = f" (resumed at pass {first})" if first > 1 else ""
        console.print(f"[bold]batch {number}[/] {plan['batches'][number - 1]['name']}{resumed} ...")
        if is_symbol_batch(plan["batches"][number - 1]):
            done_now = apply_symbol_batch(repo, tree, plan, number, rules, jobs=jobs, dry_run=dry_run,
                                          first_pass=first, **gate)
            if not done_now and not dry_run and first == 1:  # nothing dead at all: an empty commit marks it
                done_now = [nothing_dead(repo, tree, plan, number)]
            if (not dry_run and done_now and done_now[-1].gate == "failed"
                    and repo.head.commit.summary.startswith(f"shrink: batch {number} ")):
                old, new = mark_stopped(repo)  # its passes so far stay committed; the next run resumes it
                renamed[old] = new
                for o in done_now:
                    o.commit = new if o.commit == old else o.commit
        else:
            done_now = [apply_one(repo, tree, plan, number, rules, jobs=jobs, dry_run=dry_run, **gate)]
        outcomes.extend(done_now)
        if not dry_run and done_now and done_now[-1].gate == "passed":
            (report_dir / f"batch-{number}.md").unlink(missing_ok=True)  # an earlier run's failure, now stale
        if done_now and done_now[-1].gate == "failed" and not dry_run:
            _write_batch_failure(report_dir, done_now[-1])
            break
    requirements = None
    failed = any(o.gate == "failed" for o in outcomes)
    if not dry_run and not failed and applied_batches(repo) == list(range(1, total + 1)):
        console.print("[bold]requirements[/] python/pyproject.toml ...")
        requirements = apply_requirements(repo, tree, upstream.root, rules, report_dir, jobs=jobs,
                                          use_verify=use_verify, baseline=baseline, name_baseline=name_baseline)
        console.print(f"requirements: kept {requirements.kept}, dropped {len(requirements.dropped)} "
                      f"({requirements.dropped_mb} MB), gate {requirements.gate} {requirements.commit[:10]} "
                      f"{requirements.note}")
    if not dry_run:
        old = report_dir / "apply.json"
        old_data = json.loads(old.read_text()) if old.exists() and not reset else {}
        previous = {(b["number"], b.get("symbol_pass", 0)): b for b in old_data.get("batches", [])}
        for b in previous.values():  # a pass of an earlier run whose commit took the STOPPED trailer now
            b["commit"] = renamed.get(b.get("commit", ""), b.get("commit", ""))
        for o in outcomes:
            key = (o.number, o.symbol_pass)
            previous[key] = {k: v for k, v in asdict(o).items() if k not in ("diff", "findings")}
            previous[key]["findings"] = len(o.findings)
        applied = applied_batches(repo)
        kept = [previous[k] for k in sorted(previous) if k[0] in applied or previous[k]["gate"] == "failed"]
        req = requirements.to_json() if requirements is not None else old_data.get("requirements")
        complete = applied == list(range(1, total + 1))
        _write_apply_report(report_dir, kept, python_lines(upstream.root), python_lines(tree), upstream.spec,
                            req if complete else None, platform_references(tree, rules) if complete else None,
                            model_references(tree, rules) if complete else None)
        if complete:
            _write_kernel_report(report_dir, profile, upstream, rules, tree)
    return outcomes
