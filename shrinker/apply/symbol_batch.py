"""A symbol batch: remove what the symbol graph finds dead, pass after pass, each pass gated and committed.

A pass analyses the tree as the batches before it left it (shrinker/symbols/graph.py), runs the
batch's codemods (`remove_dead_symbols`, then `remove_unused_names`) on the modules with dead
symbols, gates the result like any batch and commits it as `shrink: batch N — <name> (pass k)`.
When the graph finds nothing dead or a pass changes no file, the pass refolds instead (apply/refold.py:
the platform fold over every kept file, with the tables of the tree as the passes left it; committed as
`(pass k: refold)`) and the passes go on, at most MAX_REFOLDS times; the loop stops when a refold changes
nothing (it commits nothing), when a pass finds nothing after the last refold allowed (then, if passes removed
code after the refold, the refold's work runs once more over the files naming an enum with members of another
platform or no producer, committed as `(pass k: enum members)`, and the passes go on: a removed function may
have been a member's last producer; when they settle again, the refold's parameter step runs alone, committed
as `(pass k: parameters)`: a removed caller may have been the last to pass another value), or when a pass fails
its gate (it is rolled back; the passes before it stay committed, each having passed its own gate, and
apply/run.py marks the newest of them so that the next run resumes the batch at the failed pass).

After a pass's symbol removal, modules the plan's reachability (same rules: roots, registries, strings,
rules' pins) no longer reaches from the roots go too, in the same pass: a removed function was often
their last importer. So do modules only an inventory record still names (`register_kernel(KernelSpec(
target="m:f"))` of an op whose last lookup the pass removed: 0.5.23's `qwen38_qsa_sm121_varlen`), as in
the file batches. So do config modules of a removed package_exports key and modules kept code only tests
isinstance against (`_only_tested_against`): a fold of an earlier batch often removed the use that kept them.
Their kept importers (a TYPE_CHECKING or try/except import, a guarded one, the module holding such a record, a
package re-exporting the module's names and that package's importers) get `prune_records` + `prune_registries`
+ `fold_platform` (a test of a removed class folds with its branch) + `remove_dead_imports` +
`remove_unused_names`, again while that leaves more modules unreachable; a round of the config/isinstance
modules that leaves a name still used is put back and they stay (`ModuleCut.kept`). The import
graph is the one the gate builds anyway (cached by content), so this costs the reachability pass only (~0.5 s).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from shrinker.apply.refold import refold, refold_members, unread_parameters
from shrinker.apply.run import BatchOutcome, gate_and_commit
from shrinker.graph.discover import module_of
from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.pipeline import FileItem, transform_files
from shrinker.graph.parse import count_lines
from shrinker.graph.sources import python_sources
from shrinker.errors import ShrinkError
from shrinker.plan.batches import SYMBOL_CODEMOD, symbol_rules_file
from shrinker.symbols.fixpoint import run_pass
from shrinker.symbols.rules import SymbolRules, load_symbol_rules

MAX_PASSES = 10  # the v0.5.16 tree converges in 2-3; a bound so a codemod bug cannot loop forever
MAX_REFOLDS = 1  # refold passes (apply/refold.py): each costs a fold of every kept file (~4 min on 2 cores);
# a second refold found nothing on 0.5.17


def is_symbol_batch(batch: dict) -> bool:
    return any(e["name"] == SYMBOL_CODEMOD for e in batch["codemods"])


def planned_symbol_rules(batch: dict, rules) -> SymbolRules:
    """The symbol rules the plan hashed; edited since, they need a new plan (and so --reset)."""
    path = symbol_rules_file(rules)
    if path is None or not path.exists():
        raise ShrinkError(f"batch {batch['number']} ({batch['name']}) needs symbol rules: no {path}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != batch.get("symbols", {}).get("sha256"):
        raise ShrinkError(f"{path.name} changed since the plan was made: run `shrink plan`, then apply --reset")
    return load_symbol_rules(path=path)


# What the plan's decisions call a module no kept code reaches: no edge at all, or only an inventory
# record whose key nobody looks up (the record goes with it, prune_records).
_UNREACHED = ("unreachable", "inventory")


def _only_tested_against(decision, exports: frozenset[str]) -> bool:
    """A module the plan cuts for a removed package_exports key (a config class of a removed model: its
    package's re-export goes) or because kept code only tests isinstance against its classes (the tests fold
    to False). An earlier batch's fold often removed the use that kept it in the plan: 0.5.23's
    configs/bailing_hybrid stayed for model_config's is_bailing_multi_gate_enabled call, folded in batch 1."""
    return decision.code == "isinstance" or (decision.code == "registry" and decision.rule in exports)


def unreachable_modules(tree: Path, rules, jobs: int
                        ) -> tuple[list[str], dict[str, frozenset[str]], frozenset[str]]:
    """Tree paths of .py modules the plan's reachability, run on `tree`, finds unreachable from the roots
    (with the data files of a package that goes whole), the registry keys it removes (the inventory
    records of those keys go with their modules), and which of the paths only `_only_tested_against` chose."""
    from shrinker.graph.build import build_graph
    from shrinker.plan.decide import decide
    from shrinker.plan.reach import compute_reach, first_rule

    graph = build_graph(tree, jobs=jobs)
    # keep rules that hold a module only while kept code imports it judge nothing here (while_imported)
    held = [r for r in rules.keep if r.while_imported]
    if held:
        rules = rules.model_copy(update={"keep": [r for r in rules.keep if not r.while_imported]})
    reach = compute_reach(graph, rules, strict=False)  # lenient: a rule's target may be gone by now
    decisions, _ = decide(graph, reach, rules)
    exports = frozenset(f"registry:{r.name}" for r in rules.registries if r.kind == "package_exports")
    gone = [d for d in decisions if not d.keep and d.path.endswith(".py")]
    tested = {d.path for d in gone if _only_tested_against(d, exports)}
    paths = {d.path for d in gone if d.code in _UNREACHED} | tested
    if held:
        # such a module goes however the plan would remove it (0.5.23's models/llama: a removed architecture's
        # EntryClass), once no kept module imports it
        kept = {module_of(d.path) for d in decisions if d.keep}
        paths |= {d.path for d in gone if first_rule(held, module_of(d.path))
                  and not any(u in kept for u, _ in graph.importers(module_of(d.path)))}
    # a package that goes whole takes its data files (0.5.23's qwen38_qsa_sm121/README.md)
    packages = tuple(p.removesuffix("__init__.py") for p in paths if p.endswith("/__init__.py"))
    paths |= {d.path for d in decisions if not d.keep and d.path.startswith(packages)} if packages else set()
    return sorted(paths), {k: frozenset(v) for k, v in reach.registries.removed_keys.items()}, frozenset(tested)


@dataclass
class ModuleCut:
    deleted: list[str] = field(default_factory=list)
    lines: int = 0  # non-blank lines deleted and edited away
    edited: int = 0
    failures: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # `_only_tested_against` modules whose cut would break a use
    originals: dict[Path, bytes] = field(default_factory=dict, repr=False)  # what a round changed, as it was

    def restore(self) -> None:
        for path, data in self.originals.items():
            path.write_bytes(data)


MAX_CUT_ROUNDS = 5  # 0.5.23 needs 1-2: an importer's folded test may leave another module unreachable


def delete_unreachable(tree: Path, rules, jobs: int) -> ModuleCut:
    """Delete the unreachable modules, then drop the imports of them their kept importers still hold; again
    while that leaves more unreachable (a folded `isinstance` test was the last use of another import)."""
    cut = ModuleCut()
    kept: set[str] = set()
    for _ in range(MAX_CUT_ROUNDS):
        deleted, removed_keys, tested = unreachable_modules(tree, rules, jobs)
        deleted = [p for p in deleted if p not in kept]
        if not deleted:
            break
        one = _cut(tree, rules, jobs, deleted, removed_keys)
        if (one.failures or one.findings) and tested & set(deleted):
            # a use the plan's view misses (a call of a class imported through the package): put the round
            # back and keep those modules, so the pass's symbol removal is not rolled back with them
            one.restore()
            kept |= tested & set(deleted)
            cut.kept += sorted(tested & set(deleted))
            continue
        cut.deleted += one.deleted
        cut.lines += one.lines
        cut.edited += one.edited
        cut.failures += one.failures
        cut.findings += one.findings
        if one.failures or one.findings:
            break  # the gate judges what is there; another round would build on a failure
    cut.deleted.sort()
    return cut


def _record_tables_naming(tree: Path, rules, gone: set[str]) -> set[str]:
    """The kept files that build inventory records and quote a deleted module's own name: a table row
    (`("rocm_upscale", "upscale")`, whose loop builds `f"sglang.kernels.ops.quantization.{_mod}:{_fn}"`) is no
    import the graph sees, so its module can go while the row stays (prune_record_tables drops it)."""
    calls = tuple(f"{r.record}(" for r in rules.registries if r.kind == "records")
    names = {m.rpartition(".")[2] for m in gone}
    if not calls or not names:
        return set()
    return {rel for rel, text in python_sources(tree) if any(c in text for c in calls)
            and any(f'"{n}"' in text or f"'{n}'" in text for n in names)}


def _cut(tree: Path, rules, jobs: int, deleted: list[str], removed_keys) -> ModuleCut:
    from shrinker.codemods.removed_imports import lost_names_from_facts
    from shrinker.codemods.unused_names import imported_names_from_facts
    from shrinker.graph.build import build_graph
    from shrinker.graph.sources import tree_source_reader

    cut = ModuleCut(deleted=deleted)
    before = build_graph(tree, jobs=jobs)
    gone = {module_of(p) for p in cut.deleted} - {""}
    importers = sorted({before.module_path[u] for m in gone if m in before.graph
                        for u, _ in before.importers(m) if u not in gone and before.module_path.get(u)})
    for rel in cut.deleted:
        cut.originals[tree / rel] = (tree / rel).read_bytes()
        cut.lines += count_lines(cut.originals[tree / rel].decode(errors="replace"))
        (tree / rel).unlink()
    removed = Removed(modules=frozenset(gone), registry_keys=removed_keys)
    after = build_graph(tree, jobs=jobs)
    facts = list(after.facts.values())
    removed.names = lost_names_from_facts(facts, removed)
    removed.imported = imported_names_from_facts(facts, removed, tree_source_reader(tree, after.module_path))
    # a package re-exporting a deleted module's names loses them: its importers drop them too
    importers = sorted(set(importers) | {after.module_path[u] for m in removed.names if m in after.graph
                                         for u, _ in after.importers(m) if after.module_path.get(u)})
    importers = sorted(set(importers) | _record_tables_naming(tree, rules, gone))
    items = [FileItem(path=str(tree / p), module=module_of(p)) for p in importers if (tree / p).exists()]
    results = transform_files(items, CodemodInputs(rules=rules, removed=removed),
                              ["prune_records", "prune_record_tables", "prune_registries", "fold_platform",
                               "remove_dead_imports", "remove_unused_names"],
                              jobs=jobs,
                              description="importers of unreachable modules")
    for res in results:
        if res.status == "failure":
            cut.failures.append(f"{res.path}: {res.error}")
        cut.findings.extend(res.findings)
        if res.status == "success":
            cut.originals[Path(res.path)] = Path(res.path).read_bytes()
            cut.lines += count_lines(cut.originals[Path(res.path)].decode(errors="replace")) - count_lines(res.code)
            Path(res.path).write_text(res.code)
            cut.edited += 1
    return cut


def apply_symbol_batch(repo, tree: Path, plan: dict, number: int, rules, *, jobs: int, dry_run: bool,
                       max_passes: int = MAX_PASSES, delete_modules: bool = True, max_refolds: int = MAX_REFOLDS,
                       first_pass: int = 1, **gate) -> list[BatchOutcome]:
    """`gate`: the keyword arguments of gate_and_commit (baselines, use_verify, upstream_root ...); `first_pass`:
    the number of the first pass run (a batch resumed after its earlier passes were committed)."""
    batch = plan["batches"][number - 1]
    symbol_rules = planned_symbol_rules(batch, rules)
    codemods = [e["name"] for e in batch["codemods"]]
    outcomes: list[BatchOutcome] = []
    refolds = 0
    refold_pass = 0  # the pass that refolded (or refolded the enum members)
    members_refolded = False
    for k in range(first_pass, max_passes + 1):
        start = time.perf_counter()
        outcome = BatchOutcome(number, f"{batch['name']} (pass {k})", symbol_pass=k)
        result, _ = run_pass(tree, k, rules, symbol_rules, codemods=codemods, jobs=jobs,
                             upstream=gate.get("upstream_root"))
        if result is None or not result.files_changed:
            # the fixpoint: nothing (more) to remove; a refold may make more dead (apply/refold.py)
            if refolds == max_refolds and refolds and k > refold_pass + 1 and not members_refolded:
                # passes ran after the refold: they may have taken an enum member's last producer (0.5.23's QSA
                # state code, pass 4); the refold's work over the files naming such enums, and the passes go on
                members_refolded = True
                outcome = _whole_tree_pass(repo, tree, plan, number, k, start, "enum members", refold_members,
                                           jobs=jobs, dry_run=dry_run, delete_modules=delete_modules, rules=rules,
                                           **gate)
                if outcome is not None:
                    outcomes.append(outcome)
                    if outcome.gate != "passed" or dry_run:
                        break
                    refold_pass = k
                    continue
            if refolds == max_refolds:
                if refolds and k > refold_pass + 1:  # passes ran after the refold: their removals may leave
                    outcome = _parameters_pass(repo, tree, plan, number, rules, k, start, jobs=jobs,  # parameters
                                               dry_run=dry_run, delete_modules=delete_modules, **gate)
                    if outcome is not None:
                        outcomes.append(outcome)
                break
            refolds += 1
            refold_pass = k
            outcome = _refold_pass(repo, tree, plan, number, rules, k, start, jobs=jobs, dry_run=dry_run,
                                   delete_modules=delete_modules, **gate)
            if outcome is None:
                break  # the refold changed nothing: the tree is settled
            outcomes.append(outcome)
            if outcome.gate != "passed" or dry_run:
                break
            continue
        cut = delete_unreachable(tree, rules, jobs) if delete_modules else ModuleCut()
        outcome.files_deleted = len(cut.deleted)
        outcome.files_edited = result.files_changed + cut.edited
        outcome.lines_removed = result.lines_before - result.lines_after + cut.lines
        outcome.codemods = {"+".join(codemods): {"files": result.files_changed, "symbols": result.dead_symbols,
                                                 "analysis_s": result.analysis_seconds,
                                                 "transform_s": result.transform_seconds},
                            "unreachable modules": {"deleted": len(cut.deleted), "importers edited": cut.edited}}
        if cut.kept:
            outcome.codemods["unreachable modules"]["kept (their cut would break a use)"] = cut.kept
        if result.table_entries:  # environment variables nothing reads any more (rules.attribute_tables)
            outcome.codemods["table entries removed"] = result.table_entries
        gate_and_commit(repo, tree, plan, number, rules, outcome, result.failures + cut.failures,
                        result.findings + cut.findings,
                        f"shrink: batch {number} — {outcome.name}", start, dry_run=dry_run, **gate)
        outcomes.append(outcome)
        if outcome.gate != "passed" or dry_run:
            break
    return outcomes


def _refold_pass(repo, tree: Path, plan: dict, number: int, rules, k: int, start: float, *, jobs: int,
                 dry_run: bool, delete_modules: bool, **gate) -> BatchOutcome | None:
    """Pass `k` as a refold (apply/refold.py) with the unreachable modules it leaves; gated and committed like a
    symbol pass. None when it changed no file (nothing is committed)."""
    return _whole_tree_pass(repo, tree, plan, number, k, start, "refold", refold, jobs=jobs, dry_run=dry_run,
                            delete_modules=delete_modules, rules=rules, **gate)


def _parameters_pass(repo, tree: Path, plan: dict, number: int, rules, k: int, start: float, *, jobs: int,
                     dry_run: bool, delete_modules: bool, **gate) -> BatchOutcome | None:
    """Pass `k` as the refold's parameter step alone (apply/refold.unread_parameters), once the passes after the
    refold settled; gated and committed like a symbol pass. None when it changed no file."""
    return _whole_tree_pass(repo, tree, plan, number, k, start, "parameters", unread_parameters, jobs=jobs,
                            dry_run=dry_run, delete_modules=delete_modules, rules=rules, **gate)


def _whole_tree_pass(repo, tree: Path, plan: dict, number: int, k: int, start: float, kind: str, work, *, rules,
                     jobs: int, dry_run: bool, delete_modules: bool, **gate) -> BatchOutcome | None:
    """Pass `k` as `work(tree, plan, number, rules, outcome, jobs=)` over the tree, with the unreachable modules it
    leaves; gated and committed like a symbol pass. None when it changed no file (nothing is committed)."""
    batch = plan["batches"][number - 1]
    outcome = BatchOutcome(number, f"{batch['name']} (pass {k}: {kind})", symbol_pass=k)
    failures = work(tree, plan, number, rules, outcome, jobs=jobs)
    if not outcome.files_edited and not failures:
        return None
    cut = delete_unreachable(tree, rules, jobs) if delete_modules and not failures else ModuleCut()
    outcome.files_deleted = len(cut.deleted)
    outcome.files_edited += cut.edited
    outcome.lines_removed += cut.lines
    outcome.codemods["unreachable modules"] = {"deleted": len(cut.deleted), "importers edited": cut.edited}
    if cut.kept:
        outcome.codemods["unreachable modules"]["kept (their cut would break a use)"] = cut.kept
    gate_and_commit(repo, tree, plan, number, rules, outcome, failures + cut.failures, cut.findings,
                    f"shrink: batch {number} — {outcome.name}", start, dry_run=dry_run, **gate)
    return outcome
