"""`shrink verify --gpu` without a GPU exits 2 with one line; the device runner's no-GPU path too."""

from __future__ import annotations

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
