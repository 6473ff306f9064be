"""Static checks: each planted fault is caught by the check meant for it, and only by that one."""

from __future__ import annotations

from shrinker.verify import verify_tree
from shrinker.checks.static import STATIC_CHECKS, Finding, regressions, static_gate
from tests.verify.conftest import edit

HELPER = "python/sglang/srt/layers/helper_ops.py"


def _failing(result) -> dict[str, list[str]]:
    return {c.name: c.findings for c in result.checks if not c.passed}


def test_unmodified_copy_passes(trees):
    upstream, pruned = trees
    result = verify_tree(pruned, upstream, checks=["static"])
    assert [c.name for c in result.checks] == list(STATIC_CHECKS)
    assert result.passed and result.regressions == 0
    syntax = result.check("syntax")
    assert syntax.counts["files"] == 28  # every .py of the mini tree
    assert result.check("internal_imports").counts["imports"] > 10
    # upstream's own problems are counted but are not regressions
    assert result.check("third_party").counts["upstream_findings"] == 1  # fixture_package_nobody_installed
    assert any("torch_npu" in n and "(guarded)" in n for n in result.check("third_party").notes)


def test_deleted_helper_still_imported(trees):
    upstream, pruned = trees
    (pruned / HELPER).unlink()
    failing = _failing(verify_tree(pruned, upstream, checks=["static"]))
    assert set(failing) == {"internal_imports"}
    assert sorted(f.split(":")[0] for f in failing["internal_imports"]) == [
        "python/sglang/srt/layers/attention/triton_backend.py", "python/sglang/srt/models/deepseek_v2.py"]
    assert all("sglang.srt.layers.helper_ops, which is not in the tree" in f for f in failing["internal_imports"])


def test_removed_name_still_imported(trees):
    upstream, pruned = trees
    edit(pruned / HELPER, "def scale(x, factor):\n    return x * factor\n", "")
    failing = _failing(verify_tree(pruned, upstream, checks=["static"]))
    assert set(failing) == {"import_names"}
    assert failing["import_names"] == [
        "python/sglang/srt/models/deepseek_v2.py:3 imports 'scale' from sglang.srt.layers.helper_ops, which does not define it"]


def test_removed_import_name_still_used(trees):
    upstream, pruned = trees
    edit(pruned / "python/sglang/srt/layers/attention/triton_backend.py",
         "from sglang.srt.layers.helper_ops import fused_add\n", "")
    failing = _failing(verify_tree(pruned, upstream, checks=["static"]))
    assert set(failing) == {"undefined_names"}
    assert failing["undefined_names"] == [
        "python/sglang/srt/layers/attention/triton_backend.py:5 undefined name 'fused_add' (UndefinedName)"]


def test_star_import_and_all_provide_names(trees):
    upstream, pruned = trees
    # sglang.srt.utils re-exports common's __all__ by `import *`; dropping get_device from it breaks
    # `from sglang.srt.utils import get_device` in deepseek_v2
    edit(pruned / "python/sglang/srt/utils/common.py", '__all__ = ["get_device", "is_cuda"]', '__all__ = ["is_cuda"]')
    edit(pruned / "python/sglang/srt/utils/common.py", "def get_device():", "def _get_device():")
    failing = _failing(verify_tree(pruned, upstream, checks=["import_names"]))
    assert failing["import_names"] == [
        "python/sglang/srt/models/deepseek_v2.py:4 imports 'get_device' from sglang.srt.utils, which does not define it"]


def test_removed_module_named_by_registry_string(trees):
    upstream, pruned = trees
    (pruned / "python/sglang/srt/layers/attention/ascend_backend.py").unlink()
    failing = _failing(verify_tree(pruned, upstream, checks=["static"]))
    assert set(failing) == {"registry_strings"}  # no static import names it: only the string does
    assert failing["registry_strings"] == [
        "python/sglang/srt/layers/attention/attention_registry.py:6 string "
        "'sglang.srt.layers.attention.ascend_backend:AscendBackend' names no module or attribute in the tree"]


def test_registry_string_to_removed_attribute(trees):
    upstream, pruned = trees
    edit(pruned / "python/sglang/srt/layers/attention/triton_backend.py", "class TritonBackend:", "class Backend:")
    failing = _failing(verify_tree(pruned, upstream, checks=["registry_strings"]))
    assert len(failing["registry_strings"]) == 1 and "triton_backend:TritonBackend" in failing["registry_strings"][0]


def test_syntax_error(trees):
    upstream, pruned = trees
    edit(pruned / HELPER, "def scale(x, factor):", "def scale(x, factor:")
    failing = _failing(verify_tree(pruned, upstream, checks=["static"]))
    assert "syntax" in failing
    assert failing["syntax"][0].startswith(f"{HELPER}:5 syntax error")


def test_dependency_dropped_from_pyproject(trees):
    upstream, pruned = trees
    edit(pruned / "python/pyproject.toml", '"pydantic>=2", ', "")
    failing = _failing(verify_tree(pruned, upstream, checks=["static"]))
    assert set(failing) == {"third_party"}
    assert {f.split(":")[0] for f in failing["third_party"]} == {
        "python/sglang/srt/entrypoints/openai/protocol.py", "python/sglang/srt/function_call/core_types.py",
        "python/sglang/srt/models/deepseek_v2.py"}
    assert all("'pydantic'" in f for f in failing["third_party"])


def test_new_guarded_import_is_a_note_not_a_failure(trees):
    upstream, pruned = trees
    edit(pruned / HELPER, "def fused_add", "try:\n    import fixture_optional_pkg\nexcept ImportError:\n    pass\n\n\ndef fused_add")
    result = verify_tree(pruned, upstream, checks=["third_party"])
    assert result.passed
    assert any("fixture_optional_pkg" in n for n in result.check("third_party").notes)


def test_regressions_count_beyond_upstream():
    up = [Finding(("a.py", "undefined", "x"), "a.py:1 x")]
    pr = [Finding(("a.py", "undefined", "x"), "a.py:3 x"), Finding(("a.py", "undefined", "x"), "a.py:9 x"),
          Finding(("b.py", "undefined", "x"), "b.py:2 x")]
    assert [f.text for f in regressions(pr, up)] == ["a.py:9 x", "b.py:2 x"]


def test_static_gate_for_apply(trees, verify_rules):
    upstream, pruned = trees
    (pruned / HELPER).unlink()
    gate = static_gate(pruned, upstream, rules=verify_rules)
    assert set(gate) == set(STATIC_CHECKS)
    assert len(gate["internal_imports"]) == 2 and not gate["syntax"]
    later = {"python/sglang/srt/models/deepseek_v2.py"}  # a later batch deletes it: not this batch's
    assert len(static_gate(pruned, upstream, later=later, rules=verify_rules)["internal_imports"]) == 1


def test_facts_are_cached_by_content(trees, monkeypatch):
    from shrinker.checks import factcache

    upstream, pruned = trees
    verify_tree(pruned, upstream, checks=["syntax"])
    edit(pruned / HELPER, "return a + b", "return b + a")
    parsed = []
    real = factcache.extract
    monkeypatch.setattr(factcache, "extract", lambda *a: parsed.append(a[1]) or real(*a))
    verify_tree(pruned, upstream, checks=["syntax"], jobs=1)
    assert parsed == ["sglang.srt.layers.helper_ops"]



def test_a_kernel_asked_for_that_no_record_registers(tmp_path):
    """0.5.23: the KDA records went with their modules while `try_qwen3x_nvfp4_gemm` stayed (KeyError)."""
    from shrinker.checks.facts import extract
    from shrinker.checks.static import collect
    from shrinker.checks.tree import SourceTree
    from shrinker.rules.load import load_rules

    kernels = tmp_path / "python/sglang/kernels"
    (kernels / "ops").mkdir(parents=True)
    (tmp_path / "python/sglang/__init__.py").write_text("")
    (kernels / "__init__.py").write_text("")
    (kernels / "selector.py").write_text("def get_kernel(op, backend=None):\n    return op\n")
    (kernels / "ops/__init__.py").write_text(
        "from sglang.kernels.selector import get_kernel\n"
        'register_kernel(KernelSpec(op="gemm.a", target="sglang.kernels.ops:f"))\n'
        "for name in NAMES:\n"
        '    register_kernel(KernelSpec(op=f"quant.{name}", target="sglang.kernels.ops:f"))\n'
        "def f(x):\n    return KernelSpec(op=x.op)  # a computed key serves no literal ask\n"
        "def use(x, hub):\n"
        '    get_kernel("gemm.a")(x)\n'
        '    get_kernel("quant.fp8")(x)\n'
        '    hub.get_kernel("gemm.hub")  # not the registry\'s lookup\n'
        '    return get_kernel("gemm.q")(x)\n')
    tree = SourceTree.load(tmp_path)
    facts = {name: extract(m.path.read_bytes(), name, m.kind == "package", frozenset({"sglang"}))
             for name, m in tree.modules.items() if m.path.suffix == ".py"}
    found = collect(tree, facts, {}, load_rules("deepseek").registries)
    assert [f.text for f in found.by_check["kernel_ops"]] == [
        "python/sglang/kernels/ops/__init__.py:11 asks kernel_ops for 'gemm.q', which no record of the tree serves"]
    assert found.counts["kernel_ops"]["asks"] == 3
    # without the rules' inventories there is nothing to check
    assert collect(tree, facts, {}).by_check["kernel_ops"] == []
