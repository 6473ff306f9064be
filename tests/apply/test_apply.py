"""Applying batches to a work tree made from a fixture upstream: commits, order, rollback, reports."""

from __future__ import annotations

import json
import subprocess

import pytest

from shrinker.errors import ShrinkError
from tests.apply.mini_project import make_project, mini_rules


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A sandbox project: the mini tree as a git upstream, its rules as profile `mini`, a plan.

    The fixture's broken.py stays (kept as is); the server's npu import is guarded.
    """
    return make_project(tmp_path, monkeypatch, mini_rules())


def _log(tree):
    return subprocess.run(["git", "log", "--format=%s"], cwd=tree, capture_output=True, text=True).stdout.split("\n")


def test_all_batches_commit_one_each(project):
    from shrinker import paths
    from shrinker.apply.run import apply_batches

    outcomes = apply_batches("mini", all_batches=True, jobs=1, use_verify=False)
    assert [o.gate for o in outcomes] == ["passed", "passed", "passed"]
    tree = paths.work_tree_dir("mini", project["upstream"].version)
    subjects = [s for s in _log(tree) if s.startswith("shrink: batch")]
    assert subjects == ["shrink: batch 3 — rest", "shrink: batch 2 — platforms", "shrink: batch 1 — other models"]
    assert not (tree / "python/pkg/models/llama.py").exists()
    assert (tree / "python/pkg/models/deepseek.py").exists()
    report = json.loads((paths.reports_dir("mini", project["upstream"].version) / "apply.json").read_text())
    assert [b["number"] for b in report["batches"]] == [1, 2, 3]
    assert report["totals"]["removed_lines"] > 0
    # The upstream cache is never written.
    assert (project["upstream"].root / "python/pkg/models/llama.py").exists()


def test_a_reset_apply_gives_the_same_commits(project):
    """Fixed author and dates: the same batches give the same commit hashes on any machine, any day."""
    import time

    from shrinker import paths
    from shrinker.apply.run import apply_batches

    tree = paths.work_tree_dir("mini", project["upstream"].version)
    apply_batches("mini", all_batches=True, jobs=1, use_verify=False)
    first = subprocess.run(["git", "log", "--format=%H"], cwd=tree, capture_output=True, text=True).stdout
    time.sleep(1.1)  # a clock-dated commit would differ now
    apply_batches("mini", all_batches=True, jobs=1, use_verify=False, reset=True)
    again = subprocess.run(["git", "log", "--format=%H"], cwd=tree, capture_output=True, text=True).stdout
    assert first == again and len(first.split()) >= 4


def test_batch_order_is_enforced(project):
    from shrinker.apply.run import apply_batches

    with pytest.raises(ShrinkError, match=r"batch 2 needs batches 1..1 applied first"):
        apply_batches("mini", batch=2, jobs=1, use_verify=False)
    apply_batches("mini", batch=1, jobs=1, use_verify=False)
    with pytest.raises(ShrinkError, match="already applied"):
        apply_batches("mini", batch=1, jobs=1, use_verify=False)
    with pytest.raises(ShrinkError, match="no batch 9"):
        apply_batches("mini", batch=9, jobs=1, use_verify=False)


def test_planted_fault_rolls_back_and_is_reported(project):
    """A batch that deletes a module kept code still imports fails its gate and leaves no trace."""
    from shrinker import paths
    from shrinker.apply.run import apply_batches

    version = project["upstream"].version
    plan_file = paths.manifests_dir("mini", version) / "batches.json"
    plan = json.loads(plan_file.read_text())
    plan["batches"][0]["delete"].append("python/pkg/hooks.py")  # imported by kept pkg.server? no: a string
    plan["batches"][0]["delete"].append("python/pkg/layers/attention/triton_backend.py")
    plan_file.write_text(json.dumps(plan))
    tree = paths.work_tree_dir("mini", version)
    outcomes = apply_batches("mini", batch=1, jobs=1, use_verify=False)
    assert outcomes[0].gate == "failed"
    assert (tree / "python/pkg/layers/attention/triton_backend.py").exists()  # rolled back
    assert not [s for s in _log(tree) if s.startswith("shrink: batch")]
    report = (paths.reports_dir("mini", version) / "batch-1.md").read_text()
    assert "attention_registry.py" in report and "pkg.layers.attention.triton_backend" in report
    # mended, the batch passes and its stale failure report goes
    plan["batches"][0]["delete"].remove("python/pkg/layers/attention/triton_backend.py")
    plan_file.write_text(json.dumps(plan))
    assert apply_batches("mini", batch=1, jobs=1, use_verify=False)[0].gate == "passed"
    assert not (paths.reports_dir("mini", version) / "batch-1.md").exists()


def test_a_changed_plan_needs_reset(project):
    from shrinker import paths
    from shrinker.apply.run import apply_batches

    apply_batches("mini", batch=1, jobs=1, use_verify=False)
    plan_file = paths.manifests_dir("mini", project["upstream"].version) / "batches.json"
    plan = json.loads(plan_file.read_text())
    plan["batches"][1]["delete"] = plan["batches"][1]["delete"][:-1]
    plan_file.write_text(json.dumps(plan))
    with pytest.raises(ShrinkError, match="plan changed .* use --reset"):
        apply_batches("mini", batch=2, jobs=1, use_verify=False)
    assert apply_batches("mini", batch=1, reset=True, jobs=1, use_verify=False)[0].gate == "passed"


def test_dry_run_prints_the_diff_and_changes_nothing(project):
    from shrinker import paths
    from shrinker.apply.run import apply_batches

    outcomes = apply_batches("mini", batch=1, dry_run=True, jobs=1, use_verify=False)
    assert "deleted file mode" in outcomes[0].diff and "llama.py" in outcomes[0].diff
    tree = paths.work_tree_dir("mini", project["upstream"].version)
    assert (tree / "python/pkg/models/llama.py").exists()


def test_gate_catches_a_name_a_kept_module_no_longer_provides(project):
    """A re-exported name lost with its module is an ImportError at run time: the gate names it."""
    from shrinker import paths
    from shrinker.apply.gate import missing_names

    tree = paths.work_tree_dir("mini", project["upstream"].version)
    from shrinker.apply.run import apply_batches

    apply_batches("mini", batch=1, jobs=1, use_verify=False)
    (tree / "python/pkg/quant.py").write_text((tree / "python/pkg/quant.py").read_text()
                                              .replace("from pkg.quant_gguf import GGUFConfig\n", ""))
    (tree / "python/pkg/hooks.py").write_text("from pkg.quant import GGUFConfig\n")
    found = missing_names(tree, ["pkg"])
    assert ("python/pkg/hooks.py", "pkg.quant", "GGUFConfig") in found
    assert "no longer provides it" in found[("python/pkg/hooks.py", "pkg.quant", "GGUFConfig")]


def test_codemod_findings_in_a_file_a_later_batch_deletes_do_not_fail_the_gate(tmp_path):
    """0.5.17: batch 1 removed MoonViTConfig from the configs; kimi_vl_moonvit.py still used it, and
    only batch 2 (multimodal) deletes that file."""
    from shrinker.apply.run import gate_findings

    tree = tmp_path / "build"
    found = [f"{tree}/python/pkg/vit.py:633: MoonViTConfig from pkg.configs, which no longer provides it, is still used"]
    assert gate_findings(found, "python/pkg/vit.py", tree, {"python/pkg/vit.py"}) == []
    assert gate_findings(found, "python/pkg/vit.py", tree, set()) == [
        "python/pkg/vit.py:633: MoonViTConfig from pkg.configs, which no longer provides it, is still used"]
