"""Our slim FA3 flash_ops (shrink gpu-fa3): the binding's schemas against sgl_kernel's calls, the build
plan and build.ninja, the stubs for unbuilt kernels, the .so's round trip, and its place in the bundle.
CPU only: the build and the numerics check run on the device (shrinker.gpu.fa3_build / fa3_check)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import zipfile
from pathlib import Path

import pytest

from shrinker.errors import ShrinkError
from shrinker.gpu import fa3, fa3_build, install
from shrinker.gpu.wheels import record_hash, slim_kernel_wheel
from tests.gpu.conftest import make_wheel

CFG = fa3_build.load_config()
BINDING = fa3_build.BINDING.read_text()
ENV = {"cuda_home": "/usr/local/cuda", "torch_includes": ["/t/include", "/t/include/torch/csrc/api/include"],
       "torch_libdirs": ["/t/lib"], "python_include": "/usr/include/python3.12", "cxx11_abi": True,
       "nvidia_includes": ["/site/nvidia/cu13/include"]}

# The call shapes of sglang-kernel 0.4.5's sgl_kernel/flash_attn.py (37 positional; 29 positional +
# keywords; get_scheduler_metadata 24 positional), written here as a stand-in for the wheel.
WHEEL_LIKE = """
import torch
def a(*x):
    return torch.ops.sgl_kernel.fwd.default(%s)
def b(*x):
    return torch.ops.sgl_kernel.fwd.default(%s, is_rotary_interleaved=False, scheduler_metadata=None,
        num_splits=1, pack_gqa=None, sm_margin=0, sinks=None, sparse_mask_fine=None, only_qv=False)
def c(*x):
    return torch.ops.sgl_kernel.get_scheduler_metadata(%s)
""" % (", ".join(["x"] * 37), ", ".join(["x"] * 29), ", ".join(["x"] * 24))


def test_binding_defines_sgl_kernels_fwd_and_scheduler_with_flashattentions_34_arguments_first():
    schemas = fa3.binding_schemas(BINDING)
    assert set(schemas) == {"fwd", "get_scheduler_metadata"}
    fwd = [a.name for a in fa3.parse_args(schemas["fwd"])]
    assert len(fwd) == 37 and fwd[:3] == ["q", "k", "v"] and fwd[-3:] == ["sinks", "sparse_mask_fine", "only_qv"]
    assert fwd[27] == "attention_chunk" and fwd[33] == "sm_margin"
    assert schemas["fwd"].endswith("-> (Tensor(a!), Tensor, Tensor, Tensor)")
    sched = fa3.parse_args(schemas["get_scheduler_metadata"])
    assert len(sched) == 24 and sched[7].type == "ScalarType" and sched[-1].default == "0"
    # the C++ declaration of FlashAttention's mha_fwd takes exactly the first 34
    decl = re.search(r"std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> mha_fwd\((.*?)\);", BINDING, re.S)
    assert decl and decl.group(1).count(",") + 1 == 34


def test_wheel_like_calls_fit_the_binding_and_wrong_calls_are_reported():
    schemas = fa3.binding_schemas(BINDING)
    calls = fa3.call_sites(WHEEL_LIKE)
    assert [(c.op, c.positional) for c in calls] == [("fwd", 37), ("fwd", 29), ("get_scheduler_metadata", 24)]
    assert fa3.check_calls(schemas, calls) == []
    bad = fa3.call_sites("torch.ops.sgl_kernel.fwd.default(%s, sinkz=None)\ntorch.ops.sgl_kernel.varlen_fwd(1)\n"
                         "torch.ops.sgl_kernel.fwd.default(%s)\n" % (", ".join(["x"] * 34), ", ".join(["x"] * 38)))
    problems = fa3.check_calls(schemas, bad)
    assert any("no argument 'sinkz'" in p for p in problems)
    assert any("not given sinks, sparse_mask_fine, only_qv" in p for p in problems)
    assert any("varlen_fwd is not defined" in p for p in problems)
    assert any("38 positional" in p for p in problems)


def test_the_binding_fits_the_real_kernel_wheel_when_fetched():
    from shrinker import paths

    wheel = paths.cache_dir() / "downloads" / CFG["source"]["kernel_wheel"]
    if not wheel.is_file():
        pytest.skip("sglang-kernel 0.4.5 not fetched (shrink upstream fetch pypi:sglang==0.5.17 --no-pin)")
    assert fa3.check_kernel_wheel(wheel) == []


def test_prebuilt_schemas_are_read_from_the_binary(tmp_path: Path):
    schemas = fa3.binding_schemas(BINDING)
    blob = b"\x00\x7fELF" + b"\x00junk\x00" * 5000
    for s in schemas.values():  # as the compiler lays out the string literals: one NUL-terminated string
        blob += s.replace("(", "(    ", 1).encode() + b"\x00" + os.urandom(64).replace(b"\x00", b"\x01") + b"\x00"
    wheel = make_wheel(tmp_path / "k-0.4.5-py3-none-any.whl", {fa3.SO_MEMBER: blob}, "k-0.4.5.dist-info")
    assert fa3.upstream_schemas(wheel) == schemas


def test_kernels_built_and_stubbed_cover_the_dispatch_exactly():
    built = fa3_build.kernel_sources(CFG)
    assert len(built) == 8 and all(p.startswith("hopper/instantiations/flash_fwd_hdim") for p in built)
    assert "hopper/instantiations/flash_fwd_hdim64_512_bf16_paged_split_sm90.cu" in built
    unbuilt = fa3_build.unbuilt_kernels(CFG)
    # bf16 64/512, 64/256, 64/64, 192/128, 192/192, each plain/split/paged/paged_split: 20 named, 8 built
    assert len(fa3_build.referenced_kernels(CFG)) == 20 and len(unbuilt) == 12
    assert ("64_256", "_split") in unbuilt and ("64_512", "_split") not in unbuilt
    assert fa3_build.template_args("64_512", "_paged_split", "bf16") == "90, cutlass::bfloat16_t, 64, 512, true, true, false, true"
    assert fa3_build.template_args("192_128", "", "bf16") == "90, cutlass::bfloat16_t, 192, 128, false, false, false, false"
    stubs = fa3_build.stub_source(CFG)
    assert stubs.count("template void run_mha_fwd_<") == 12 and "TORCH_CHECK(false" in stubs
    assert "64, 512," not in stubs and "192, 128," not in stubs


def test_the_stub_generator_refuses_switches_it_does_not_model():
    cfg = copy.deepcopy(CFG)
    cfg["source"]["disable"].remove("SOFTCAP")
    with pytest.raises(ValueError, match="SOFTCAP"):
        fa3_build.referenced_kernels(cfg)
    cfg = copy.deepcopy(CFG)
    cfg["source"]["kernels"].append({"hdim": "128_128", "variants": [""]})  # HDIM128 is disabled: never called
    with pytest.raises(ValueError, match="never calls"):
        fa3_build.unbuilt_kernels(cfg)


def test_build_ninja_compiles_every_source_for_sm90a_and_links_flash_ops():
    plan = fa3_build.make_plan(CFG, ENV)
    text = fa3_build.ninja_text(plan)
    assert plan.translation_units == 13 and plan.output == "flash_ops.abi3.so"
    for src in fa3_build.kernel_sources(CFG) + ["hopper/flash_fwd_combine.cu", "hopper/flash_prepare_scheduler.cu"]:
        assert f": nvcc {src}\n" in text
    for src in ("hopper/flash_api.cpp", "shrinker/fa3_binding.cpp", "shrinker/fa3_unbuilt.cpp"):
        assert f": cxx {src}\n" in text
    link = next(ln for ln in text.splitlines() if ln.startswith("build flash_ops.abi3.so: link "))
    assert len(link.split(": link ")[1].split()) == 13
    assert "arch=compute_90a,code=sm_90a" in " ".join(plan.nvcc_flags) and "--expt-relaxed-constexpr" in plan.nvcc_flags
    for d in CFG["source"]["disable"]:
        assert f"-DFLASHATTENTION_DISABLE_{d}" in plan.nvcc_flags and f"-DFLASHATTENTION_DISABLE_{d}" in plan.cxx_flags
    assert "-isystem/t/include" in plan.cxx_flags and "-isystem/site/nvidia/cu13/include" in plan.cxx_flags
    assert "-D_GLIBCXX_USE_CXX11_ABI=1" in plan.cxx_flags and "-D_GLIBCXX_USE_CXX11_ABI=1" in plan.nvcc_flags
    assert plan.ldflags[0] == "-shared" and {"-ltorch", "-ltorch_cuda", "-lc10_cuda", "-lcudart"} <= set(plan.ldflags)
    assert "nvcc = /usr/local/cuda/bin/nvcc" in text and "default flash_ops.abi3.so" in text


def test_the_binding_refuses_what_it_cannot_run():
    body = BINDING.split("std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> sgl_fwd(", 1)[1]
    body = body.split("at::Tensor sgl_get_scheduler_metadata(", 1)[0]
    for arg in ("!sinks.has_value()", "!sparse_mask_fine.has_value()", "!only_qv", "!k_new.has_value()",
                "softcap == 0.0", "!pack_gqa.value_or(false)"):
        assert f"TORCH_CHECK({arg}" in body
    assert "PyMODINIT_FUNC PyInit_flash_ops" in BINDING and "TORCH_LIBRARY_FRAGMENT(sgl_kernel, m)" in BINDING


def _build_json(tmp_path: Path, so: bytes, part_bytes: int) -> Path:
    out = tmp_path / "out" / "fa3"
    src = tmp_path / "flash_ops.abi3.so"
    src.write_bytes(so)
    parts = fa3_build.split_xz(src, out, part_bytes=part_bytes)
    (out / "build.json").write_text(json.dumps({"so": src.name, "so_sha256": hashlib.sha256(so).hexdigest(),
                                                "so_bytes": len(so), "parts": parts, "ninja_wall_s": 1.0, "jobs": 2}))
    return out


def test_the_so_comes_back_in_parts_and_is_reassembled_by_sha256(tmp_path: Path):
    so = os.urandom(200_000)  # random bytes: xz cannot shrink them, so 64 KiB parts make several
    out = _build_json(tmp_path, so, part_bytes=64 * 1024)
    info = json.loads((out / "build.json").read_text())
    assert len(info["parts"]) == 4 and all(p["bytes"] <= 64 * 1024 for p in info["parts"])
    fa3.take(tmp_path / "out", dest=tmp_path / "fa3")
    assert (tmp_path / "fa3" / "flash_ops.abi3.so").read_bytes() == so
    part = out / info["parts"][1]["file"]
    part.write_bytes(b"x" + part.read_bytes()[1:])
    with pytest.raises(ShrinkError, match="does not match its sha256"):
        fa3.take(tmp_path / "out", dest=tmp_path / "fa3b")


def test_a_failed_device_build_is_one_line(tmp_path: Path):
    (tmp_path / "build.json").write_text(json.dumps({"error": "ninja: build stopped\nerror: nvcc died"}))
    with pytest.raises(ShrinkError, match="nvcc died"):
        fa3.take(tmp_path, dest=tmp_path / "fa3")


def test_the_kernel_wheel_carries_our_flash_ops_in_place_of_upstreams(tmp_path: Path, fake_kernel_wheel: Path):
    ours = tmp_path / "flash_ops.abi3.so"
    ours.write_bytes(b"\x7fELF ours" * 50)
    dst = tmp_path / "slim" / fake_kernel_wheel.name
    slim_kernel_wheel(fake_kernel_wheel, dst, ["sgl_kernel/sm90/common_ops"],
                      extra={"sgl_kernel/flash_ops.abi3.so": ours})
    with zipfile.ZipFile(dst) as z:
        names = z.namelist()
        assert names.count("sgl_kernel/flash_ops.abi3.so") == 1
        assert z.read("sgl_kernel/flash_ops.abi3.so") == ours.read_bytes()
        record = z.read("sglang_kernel-0.4.5.dist-info/RECORD").decode()
    assert f"sgl_kernel/flash_ops.abi3.so,{record_hash(ours.read_bytes())},{len(ours.read_bytes())}" in record
    assert "flashmla_ops" not in " ".join(names)


def test_bundle_entry_ships_only_a_built_so_that_fits_the_wheel(tmp_path: Path, monkeypatch, fake_kernel_wheel: Path):
    from shrinker import paths

    monkeypatch.setattr(paths, "project_root", lambda: tmp_path)
    conf = {"member": fa3.SO_MEMBER, "so": "fa3/flash_ops.abi3.so"}
    assert "no fa3/flash_ops.abi3.so" in fa3.bundle_entry(conf, fake_kernel_wheel)["not_shipped"]
    (tmp_path / "fa3").mkdir()
    (tmp_path / "fa3" / "flash_ops.abi3.so").write_bytes(b"\x7fELF ours")
    assert "has no sgl_kernel/flash_attn.py" in fa3.bundle_entry(conf, fake_kernel_wheel)["not_shipped"]
    wheel = make_wheel(tmp_path / "sglang_kernel-0.4.5-cp310-abi3-manylinux2014_x86_64.whl",
                       {"sgl_kernel/flash_attn.py": WHEEL_LIKE.encode()}, "sglang_kernel-0.4.5.dist-info")
    entry = fa3.bundle_entry(conf, wheel)
    assert entry["member"] == fa3.SO_MEMBER and entry["sha256"] == hashlib.sha256(b"\x7fELF ours").hexdigest()
    assert "not upstream's prebuilt" in entry["what"]
    (tmp_path / "fa3" / "build.json").write_text(json.dumps({"so_sha256": "0" * 64}))
    with pytest.raises(ShrinkError, match="not the .so its build.json describes"):
        fa3.bundle_entry(conf, wheel)
    assert "names no" in fa3.bundle_entry(None, wheel)["not_shipped"]


def test_the_device_copies_a_built_flash_ops_into_the_shared_site(tmp_path: Path):
    site = tmp_path / "site"
    (site / "sgl_kernel").mkdir(parents=True)
    inst = install.Installed(root=tmp_path, site=site, trees={}, models={}, manifest={})
    assert install.flash_ops(inst) == {"present": False}
    so = tmp_path / "built.so"
    so.write_bytes(b"\x7fELF built")
    got = install.flash_ops(inst, so)
    assert got["present"] and got["sha256"] == hashlib.sha256(b"\x7fELF built").hexdigest()
    assert (site / "sgl_kernel" / "flash_ops.abi3.so").read_bytes() == b"\x7fELF built"
    with pytest.raises(install.InstallError, match="no flash_ops at"):
        install.flash_ops(inst, tmp_path / "missing.so")


def test_fa3_is_no_longer_listed_as_not_shipped():
    from shrinker.gpu.cases import load_cases

    why = " ".join(n["why"] for n in load_cases().raw["not_run"])
    assert "not shipped" not in why and "e4m3" in why


def test_pack_writes_the_pinned_hopper_sources_cutlass_and_the_wheels_python(tmp_path: Path, monkeypatch):
    import subprocess

    repo = tmp_path / "fa"
    (repo / "hopper" / "instantiations").mkdir(parents=True)
    for name in fa3_build.kernel_sources(CFG) + ["hopper/instantiations/flash_fwd_hdim128_fp16_sm80.cu"]:
        (repo / name).write_text("// kernel\n")
    for name in ("flash_api.cpp", "flash_fwd_combine.cu", "flash_prepare_scheduler.cu", "flash.h", "utils.h",
                 "setup.py"):
        (repo / "hopper" / name).write_text("// fa\n")
    (repo / "LICENSE").write_text("BSD\n")
    run = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    run("add", "-A")
    run("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "fa")
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    cfg = copy.deepcopy(CFG)
    cfg["source"]["commit"] = commit
    kernel = make_wheel(tmp_path / "sglang_kernel-0.4.5-cp310-abi3-manylinux2014_x86_64.whl",
                        {"sgl_kernel/flash_attn.py": WHEEL_LIKE.encode(), "sgl_kernel/debug_utils.py": b"# d\n"},
                        "sglang_kernel-0.4.5.dist-info")
    version_h = b"#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 5\n#define CUTLASS_PATCH 0\n"
    fi = make_wheel(tmp_path / "flashinfer_python-0.6.15.post1-py3-none-any.whl",
                    {"flashinfer/data/cutlass/include/cutlass/version.h": version_h,
                     "flashinfer/data/cutlass/include/cute/tensor.hpp": b"// cute\n"}, "flashinfer_python-0.6.15.post1.dist-info")
    m = fa3.pack(repo, kernel, fi, dest=tmp_path / "pack", cfg=cfg, check_prebuilt=False)
    import tarfile

    names = set(tarfile.open(tmp_path / "pack" / fa3_build.PACK).getnames())
    assert set(fa3_build.kernel_sources(cfg)) <= names and "hopper/flash.h" in names and "LICENSE" in names
    assert "cutlass/include/cute/tensor.hpp" in names and "sgl_kernel/flash_attn.py" in names
    assert "hopper/setup.py" not in names and "hopper/instantiations/flash_fwd_hdim128_fp16_sm80.cu" not in names
    assert m["cutlass_version"] == "4.5.0" and m["fa_counts"]["instantiations"] == 9
    assert m["fa_counts"]["instantiations_sm80"] == 1 and len(m["kernels_stubbed"]) == 12
    again = fa3.pack(repo, kernel, fi, dest=tmp_path / "pack2", cfg=cfg, check_prebuilt=False)
    assert again["pack_sha256"] == m["pack_sha256"]  # reproducible
    cfg["source"]["commit"] = "0" * 40
    with pytest.raises(ShrinkError, match="failed"):
        fa3.pack(repo, kernel, fi, dest=tmp_path / "pack3", cfg=cfg, check_prebuilt=False)



def test_kernel_symbols_are_counted_across_chunks_and_the_report_compares_sizes(tmp_path: Path):
    a = b"_Z12run_mha_fwd_ILi90EN7cutlass10bfloat16_tELi64ELi512ELb0ELb0ELb0ELb0EEvR16Flash_fwd_paramsP11CUstream_st"
    k = b"_Z13run_flash_fwdILi90ELi128ELi128ELi1EN7cutlass10bfloat16_tES1_Lb0ELb0EEvR16Flash_fwd_paramsP11CUstream_st"
    blob = b"\x00" * 100 + a + b"\x00" + k + b"\x00" + a + b"\x00"
    cut = 100 + len(a) // 2  # a name split between two chunks still counts once
    assert fa3.symbol_counts([blob[:cut], blob[cut:]]) == {"run_mha_fwd_": 1, "run_flash_fwd": 1}
    ours = tmp_path / "flash_ops.abi3.so"
    ours.write_bytes(blob)
    wheel = make_wheel(tmp_path / "k-0.4.5-py3-none-any.whl", {fa3.SO_MEMBER: blob * 50 + a.replace(b"512", b"256")},
                       "k-0.4.5.dist-info")
    build = {"so_sha256": "x", "parts": [{"bytes": 7}], "jobs": 16, "cpus": 16, "ninja_wall_s": 102.1,
             "translation_units": 13, "cuda_sources": ["a.cu"] * 10, "nvcc": "cuda_13.0", "cxx": "warranty; ...",
             "torch": "2.11.0", "disable": ["FP8"], "kernels_built": ["k"] * 8, "kernels_stubbed": ["64_64"],
             "seconds_per_output": {"obj/a.o": 101.7}}
    rep = fa3.kernels_report(build, None, {"fa_counts": {"instantiations": 451}}, wheel, ours, tmp_path / "r",
                             host_cxx="c++ (Ubuntu 13.3.0) 13.3.0")
    assert rep["upstream_prebuilt"]["bytes"] == len(blob) * 50 + len(a) and rep["ours"]["bytes"] == len(blob)
    assert rep["upstream_prebuilt"]["symbols"] == {"run_mha_fwd_": 2, "run_flash_fwd": 1}
    md = (tmp_path / "r" / "kernels-build.md").read_text()
    assert "**102.1 s wall**" in md and "**13 translation units**" in md and "c++ (Ubuntu 13.3.0) 13.3.0" in md
    assert "451 files" in md and "warranty" not in md
