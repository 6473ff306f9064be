"""probes/pretend_cuda.py: a CUDA-only module imports under the pretence and not without it, and the
differential import check still catches a planted fault under it. Needs .venv-verify (torch)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shrinker.verify import imports
from shrinker.verify.imports import compare_imports
from shrinker.checks.tree import SourceTree

PROBES = Path(imports.__file__).parent / "probes"
SPEC = {"gpu": {"name": "NVIDIA H100 80GB HBM3", "capability": [9, 0], "memory_bytes": 85029158912},
        "stub_modules": ["common_ops"], "op_namespaces": ["sgl_kernel"],
        "cuda_only_bindings": ["_cuda_getCurrentRawStream"]}
# What a CUDA-only module does at import: ask the device, import compiled ops (a top-level module and
# a .so in its own package), look up a torch.ops op, register a fake for it.
KERNELS = '''\
import torch
import common_ops
from gpu_pkg import fused_ops
from gpu_pkg.helper import scale

assert torch.cuda.is_available() and torch.version.cuda
CAPABILITY = torch.cuda.get_device_capability()
NAME = torch.cuda.get_device_properties(0).name
GEMM = common_ops.fp8_gemm
TOPK = torch.ops.sgl_kernel.fast_topk.default
STREAM = torch.cuda.current_device()
RAW_STREAM = torch._C._cuda_getCurrentRawStream  # the CUDA build's binding, absent from the CPU build


@torch.library.register_fake("sgl_kernel::fast_topk")
def _fake(x):
    return x
'''


def _tree(root: Path) -> Path:
    pkg = root / "python" / "gpu_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text("def scale(x):\n    return 2 * x\n")
    (pkg / "kernels.py").write_text(KERNELS)
    (pkg / "fused_ops.abi3.so").write_bytes(b"not an ELF file: loading it for real fails")
    return root


def _import(python: Path, tree: Path, pretend: bool) -> subprocess.CompletedProcess:
    code = "import json, pretend_cuda, sys; pretend_cuda.install(json.loads(sys.argv[1]))\n" if pretend else ""
    code += ("import gpu_pkg.kernels as k, torch\n"
             "print(k.CAPABILITY, k.NAME, type(k.GEMM).__name__, type(k.fused_ops).__name__)\n"
             "k.GEMM(torch.zeros(2))  # a stub: the call computes nothing\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "python"), str(PROBES)]),
           "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([str(python), "-c", code, __import__("json").dumps(SPEC)], capture_output=True,
                          text=True, env=env, timeout=120)


def test_cuda_module_imports_under_pretend_and_fails_without(verify_env, tmp_path):
    tree = _tree(tmp_path / "t")
    bare = _import(verify_env.python, tree, pretend=False)
    assert bare.returncode != 0 and "common_ops" in bare.stderr
    pretend = _import(verify_env.python, tree, pretend=True)
    assert pretend.returncode == 0, pretend.stderr
    assert pretend.stdout.split() == ["(9,", "0)", "NVIDIA", "H100", "80GB", "HBM3", "MagicMock", "StubModule"]


def test_stubs_stay_last_and_private_names_stay_missing(verify_env, tmp_path):
    """A module the environment has is never replaced by a stub; dunder lookups are not stubbed
    (so `from stub import *` and hasattr(stub, '__file__') behave)."""
    code = ("import json, sys, pretend_cuda; pretend_cuda.install({'gpu': json.loads(sys.argv[1]), "
            "'stub_modules': ['json', 'absent_ops']})\n"
            "import json as j, absent_ops, absent_ops.sub\n"
            "assert j.dumps([1]) == '[1]' and not hasattr(absent_ops, '__file__')\n"
            "from absent_ops import *\nprint('ok')\n")
    env = {**os.environ, "PYTHONPATH": str(PROBES)}
    proc = subprocess.run([str(verify_env.python), "-c", code, __import__("json").dumps(SPEC["gpu"])],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.stdout.strip() == "ok", proc.stderr


@pytest.fixture
def light_preload(monkeypatch):
    monkeypatch.setattr(imports, "PRELOAD", ["torch"])  # the fixture trees need nothing else


def test_planted_fault_is_caught_under_pretend(verify_env, tmp_path, light_preload):
    upstream, pruned = _tree(tmp_path / "upstream"), _tree(tmp_path / "pruned")
    (pruned / "python/gpu_pkg/helper.py").unlink()
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), verify_env, commit=None,
                          jobs=1, pretend=SPEC)
    assert cmp.upstream["gpu_pkg.kernels"].ok  # under the pretence upstream imports it ...
    assert [f.split(" ")[1] for f in cmp.regressions] == ["gpu_pkg.kernels"]  # ... and pruned does not
    assert "No module named 'gpu_pkg.helper'" in cmp.regressions[0]
    assert not cmp.needs_cuda


def test_without_pretend_both_fail_and_nothing_is_compared(verify_env, tmp_path, light_preload):
    upstream, pruned = _tree(tmp_path / "upstream"), _tree(tmp_path / "pruned")
    (pruned / "python/gpu_pkg/helper.py").unlink()
    cmp = compare_imports(SourceTree.load(pruned), SourceTree.load(upstream), verify_env, commit=None, jobs=1)
    assert not cmp.upstream["gpu_pkg.kernels"].ok and not cmp.regressions  # the fault goes unseen


def test_cache_file_names_the_mode(tmp_path, fake_env):
    cpu = imports.upstream_cache_file("a" * 40, fake_env, 60.0)
    gpu = imports.upstream_cache_file("a" * 40, fake_env, 60.0, SPEC)
    assert "-cpu-" in cpu.name and "-pretend-" in gpu.name and cpu != gpu
    other = imports.upstream_cache_file("a" * 40, fake_env, 60.0, {**SPEC, "stub_modules": []})
    assert other != gpu  # the spec keys the cache too
