"""Tree scans apply runs before a platform batch: platform classes per module, method definitions."""

from __future__ import annotations

from shrinker.apply.run import platform_classes_by_module, method_definitions, python_lines
from shrinker.rules.load import load_rules


def _tree(tmp_path):
    pkg = tmp_path / "python" / "sglang" / "srt"
    pkg.mkdir(parents=True)
    (pkg / "schemes.py").write_text(
        "class AWQMoEScheme:\n    def apply(self):\n        pass\n\n\n"
        "class AWQAscendMoEScheme(AWQMoEScheme):\n    def apply(self):\n        pass\n\n    def only_here(self):\n"
        "        pass\n")
    (pkg / "plain.py").write_text("def f():\n    return 1\n")
    return tmp_path


def test_platform_classes_by_module(tmp_path) -> None:
    tree = _tree(tmp_path)
    assert platform_classes_by_module(tree, load_rules("deepseek")) == {
        "sglang.srt.schemes": frozenset({"AWQAscendMoEScheme"})}


def test_method_definitions_and_lines(tmp_path) -> None:
    tree = _tree(tmp_path)
    assert method_definitions(tree) == {"apply": 2, "only_here": 1}
    assert python_lines(tree) == 10
