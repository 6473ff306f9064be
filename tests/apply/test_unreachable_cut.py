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


def _config_tree(tmp_path: Path, use: str) -> tuple[Path, object]:
    """0.5.23's configs/bailing_hybrid: a config module of a removed package_exports key that the plan kept for
    a call (model_config's is_bailing_multi_gate_enabled) an earlier batch folded away; what is left is the
    package's re-export and a kept module that imports the class from the package to test isinstance."""
    import shutil

    from shrinker.rules.load import load_rules
    from tests.conftest import MINITREE
    from tests.plan.test_isinstance_only_cut import REGISTRY

    tree = tmp_path / "tree"
    shutil.copytree(MINITREE, tree)
    configs = tree / "python/pkg/configs"
    (configs / "__init__.py").write_text("from pkg.configs.deepseek_config import DeepseekConfig\n"
                                         "from pkg.configs.llama_config import LlamaConfig\n\n"
                                         '__all__ = ["DeepseekConfig", "LlamaConfig"]\n')
    (configs / "llama_config.py").write_text("class LlamaConfig:\n    pass\n")
    model = tree / "python/pkg/models/deepseek.py"
    model.write_text("from pkg.configs import DeepseekConfig, LlamaConfig\n\n" + model.read_text()
                     + f"\n\ndef hybrid(config):\n    if {use}:\n        return config\n    return None\n")
    (tree / "rules.toml").write_text((tree / "rules.toml").read_text() + REGISTRY)
    return tree, load_rules(path=tree / "rules.toml")


def test_a_config_module_left_with_isinstance_tests_goes_and_the_tests_fold(tmp_path: Path) -> None:
    tree, rules = _config_tree(tmp_path, "isinstance(config, LlamaConfig) and config.use_kda")
    cut = delete_unreachable(tree, rules, 1)
    assert "python/pkg/configs/llama_config.py" in cut.deleted and not cut.failures and not cut.findings
    package = (tree / "python/pkg/configs/__init__.py").read_text()
    assert "LlamaConfig" not in package and "DeepseekConfig" in package
    model = (tree / "python/pkg/models/deepseek.py").read_text()
    # the package's importer loses the name, and its test folds with the branch it guarded
    assert model.startswith("from pkg.configs import DeepseekConfig\n")
    assert "def hybrid(config):\n    return None\n" in model
    assert delete_unreachable(tree, rules, 1).deleted == []  # idempotent


def test_a_config_module_whose_class_kept_code_still_builds_stays(tmp_path: Path) -> None:
    # imported from its own module and called (0.5.23 hf_transformers/config.py builds configs.mamba's
    # MambaConfig): kept, as in the plan; the package's re-export of the removed key still goes
    tree, rules = _config_tree(tmp_path, "LlamaBuilt() is config")
    model = tree / "python/pkg/models/deepseek.py"
    model.write_text("from pkg.configs.llama_config import LlamaConfig as LlamaBuilt\n" + model.read_text())
    cut = delete_unreachable(tree, rules, 1)
    assert "python/pkg/configs/llama_config.py" not in cut.deleted
    assert (tree / "python/pkg/configs/llama_config.py").exists()


def test_a_config_module_whose_class_is_built_through_the_package_is_put_back(tmp_path: Path) -> None:
    # the plan's view cuts the package's re-export whatever the importer does with the name; a call through the
    # package would leave a name still used, and the gate would roll back the whole symbol pass: the round is
    # put back and the module kept (reported), while the rest of the cut goes on
    tree, rules = _config_tree(tmp_path, "LlamaConfig() is config")
    model = tree / "python/pkg/models/deepseek.py"
    package = tree / "python/pkg/configs/__init__.py"
    before = model.read_bytes(), package.read_bytes()
    cut = delete_unreachable(tree, rules, 1)
    # the round's other module of a removed package_exports key (the mini tree's overrides/llama) stays with it:
    # which one broke the use the findings do not say
    assert cut.kept == ["python/pkg/configs/llama_config.py", "python/pkg/overrides/llama.py"]
    assert not cut.findings and not cut.failures
    assert (tree / "python/pkg/configs/llama_config.py").exists()
    assert (model.read_bytes(), package.read_bytes()) == before
    assert "python/pkg/unused_helper.py" in cut.deleted  # the modules nothing reaches still go


_TABLE = '''
_TRITON_KERNELS = [
    ("asked_op", "run"),
    ("other_model_kernel", "_go"),  # the deleted module
]
for _mod, _fn in _TRITON_KERNELS:
    register_kernel(KernelSpec(op=f"triton.{_fn.lstrip('_')}", target=f"pkg.inventory.{_mod}:{_fn}"))
del _mod, _fn
'''


def test_a_table_row_naming_a_module_the_cut_deletes_goes(tmp_path: Path) -> None:
    # 0.5.23's kernels/ops/quantization `("rocm_upscale", "upscale")`: a loop over a table builds the target, which
    # is no import the graph follows, so the module goes and the row is left naming it
    tree, rules = _tree(tmp_path)
    table = tree / "python/pkg/inventory/triton_table.py"  # imports none of the modules the cut deletes
    table.write_text("from pkg.inventory.registry import register_kernel\nfrom pkg.inventory.spec import KernelSpec\n"
                     + _TABLE)
    package = tree / "python/pkg/inventory/__init__.py"
    package.write_text(package.read_text() + "from pkg.inventory import triton_table\n")
    cut = delete_unreachable(tree, rules, 1)
    assert "python/pkg/inventory/other_model_kernel.py" in cut.deleted and not cut.failures
    text = table.read_text()
    assert "other_model_kernel" not in text and '    ("asked_op", "run"),\n]' in text


def test_a_module_kept_while_imported_goes_once_nothing_kept_imports_it(tmp_path: Path) -> None:
    # 0.5.23's models/llama: `[[keep]] while_imported` held it through batch 1 (inkling_common's dense MLP still
    # subclassed LlamaMLP); the cut judges it without the rule, so it goes once no kept module imports it
    from shrinker.rules.schema import ModuleRule

    tree, rules = _tree(tmp_path)
    inventory = tree / "python/pkg/inventory"
    (inventory / "orphan.py").write_text("def helper():\n    return 1\n")
    (inventory / "held.py").write_text("def helper():\n    return 2\n")
    group = inventory / "group.py"
    group.write_text("from pkg.inventory.held import helper\n" + group.read_text())
    for name in ("orphan", "held"):
        rules.keep.append(ModuleRule(pattern=f"pkg.inventory.{name}", reason="held", while_imported=True))
    rules.keep.append(ModuleRule(pattern="pkg.inventory.pinned", reason="always"))
    (inventory / "pinned.py").write_text("X = 1\n")
    cut = delete_unreachable(tree, rules, 1)
    assert "python/pkg/inventory/orphan.py" in cut.deleted and not (inventory / "orphan.py").exists()
    assert (inventory / "held.py").exists() and (inventory / "pinned.py").exists() and not cut.failures
