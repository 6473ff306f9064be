"""A symbol pass's module cut (apply/symbol_batch.delete_unreachable): what the plan's reachability no longer
reaches goes, with the inventory records that alone still named it."""

from __future__ import annotations

from pathlib import Path

from shrinker.apply.symbol_batch import delete_unreachable
from tests.plan.test_records_plan import _plan

# 0.5.23's qwen38_qsa_sm121 package: the op module an unasked record names runs its kernel module
# from inside a function
_OP = "def run(x):\n    from pkg.inventory.other_model_kernel import go\n\n    return go(x)\n"
_KERNEL = "def go(x):\n    return x\n"


def _tree(tmp_path: Path):
    reach, decisions, _, rules = _plan(tmp_path, extra={"python/pkg/inventory/other_model_op.py": _OP,
                                                        "python/pkg/inventory/other_model_kernel.py": _KERNEL})
    assert decisions["python/pkg/inventory/other_model_op.py"].code == "inventory"
    assert decisions["python/pkg/inventory/other_model_kernel.py"].code == "unreachable"
    rules.platform.pure_methods.append("KernelSpec")  # building a record runs no code (the profile's rule)
    return tmp_path / "tree", rules


def test_a_module_only_an_unasked_record_names_goes_with_its_record_and_what_it_imports(tmp_path: Path) -> None:
    tree, rules = _tree(tmp_path)
    cut = delete_unreachable(tree, rules, 1)
    inventory = tree / "python/pkg/inventory"
    # (the mini tree's other unreachable modules go too)
    assert [p for p in cut.deleted if "/inventory/" in p] == ["python/pkg/inventory/other_model_kernel.py",
                                                              "python/pkg/inventory/other_model_op.py"]
    assert not (inventory / "other_model_op.py").exists() and not (inventory / "other_model_kernel.py").exists()
    group = (inventory / "group.py").read_text()
    assert "gate.other_model" not in group and "other_model_op" not in group
    assert 'register_kernel(KernelSpec(op="gate.asked", target="pkg.inventory.asked_op:run"))' in group
    assert "# Public entry points, by op." in group  # the comment above the first record stays
    assert not cut.failures


def test_a_package_that_goes_whole_takes_its_data_files(tmp_path: Path) -> None:
    # 0.5.23's kda_kernels/qwen38_qsa_sm121: __init__, kernel and a README
    tree, rules = _tree(tmp_path)
    package = tree / "python/pkg/inventory/other_model"
    package.mkdir()
    (tree / "python/pkg/inventory/other_model_op.py").rename(package / "__init__.py")
    (package / "README.md").write_text("The other model's kernel.\n")
    group = tree / "python/pkg/inventory/group.py"
    group.write_text(group.read_text().replace("pkg.inventory.other_model_op:run", "pkg.inventory.other_model:run"))
    kept = tree / "python/pkg/inventory/README.md"
    kept.write_text("The inventory.\n")
    cut = delete_unreachable(tree, rules, 1)
    assert {"python/pkg/inventory/other_model/__init__.py", "python/pkg/inventory/other_model/README.md"} <= set(
        cut.deleted)
    assert not (package / "README.md").exists() and not (package / "__init__.py").exists()
    assert kept.exists()  # a data file of a package that stays


def test_the_cut_is_idempotent(tmp_path: Path) -> None:
    tree, rules = _tree(tmp_path)
    delete_unreachable(tree, rules, 1)
    group = (tree / "python/pkg/inventory/group.py").read_text()
    again = delete_unreachable(tree, rules, 1)
    assert again.deleted == [] and (tree / "python/pkg/inventory/group.py").read_text() == group
