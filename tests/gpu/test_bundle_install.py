"""Bundle to device install, end to end on CPU with small fake wheels (no network, no GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shrinker.gpu import bundle, install
from tests.gpu.conftest import make_wheel

SPEC = {
    "python_version": "3.12",
    "platforms": ["manylinux_2_17_x86_64"],
    "deps": ["fakedep==1.0"],
    "drop": {"fakedep": ["fakedep/lib/*.a"]},
    "kernel": {"keep": ["sgl_kernel/sm90/common_ops", "sgl_kernel/spatial_ops", "sgl_kernel/flashmla_ops"]},
    "tree": {"package": "sglang"},
}


@pytest.fixture
def layout(tmp_path: Path, fake_kernel_wheel: Path):
    cache = tmp_path / "cache"
    (cache / "wheels").mkdir(parents=True)
    make_wheel(cache / "wheels" / "fakedep-1.0-py3-none-any.whl",
               {"fakedep/__init__.py": b"X = 1\n", "fakedep/lib/libfake.a": b"static" * 100},
               "fakedep-1.0.dist-info")
    py = tmp_path / "up" / "python"
    (py / "sglang").mkdir(parents=True)
    (py / "sglang" / "__init__.py").write_text("")
    (py / "sglang" / "_version.py").write_text("__version__ = version = '0.5.16'\n")
    return {"cache": cache, "ship": tmp_path / "ship", "py": py, "kernel": fake_kernel_wheel, "tmp": tmp_path}


def _build(layout) -> dict:
    return bundle.build_bundle({"upstream": layout["py"]}, layout["kernel"], out=layout["ship"],
                               cache=layout["cache"], spec=SPEC, with_models=False)


def test_build_then_install(layout):
    manifest = _build(layout)
    files = {a["file"]: a for a in manifest["archives"]}
    assert set(files) == {"deps.tar.xz", "kernel.tar.xz", "sglang-upstream.tar.xz"}
    assert files["deps.tar.xz"]["dropped"] == {"fakedep-1.0-py3-none-any.whl": ["fakedep/lib/libfake.a"]}
    assert "sgl_kernel/flash_ops.abi3.so" in files["kernel.tar.xz"]["dropped"][layout["kernel"].name]
    assert json.loads((layout["ship"] / "bundle.json").read_text())["archives"][0]["sha256"]

    root = layout["tmp"] / "device"
    inst = install.install_bundle(layout["ship"], root=root)
    assert not inst.reused
    assert (inst.site / "fakedep" / "__init__.py").is_file()
    assert not (inst.site / "fakedep" / "lib").exists()
    assert (inst.site / "sgl_kernel" / "sm90" / "common_ops.abi3.so").is_file()
    assert not (inst.site / "sgl_kernel" / "flash_ops.abi3.so").exists()
    assert (inst.site / "sglang_kernel-0.4.5.dist-info" / "METADATA").is_file()  # version check at launch
    assert (inst.trees["upstream"] / "sglang" / "_version.py").is_file()
    assert (inst.trees["upstream"] / "sglang-0.5.16.dist-info" / "METADATA").is_file()
    assert inst.pythonpath("upstream").startswith(f"{inst.trees['upstream']}:{inst.site}")
    # a second call on the same (warm) machine installs nothing again
    assert install.install_bundle(layout["ship"], root=root).reused


def test_rebuild_reuses_unchanged_archives(layout):
    first = _build(layout)
    mtimes = {p.name: p.stat().st_mtime_ns for p in layout["ship"].glob("*.tar.xz")}
    (layout["py"] / "sglang" / "new.py").write_text("y = 2\n")
    second = _build(layout)
    after = {p.name: p.stat().st_mtime_ns for p in layout["ship"].glob("*.tar.xz")}
    assert after["deps.tar.xz"] == mtimes["deps.tar.xz"] and after["kernel.tar.xz"] == mtimes["kernel.tar.xz"]
    old = {a["file"]: a["sha256"] for a in first["archives"]}
    new = {a["file"]: a["sha256"] for a in second["archives"]}
    assert old["deps.tar.xz"] == new["deps.tar.xz"] and old["sglang-upstream.tar.xz"] != new["sglang-upstream.tar.xz"]


def test_install_checks_sha256(layout):
    _build(layout)
    (layout["ship"] / "kernel.tar.xz").write_bytes(b"tampered")
    with pytest.raises(install.InstallError, match="does not match its sha256"):
        install.install_bundle(layout["ship"], root=layout["tmp"] / "device")


def test_install_without_manifest(tmp_path: Path):
    with pytest.raises(install.InstallError, match="no bundle manifest"):
        install.install_bundle(tmp_path, root=tmp_path / "d")


def test_over_the_call_limit_is_an_error(layout):
    with pytest.raises(bundle.ShrinkError, match="over the"):
        bundle.build_bundle({"upstream": layout["py"]}, layout["kernel"], out=layout["ship"], cache=layout["cache"],
                            spec=SPEC, with_models=False, limit=10)


def test_models_travel_in_one_archive(layout, monkeypatch):
    def fake_model(directory, fp8=False, **_):
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "config.json").write_text('{"fp8": %s}\n' % str(fp8).lower())
        (directory / "tokenizer.json").write_text("{}\n")

    monkeypatch.setattr(bundle.tiny_model, "write_tiny_model", fake_model)
    manifest = bundle.build_bundle({"upstream": layout["py"]}, layout["kernel"], out=layout["ship"],
                                   cache=layout["cache"], spec=SPEC)
    assert set(manifest["models"]) == {"tiny", "tiny-fp8", "tiny-v32", "tiny-v4"} and (layout["ship"] / "models.tar.xz").is_file()
    assert not (layout["ship"] / "models").exists()
    inst = install.install_bundle(layout["ship"], root=layout["tmp"] / "device")
    assert (inst.models["tiny-fp8"] / "config.json").read_text() == '{"fp8": true}\n'
    assert inst.models["tiny"].is_absolute() and (inst.models["tiny"] / "tokenizer.json").is_file()


def test_tree_roots_take_a_pruned_snapshot(tmp_path: Path, monkeypatch):
    """`shrink gpu-bundle --which pruned --tree DIR`: a read-only snapshot instead of the work tree."""
    import types

    import shrinker.upstream as upstream_pkg
    from shrinker.errors import ShrinkError
    from shrinker.gpu import bundle

    up = types.SimpleNamespace(python_dir=tmp_path / "up" / "python", version="0.5.16")
    monkeypatch.setattr(upstream_pkg, "load", lambda spec=None: up)
    snap = tmp_path / "snap"
    (snap / "python" / "sglang").mkdir(parents=True)
    roots = bundle.tree_roots(["pruned", "upstream"], pruned_tree=snap)
    assert roots == {"pruned": snap / "python", "upstream": up.python_dir}
    with pytest.raises(ShrinkError, match="no python/sglang"):
        bundle.tree_roots(["pruned"], pruned_tree=tmp_path / "empty")
