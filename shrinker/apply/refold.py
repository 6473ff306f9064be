"""A refold: the platform fold over every kept file, once the dead-symbol passes have converged.

A folding batch visits the files its plan names and, in its second round, the callers of functions the fold
made constant. What the symbol batch removes makes more facts hold that no batch asked for: an identifier
left in one file only (`self.use_npu_arch35_mxfp8_wo_a`, whose other readers were dead functions) is an
attribute constant now; a local bound to `False` by an earlier fold (`qwen_bcg = False`, batch 4) folds the
attributes it sets; a function whose HIP branch went returns a constant; a class whose constructors all went
is only tested against (graph/tested_classes: `isinstance(pool, MiniMaxSparseKVPool)` is False). So the
symbol batch, when a pass finds nothing dead, runs `drop_never_produced_members` + `fold_platform` +
`prune_platform_collections` + `remove_dead_imports` +
`remove_unused_names` + `remove_unread_predicate_imports` + `remove_platform_enum_members` over every kept file with the tables read from the
tree as it stands (the plan's removals, the platform's predicate table), then again over the files a round
changed (their own facts moved: an attribute the round made constant), up to MAX_ROUNDS; then a parameter the rounds left unread leaves its signature and every call
(`remove_constant_parameters`, as in the last folding batch); before that, the enum members no code produced
whose tests the rounds took lose their definitions once nothing names them (`drop_unnamed_members`). The pass is gated and committed like a symbol
pass, and the dead-symbol passes run again on what it left.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from shrinker.apply.run import (BatchOutcome, batch_table, parameter_work, removed_through, run_codemods,
                                tree_constant_parameters, tree_inputs)
from shrinker.graph.discover import module_of
from shrinker.graph.enum_members import enum_facts, never_produced, platform_members, unnamed_members
from shrinker.graph.key_reads import imported_read_by_key
from shrinker.graph.parse import count_lines
from shrinker.graph.sources import python_sources
from shrinker.graph.tested_classes import classes_only_tested
from shrinker.rules.predicates import PlatformStrings

# remove_unread_predicate_imports: a predicate import whose last read an earlier batch took while the module
# still counted as read whole (bootstrap's `cpu_has_amx_support`) goes in this sweep over the final tree
# remove_platform_enum_members: an enum member of another platform is unnamed only once the passes took its
# last readers (graph/enum_members reads the whole tree)
# drop_never_produced_members: members no code produces leave the literals and tables only tests read (fold_platform
# decides the tests themselves)
# prune_platform_collections: a module collection only tested by key loses other platforms' names, as fold_platform
# takes them from inline `in` literals (the whole tree, as an enum's members: batch plans never list these files)
REFOLD_CODEMODS = ("drop_never_produced_members", "fold_platform", "prune_platform_collections", "remove_dead_imports",
                   "remove_unused_names", "remove_unread_predicate_imports", "remove_platform_enum_members")
MAX_ROUNDS = 3  # 0.5.23: the second round settles what the first made constant in the same file


def refold(tree: Path, plan: dict, number: int, rules, outcome: BatchOutcome, *, jobs: int,
           enums_only: bool = False) -> list[str]:
    """Refold the tree in place (see the module doc); record counts in `outcome`; return the codemods'
    failures (a finding is no failure here: its file stays as it was). `outcome.files_edited` stays 0 when no
    round changed a file. `enums_only`: only the files that name an enum with members of another platform or
    members no code produces (refold_members)."""
    batch = plan["batches"][number - 1]
    failures: list[str] = []
    sources = [(rel, text) for rel, text in python_sources(tree) if _parses(text, rel)]
    files = sorted(rel for rel, _ in sources)
    edited: set[str] = set()
    tested = classes_only_tested(tree)  # a round only removes code: the set stays true, if not whole
    kept_modules = frozenset(module_of(rel) for rel, _ in python_sources(tree))
    key_reads = imported_read_by_key(tree)  # a round only removes code: a name read by key stays so
    facts = enum_facts(tree)  # a round only removes code: an unnamed member stays unnamed, an unmade one unmade
    members = None
    if enums_only:
        strings = PlatformStrings(rules.platform.strings.strings, rules.platform.strings.families)
        enums = set(never_produced(facts)) | set(platform_members(facts, lambda value: value in strings))
        words = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(enums)))) if enums else None
        files = sorted(rel for rel, text in sources if words is not None and words.search(text))
    inputs = None
    for k in range(1, MAX_ROUNDS + 1):
        if not files:
            break
        removed = removed_through(plan, number, tree)
        inputs = tree_inputs(tree, rules, removed, batch_table(rules, batch, removed), folds=True, literals=True)
        inputs.tested_only_classes = tested
        inputs.kept_modules = kept_modules
        inputs.key_read_imports = key_reads
        if members is None:
            strings = inputs.table.strings
            members = platform_members(facts, lambda value: value in strings)
        inputs.platform_enum_members = members
        inputs.never_produced_members = never_produced(facts)
        before = {rel: (tree / rel).read_bytes() for rel in files}
        left: list[str] = []
        with_findings: set[str] = set()
        run_codemods({REFOLD_CODEMODS: files}, tree, inputs, number, outcome, failures, left, set(), jobs=jobs,
                     label=f"refold round {k}: ", finding_files=with_findings)
        # A refold is optional work: a file whose fold reports a finding (a comprehension filter a tested-only
        # class makes always False) stays as it was, and the finding is a note, not a gate failure.
        for rel in sorted(with_findings):
            (tree / rel).write_bytes(before[rel])
        if left:
            outcome.codemods.setdefault("refold: files left as they were (a finding)", []).extend(left)
        if failures:
            break  # the gate judges what is there
        files = sorted(rel for rel, data in before.items() if (tree / rel).read_bytes() != data)
        outcome.lines_removed += sum(count_lines(before[rel].decode(errors="replace"))
                                     - count_lines((tree / rel).read_text(errors="replace")) for rel in files)
        edited |= set(files)
    if inputs is not None and not failures and inputs.never_produced_members:
        edited |= drop_unnamed_members(tree, inputs, number, outcome, failures, jobs=jobs)
    if inputs is not None and not failures:
        # a parameter the rounds left unread (overrides' `_check_dsa_backend_constraints(..., hip=False)` once
        # the ROCm read in its body went) leaves its signature and every call, as in the last folding batch
        edited |= drop_unread_parameters(tree, rules, inputs, number, outcome, failures, jobs=jobs, label="refold: ")
    outcome.files_edited = len(edited)  # a file two rounds edit counts once
    return failures


def drop_unnamed_members(tree: Path, inputs, number: int, outcome: BatchOutcome, failures: list[str], *,
                         jobs: int) -> set[str]:
    """The definitions of the never-produced members whose tests the rounds took, once nothing names them
    (graph/enum_members.unnamed_members, read from the tree as the rounds left it: a file a finding put back
    still names its members, which then stay); returns the files edited."""
    members = unnamed_members(enum_facts(tree), inputs.never_produced_members)
    if not members:
        return set()
    inputs.platform_enum_members = members
    files = sorted(rel for rel, text in python_sources(tree) if any(f"class {name}" in text for name in members))
    before = {rel: (tree / rel).read_bytes() for rel in files}
    findings: list[str] = []
    outcome.lines_removed += run_codemods({("remove_platform_enum_members",): files}, tree, inputs, number, outcome,
                                          failures, findings, set(), jobs=jobs, label="refold: unnamed members: ")
    failures.extend(findings)
    return {rel for rel, data in before.items() if (tree / rel).read_bytes() != data}


def drop_unread_parameters(tree: Path, rules, inputs, number: int, outcome: BatchOutcome, failures: list[str], *,
                           jobs: int, label: str) -> set[str]:
    """Run `remove_constant_parameters` on the tree's unread constant parameters (read from the tree as it
    stands); add to `outcome` and `failures`; return the files it edited."""
    inputs.constant_parameters = tree_constant_parameters(tree, rules)
    work = parameter_work(tree, inputs.constant_parameters)
    before = {rel: (tree / rel).read_bytes() for files in work.values() for rel in files}
    findings: list[str] = []
    outcome.lines_removed += run_codemods(work, tree, inputs, number, outcome, failures, findings, set(),
                                          jobs=jobs, label=label)
    failures.extend(findings)  # a def and its calls change together or not at all: the gate judges
    return {rel for rel, data in before.items() if (tree / rel).read_bytes() != data}


def refold_members(tree: Path, plan: dict, number: int, rules, outcome: BatchOutcome, *, jobs: int) -> list[str]:
    """The refold over the files naming an enum whose members another platform names or no code produces, once
    the passes after the refold settled: a pass may take a member's last producer (0.5.23's QSA state code, which
    made `StateType.QSA_PENDING`, went in the pass after the refold). With its parameter step when it ran."""
    return refold(tree, plan, number, rules, outcome, jobs=jobs, enums_only=True)


def unread_parameters(tree: Path, plan: dict, number: int, rules, outcome: BatchOutcome, *, jobs: int) -> list[str]:
    """The parameter step alone, after the passes that followed the refold: a dead-symbol pass may take a
    function's last caller that passed another value (0.5.23's deepseek_v4_platform_stage, the other caller of
    `_input_norm(x, allow_aiter_quant=False)`). Counts go to `outcome`; returns the codemods' failures."""
    batch = plan["batches"][number - 1]
    removed = removed_through(plan, number, tree)
    inputs = tree_inputs(tree, rules, removed, batch_table(rules, batch, removed), folds=False)
    failures: list[str] = []
    outcome.files_edited = len(drop_unread_parameters(tree, rules, inputs, number, outcome, failures, jobs=jobs,
                                                      label="parameters: "))
    return failures


def _parses(text: str, rel: str) -> bool:
    """A file upstream ships unparseable (a template, a fixture) is no fold's business: the gates judge it."""
    try:
        ast.parse(text, rel)
    except (SyntaxError, ValueError):
        return False
    return True
