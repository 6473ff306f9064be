"""The final step of apply: cut python/pyproject.toml's [project].dependencies to what the kept code
imports (shrinker/apply/requirements.py), gate it and commit it apart from the batches.

It runs once every batch is applied, so it sees the final tree; its commit subject is not a batch's
(`shrink: requirements — ...`), so it never counts as one. Run again on a pruned pyproject it
changes nothing and commits nothing, but the reports are rewritten (the tree's commit is in them).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from shrinker import paths
from shrinker.apply.gate import run_gate
from shrinker.apply.requirements import PYPROJECT, run_requirements, write_reports
from shrinker.apply.worktree import commit_all, roll_back
from shrinker.errors import ShrinkError
from shrinker.upstream.distributions import load_index

SUBJECT = "shrink: requirements — python/pyproject.toml dependencies"


@dataclass
class RequirementsOutcome:
    kept: int = 0
    dropped: list[str] = field(default_factory=list)
    dropped_mb: float = 0.0  # unpacked wheel size of the dropped distributions (distribution index)
    freed_mb: float = 0.0  # with the dependencies nothing kept pulls in any more
    gate: str = "not run"  # passed | failed | unchanged | skipped
    note: str = ""  # why it was skipped
    commit: str = ""
    seconds: float = 0.0
    findings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {**asdict(self), "findings": len(self.findings)}




def _earlier_commit(repo) -> str:
    return next((c.hexsha for c in repo.iter_commits("HEAD") if c.summary == SUBJECT), "")


def apply_requirements(repo, tree: Path, upstream_root: Path, rules, report_dir: Path, *, jobs: int,
                       use_verify: bool, baseline: set = frozenset(),
                       name_baseline: set = frozenset()) -> RequirementsOutcome:
    outcome = RequirementsOutcome()
    if not (tree / PYPROJECT).exists() or not (upstream_root / PYPROJECT).exists():
        outcome.gate = "skipped"
        return outcome
    start = time.perf_counter()
    index = load_index(upstream_root, rules.requirements.target)  # PyPI down: a one-line error, nothing guessed
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    try:
        result, _ = run_requirements(tree, upstream_root, index=index, keep_rules=rules.requirements.keep,
                                     write=True, jobs=jobs, tree_label=f"{paths.project_label(tree)} @ {head.stdout.strip()}")
    except ShrinkError as exc:  # a pyproject the line-based edit cannot take: reported, not guessed at
        roll_back(repo)
        outcome.gate, outcome.note = "skipped", str(exc)
        return outcome
    write_reports(result, report_dir)
    outcome.kept = len(result.kept)
    outcome.dropped = [d.name for d in result.dropped]
    outcome.dropped_mb = round(sum(d.size or 0 for d in result.dropped) / 1e6, 1)
    outcome.freed_mb = round(sum(result.freed.values()) / 1e6, 1)
    if not result.written:
        outcome.gate = "unchanged"
        outcome.commit = _earlier_commit(repo)  # the step's commit on this tree, if it made one
    else:
        # the static checks include "third-party imports are requirements": the cut list must cover them
        gate = run_gate(tree, [rules.profile.package, *rules.profile.extra_packages], [], [], baseline,
                        use_verify=use_verify, name_baseline=name_baseline, upstream_root=upstream_root,
                        rules=rules)
        outcome.findings = gate.findings
        if gate.passed:
            outcome.gate = "passed"
            outcome.commit = commit_all(repo, f"{SUBJECT}\n\nkept {outcome.kept}, dropped {len(outcome.dropped)}: "
                                              f"{', '.join(outcome.dropped)}; gate passed")
        else:
            outcome.gate = "failed"
            roll_back(repo)
    outcome.seconds = round(time.perf_counter() - start, 2)
    return outcome
