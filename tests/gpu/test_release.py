"""`--upstream SPEC` on gpu-bundle / gpu-report: another release than the pin, its own pins (no network, no GPU)."""

from __future__ import annotations

import json
import types
import zipfile
from pathlib import Path

import pytest

from shrinker.gpu import bundle, install, report, verify
from shrinker.gpu.wheels import build_tree_wheel, foreign_extension
from tests.gpu.test_bundle_install import SPEC
from tests.gpu.test_report import _ref

PYPROJECT = """[project]
name = "sglang"
version = "0.5.17"
dependencies = [
    "apache-tvm-ffi==0.1.11",
    "flashinfer_python[cu13]==0.6.15.post1",
    "sgl-deep-gemm==0.1.5.post1",
    "transformers==5.12.1",
    "pydantic",
    "pyzmq>=25.1.2",
    "torch==2.11.0",
]
"""


def _release(tmp_path: Path, version: str = "0.5.17") -> types.SimpleNamespace:
    py = tmp_path / f"up-{version}" / "python"
    (py / "sglang").mkdir(parents=True)
    (py / "sglang" / "__init__.py").write_text("")
    (py / "pyproject.toml").write_text(PYPROJECT)
    return types.SimpleNamespace(spec=f"pypi:sglang=={version}", version=version, commit="c0ffee", python_dir=py,
                                 artifacts=[{"name": "sglang", "file": f"sglang-{version}-cp311.whl"},
                                            {"name": "sglang-kernel", "file": "sglang_kernel-0.4.5-x.whl"}])


def test_release_deps_take_the_releases_exact_pins(tmp_path: Path):
    up = _release(tmp_path)
    deps = ["flashinfer-python==0.6.14", "sgl-deep-gemm==0.1.4.post1", "apache-tvm-ffi==0.1.11",
            "pydantic==2.14.3", "pyzmq==27.3.0", "transformers==5.12.1"]
    out, changed = bundle.release_deps(deps, up.python_dir / "pyproject.toml")
    # exact pins win (extras and name spelling aside); ranges and unpinned names keep bundle.toml's version
    assert out == ["flashinfer-python==0.6.15.post1", "sgl-deep-gemm==0.1.5.post1", "apache-tvm-ffi==0.1.11",
                   "pydantic==2.14.3", "pyzmq==27.3.0", "transformers==5.12.1"]
    assert changed == {"flashinfer-python": "0.6.14 -> 0.6.15.post1", "sgl-deep-gemm": "0.1.4.post1 -> 0.1.5.post1"}
    assert bundle.release_deps(deps, tmp_path / "none.toml") == (deps, {})


def test_release_spec_names_the_release_and_its_kernel_wheel(tmp_path: Path):
    spec = bundle.release_spec(_release(tmp_path), {**SPEC, "kernel": {**SPEC["kernel"], "wheel": "old.whl"}})
    assert spec["kernel"]["wheel"] == "sglang_kernel-0.4.5-x.whl" and spec["kernel"]["keep"] == SPEC["kernel"]["keep"]
    assert spec["upstream"] == {"spec": "pypi:sglang==0.5.17", "version": "0.5.17", "commit": "c0ffee"}
    assert SPEC["deps"] == ["fakedep==1.0"]  # the spec given is not changed


def test_tree_roots_follow_upstream_spec(tmp_path: Path, monkeypatch):
    """The pruned tree of `--upstream pypi:sglang==0.5.17` is build/deepseek-v0.5.17, and the pin is not read."""
    import shrinker.upstream as upstream_pkg
    from shrinker import paths

    asked = []
    up = _release(tmp_path)
    monkeypatch.setattr(upstream_pkg, "load", lambda spec=None: asked.append(spec) or up)
    monkeypatch.setattr(paths, "project_root", lambda: tmp_path)
    (tmp_path / "build" / "deepseek-v0.5.17" / "python" / "sglang").mkdir(parents=True)
    roots = bundle.tree_roots(["pruned", "upstream"], upstream="pypi:sglang==0.5.17")
    assert asked == ["pypi:sglang==0.5.17"]
    assert roots == {"pruned": tmp_path / "build" / "deepseek-v0.5.17" / "python", "upstream": up.python_dir}


def test_foreign_extensions_stay_out_of_the_tree_wheel(tmp_path: Path):
    assert foreign_extension("sglang/srt/server/_core.cpython-311-x86_64-linux-gnu.so", "3.12")
    assert not foreign_extension("sglang/x/_core.cpython-312-x86_64-linux-gnu.so", "3.12")
    assert not foreign_extension("sgl_kernel/common_ops.abi3.so", "3.12")
    py = tmp_path / "python"
    (py / "sglang" / "srt" / "server").mkdir(parents=True)
    (py / "sglang" / "__init__.py").write_text("")
    (py / "sglang" / "srt" / "server" / "_core.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    dropped: list[str] = []
    wheel = build_tree_wheel(py, "sglang", "0.5.17", tmp_path / "w",
                             skip=lambda n: foreign_extension(n, "3.12"), dropped=dropped)
    assert dropped == ["sglang/srt/server/_core.cpython-311-x86_64-linux-gnu.so"]
    names = zipfile.ZipFile(wheel).namelist()
    assert "sglang/__init__.py" in names and not any(n.endswith(".so") for n in names)
    assert "_core" not in zipfile.ZipFile(wheel).read("sglang-0.5.17.dist-info/RECORD").decode()


def test_one_bundle_in_two_calls(tmp_path: Path, fake_kernel_wheel: Path):
    """Both trees over 64 MiB with the working tree: call 1 carries deps + upstream, call 2 bundle.json + pruned."""
    from tests.gpu.conftest import make_wheel

    cache = tmp_path / "cache"
    (cache / "wheels").mkdir(parents=True)
    make_wheel(cache / "wheels" / "fakedep-1.0-py3-none-any.whl", {"fakedep/__init__.py": b""}, "fakedep-1.0.dist-info")
    trees = {}
    for which in ("upstream", "pruned"):
        py = tmp_path / which / "python"
        (py / "sglang").mkdir(parents=True)
        (py / "sglang" / "__init__.py").write_text(f"TREE = {which!r}\n")
        (py / "sglang" / "_version.py").write_text("__version__ = '0.5.17'\n")
        trees[which] = py
    ship = tmp_path / "ship"
    first, second = tmp_path / "carry-1", tmp_path / "carry-2"
    # call 1: the upstream bundle; call 2: the bundle rebuilt with the pruned tree added (archives reused)
    for d, which, files in ((first, ["upstream"], ("bundle.json", "deps.tar.xz", "kernel.tar.xz", "sglang-upstream.tar.xz")),
                            (second, ["upstream", "pruned"], ("bundle.json", "sglang-pruned.tar.xz"))):
        bundle.build_bundle({w: trees[w] for w in which}, fake_kernel_wheel, out=ship, cache=cache, spec=SPEC,
                            with_models=False)
        d.mkdir()
        for f in files:
            (d / f).write_bytes((ship / f).read_bytes())
    assert (first / "bundle.json").read_bytes() != (second / "bundle.json").read_bytes()
    root = tmp_path / "device"
    inst = install.install_bundle(first, root=root)
    assert set(inst.trees) == {"upstream"} and (inst.site / "fakedep").is_dir()
    inst = install.install_bundle(second, root=root)  # the same machine, still warm
    assert set(inst.trees) == {"pruned", "upstream"} and not inst.reused
    assert "pruned" in (inst.trees["pruned"] / "sglang" / "__init__.py").read_text()
    assert install.install_bundle(second, root=root).reused
    # a changed tree archive reinstalls that tree alone
    (trees["pruned"] / "sglang" / "__init__.py").write_text("TREE = 'pruned-2'\n")
    bundle.build_bundle(trees, fake_kernel_wheel, out=ship, cache=cache, spec=SPEC, with_models=False)
    third = tmp_path / "carry-3"
    third.mkdir()
    for f in ("bundle.json", "sglang-pruned.tar.xz"):
        (third / f).write_bytes((ship / f).read_bytes())
    inst = install.install_bundle(third, root=root)
    assert "pruned-2" in (inst.trees["pruned"] / "sglang" / "__init__.py").read_text()
    assert set(inst.trees) == {"pruned", "upstream"} and (inst.site / "fakedep").is_dir()
    # a cold machine lacks the dependencies the second call leaves behind
    with pytest.raises(install.InstallError, match="deps.tar.xz is missing"):
        install.install_bundle(second, root=tmp_path / "cold")


def test_report_names_the_release(tmp_path: Path, monkeypatch):
    assert verify.release_version("pypi:sglang==0.5.17") == "0.5.17"
    assert verify.reference_dir("0.5.17").as_posix().endswith("reports/deepseek/v0.5.17/gpu-reference")
    report.write_report(_ref(tmp_path), [], tmp_path / "out", version="0.5.17")
    assert (tmp_path / "out" / "gpu-verify.md").read_text().startswith("# `shrink verify --gpu` — DeepSeek v0.5.17")
    assert json.loads((tmp_path / "out" / "gpu-verify.json").read_text())["upstream_version"] == "0.5.17"


def test_gpu_report_cli_takes_upstream(tmp_path: Path, monkeypatch):
    from typer.testing import CliRunner

    from shrinker import paths
    from shrinker.cli import app

    monkeypatch.setattr(paths, "project_root", lambda: tmp_path)
    ref = tmp_path / "reports" / "deepseek" / "v0.5.17" / "gpu-reference"
    ref.parent.mkdir(parents=True)
    _ref(tmp_path).rename(ref)
    run = tmp_path / "run"
    run.mkdir()
    res = CliRunner().invoke(app, ["gpu-report", str(run), "--upstream", "pypi:sglang==0.5.17"])
    assert res.exit_code == 0, res.output
    assert "DeepSeek v0.5.17" in (ref.parent / "gpu-verify.md").read_text()
    res = CliRunner().invoke(app, ["gpu-report", str(run), "--upstream", "sglang 0.5.17"])
    assert res.exit_code != 0 and "bad upstream spec" in str(res.output) + str(res.exception)


def test_jit_sources_follow_the_release_layout(tmp_path: Path):
    """v0.5.16 keeps its JIT kernels in sglang/jit_kernel, v0.5.17 in sglang/kernels/jit."""
    from shrinker.gpu import jit

    old, new = tmp_path / "old" / "sglang", tmp_path / "new" / "sglang"
    (old / "jit_kernel" / "csrc" / "a").mkdir(parents=True)
    (old / "jit_kernel" / "csrc" / "a" / "x.cuh").write_text("")
    (new / "kernels" / "jit" / "csrc" / "b").mkdir(parents=True)
    (new / "kernels" / "jit" / "csrc" / "b" / "y.cu").write_text("")
    (new / "kernels" / "jit" / "csrc" / "b" / "z.py").write_text("")
    assert jit.jit_package(old) == "jit_kernel" and jit.jit_package(new) == "kernels/jit"
    assert [p.name for p in jit.sources(new)] == ["y.cu"] and [p.name for p in jit.sources(old)] == ["x.cuh"]
    assert jit.jit_package(tmp_path) is None and jit.sources(tmp_path) == []


def test_only_jit_names_a_step_not_a_launch():
    from shrinker.gpu import cases as cases_mod

    cases = cases_mod.load_cases()
    picked = verify.selected_launches(cases, 1, ["jit", "triton-graph"])
    assert [launch.name for launch in picked] == ["triton-graph"]


def test_report_lists_launches_neither_recorded_nor_compared(tmp_path: Path):
    """A release recorded in part: the launches of cases.toml it lacks are listed as not run, never passed."""
    from tests.gpu.test_report import _run

    assert report.write_report(_ref(tmp_path), [_run(tmp_path, [{"output_ids": [1, 2]}])], tmp_path / "o") == 0
    data = json.loads((tmp_path / "o" / "gpu-verify.json").read_text())
    rows = {r["name"]: (r["status"], r["why"]) for r in data["not_run"]}
    assert rows["mtp-flashinfer-graph"] == ("not run", "part 3: neither recorded nor compared")
    assert rows["tp2-flashinfer-graph"][0] == "not run on this hardware"
    assert "timing (part 4)" in rows and data["counts"]["not_recorded"] >= 6
    assert data["counts"]["passed"] == 1 and data["counts"]["launches_not_run"] == 0
