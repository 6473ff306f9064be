"""The kernel manifest's graph-floor readers: op schemas in a binary's bytes, #include names and their
resolution, and the Python facts (ops, module attributes, JIT source names) with where they stand."""

from __future__ import annotations

import textwrap
from pathlib import Path

from shrinker.graph.binaries import BinaryFacts, large_files, names_in, schemas_in, tree_binaries
from shrinker.graph.jit_sources import SourceIndex, includes
from shrinker.graph.kernel_refs import kernel_facts


def test_schemas_are_read_from_nul_terminated_strings() -> None:
    data = (b"\x7fELF\x00junk\x00rmsnorm(Tensor! out, Tensor x, float eps) -> ()\x00"
            b"fwd.varlen(Tensor q) -> Tensor[]\x00Use a -> b arrow in a message (see docs)\x00"
            b"fast_topk\x00_ZN5torch3foo\x00")
    schemas = schemas_in(data)
    assert schemas == {"rmsnorm": "rmsnorm(Tensor! out, Tensor x, float eps) -> ()",
                       "fwd": "fwd.varlen(Tensor q) -> Tensor[]"}  # an overload names its op; prose does not count
    assert "fast_topk" in names_in(data) and "_ZN5torch3foo" not in names_in(data)
    facts = BinaryFacts("x.so", len(data), "0", schemas, names_in(data))
    assert facts.holds("rmsnorm") == "schema" and facts.holds("fast_topk") == "name" and facts.holds("nope") == ""


def test_binaries_are_cached_by_content(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SHRINK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "t/pkg").mkdir(parents=True)
    (tmp_path / "t/pkg/ops.abi3.so").write_bytes(b"\x00op_a(Tensor x) -> ()\x00")
    (tmp_path / "t/pkg/readme.txt").write_text("not a binary")
    first = tree_binaries(tmp_path / "t", ["pkg/ops.abi3.so", "pkg/readme.txt"])
    assert [b.path for b in first] == ["pkg/ops.abi3.so"] and first[0].schemas == {"op_a": "op_a(Tensor x) -> ()"}
    assert list((tmp_path / "cache/kernels").glob("binary-*.json"))
    assert large_files(tmp_path / "t", "pkg") == []  # no LARGE_FILES.json


def test_large_file_without_its_wheel_is_listed_unscanned(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SHRINK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "LARGE_FILES.json").write_text(
        '[{"path": "k/flash_ops.abi3.so", "bytes": 1000, "wheel": "k.whl", "sha256": "ab"}]')
    (found,) = large_files(tmp_path, "sgl-kernel/python", downloads=tmp_path / "none")
    assert found.path == "sgl-kernel/python/k/flash_ops.abi3.so" and not found.scanned and not found.in_tree
    assert found.bytes == 1000


def test_includes_and_their_resolution() -> None:
    text = '#include "a.cuh"\n  #  include <lib/b.h>\n#include <cuda.h>\n// #include "c.h"\n'
    assert includes(text) == ["a.cuh", "lib/b.h", "cuda.h"]
    index = SourceIndex(["j/csrc", "j/include"], ["j/csrc/x/a.cuh", "j/csrc/x/k.cuh", "j/include/lib/b.h",
                                                    "j/csrc/vendor/3rd/lib/b.h", "j/csrc/m/c3_v2.cuh"])
    assert index.resolve("a.cuh", beside="j/csrc/x/k.cuh") == ["j/csrc/x/a.cuh"]
    assert index.resolve("lib/b.h") == ["j/include/lib/b.h"]  # a root first
    assert index.resolve("3rd/lib/b.h") == ["j/csrc/vendor/3rd/lib/b.h"]  # else a path suffix
    assert index.resolve("cuda.h") == []  # a system header
    assert index.resolve("m/c*_v2.cuh") == ["j/csrc/m/c3_v2.cuh"]  # an f-string's glob
    assert index.resolve("../x/a.cuh", beside="j/csrc/m/c3_v2.cuh") == ["j/csrc/x/a.cuh"]


def test_python_facts_with_where_they_stand() -> None:
    source = textwrap.dedent('''
        import torch
        import kpkg
        from kpkg import spatial
        from kpkg.elementwise import rmsnorm as rn
        from kpkg.mamba import *
        _CUDA_FILE = "attn/indexer.cuh"

        def run(x, ratio):
            if is_npu():
                torch.ops.kpkg.npu_op(x)
            kpkg.silu(x)
            spatial.get_sm(x)
            load_jit(f"conv_{ratio}", cuda_files=[f"conv/c{ratio}_v2.cuh"])
            return rn(torch.zeros(1))
        ''')
    facts = kernel_facts(source, "m.py", "pkg.m", False, frozenset({"kpkg"}))
    by_kind = {(f.kind, f.target, f.name): f for f in facts.all_facts()}
    op = by_kind[("op", "kpkg", "npu_op")]
    assert op.guards == ["is_npu()"] and op.function == "run"
    assert ("attr", "kpkg", "silu") in by_kind and ("attr", "kpkg.spatial", "get_sm") in by_kind
    assert not any(k[0] == "attr" and k[1] == "torch" for k in by_kind)  # only the packages asked for
    assert facts.aliases["rn"] == "kpkg.elementwise:rmsnorm" and facts.stars == ["kpkg.mamba"]
    assert ("string", "attn/indexer.cuh", "") in by_kind
    assert ("string", "conv/c*_v2.cuh", "conv_*") in by_kind  # a glob, labelled with the JIT module's name
    assert set(facts.defs) == {"run"} and "rn" in facts.defs["run"].names
