"""Smoke run of the platform codemods over EVERY .py file of the pinned upstream (in memory).

Marked `upstream` (select with `-m upstream`); skipped when the upstream cache is not fetched.
Never writes the upstream copy. Prints files changed, failures, findings and seconds; asserts
no file fails (parse, codemod error, or result that does not compile), that the only
`if`/ternary tests still holding a platform predicate are the ones reported as kept, and that a
second run over the results changes nothing.

    /tmp/venv/bin/pytest -m upstream -s tests/codemods/test_upstream_smoke.py
"""

from __future__ import annotations

import time
from pathlib import Path

import libcst as cst
import pytest

from shrinker.codemods.base import new_context
from shrinker.codemods.fold_platform import platform_tests, predicate_triggers
from shrinker.codemods.pipeline import CODEMODS, PLATFORM_GROUP, FileItem, summarize, transform_files
from shrinker.errors import ShrinkError
from tests.codemods.helpers import deepseek_inputs

pytestmark = pytest.mark.upstream

CODEMODS_RUN = ["fold_platform", "remove_dead_branches", "remove_platform_methods"]


@pytest.fixture(scope="module")
def python_dir() -> Path:
    from shrinker.upstream import load

    try:
        upstream = load()
    except ShrinkError as exc:
        pytest.skip(f"upstream cache absent: {exc}")
    return Path(upstream.root) / "python"


def _items(root: Path) -> list[FileItem]:
    files = sorted(root.rglob("*.py"))
    return [FileItem(str(f), ".".join(f.relative_to(root).with_suffix("").parts)) for f in files]


def test_platform_codemods_over_the_whole_upstream(python_dir: Path) -> None:
    items = _items(python_dir)
    before = {i.path: Path(i.path).stat().st_mtime_ns for i in items[:50]}
    start = time.perf_counter()
    results = transform_files(items, deepseek_inputs(), CODEMODS_RUN, jobs=2, description="smoke")
    seconds = time.perf_counter() - start
    summary = summarize(results)

    left, reported = [], 0
    for result in results:
        if result.status == "success":
            left += [(result.path, line, test) for line, test in platform_tests(result.code, deepseek_inputs())]
        reported += sum("platform test kept" in f or "always false" in f for f in result.findings)
    original_lines = sum(len(Path(r.path).read_text().splitlines()) for r in results if r.status == "success")
    new_lines = sum(len(r.code.splitlines()) for r in results if r.status == "success")

    print(f"\nupstream smoke: {summary['files']} files, {summary['success']} changed, "
          f"{summary['skip']} unchanged, {summary['failure']} failures, {summary['findings']} findings, "
          f"{seconds:.1f} s wall on 2 workers; lines in changed files {original_lines} -> {new_lines}; "
          f"platform tests left {len(left)} (reported as kept: {reported}); "
          f"uses of names left undefined {summary['undefined']} (FileResult.undefined)")
    for key, count in summary["changes"].items():
        print(f"  {key}: {count}")
    for path, line, test in left:
        print(f"  left: {path}:{line}: {test}")

    assert summary["failure"] == 0, summary["failures"][:20]
    assert summary["success"] > 300  # ~400 files hold platform code in v0.5.16
    assert len(left) <= reported
    assert {i.path: Path(i.path).stat().st_mtime_ns for i in items[:50]} == before  # nothing written

    # Idempotent over the whole tree: the changed files, transformed again, do not change.
    by_path = {i.path: i for i in items}
    again = transform_files([FileItem(r.path, by_path[r.path].module, r.code) for r in results
                             if r.status == "success"], deepseek_inputs(), CODEMODS_RUN, jobs=2,
                            description="smoke, second run")
    assert [r.path for r in again if r.status != "skip"] == []


def test_files_without_predicates_pass_byte_identical_without_shortcuts(python_dir: Path) -> None:
    """Real files with no predicate text, through every platform codemod with pruning disabled."""
    inputs = deepseek_inputs()
    triggers = predicate_triggers(inputs, extra=tuple(inputs.rules.platform.packages)
                                  + tuple(inputs.rules.platform.methods))
    candidates = [p for p in sorted(python_dir.rglob("*.py"))
                  if " if " in (text := p.read_text()) and not triggers.search(text)]
    sample = candidates[:: max(1, len(candidates) // 25)][:25]
    assert len(sample) >= 20
    for path in sample:
        source = path.read_text()
        tree = cst.parse_module(source)
        for name in PLATFORM_GROUP:
            cls = type(f"Unpruned_{name}", (CODEMODS[name],), {"prune_pattern": lambda self: None})
            instance = cls(new_context(str(path), "m"), inputs)
            tree = instance.transform_module(tree)
            assert not +instance.changes, (path, name, instance.changes)
        assert tree.code == source, path
