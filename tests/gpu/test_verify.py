"""`shrink verify --gpu` without a GPU exits 2 with one line; the device runner's no-GPU path too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shrinker.gpu import verify

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(verify.shutil, "which", lambda name: None)


def test_gpu_missing_reason_without_nvidia_smi(no_gpu):
    reason = verify.gpu_missing_reason()
    assert reason and "nvidia-smi not found" in reason and "\n" not in reason


def test_run_gpu_verify_exits_2_with_one_line(no_gpu, capsys, tmp_path):
    assert verify.run_gpu_verify(tmp_path / "pruned", tmp_path / "upstream") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("no GPU here")


def test_module_entry_exits_2_on_this_machine(tmp_path):
    # CI and this machine have no GPU: the on-device command must say so in one line, exit 2
    if verify.gpu_missing_reason() is None:
        pytest.skip("a GPU is present")
    proc = subprocess.run([sys.executable, "-m", "shrinker.gpu.verify", "record", "--part", "1", "--out",
                           str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("no GPU here")
    assert not any(tmp_path.iterdir())


def test_fake_gpu_failing_torch(monkeypatch, tmp_path):
    # nvidia-smi lists a GPU but torch cannot use it: still one line, exit 2
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: Fake'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{monkeypatch.delenv('PATH', raising=False) or ''}/usr/bin:/bin")
    monkeypatch.setattr(verify.sys, "executable", "/bin/false")
    reason = verify.gpu_missing_reason()
    assert reason == "no GPU here: torch.cuda is not available"


def _fake_device(monkeypatch, tmp_path, answer_for):
    """run_part with the GPU, the install and the servers faked: launches answer via answer_for(name)."""
    from shrinker.gpu import install

    trees = {"pruned": tmp_path / "tree-pruned", "upstream": tmp_path / "tree-upstream"}
    inst = install.Installed(root=tmp_path, site=tmp_path / "site", trees=trees, models={},
                             manifest={"archives": [], "created": "now"})
    monkeypatch.setattr(verify, "gpu_missing_reason", lambda: None)
    monkeypatch.setattr(verify.install, "install_bundle", lambda ship, root: inst)
    monkeypatch.setattr(verify, "environment", lambda env: {"gpu": "fake"})
    monkeypatch.setattr(verify, "prepare_models", lambda cases, inst, env: {
        "tiny-seeded": {"load_format": "auto", "weights_sha256": "w1"}, "tiny-dummy": {"load_format": "dummy"},
        "tiny-fp8-dummy": {"load_format": "dummy"}})
    monkeypatch.setattr(verify, "run_launch", lambda launch, cases, model, env, logs, tag: {
        "status": "ok", "model": launch.model, "weights_sha256": model.get("weights_sha256"),
        "requests": {"gen-batch-3": {"http_status": 200, "answer": answer_for(launch.name)}}})


def test_record_then_compare_on_a_fake_device(monkeypatch, tmp_path):
    ref_dir, run_ok, run_bad = tmp_path / "ref", tmp_path / "ok", tmp_path / "bad"
    _fake_device(monkeypatch, tmp_path, lambda name: [{"output_ids": [1, 2, 3]}])
    assert verify.run_part("record", 2, tmp_path, ref_dir) == 0
    recorded = json.loads((ref_dir / "results-part2-upstream.json").read_text())
    assert set(recorded["launches"]) == {"flashinfer-graph", "tools-flashinfer-graph", "dummy-triton-graph"}

    assert verify.run_part("compare", 2, tmp_path, run_ok, ref=ref_dir) == 0
    summary = json.loads((run_ok / "compare-part2.json").read_text())
    assert summary["passed"] and len(summary["cases"]) == 3

    _fake_device(monkeypatch, tmp_path,
                 lambda name: [{"output_ids": [1, 2, 4 if name == "tools-flashinfer-graph" else 3]}])
    assert verify.run_part("compare", 2, tmp_path, run_bad, ref=ref_dir) == 1
    summary = json.loads((run_bad / "compare-part2.json").read_text())
    failed = [c for c in summary["cases"] if c["status"] != "pass"]
    assert failed == [{"launch": "tools-flashinfer-graph", "request": "gen-batch-3", "status": "fail",
                       "detail": "[0].output_ids[2]: 3 != 4"}]


def test_deadline_skips_launches_and_compare_fails_them(monkeypatch, tmp_path):
    _fake_device(monkeypatch, tmp_path, lambda name: [{"output_ids": [1]}])
    verify.run_part("record", 2, tmp_path, tmp_path / "ref")
    # no time left at all: every launch is skipped, which a comparison must not count as a pass
    assert verify.run_part("compare", 2, tmp_path, tmp_path / "run", ref=tmp_path / "ref", deadline_s=1) == 1
    result = json.loads((tmp_path / "run" / "results-part2-pruned.json").read_text())
    assert all(v["status"].startswith("skipped") for v in result["launches"].values())
