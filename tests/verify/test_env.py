"""The verify environment: requirements, idempotence marker, the torchvision fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from shrinker.verify import env as venv


def test_requirements_pin_what_sglang_pins():
    reqs = venv.read_requirements()
    assert reqs[0] == "torch==2.13.0"  # installed first, alone, CPU build
    for pin in ("transformers==5.12.1", "tokenizers==0.22.2", "openai==2.6.1", "xgrammar==0.2.1"):
        assert pin in reqs
    assert not any(r.startswith("#") or not r for r in reqs)


def test_marker_makes_it_idempotent_and_tracks_requirements(tmp_path, monkeypatch):
    root = tmp_path / "venv"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").symlink_to(sys.executable)
    made = venv.VerifyEnv(root=root, python=root / "bin" / "python",
                          requirements_hash=venv.requirements_hash(venv.read_requirements()), installed=["x"])
    (root / venv.MARKER).write_text(json.dumps(made.to_json()))
    assert venv.load_env(root) == made
    # make_env finds it and installs nothing
    monkeypatch.setattr(venv, "_pip", lambda *a, **k: (_ for _ in ()).throw(AssertionError("pip called")))
    assert venv.make_env(root) == made
    # other requirements: the env is stale
    (root / venv.MARKER).write_text(json.dumps({**made.to_json(), "requirements_hash": "old"}))
    assert venv.load_env(root) is None


def test_fix_torchvision_guards_register_fake(tmp_path, monkeypatch):
    site = tmp_path / "site"
    target = site / "torchvision" / "_meta_registrations.py"
    target.parent.mkdir(parents=True)
    target.write_text('import functools\n\nimport torch\n\n\n@functools.lru_cache(None)\ndef get_meta_lib():\n'
                      '    return 1\n\n\n@torch.library.register_fake("torchvision::nms")\ndef meta_nms():\n    pass\n')
    monkeypatch.setattr(venv, "_probe", lambda python, code: str(site))
    assert venv.fix_torchvision(Path("python"))
    text = target.read_text()
    assert '@_register_fake("torchvision::nms")' in text and "torchvision.extension._has_ops()" in text
    compile(text, str(target), "exec")
    assert venv.fix_torchvision(Path("python")) and target.read_text() == text  # idempotent


def _release(tmp_path: Path, *deps: str) -> Path:
    """An upstream tree whose python/pyproject.toml declares `deps`."""
    (tmp_path / "python").mkdir(parents=True)
    lines = ", ".join(f'"{d}"' for d in deps)
    (tmp_path / "python" / "pyproject.toml").write_text(f'[project]\nname = "sglang"\nversion = "9"\ndependencies = [{lines}]\n')
    return tmp_path


def test_a_release_is_verified_under_its_own_pins(tmp_path):
    base = ["torch==2.13.0", "torchvision", "transformers==5.12.1", "compressed-tensors", "numpy"]
    up = _release(tmp_path, "torch==2.14.1", "transformers==5.19.0", "compressed-tensors==0.18.0",
                  "numpy>=2", "sglang-kernel==0.4.10", "xgrammar==0.2.7; platform_machine == 'x86_64'")
    # torch stays the base's CPU build (HELD); the rest take the release's pins
    assert venv.requirements_for(up, base) == [
        "torch==2.13.0", "torchvision", "transformers==5.19.0", "compressed-tensors==0.18.0", "numpy"]
    assert venv.held_pins(up, base) == ["torch==2.14.1"]
    # an older torch (0.5.16's 2.11, the GPU build) is held the same way; a pin equal to the base's is no news
    old = _release(tmp_path / "old", "torch==2.11.0", "transformers==5.12.1")
    assert venv.requirements_for(old, base) == base and venv.held_pins(old, base) == ["torch==2.11.0"]
    same = _release(tmp_path / "same", "torch==2.13.0")
    assert venv.held_pins(same, base) == []
    assert venv.requirements_for(None, base) == base and venv.held_pins(None, base) == []


def test_each_set_of_pins_has_its_own_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("SHRINK_VERIFY_VENV", raising=False)
    monkeypatch.setattr(venv.paths, "project_root", lambda: tmp_path)
    base = venv.read_requirements()
    assert venv.env_dir() == venv.env_dir(base) == tmp_path / ".venv-verify"
    other = [r if not r.startswith("torch==") else "torch==2.14.1" for r in base]
    assert venv.env_dir(other) == tmp_path / f".venv-verify-{venv.requirements_hash(other)}"
    assert venv.env_dir(other) != venv.env_dir([*other, "extra"])


def test_torch_is_asked_for_as_the_cpu_build_first():
    assert venv.cpu_build("torch==2.13.0") == "torch==2.13.0+cpu"
    assert venv.cpu_build("torch==2.14.1+cu130") == "torch==2.14.1+cu130"
    assert venv.cpu_build("torch>=2") == "torch>=2"


def test_a_torch_without_a_cpu_build_takes_the_cuda_build(tmp_path, monkeypatch):
    calls = []

    def pip(python, args, log):
        calls.append(args[-1] if args[0] != "-c" else "rest")
        failed = args[-1] == "torch==2.14.1+cpu"  # no CPU wheel of 2.14.1 on the find-links
        return subprocess.CompletedProcess(args, 1 if failed else 0, "", "ERROR: no matching distribution")

    monkeypatch.setattr(venv, "_pip", pip)
    monkeypatch.setattr(venv, "_probe", lambda python, code: "2.14.1+cu130" if "torch" in code else "")
    def fake_venv(cmd, **kwargs):  # `python -m venv ROOT`: the folder alone
        Path(cmd[-1]).mkdir(parents=True)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(venv.subprocess, "run", fake_venv)
    env = venv.make_env(tmp_path / "env", reqs=["torch==2.14.1", "numpy"])
    assert calls == ["torch==2.14.1+cpu", "torch==2.14.1", "rest"]
    assert env.torch_version == "2.14.1+cu130" and env.failed == {}
    assert venv.load_env(tmp_path / "env", reqs=["torch==2.14.1", "numpy"]) is None  # no python in the fake venv
    assert json.loads((tmp_path / "env" / venv.MARKER).read_text())["torch_version"] == "2.14.1+cu130"
    # the rest resolve against torch's public version: `torch<=2.14.1` (a cap) admits it, not 2.14.1+cu130
    assert "torch==2.14.1\n" in (tmp_path / "env" / "constraints-verify.txt").read_text()
