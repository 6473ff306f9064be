"""The ServerArgs probe reads a dataclass (to 0.5.19) and a resolved msgspec-style record (0.5.20)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = Path(__file__).parents[2] / "shrinker/verify/probes/serverargs_probe.py"

TARGETS = '''
import dataclasses


@dataclasses.dataclass
class OldArgs:
    model_path: str
    tp_size: int = 1

    def __post_init__(self):
        self.tp_size = 8


class NewArgs:  # what msgspec.defstruct makes: __struct_fields__, resolution apart
    __struct_fields__ = ("model_path", "attention_backend", "_resolution_finished")

    def __init__(self, model_path):
        self.model_path, self.attention_backend, self._resolution_finished = model_path, None, False

    def resolve_once(self):
        self.attention_backend, self._resolution_finished = "fa3", True


class Neither:
    def __init__(self, model_path):
        self.model_path = model_path
'''


def _probe(tmp_path: Path, target: str) -> dict:
    (tmp_path / "targets.py").write_text(TARGETS)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"target": f"targets:{target}", "model_dir": "/m", "pretend": None}))
    out = tmp_path / "out.json"
    subprocess.run([sys.executable, str(PROBE), str(spec), str(out)], cwd=tmp_path, check=True,
                   env={"PYTHONPATH": str(tmp_path)})
    return json.loads(out.read_text())


def test_a_dataclass_and_a_resolved_struct(tmp_path):
    assert _probe(tmp_path, "OldArgs") == {"error": "", "fields": {"model_path": "/m", "tp_size": 8}}
    assert _probe(tmp_path, "NewArgs") == {"error": "", "fields": {"model_path": "/m", "attention_backend": "fa3"}}
    assert "neither a dataclass nor a msgspec Struct" in _probe(tmp_path, "Neither")["error"]
