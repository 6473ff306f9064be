"""The verify environment: requirements, idempotence marker, the torchvision fix."""

from __future__ import annotations

import json
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
