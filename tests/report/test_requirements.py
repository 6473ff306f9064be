"""`shrink requirements`: import names -> distributions, and the byte-exact pyproject edit."""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
from pathlib import Path

import pytest

from shrinker.apply.requirements import (decide, read_dependency_lines, rewrite_dependencies, run_requirements,
                                         write_reports)
from shrinker.errors import ShrinkError
from shrinker.rules.schema import RequirementKeep
from shrinker.upstream.distributions import DistIndex, DistInfo, provided_by
from shrinker.checks.factcache import tree_facts
from shrinker.checks.tree import SourceTree

FIXTURE = Path(__file__).parent.parent / "fixtures" / "requirements"
PYPROJECT = FIXTURE / "python" / "pyproject.toml"

# A distribution index as PyPI would give it: name -> (top-level import names, requirements, unpacked bytes).
TARGET = {"python_version": "3.12", "python_full_version": "3.12.0", "implementation_name": "cpython",
          "implementation_version": "3.12.0", "platform_python_implementation": "CPython", "sys_platform": "linux",
          "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix", "platform_release": "",
          "platform_version": ""}
WHEELS = {
    "numpy": (["numpy"], [], 20_000_000),
    "cuda-python": ([], ["cuda-bindings>=13"], 10_000),
    "cuda-bindings": (["cuda"], [], 30_000_000),
    "deep-lib": ([], ["cuda-python", "docs-only; extra == 'docs'"], 4_000_000),
    "unused-thing": ([], ["leafdep", "numpy", "winonly; sys_platform == 'win32'"], 5_000_000),
    "leafdep": ([], [], 1_000_000),
    "winonly": ([], [], 9_000_000),  # required on another platform only: never counted
    "typeonly": ([], [], 2_000_000),
    "schema-lib": (["schema_lib"], [], 1_000),
}
INDEX = DistIndex("app==1.0", "2026-01-01T00:00:00Z", TARGET,
                  {n: DistInfo(n, "1.0", f"{n}-1.0-py3-none-any.whl", t, r, b) for n, (t, r, b) in WHEELS.items()})
RULES = [RequirementKeep(name="Ninja", reason="builds run the ninja executable", when=["python/app/sub/helper.py"]),
         RequirementKeep(name="runner-tool", reason="run by subprocess", when=["python/app/gone.py"])]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SHRINK_CACHE", str(tmp_path / "cache"))


def _decide(root: Path = FIXTURE):
    tree = SourceTree.load(root)
    return decide(tree, tree_facts(tree, jobs=1, use_cache=False), PYPROJECT.read_text(), INDEX, RULES,
                  tree_label="fixture")


def test_kept_and_dropped_with_reasons():
    result = _decide()
    by = {d.name: d for d in result.decisions}
    assert result.upstream_declared == 11
    assert {d.name for d in result.kept} == {"numpy", "fastlib", "app-kernel", "cuda-python", "deep-lib", "kernels",
                                             "ninja"}
    assert {d.name for d in result.dropped} == {"typeonly", "unused-thing", "humming-kernels", "runner-tool"}
    assert by["numpy"].reason.startswith("imported as numpy by 1 kept file (first python/app/__init__.py:2)")
    assert by["fastlib"].reason.endswith("only guarded")  # an optional import is still a use
    assert "sgl_kernel" not in by["app-kernel"].reason and "app_kernel" in by["app-kernel"].reason
    assert "imported as deep_lib" in by["deep-lib"].reason  # function-local import, name matched by words
    assert "imported as kernels" in by["kernels"].reason  # the exact name, not humming-kernels
    assert by["ninja"].reason.startswith("rule requirements.keep: builds run the ninja executable")
    assert by["typeonly"].reason == "no kept file imports it"
    assert result.type_checking_only == {"typeonly": ["python/app/__init__.py"]}


def test_indirect_name_keeps_the_nearest_declared_provider():
    result = _decide()
    (cuda,) = [i for i in result.indirect if i.name == "cuda"]
    assert cuda.installed_as == ["cuda-bindings"]
    assert cuda.via == ["cuda-python", "deep-lib"]  # deep-lib pulls it in one step further
    assert "the nearest declared provider" in {d.name: d for d in result.decisions}["cuda-python"].reason
    assert "json" not in {i.name for i in result.indirect}  # the standard library is no requirement
    assert [i.name for i in result.indirect if i.needs_a_look] == ["schema_lib"]
    assert not cuda.needs_a_look


def test_sizes_and_freed_dependencies():
    result = _decide()
    by = {d.name: d for d in result.decisions}
    assert by["unused-thing"].size == 5_000_000 and by["humming-kernels"].size is None
    assert result.freed == {"leafdep": 1_000_000, "typeonly": 2_000_000, "unused-thing": 5_000_000}
    assert result.unmeasured == ["humming-kernels", "runner-tool"]
    data = result.to_json()
    assert data["dropped_installed_bytes"] == 7_000_000 and data["freed_installed_bytes"] == 8_000_000


KEEP = {"numpy", "fastlib", "app-kernel", "cuda-python", "deep-lib", "kernels", "ninja"}


def test_rewrite_is_byte_exact():
    text = PYPROJECT.read_text()
    new = rewrite_dependencies(text, KEEP)
    lines = text.splitlines(keepends=True)
    gone = {i for i, line in enumerate(lines) if line in ('    "typeonly==1.0",\n', '    "humming-kernels",\n',
                                                           '    "runner-tool"\n')}
    gone.add(lines.index('    "unused-thing",\n'))  # the first: [project]'s, not the optional extra's
    assert len(gone) == 4
    assert new == "".join(line for i, line in enumerate(lines) if i not in gone)
    assert '    "unused-thing",\n]' in new  # optional-dependencies untouched
    assert tomllib.loads(new)["tool"]["other"]["dependencies"] == ["scipy"]
    assert "# a comment line stays" in new and "# guarded import: still a use" in new
    assert rewrite_dependencies(new, KEEP) == new  # idempotent


def test_rewrite_keeps_crlf_and_refuses_other_layouts():
    text = PYPROJECT.read_text().replace("\n", "\r\n")
    new = rewrite_dependencies(text, {"numpy"})
    assert "\r\n" in new and "\n" not in new.replace("\r\n", "")
    assert tomllib.loads(new)["project"]["dependencies"] == ["numpy"]
    with pytest.raises(ShrinkError, match="one requirement per line"):
        rewrite_dependencies('[project]\nname = "x"\ndependencies = ["a", "b"]\n', {"a"})
    with pytest.raises(ShrinkError, match="one requirement per line"):
        read_dependency_lines('[project]\ndependencies = [\n    "a", "b",\n]\n')


def test_provided_by_prefers_the_exact_name():
    declared = {"kernels", "humming-kernels", "flashinfer-python"}
    assert provided_by("kernels", declared, {}) == "kernels"
    assert provided_by("humming", declared, {}) == "humming-kernels"
    assert provided_by("flashinfer", declared, {}) == "flashinfer-python"
    assert provided_by("cuda", declared, {"cuda": ["cuda-bindings"]}) is None


def test_run_writes_only_with_write_and_reports(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE, tree)
    target = tree / "python" / "pyproject.toml"
    before = target.read_text()
    result, new = run_requirements(tree, FIXTURE, index=INDEX, keep_rules=RULES, write=False)
    assert result.changed and not result.written and target.read_text() == before
    result, new = run_requirements(tree, FIXTURE, index=INDEX, keep_rules=RULES, write=True)
    assert result.written and target.read_text() == new != before
    again, _ = run_requirements(tree, FIXTURE, index=INDEX, keep_rules=RULES, write=True)
    assert not again.changed and [d.name for d in again.kept] == [d.name for d in result.kept]
    md, js = write_reports(result, tmp_path / "r")
    data = json.loads(js.read_text())
    assert data["upstream_declared"] == 11 and data["dropped"] == len(result.dropped) == 4
    assert "| typeonly |" in md.read_text() and "- schema_lib (schema-lib): 1 file" in md.read_text()
    assert data["needs_a_look"] == ["schema_lib"]


def test_cli_reports_without_touching_the_tree(tmp_path, monkeypatch, capsys):
    from shrinker import cli

    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE, tree)
    before = (tree / "python" / "pyproject.toml").read_bytes()
    import shrinker.upstream.distributions as distributions

    monkeypatch.setattr(distributions, "load_index", lambda root, target, **kw: INDEX)  # no PyPI in a unit test
    monkeypatch.setattr(sys, "argv", ["shrink", "requirements", "--tree", str(tree), "--upstream", str(FIXTURE),
                                      "--out", str(tmp_path / "r")])
    cli.main()
    text = capsys.readouterr().out
    assert "upstream declares 11" in text and "would rewrite" in text
    assert (tree / "python" / "pyproject.toml").read_bytes() == before
    assert json.loads((tmp_path / "r" / "requirements.json").read_text())["upstream_declared"] == 11


def _tree_importing(root: Path, names: list[str]) -> Path:
    (root / "python" / "app").mkdir(parents=True)
    deps = ",\n".join(f'    "{d}"' for d in ("pyzmq>=25", "pillow", "PyYAML", "scipy"))
    (root / "python" / "pyproject.toml").write_text(f'[project]\nname = "app"\nversion = "1.0"\n'
                                                    f'dependencies = [\n{deps}\n]\n')
    (root / "python" / "app" / "__init__.py").write_text("".join(f"import {n}\n" for n in names))
    return root


def test_import_names_that_differ_from_their_distribution(tmp_path):
    """zmq is pyzmq, PIL is pillow, yaml is PyYAML: only the wheels' own top-level names tell."""
    root = _tree_importing(tmp_path / "t", ["zmq", "PIL.Image", "yaml"])
    index = DistIndex("app==1.0", "2026-01-01T00:00:00Z", TARGET, {
        "pyzmq": DistInfo("pyzmq", "27.0", "w", ["zmq"], [], 3), "pillow": DistInfo("pillow", "11.0", "w", ["PIL"], [], 5),
        "pyyaml": DistInfo("pyyaml", "6.0", "w", ["_yaml", "yaml"], [], 7),
        "scipy": DistInfo("scipy", "1.0", "w", ["scipy"], [], 11)})
    tree = SourceTree.load(root)
    result = decide(tree, tree_facts(tree, jobs=1, use_cache=False),
                    (root / "python" / "pyproject.toml").read_text(), index)
    assert {d.name for d in result.kept} == {"pyzmq", "pillow", "pyyaml"}
    assert [d.name for d in result.dropped] == ["scipy"]
    # without the index's names the same tree would lose all three: that was the fresh-machine bug
    bare = decide(tree, tree_facts(tree, jobs=1, use_cache=False), (root / "python" / "pyproject.toml").read_text(),
                  DistIndex("app==1.0", "", TARGET, {}))
    assert {d.name for d in bare.kept} == set()


def test_same_result_with_and_without_a_verify_environment(tmp_path, monkeypatch):
    """The step reads the index only: a .venv-verify that maps names otherwise changes no byte."""
    from shrinker.verify.env import MARKER, read_requirements, requirements_hash

    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE, tree)
    outputs = []
    for with_env in (False, True):
        venv = tmp_path / f"venv-{with_env}"
        monkeypatch.setenv("SHRINK_VERIFY_VENV", str(venv))
        if with_env:  # a verify env whose python says every name is provided by "other-dist"
            (venv / "bin").mkdir(parents=True)
            py = venv / "bin" / "python"
            py.write_text('#!/bin/sh\necho \'{"numpy": ["other-dist"], "cuda": ["other-dist"]}\'\n')
            py.chmod(0o755)
            (venv / MARKER).write_text(json.dumps({"root": str(venv), "python": str(py),
                                                   "requirements_hash": requirements_hash(read_requirements())}))
        (tree / "python" / "pyproject.toml").write_text(PYPROJECT.read_text())
        result, new = run_requirements(tree, FIXTURE, index=INDEX, keep_rules=RULES, write=True)
        md, js = write_reports(result, tmp_path / f"r-{with_env}")
        outputs.append((new, md.read_bytes(), js.read_bytes()))
    assert outputs[0] == outputs[1]


def test_a_kept_distribution_as_near_satisfies_a_name_only_one_wheel_provides(tmp_path):
    """huggingface_hub: transformers (kept for its own import) and timm both pull it in one step away,
    so timm is no reason to stay; a namespace two wheels share keeps every nearest provider."""
    root = tmp_path / "t"
    (root / "python" / "app").mkdir(parents=True)
    deps = ["transformers", "timm", "cuda-python", "torchish"]
    (root / "python" / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "1.0"\ndependencies = [\n'
        + ",\n".join(f'    "{d}"' for d in deps) + "\n]\n")
    (root / "python" / "app" / "__init__.py").write_text(
        "import transformers\nimport torchish\nimport huggingface_hub\nimport cuda.bindings\n")
    wheels = {"transformers": (["transformers"], ["huggingface-hub"]), "timm": (["timm"], ["huggingface-hub"]),
              "huggingface-hub": (["huggingface_hub"], []), "cuda-python": ([], ["cuda-bindings"]),
              "torchish": (["torchish"], ["cuda-core"]), "cuda-bindings": (["cuda"], []), "cuda-core": (["cuda"], [])}
    index = DistIndex("app==1.0", "2026-01-01T00:00:00Z", TARGET,
                      {n: DistInfo(n, "1.0", "w", t, r, 10) for n, (t, r) in wheels.items()})
    tree = SourceTree.load(root)
    result = decide(tree, tree_facts(tree, jobs=1, use_cache=False),
                    (root / "python" / "pyproject.toml").read_text(), index)
    by = {d.name: d for d in result.decisions}
    assert not by["timm"].kept and by["timm"].reason == "no kept file imports it"
    (hub,) = [i for i in result.indirect if i.name == "huggingface_hub"]
    assert hub.via == ["timm", "transformers"] and hub.kept_via == ["transformers"]
    # `cuda` is a namespace of two wheels: torchish (kept) pulls in one part, cuda-python the other
    assert by["cuda-python"].kept and "the nearest declared provider" in by["cuda-python"].reason


def test_a_keep_condition_may_name_a_module_a_file_or_a_package(tmp_path):
    # 0.5.18 turned kernels/jit/utils/compile.py into a package: a module name survives that, a path does not
    from shrinker.apply.requirements import _present

    (tmp_path / "python" / "app" / "jit" / "compile").mkdir(parents=True)
    (tmp_path / "python" / "app" / "jit" / "compile" / "__init__.py").write_text("")
    (tmp_path / "python" / "app" / "jit" / "deps.py").write_text("")
    assert _present(tmp_path, "app.jit.compile") == "python/app/jit/compile/__init__.py"
    assert _present(tmp_path, "app.jit.deps") == "python/app/jit/deps.py"
    assert _present(tmp_path, "python/app/jit/deps.py") == "python/app/jit/deps.py"
    assert _present(tmp_path, "python/app/jit/compile.py") is None and _present(tmp_path, "app.jit.gone") is None
