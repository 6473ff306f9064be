"""The kernel manifest on a small tree shaped like SGLang + sgl_kernel (not copied from them): one
assertion per mechanism (wrapper reach, op kept / removed, .so attribution, JIT source include chain),
in both JIT layouts (0.5.16's sglang/jit_kernel and 0.5.17's sglang/kernels/jit)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from shrinker.graph.cache import FactsCache
from shrinker.plan.kernels import KERNEL_CODE, apply_to_decisions, kernel_manifest, read_manifest
from shrinker.rules.load import load_rules

RULES = """
[profile]
name = "mini"
description = "fixture"
package = "pkg"
extra_packages = ["kpkg"]

[[roots]]
module = "pkg.server"
reason = "the server"

[architectures]
keep = []
reason = "none"

[platform]
methods = []
packages = []
[platform.strings]
strings = ["npu"]
reason = "npu"
[[platform.predicates]]
name = "is_npu"
value = false
reason = "npu"

[[remove]]
pattern = "pkg.mamba"
reason = "a feature the profile drops"
category = "feature"

[kernels]
packages = ["kpkg"]
op_namespaces = ["kpkg"]
jit_roots = ["pkg/jit_kernel/csrc", "pkg/jit_kernel/include", "pkg/kernels/jit/csrc", "pkg/kernels/jit/include"]
jit_suffixes = [".cu", ".cuh", ".h"]
external = ["deep_gemm"]

[[batches]]
name = "rest"
risk = "high"
categories = ["feature", "unreachable"]
description = "rest"
"""

PYTHON = {
    "pkg/__init__.py": "",
    "pkg/server.py": """
        from kpkg import rmsnorm, renorm
        from kpkg.quantization import dequant
        from pkg import norm, mamba
        from pkg.utils import is_npu
        import torch
        import deep_gemm

        def serve(x):
            if is_npu():
                torch.ops.kpkg.npu_only_op(x)
            deep_gemm.fp8_gemm(x)
            return renorm(rmsnorm(x))
        """,
    "pkg/utils.py": "def is_npu():\n    return False\n",
    "pkg/norm.py": """
        import triton

        def load():
            return load_jit("norm", cuda_files=["norm/fused_norm.cuh"])

        @triton.jit
        def _kernel(x):
            pass
        """,
    "pkg/mamba.py": """
        from kpkg.mamba import causal_conv1d_fwd

        def load():
            return load_jit("conv", cuda_files=[f"mamba/conv_{1}.cuh"])
        """,
    "kpkg/__init__.py": """
        import torch
        from kpkg.load_utils import load_ops
        from kpkg.elementwise import rmsnorm
        from kpkg.mamba import causal_conv1d_fwd
        from kpkg.spatial_api import create_stream
        from kpkg.sampling import renorm

        common_ops = load_ops()
        _EXPORTS = ["rmsnorm", "causal_conv1d_fwd"]
        for _n in _EXPORTS:
            if _n in globals():
                globals()[_n] = _EXPORTS
        """,
    "kpkg/quantization/__init__.py": "from .gguf import dequant\n",
    "kpkg/quantization/gguf.py": """
        import torch

        def dequant(x):
            return torch.ops.kpkg.ggml_dequantize(x)
        """,
    "kpkg/load_utils.py": """
        def load_ops():
            return None
        """,
    "kpkg/elementwise.py": """
        import torch

        def _check(x):
            return x

        def rmsnorm(x):
            torch.ops.kpkg.rmsnorm.default(_check(x))
        """,
    "kpkg/mamba.py": """
        import torch

        def causal_conv1d_fwd(x):
            torch.ops.kpkg.causal_conv1d_fwd.default(x)
        """,
    "kpkg/sampling.py": """
        import torch

        def _renorm_internal(x):
            return torch.ops.kpkg.renorm_probs(x)

        def renorm_probs(x):
            return _renorm_internal(x)

        renorm = renorm_probs
        """,
    "kpkg/spatial_api.py": """
        import torch

        def create_stream(x):
            from kpkg import spatial_ops
            return torch.ops.kpkg.create_stream(x)
        """,
}


def _schema(name: str) -> bytes:
    return b"\x00" + f"{name}(Tensor x) -> ()".encode() + b"\x00"


def make_tree(root: Path, jit: str) -> Path:
    for rel, text in PYTHON.items():
        base = "sgl-kernel/python" if rel.startswith("kpkg") else "python"
        path = root / base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    kdir = root / "sgl-kernel/python/kpkg"
    (kdir / "sm90").mkdir()
    # common_ops holds a kept op and a removed one: it stays whole
    (kdir / "sm90/common_ops.abi3.so").write_bytes(b"\x7fELF" + _schema("rmsnorm") + _schema("causal_conv1d_fwd")
                                                   + b"\x00npu_only_op\x00")
    # a binary only removed code would load, registering nothing kept
    (kdir / "spatial_ops.abi3.so").write_bytes(b"\x7fELF" + _schema("create_stream"))
    (kdir / "mamba_ops.abi3.so").write_bytes(b"\x7fELF" + _schema("selective_scan"))
    csrc, include = root / f"python/pkg/{jit}/csrc", root / f"python/pkg/{jit}/include"
    for rel, text in {
        csrc / "norm/fused_norm.cuh": '#include "norm_utils.cuh"\n#include <pkg_kernel/tensor.h>\n#include <cuda.h>\n',
        csrc / "norm/norm_utils.cuh": "// helpers\n",
        include / "pkg_kernel/tensor.h": '#include "common.h"\n',
        include / "pkg_kernel/common.h": "// common\n",
        include / "pkg_kernel/only_conv.h": "// used by the conv kernel only\n",
        csrc / "mamba/conv_1.cuh": "#include <pkg_kernel/only_conv.h>\n",
        csrc / "unnamed/loose.cuh": "// nothing names it\n",
    }.items():
        rel.parent.mkdir(parents=True, exist_ok=True)
        rel.write_text(text)
    return root


@pytest.fixture(params=["jit_kernel", "kernels/jit"], ids=["0.5.16 layout", "0.5.17 layout"])
def planned(request, tmp_path, monkeypatch):
    from shrinker.graph.build import build_graph
    from shrinker.plan.decide import decide
    from shrinker.plan.reach import compute_reach

    monkeypatch.setenv("SHRINK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "rules.toml").write_text(RULES)
    rules = load_rules(path=tmp_path / "rules.toml")
    tree = make_tree(tmp_path / "tree", request.param)
    graph = build_graph(tree, jobs=1, cache=FactsCache(tmp_path / "facts.pickle"))
    reach = compute_reach(graph, rules)
    decisions, _ = decide(graph, reach, rules)
    manifest = kernel_manifest(graph, reach, rules)
    entries = {(e.kind, e.name): e for e in manifest.entries}
    return {"manifest": manifest, "entries": entries, "decisions": decisions, "jit": f"python/pkg/{request.param}"}


def test_op_kept_through_a_read_wrapper(planned):
    e = planned["entries"]
    assert e[("wrapper", "kpkg.elementwise:rmsnorm")].keep
    assert "read by kept pkg.server" in e[("wrapper", "kpkg.elementwise:rmsnorm")].reason
    assert e[("wrapper", "kpkg.elementwise:_check")].keep  # called by the kept wrapper
    op = e[("op", "rmsnorm")]
    assert op.keep and "kpkg.elementwise:rmsnorm" in op.reason
    assert op.where == "sgl-kernel/python/kpkg/sm90/common_ops.abi3.so"


def test_a_name_bound_by_module_code_keeps_what_that_code_reads(planned):
    """`renorm = renorm_probs` in kpkg/sampling.py, re-exported by kpkg and read by the server: the
    assignment runs, so renorm_probs, its helper and their op stay (sgl_kernel.sampling's
    `top_k_renorm_prob = top_k_renorm_probs`, which 0.5.23's CUDA sampler imports)."""
    e = planned["entries"]
    assert e[("wrapper", "kpkg.sampling:renorm_probs")].keep
    assert e[("wrapper", "kpkg.sampling:_renorm_internal")].keep
    assert e[("op", "renorm_probs")].keep


def test_relative_re_export_inside_the_package_is_followed(planned):
    """kpkg/quantization/__init__.py names no kernel word (`from .gguf import dequant`): it is read anyway."""
    e = planned["entries"]
    assert e[("wrapper", "kpkg.quantization.gguf:dequant")].keep
    assert e[("op", "ggml_dequantize")].keep


def test_op_of_an_unread_wrapper_goes(planned):
    """Only the package's own re-export and its debug list name causal_conv1d_fwd; the kept importer
    pkg.mamba is removed by a rule."""
    e = planned["entries"]
    assert not e[("wrapper", "kpkg.mamba:causal_conv1d_fwd")].keep
    op = e[("op", "causal_conv1d_fwd")]
    assert not op.keep and "kpkg.mamba:causal_conv1d_fwd" in op.reason


def test_op_read_only_under_a_platform_guard_goes(planned):
    op = planned["entries"][("op", "npu_only_op")]
    assert not op.keep and "is_npu()" in op.reason
    assert "name string only" in op.where  # bound without a schema: found by its name


def test_binary_attribution(planned):
    e, decisions = planned["entries"], {d.path: d for d in planned["decisions"]}
    common = e[("binary", "sgl-kernel/python/kpkg/sm90/common_ops.abi3.so")]
    assert common.keep and "1 kept ops" in common.reason  # a removed op beside a kept one: stays whole
    spatial = e[("binary", "sgl-kernel/python/kpkg/spatial_ops.abi3.so")]
    assert not spatial.keep and "create_stream" in spatial.reason  # only the unread create_stream loads it
    scan = e[("binary", "sgl-kernel/python/kpkg/mamba_ops.abi3.so")]
    assert not scan.keep and scan.bytes > 0
    assert apply_to_decisions(planned["decisions"], planned["manifest"]) >= 2
    gone = decisions["sgl-kernel/python/kpkg/mamba_ops.abi3.so"]
    assert not gone.keep and gone.code == KERNEL_CODE and gone.rule == "unreachable"
    assert decisions["sgl-kernel/python/kpkg/sm90/common_ops.abi3.so"].keep


def test_jit_include_chain(planned):
    e, jit = planned["entries"], planned["jit"]
    named = e[("jit", f"{jit}/csrc/norm/fused_norm.cuh")]
    assert named.keep and "named by kept pkg.norm" in named.reason and "'norm'" in named.reason
    assert e[("jit", f"{jit}/csrc/norm/norm_utils.cuh")].keep  # "..." beside the includer
    assert e[("jit", f"{jit}/include/pkg_kernel/tensor.h")].keep  # <...> under include/
    assert "included by kept" in e[("jit", f"{jit}/include/pkg_kernel/common.h")].reason  # transitively
    conv = e[("jit", f"{jit}/csrc/mamba/conv_1.cuh")]  # named by an f-string glob of a removed module
    assert not conv.keep and "pkg.mamba" in conv.reason
    only = e[("jit", f"{jit}/include/pkg_kernel/only_conv.h")]
    assert not only.keep and "included only by removed" in only.reason
    assert e[("jit", f"{jit}/csrc/unnamed/loose.cuh")].keep  # nobody names it: how it loads is unknown


def test_triton_and_external(planned):
    e = planned["entries"]
    assert e[("triton", "pkg.norm")].keep
    assert e[("external", "deep_gemm")].keep


def test_manifest_text_round_trips_and_is_sorted(planned):
    text = planned["manifest"].text()
    lines = text.splitlines()
    assert lines[0].startswith("# kind\tname\tdecision")
    back = read_manifest(text)
    assert len(back) == len(planned["manifest"].entries)
    kinds = [e.kind for e in back]
    assert kinds == sorted(kinds, key=["binary", "op", "wrapper", "jit", "triton", "external"].index)
    assert planned["manifest"].text() == text  # deterministic
