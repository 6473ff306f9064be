"""Differential import check on the mini tree, with this interpreter standing in for .venv-verify."""

from __future__ import annotations

from shrinker.verify import verify_tree
from shrinker.verify.imports import compare_imports, run_imports
from shrinker.verify.tree import SourceTree
from tests.verify.conftest import edit, git_commit

HELPER = "python/sglang/srt/layers/helper_ops.py"


def _imports(pruned, upstream, env, **kw):
    kw.setdefault("surface", {})  # the mini tree imports on the bare machine (no [pretend])
    return verify_tree(pruned, upstream, checks=["imports"], env=env, **kw).check("imports")


def test_unmodified_copy_has_no_regressions(trees, fake_env):
    upstream, pruned = trees
    check = _imports(pruned, upstream, fake_env, reuse=False)
    assert check.passed and not check.findings
    n = len(SourceTree.load(pruned).modules)
    assert check.counts["modules"] == n
    # needs_missing_package fails in both trees: counted, not a regression
    assert check.counts["import_upstream"] == check.counts["import_pruned"] == n - 1
    assert check.counts["reused"] == 0


def test_deleted_helper_is_a_regression_with_its_traceback(trees, fake_env):
    upstream, pruned = trees
    (pruned / HELPER).unlink()
    check = _imports(pruned, upstream, fake_env)
    assert not check.passed
    broken = sorted(f.split(" ")[1] for f in check.findings)
    assert broken == ["sglang.srt.layers.attention.triton_backend", "sglang.srt.models.deepseek_v2"]
    assert all("ModuleNotFoundError: No module named 'sglang.srt.layers.helper_ops'" in f for f in check.findings)
    assert check.counts["regressions"] == 2


def test_removed_name_fails_at_import(trees, fake_env):
    upstream, pruned = trees
    edit(pruned / HELPER, "def scale(x, factor):\n    return x * factor\n", "")
    check = _imports(pruned, upstream, fake_env)
    assert [f.split(" ")[1] for f in check.findings] == ["sglang.srt.models.deepseek_v2"]
    assert "ImportError: cannot import name 'scale'" in check.findings[0]


def test_one_module_failing_hides_no_other(trees, fake_env):
    """A module that kills its process, one that hangs and one that raises each get their own result."""
    upstream, pruned = trees
    edit(pruned / "python/sglang/srt/layers/attention/ascend_backend.py", "class AscendBackend:",
         "import os\nos._exit(3)\n\n\nclass AscendBackend:")
    edit(pruned / HELPER, "def scale", "import time\ntime.sleep(60)\n\n\ndef scale")
    edit(pruned / "python/sglang/srt/function_call/qwen_detector.py", "class QwenDetector", "1 / 0\n\n\nclass QwenDetector")
    results = run_imports(SourceTree.load(pruned), fake_env,
                          ["sglang.srt.layers.attention.ascend_backend", "sglang.srt.layers.helper_ops",
                           "sglang.srt.function_call.qwen_detector", "sglang.srt.utils.common",
                           "sglang.srt.parser.reasoning_parser"], timeout=3)
    assert results["sglang.srt.layers.attention.ascend_backend"].status == "crash"
    assert results["sglang.srt.layers.helper_ops"].status == "timeout"
    assert results["sglang.srt.function_call.qwen_detector"].status == "error"
    assert "ZeroDivisionError" in results["sglang.srt.function_call.qwen_detector"].error
    assert results["sglang.srt.utils.common"].ok and results["sglang.srt.parser.reasoning_parser"].ok


def test_failing_parent_package_reported_for_each_child(trees, fake_env):
    upstream, pruned = trees
    edit(pruned / "python/sglang/srt/function_call/__init__.py", "", "raise RuntimeError('broken package')\n")
    check = _imports(pruned, upstream, fake_env)
    broken = {f.split(" ")[1] for f in check.findings}
    assert "sglang.srt.function_call.core_types" in broken and "sglang.srt.function_call" in broken
    assert all("RuntimeError: broken package" in f for f in check.findings)


def test_reuse_only_for_unchanged_closures(trees, fake_env):
    upstream, pruned = trees
    edit(pruned / HELPER, "return a + b", "return b + a")  # same behaviour, new bytes
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    rerun = {m for m, o in cmp.pruned.items() if not o.reused}
    # exactly the modules whose import loaded helper_ops ran again
    assert {"sglang.srt.layers.helper_ops", "sglang.srt.models.deepseek_v2",
            "sglang.srt.layers.attention.triton_backend"} <= rerun
    assert "sglang.srt.parser.reasoning_parser" not in rerun and "sglang.srt.utils.common" not in rerun
    assert not cmp.regressions


def test_upstream_results_cached_per_commit(trees, fake_env):
    upstream, pruned = trees
    git_commit(upstream)
    first = _imports(pruned, upstream, fake_env, reuse=False)
    second = _imports(pruned, upstream, fake_env, reuse=False)
    assert first.counts["upstream_run"] == first.counts["modules"]
    assert second.counts["upstream_run"] == 0
    assert second.counts["import_upstream"] == first.counts["import_upstream"]


def test_dirty_upstream_is_not_cached(trees, fake_env):
    upstream, pruned = trees
    git_commit(upstream)
    edit(upstream / HELPER, "return a + b", "return b + a")
    _imports(pruned, upstream, fake_env)
    assert _imports(pruned, upstream, fake_env).counts["upstream_run"] > 0


def test_only_limits_the_modules(trees, fake_env):
    upstream, pruned = trees
    check = _imports(pruned, upstream, fake_env, only=["sglang.srt.function_call"])
    assert check.counts["modules"] == 5


def test_reuse_sees_data_files_and_folder_scans(trees, fake_env):
    """A module that reads a data file or scans a folder at import is re-run when those change."""
    upstream, pruned = trees
    for root in trees:
        (root / "python/sglang/srt/layers/table.json").write_text('{"rows": 3}')
        (root / "python/sglang/srt/layers/table_reader.py").write_text(
            "import json, os\n_here = os.path.dirname(__file__)\n"
            "ROWS = json.load(open(os.path.join(_here, 'table.json')))['rows']\n"
            "PLUGINS = sorted(os.listdir(os.path.join(_here, 'attention')))\n")
    (pruned / "python/sglang/srt/layers/table.json").write_text('{"rows": 4}')
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    assert not cmp.pruned["sglang.srt.layers.table_reader"].reused
    assert "python/sglang/srt/layers/table.json" in cmp.upstream["sglang.srt.layers.table_reader"].files
    assert "python/sglang/srt/layers/attention" in cmp.upstream["sglang.srt.layers.table_reader"].dirs
    (pruned / "python/sglang/srt/layers/table.json").write_text('{"rows": 3}')
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    assert cmp.pruned["sglang.srt.layers.table_reader"].reused
    (pruned / "python/sglang/srt/layers/attention/ascend_backend.py").unlink()  # the scanned folder changed
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    assert not cmp.pruned["sglang.srt.layers.table_reader"].reused


def test_reuse_ignores_the_import_systems_own_listings(trees, fake_env):
    upstream, pruned = trees
    (pruned / "python/sglang/srt/layers/attention/ascend_backend.py").unlink()
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    assert cmp.pruned["sglang.srt.layers.attention.triton_backend"].reused
    assert cmp.upstream["sglang.srt.layers.attention.triton_backend"].dirs == []


def test_tasks_group_siblings_cut_big_families_and_go_costliest_first(monkeypatch):
    from shrinker.verify import imports

    monkeypatch.setattr(imports, "TASK_SIZE", 3)
    mods = [f"p.models.m{i}" for i in range(7)] + ["p.layers.a", "p.layers.b", "p.cheap"]
    tasks = imports.make_tasks(mods, cost={"p.layers.a": 30.0})
    assert [t["modules"] for t in tasks][0] == ["p.layers.a", "p.layers.b"]  # 31 s of work: first
    assert sorted(m for t in tasks for m in t["modules"]) == sorted(mods)  # each module exactly once
    models = [t for t in tasks if t["parent"] == "p.models"]
    assert [len(t["modules"]) for t in models] == [3, 3, 1]


def test_changed_module_failing_upstream_is_not_run(trees, fake_env):
    upstream, pruned = trees
    edit(pruned / "python/sglang/srt/models/needs_missing_package.py", "EntryClass = None", "EntryClass = 0")
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    assert cmp.pruned["sglang.srt.models.needs_missing_package"].status == "not_run"
    assert cmp.not_run == 1 and not cmp.regressions
    full = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None, reuse=False)
    assert full.pruned["sglang.srt.models.needs_missing_package"].status == "error" and full.not_run == 0


def test_timeout_is_retried_with_a_longer_limit(trees, fake_env, monkeypatch):
    from shrinker.verify import imports

    upstream, pruned = trees
    edit(pruned / HELPER, "def scale", "import time\ntime.sleep(2.5)\n\n\ndef scale")
    monkeypatch.setattr(imports, "RETRY_FACTOR", 3)
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None, timeout=1.5,
                          only=["sglang.srt.layers.helper_ops"])
    assert cmp.pruned["sglang.srt.layers.helper_ops"].ok and not cmp.regressions  # passed on the 4.5 s retry


def test_pruned_outcomes_reused_across_runs_while_what_they_read_is_unchanged(trees, fake_env):
    upstream, pruned = trees
    edit(pruned / HELPER, "return a + b", "return b + a")  # these importers cannot reuse upstream's results
    first = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    second = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    assert first.cached == 0 and second.cached >= 3
    assert second.pruned["sglang.srt.models.deepseek_v2"].reused
    (pruned / HELPER).unlink()  # the planted fault: everything that read the helper runs again
    third = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    assert {f.split(" ")[1] for f in third.regressions} == {"sglang.srt.layers.attention.triton_backend",
                                                            "sglang.srt.models.deepseek_v2"}
    assert not third.pruned["sglang.srt.models.deepseek_v2"].reused
