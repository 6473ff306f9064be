"""Wheel surgery: the slim sgl_kernel keeps its dist-info and only the listed ops; RECORD stays true."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from shrinker.errors import ShrinkError
from shrinker.gpu.wheels import (build_tree_wheel, drop_patterns, op_key, record_hash, repack_wheel,
                                 slim_kernel_wheel, tree_version)

KEEP = ["sgl_kernel/sm90/common_ops", "sgl_kernel/spatial_ops", "sgl_kernel/flashmla_ops"]


def _record(z: zipfile.ZipFile) -> dict[str, str]:
    name = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
    rows = [line.split(",") for line in z.read(name).decode().splitlines() if line]
    return {r[0]: r[1] for r in rows}


def test_op_key():
    assert op_key("sgl_kernel/sm90/common_ops.abi3.so") == "sgl_kernel/sm90/common_ops"
    assert op_key("sgl_kernel/infllm_ops.cpython-310-x86_64-linux-gnu.so") == "sgl_kernel/infllm_ops"
    assert op_key("sgl_kernel/load_utils.py") is None


def test_slim_kernel_keeps_listed_ops_and_dist_info(fake_kernel_wheel: Path, tmp_path: Path):
    dst = tmp_path / "out" / fake_kernel_wheel.name
    dropped = slim_kernel_wheel(fake_kernel_wheel, dst, KEEP)
    assert sorted(dropped) == ["sgl_kernel/flash_ops.abi3.so", "sgl_kernel/infllm_ops.cpython-310-x86_64-linux-gnu.so",
                               "sgl_kernel/sm100/common_ops.abi3.so"]
    with zipfile.ZipFile(dst) as z:
        names = set(z.namelist())
        ops = {op_key(n) for n in names} - {None}
        assert ops == set(KEEP)
        # every Python file and the whole dist-info survive: sglang checks the distribution's version
        assert {"sgl_kernel/__init__.py", "sgl_kernel/load_utils.py", "sgl_kernel/testing/__init__.py"} <= names
        assert {"sglang_kernel-0.4.5.dist-info/METADATA", "sglang_kernel-0.4.5.dist-info/WHEEL",
                "sglang_kernel-0.4.5.dist-info/RECORD"} <= names
        assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
        record = _record(z)
        # RECORD lists exactly what is in the wheel, with true hashes
        assert set(record) == names
        for n in names:
            if not n.endswith("RECORD"):
                assert record[n] == record_hash(z.read(n))


def test_slim_kernel_blackwell_option(fake_kernel_wheel: Path, tmp_path: Path):
    dst = tmp_path / "bw" / fake_kernel_wheel.name
    slim_kernel_wheel(fake_kernel_wheel, dst, KEEP + ["sgl_kernel/sm100/common_ops"])
    with zipfile.ZipFile(dst) as z:
        assert "sgl_kernel/sm100/common_ops.abi3.so" in z.namelist()
        assert "sgl_kernel/flash_ops.abi3.so" not in z.namelist()


def test_slim_kernel_unknown_op_is_an_error(fake_kernel_wheel: Path, tmp_path: Path):
    with pytest.raises(ShrinkError, match="no compiled op sgl_kernel/sm120/common_ops"):
        slim_kernel_wheel(fake_kernel_wheel, tmp_path / "x.whl", ["sgl_kernel/sm120/common_ops"])


def test_repack_refuses_to_overwrite_its_source(fake_kernel_wheel: Path):
    with pytest.raises(ShrinkError, match="over its source"):
        repack_wheel(fake_kernel_wheel, fake_kernel_wheel)


def test_repack_drop_patterns(fake_kernel_wheel: Path, tmp_path: Path):
    dst = tmp_path / "r.whl"
    dropped = repack_wheel(fake_kernel_wheel, dst, keep=drop_patterns(["sgl_kernel/flash*.so"]))
    assert sorted(dropped) == ["sgl_kernel/flash_ops.abi3.so", "sgl_kernel/flashmla_ops.abi3.so"]
    with zipfile.ZipFile(dst) as z:
        assert "sgl_kernel/sm90/common_ops.abi3.so" in z.namelist()
        assert set(_record(z)) == set(z.namelist())


def test_build_tree_wheel_is_deterministic_and_complete(tmp_path: Path):
    py = tmp_path / "python"
    (py / "pkg" / "sub").mkdir(parents=True)
    (py / "pkg" / "__init__.py").write_text("x = 1\n")
    (py / "pkg" / "_version.py").write_text("__version__ = version = '1.2.3'\n")
    (py / "pkg" / "sub" / "data.json").write_text("{}\n")
    (py / "pkg" / "sub" / "__pycache__").mkdir()
    (py / "pkg" / "sub" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"junk")
    assert tree_version(py, "pkg") == "1.2.3"
    w1 = build_tree_wheel(py, "pkg", "1.2.3", tmp_path / "a")
    w2 = build_tree_wheel(py, "pkg", "1.2.3", tmp_path / "b")
    assert w1.name == "pkg-1.2.3-py3-none-any.whl"
    assert w1.read_bytes() == w2.read_bytes()
    with zipfile.ZipFile(w1) as z:
        names = set(z.namelist())
        assert {"pkg/__init__.py", "pkg/_version.py", "pkg/sub/data.json", "pkg-1.2.3.dist-info/METADATA"} <= names
        assert not any("__pycache__" in n for n in names)
        assert "Version: 1.2.3" in z.read("pkg-1.2.3.dist-info/METADATA").decode()
        assert set(_record(z)) == names


def test_build_tree_wheel_needs_a_package(tmp_path: Path):
    with pytest.raises(ShrinkError, match="not a Python package"):
        build_tree_wheel(tmp_path, "nothing", "1", tmp_path / "o")
