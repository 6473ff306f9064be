"""Differential import check on the mini tree, with this interpreter standing in for .venv-verify."""

from __future__ import annotations

from shrinker.verify import verify_tree
from shrinker.verify.imports import compare_imports, run_imports
from shrinker.checks.tree import SourceTree
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
    # needs_missing_package fails in both trees: compared with upstream, not a regression
    assert check.counts["import_pruned"] == n - 1
    assert check.counts["fail_pruned_compared_upstream"] == 1 and check.counts["import_upstream_of_those"] == 0


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


def _plant_crash_hang_raise(pruned) -> None:
    """One module kills its process, one hangs, one raises."""
    edit(pruned / "python/sglang/srt/layers/attention/ascend_backend.py", "class AscendBackend:",
         "import os\nos._exit(3)\n\n\nclass AscendBackend:")
    edit(pruned / HELPER, "def scale", "import time\ntime.sleep(60)\n\n\ndef scale")
    edit(pruned / "python/sglang/srt/function_call/qwen_detector.py", "class QwenDetector", "1 / 0\n\n\nclass QwenDetector")


def test_one_module_failing_hides_no_other(trees, fake_env):
    """A module that kills its process, one that hangs and one that raises each get their own result."""
    upstream, pruned = trees
    _plant_crash_hang_raise(pruned)
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


def test_upstream_results_cached_per_commit(trees, fake_env):
    upstream, pruned = trees
    git_commit(upstream)
    first = _imports(pruned, upstream, fake_env, reuse=False)
    second = _imports(pruned, upstream, fake_env, reuse=False)
    assert first.counts["upstream_run"] == 1  # upstream runs only where pruned fails
    assert second.counts["upstream_run"] == 0
    assert second.counts["fail_pruned_compared_upstream"] == first.counts["fail_pruned_compared_upstream"] == 1


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
    args = (SourceTree.load(pruned), SourceTree.load(upstream), fake_env)
    first = compare_imports(*args, commit=None)
    assert not first.pruned["sglang.srt.layers.table_reader"].reused
    assert "python/sglang/srt/layers/table.json" in first.pruned["sglang.srt.layers.table_reader"].files
    assert "python/sglang/srt/layers/attention" in first.pruned["sglang.srt.layers.table_reader"].dirs
    assert compare_imports(*args, commit=None).pruned["sglang.srt.layers.table_reader"].reused
    (pruned / "python/sglang/srt/layers/table.json").write_text('{"rows": 4}')  # the data file changed
    assert not compare_imports(*args, commit=None).pruned["sglang.srt.layers.table_reader"].reused
    (pruned / "python/sglang/srt/layers/attention/extra.txt").write_text("")  # the scanned folder changed
    assert not compare_imports(*args, commit=None).pruned["sglang.srt.layers.table_reader"].reused


def test_reuse_ignores_the_import_systems_own_listings(trees, fake_env):
    upstream, pruned = trees
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    assert cmp.pruned["sglang.srt.layers.attention.triton_backend"].dirs == []


def test_tasks_group_siblings_cut_big_families_and_go_costliest_first(monkeypatch):
    from shrinker.verify import imports

    monkeypatch.setattr(imports, "TASK_SIZE", 3)
    mods = [f"p.models.m{i}" for i in range(7)] + ["p.layers.a", "p.layers.b", "p.cheap"]
    tasks = imports.make_tasks(mods, cost={"p.layers.a": 30.0})
    assert [t["modules"] for t in tasks][0] == ["p.layers.a", "p.layers.b"]  # 31 s of work: first
    assert sorted(m for t in tasks for m in t["modules"]) == sorted(mods)  # each module exactly once
    models = [t for t in tasks if t["parent"] == "p.models"]
    assert [len(t["modules"]) for t in models] == [3, 3, 1]


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
    edit(pruned / HELPER, "return a + b", "return b + a")
    first = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    second = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    assert first.cached == 0 and second.cached >= 3
    assert second.pruned["sglang.srt.models.deepseek_v2"].reused
    (pruned / HELPER).unlink()  # the planted fault: everything that read the helper runs again
    third = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None)
    assert {f.split(" ")[1] for f in third.regressions} == {"sglang.srt.layers.attention.triton_backend",
                                                            "sglang.srt.models.deepseek_v2"}
    assert not third.pruned["sglang.srt.models.deepseek_v2"].reused


# ---------------------------------------------------------------------------------------------
# Shared bases (import_bases.py): children fork from a server that imported a base module first

BASE = "sglang.srt.utils.common"


def test_based_children_do_not_see_each_others_side_effects(trees, fake_env):
    _, pruned = trees
    layers = pruned / "python/sglang/srt/layers"
    (layers / "a_flag_setter.py").write_text("import sglang.srt.utils.common as c\nc.FLAG = True\n")
    (layers / "b_flag_reader.py").write_text(
        "import sglang.srt.utils.common as c\nassert not getattr(c, 'FLAG', False), 'saw a sibling'\n")
    mods = ["sglang.srt.layers.a_flag_setter", "sglang.srt.layers.b_flag_reader"]
    results = run_imports(SourceTree.load(pruned), fake_env, mods, bases={m: BASE for m in mods})
    assert results["sglang.srt.layers.b_flag_reader"].ok, results["sglang.srt.layers.b_flag_reader"].error
    assert results["sglang.srt.layers.a_flag_setter"].ok
    assert BASE in results["sglang.srt.layers.b_flag_reader"].loaded  # what the import read, base included


def test_based_failure_crash_and_hang_each_get_their_own_result(trees, fake_env):
    _, pruned = trees
    _plant_crash_hang_raise(pruned)
    mods = ["sglang.srt.layers.attention.ascend_backend", "sglang.srt.layers.helper_ops",
            "sglang.srt.function_call.qwen_detector", "sglang.srt.parser.reasoning_parser"]
    results = run_imports(SourceTree.load(pruned), fake_env, mods, timeout=3, bases={m: BASE for m in mods})
    assert results["sglang.srt.layers.attention.ascend_backend"].status == "crash"
    assert results["sglang.srt.layers.helper_ops"].status == "timeout"
    assert results["sglang.srt.function_call.qwen_detector"].status == "error"
    assert "ZeroDivisionError" in results["sglang.srt.function_call.qwen_detector"].error
    assert results["sglang.srt.parser.reasoning_parser"].ok


def test_a_base_that_fails_in_the_worker_leaves_its_modules_to_run_without_it(trees, fake_env):
    _, pruned = trees
    (pruned / "python/sglang/srt/broken_base.py").write_text("raise RuntimeError('no base')\n")
    mods = ["sglang.srt.parser.reasoning_parser", "sglang.srt.function_call.qwen_detector"]
    results = run_imports(SourceTree.load(pruned), fake_env, mods, bases={m: "sglang.srt.broken_base" for m in mods})
    assert all(results[m].ok for m in mods)
    assert "sglang.srt.broken_base" not in results["sglang.srt.parser.reasoning_parser"].loaded


def _low_thresholds(monkeypatch) -> None:
    from shrinker.verify import import_bases

    monkeypatch.setattr(import_bases, "MIN_CLOSURE", 1)
    monkeypatch.setattr(import_bases, "MIN_GAIN", 1)


def test_bases_give_the_fresh_path_s_outcomes(trees, fake_env, monkeypatch):
    _low_thresholds(monkeypatch)
    upstream, pruned = trees
    args = (SourceTree.load(pruned), SourceTree.load(upstream), fake_env)
    fresh = compare_imports(*args, commit=None, reuse=False, bases=False)
    based = compare_imports(*args, commit=None, reuse=False)
    assert {m: o.status for m, o in based.pruned.items()} == {m: o.status for m, o in fresh.pruned.items()}
    assert {m: o.loaded for m, o in based.pruned.items()} == {m: o.loaded for m, o in fresh.pruned.items()}


def test_a_failing_base_is_reported_and_so_are_its_importers(trees, fake_env, monkeypatch):
    """The bases run first in fresh processes: one broken by pruning is a regression like any other,
    and is never used as a base."""
    from shrinker.verify import imports

    _low_thresholds(monkeypatch)
    calls = []
    real = imports.run_imports
    monkeypatch.setattr(imports, "run_imports", lambda *a, **k: calls.append(k.get("bases")) or real(*a, **k))
    upstream, pruned = trees
    edit(pruned / "python/sglang/srt/utils/common.py", "", "raise RuntimeError('pruned too much')\n")
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None, reuse=False)
    broken = {f.split(" ")[1] for f in cmp.regressions}
    assert {"sglang.srt.utils.common", "sglang.srt.models.deepseek_v2"} <= broken
    assert all("RuntimeError: pruned too much" in f for f in cmp.regressions)
    assert not any(BASE in (b or {}).values() for b in calls)


def test_a_based_failure_is_confirmed_fresh(trees, fake_env, monkeypatch):
    from shrinker.verify import imports

    _low_thresholds(monkeypatch)
    labels = []
    real = imports.run_imports
    monkeypatch.setattr(imports, "run_imports", lambda *a, **k: labels.append(k.get("label")) or real(*a, **k))
    upstream, pruned = trees
    (pruned / HELPER).unlink()
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None, reuse=False)
    assert {f.split(" ")[1] for f in cmp.regressions} == {"sglang.srt.layers.attention.triton_backend",
                                                          "sglang.srt.models.deepseek_v2"}
    assert "importing pruned (failures, fresh)" in labels


def test_a_pruned_side_effect_import_is_not_masked_by_a_base(trees, fake_env, monkeypatch):
    """Pruning drops an import line a module needed only for its side effect (a registration). The
    module upstream loaded that registration, so it could serve as a base; its pruned imports no
    longer reach it, so it runs without one and the failure is reported."""
    from shrinker.verify import import_bases

    _low_thresholds(monkeypatch)
    monkeypatch.setattr(import_bases, "MAX_BASES", 100)
    upstream, pruned = trees
    for root in trees:
        layers = root / "python/sglang/srt/layers"
        (layers / "registry_ops.py").write_text("REG = {}\n")
        (layers / "register_a.py").write_text("from sglang.srt.layers.registry_ops import REG\nREG['a'] = 1\n")
        (root / "python/sglang/srt/models/needs_a.py").write_text(
            "import sglang.srt.layers.register_a  # noqa: F401\nfrom sglang.srt.layers.registry_ops import REG\n"
            "assert 'a' in REG, 'not registered'\n")
    edit(pruned / "python/sglang/srt/models/needs_a.py", "import sglang.srt.layers.register_a  # noqa: F401\n", "")
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None, reuse=False)
    assert [f.split(" ")[1] for f in cmp.regressions] == ["sglang.srt.models.needs_a"]
    assert "not registered" in cmp.regressions[0]


def test_tasks_on_one_base_share_its_import_in_chunks(monkeypatch):
    from shrinker.verify import imports

    monkeypatch.setattr(imports, "BASE_TASK_SIZE", 4)
    mods = ["p.a.x", "p.a.y", "p.a.z", "p.b.x", "p.b.y", "p.c.x", "q.free"]
    tasks = imports.make_tasks(mods, bases={m: "p.core" for m in mods if m != "q.free"})
    based = [t for t in tasks if t.get("base")]
    # whole parent groups until 4 are reached (a group bigger than 4 is cut), then a new task
    assert [sum(len(ms) for _, ms in t["groups"]) for t in based] == [5, 1]
    assert all(t["base"] == "p.core" for t in based)
    assert sorted(m for t in tasks for m in t["modules"]) == sorted(mods)
    assert [t["modules"] for t in tasks if not t.get("base")] == [["q.free"]]


# Failures on a base re-run fresh (run_on_certain_bases); upstream's side always runs fresh

def _labels(monkeypatch) -> list:
    from shrinker.verify import imports

    labels: list = []
    real = imports.run_imports
    monkeypatch.setattr(imports, "run_imports", lambda *a, **k: labels.append(k.get("label")) or real(*a, **k))
    return labels


PRELOADED = ("import sys\nassert 'sglang.srt.utils.common' {} sys.modules, 'order'\n"
             "import sglang.srt.utils.common  # noqa: F401\n")


def test_a_failure_on_a_base_is_re_run_fresh(trees, fake_env, monkeypatch):
    """Fails only when its base is already loaded: failures are always fresh results."""
    _low_thresholds(monkeypatch)
    labels = _labels(monkeypatch)
    upstream, pruned = trees
    for root in trees:
        (root / "python/sglang/srt/models/first_import.py").write_text(PRELOADED.format("not in"))
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None, reuse=False)
    assert "importing pruned (failures, fresh)" in labels
    assert cmp.pruned["sglang.srt.models.first_import"].ok
    assert not cmp.pruned["sglang.srt.models.first_import"].base
    assert "sglang.srt.models.first_import" not in cmp.upstream  # pruned imports: upstream not needed


def test_upstream_s_side_of_a_regression_is_fresh(trees, fake_env, monkeypatch):
    """Passes only on its base (fresh, it fails): pruning breaks it too, which is no regression."""
    _low_thresholds(monkeypatch)
    labels = _labels(monkeypatch)
    upstream, pruned = trees
    (upstream / "python/sglang/srt/models/first_import.py").write_text(PRELOADED.format("in"))
    (pruned / "python/sglang/srt/models/first_import.py").write_text(PRELOADED.format("in") + "raise ValueError\n")
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), fake_env, commit=None, reuse=False)
    assert "importing upstream (where pruned fails)" in labels
    assert not cmp.upstream["sglang.srt.models.first_import"].ok
    assert not cmp.upstream["sglang.srt.models.first_import"].base
    assert not any("first_import" in f for f in cmp.regressions)

