"""`shrink plan --kernels-only`: the kernel manifest and its report for a release, nothing else rewritten."""

from __future__ import annotations

from shrinker import paths
from tests.apply.mini_project import make_project, mini_rules


def test_kernels_only_writes_the_kernel_files_and_leaves_the_plan(tmp_path, monkeypatch):
    # the mini tree's pkg.kernels stands for a kernel package: its functions are wrappers
    rules = mini_rules() + '\n[kernels]\npackages = ["pkg.kernels"]\n'
    project = make_project(tmp_path, monkeypatch, rules)
    version = project["upstream"].version
    manifests = paths.manifests_dir("mini", version)
    reports = paths.reports_dir("mini", version)
    before = {p.name: p.read_bytes() for p in manifests.iterdir() if p.name != "kernels.txt"}
    reports.mkdir(parents=True, exist_ok=True)
    (reports / "plan.md").write_text("the release's own plan report\n")
    planned = (manifests / "kernels.txt").read_text()  # what the whole plan wrote
    assert "wrapper\tpkg.kernels.ops.norm:rmsnorm" in planned
    (manifests / "kernels.txt").unlink()
    (manifests / "keep.txt").write_text("edited by hand\n")  # stands for a walk's older keep list
    before["keep.txt"] = b"edited by hand\n"

    from shrinker.plan.run import KERNELS_ONLY_NOTE, make_kernel_manifest

    manifest, report = make_kernel_manifest("mini", jobs=1)
    assert manifest == manifests / "kernels.txt" and manifest.read_text() == planned
    assert KERNELS_ONLY_NOTE in report.read_text()
    assert {p.name: p.read_bytes() for p in manifests.iterdir() if p.name != "kernels.txt"} == before
    assert (reports / "plan.md").read_text() == "the release's own plan report\n"
