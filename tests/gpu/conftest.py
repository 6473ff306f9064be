"""Fixtures for the GPU-stage tests: small fake wheels written here (no downloads, no GPU)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from shrinker.gpu.wheels import record_hash


def make_wheel(path: Path, files: dict[str, bytes], dist: str) -> Path:
    """A wheel with `files` plus dist-info (METADATA, WHEEL, RECORD), deflated like PyPI's."""
    meta = {
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {dist.split('-')[0]}\nVersion: {dist.removesuffix('.dist-info').split('-')[1]}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp310-abi3-manylinux2014_x86_64\n",
    }
    everything = {**files, **meta}
    record = "".join(f"{n},{record_hash(d)},{len(d)}\n" for n, d in everything.items()) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in everything.items():
            z.writestr(name, data)
        z.writestr(f"{dist}/RECORD", record)
    return path


@pytest.fixture
def fake_kernel_wheel(tmp_path: Path) -> Path:
    """Shaped like sglang-kernel 0.4.5: per-arch common_ops, other op libraries, Python files."""
    files = {
        "sgl_kernel/__init__.py": b"from sgl_kernel.version import __version__\n",
        "sgl_kernel/version.py": b'__version__ = "0.4.5"\n',
        "sgl_kernel/load_utils.py": b"# loads sm90/ or sm100/ common_ops\n",
        "sgl_kernel/sm90/common_ops.abi3.so": b"\x7fELF sm90" * 100,
        "sgl_kernel/sm100/common_ops.abi3.so": b"\x7fELF sm100" * 100,
        "sgl_kernel/flash_ops.abi3.so": b"\x7fELF fa3" * 1000,
        "sgl_kernel/flashmla_ops.abi3.so": b"\x7fELF mla" * 100,
        "sgl_kernel/spatial_ops.abi3.so": b"\x7fELF spatial",
        "sgl_kernel/infllm_ops.cpython-310-x86_64-linux-gnu.so": b"\x7fELF infllm" * 10,
        "sgl_kernel/testing/__init__.py": b"",
    }
    return make_wheel(tmp_path / "sglang_kernel-0.4.5-cp310-abi3-manylinux2014_x86_64.whl", files,
                      "sglang_kernel-0.4.5.dist-info")
