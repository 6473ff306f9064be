"""Tree scans apply runs before a platform batch: platform classes per module, method definitions."""

from __future__ import annotations

from shrinker.apply.run import batch_class_globs, platform_classes_by_module, python_lines
from shrinker.graph.sources import method_definitions
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
    rules = load_rules("deepseek")
    platform = batch_class_globs(rules, {"codemods": [{"name": "remove_platform_classes"}]})
    assert platform_classes_by_module(tree, platform) == {"sglang.srt.schemes": frozenset({"AWQAscendMoEScheme"})}


def test_a_batch_removes_the_classes_of_its_own_class_codemods() -> None:
    rules = load_rules("deepseek")
    features = batch_class_globs(rules, {"codemods": [{"name": "remove_feature_classes"}]})
    assert "VisionFlash4Attention" in features and not set(features) & set(rules.platform.classes)
    assert batch_class_globs(rules, {"codemods": [{"name": "fold_features"}]}) == []


def test_method_definitions_and_lines(tmp_path) -> None:
    tree = _tree(tmp_path)
    assert method_definitions(tree) == {"apply": 2, "only_here": 1}
    assert python_lines(tree) == 10


def test_apply_report_header_rounds_the_exact_share(tmp_path) -> None:
    # 754,766 of 1,202,727 is 62.7549 %: rounding the 4-digit fraction first (0.6275) printed 62.7,
    # while reports/index.html, from the raw counts, shows 62.8
    from shrinker.apply.run import _write_apply_report

    _write_apply_report(tmp_path, [], 1_202_727, 447_961, "pypi:sglang==0.5.19")
    assert "removed 754,766 (62.8 %)." in (tmp_path / "apply.md").read_text()


def test_name_table_reads_the_backend_methods(tmp_path) -> None:
    from shrinker.graph.sources import name_table

    kernels = tmp_path / "python" / "sglang" / "kernels"
    kernels.mkdir(parents=True)
    (kernels / "fused_op.py").write_text(
        'BACKEND_METHODS: Dict[KernelBackend, str] = {\n    KernelBackend.TORCH: "forward_native",\n'
        '    KernelBackend.AOT: "forward_aot",\n}\nOTHER = {KernelBackend.AOT: method}\n')
    assert name_table(tmp_path, "sglang.kernels.fused_op:BACKEND_METHODS") == {"TORCH": "forward_native",
                                                                              "AOT": "forward_aot"}
    assert name_table(tmp_path, "sglang.kernels.fused_op:OTHER") == {}  # not a table of names
    assert name_table(tmp_path, "sglang.kernels.fused_op:MISSING") == {}
    assert name_table(tmp_path, "sglang.kernels.absent:BACKEND_METHODS") == {}  # a release before the table
