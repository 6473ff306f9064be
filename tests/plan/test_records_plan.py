"""The planner and an inventory of records (`[[registries]] kind = "records"`, 0.5.17+'s kernel ops): a record
whose key no code looks up keeps its module out; a looked-up key, or any lookup with a computed key, keeps it."""

from __future__ import annotations

import shutil
from pathlib import Path

from shrinker.graph.build import build_graph
from shrinker.graph.cache import FactsCache
from shrinker.plan.batches import make_batches
from shrinker.plan.decide import decide
from shrinker.plan.reach import compute_reach
from shrinker.rules.load import load_rules
from tests.conftest import MINITREE

_RULES_TAIL = '''
[[registries]]
name = "kernel_ops"
kind = "records"
module = "pkg.inventory.registry"
record = "KernelSpec"
element_key = "op"
lookups = ["pkg.inventory.selector:get_kernel", "pkg.inventory.registry:registry.get"]
reason = "the selector imports a record's module only for an op a caller asks for"
'''

_GROUP = '''from pkg.inventory.registry import register_kernel
from pkg.inventory.spec import KernelSpec

# Public entry points, by op.
register_kernel(KernelSpec(op="gate.asked", target="pkg.inventory.asked_op:run"))
register_kernel(
    KernelSpec(op="gate.other_model", target="pkg.inventory.other_model_op:run")
)
register_kernel(KernelSpec(op="gate.by_registry", target="pkg.inventory.registry_op:run"))
register_kernel(KernelSpec(op="gate.by_module", target="pkg.inventory.module_op:run"))
'''

_USER = '''from pkg.inventory import get_kernel
from pkg.inventory.registry import registry
from pkg.inventory import selector as sel
from kernels import get_kernel as hub_kernel  # another library's get_kernel: not a lookup


def run(x):
    hub_kernel(x)
    sel.get_kernel("gate.by_module")
    registry.get("gate.by_registry")
    return get_kernel("gate.asked")(x)
'''


def _plan(tmp_path: Path, user: str = _USER, extra: dict[str, str] | None = None):
    tree = tmp_path / "tree"
    shutil.copytree(MINITREE, tree)
    inv = tree / "python" / "pkg" / "inventory"
    inv.mkdir()
    (inv / "__init__.py").write_text("from pkg.inventory.selector import get_kernel\nfrom pkg.inventory import group\n")
    (inv / "spec.py").write_text("class KernelSpec:\n    def __init__(self, op, target):\n        self.op = op\n")
    (inv / "registry.py").write_text("registry = {}\n\n\ndef register_kernel(spec):\n    registry[spec.op] = spec\n")
    (inv / "selector.py").write_text("from pkg.inventory.registry import registry\n\n\n"
                                     "def get_kernel(op):\n    return registry.get(op)\n")
    (inv / "group.py").write_text(_GROUP)
    for name in ("asked_op", "other_model_op", "registry_op", "module_op"):
        (inv / f"{name}.py").write_text("def run(x):\n    return x\n")
    (tree / "python" / "pkg" / "inventory_user.py").write_text(user)
    server = tree / "python" / "pkg" / "server.py"
    server.write_text(server.read_text() + "\nfrom pkg import inventory, inventory_user\n")
    for path, text in (extra or {}).items():
        (tree / path).write_text(text)
    (tree / "rules.toml").write_text((tree / "rules.toml").read_text() + _RULES_TAIL)
    rules = load_rules(path=tree / "rules.toml")
    graph = build_graph(tree, jobs=1, cache=FactsCache(tmp_path / "facts.pickle"))
    reach = compute_reach(graph, rules)
    decisions, category = decide(graph, reach, rules)
    return reach, {d.path: d for d in decisions}, category, rules


def test_a_record_no_code_looks_up_keeps_nothing(tmp_path: Path) -> None:
    reach, decisions, category, _ = _plan(tmp_path)
    assert reach.registries.removed_keys["kernel_ops"] == {"gate.other_model"}
    gone = decisions["python/pkg/inventory/other_model_op.py"]
    assert not gone.keep and gone.code == "inventory"
    assert "KernelSpec record of kernel_ops key 'gate.other_model'" in gone.reason
    assert category["pkg.inventory.other_model_op"] == "unreachable"
    assert decisions["python/pkg/inventory/asked_op.py"].keep
    assert decisions["python/pkg/inventory/registry_op.py"].keep
    assert decisions["python/pkg/inventory/module_op.py"].keep


def test_a_lookup_with_a_computed_key_keeps_every_record(tmp_path: Path) -> None:
    user = _USER.replace('get_kernel("gate.asked")', 'get_kernel(f"gate.{x}")')
    reach, decisions, _, _ = _plan(tmp_path, user)
    assert reach.registries.removed_keys["kernel_ops"] == set()
    assert decisions["python/pkg/inventory/other_model_op.py"].keep
    assert any("pkg.inventory_user:11 asks with a computed key" in w for w in reach.rule_warnings)


def test_the_registry_batch_prunes_the_records_of_removed_keys(tmp_path: Path) -> None:
    reach, decisions, _, rules = _plan(tmp_path)
    graph = build_graph(tmp_path / "tree", jobs=1, cache=FactsCache(tmp_path / "facts.pickle"))
    rules.batches[-1].codemods.append("prune_records")
    batches = make_batches(graph, reach, rules, list(decisions.values()))
    rest = batches[-1]
    assert "python/pkg/inventory/other_model_op.py" in rest.delete
    assert rest.codemods["prune_records"] == ["python/pkg/inventory/group.py"]


def test_the_table_codemod_visits_the_modules_that_build_records(tmp_path: Path) -> None:
    # prune_record_tables reads the values a loop or a module constant gives a record: the modules that build
    # one are its files, not every kept module
    reach, decisions, _, rules = _plan(tmp_path)
    graph = build_graph(tmp_path / "tree", jobs=1, cache=FactsCache(tmp_path / "facts.pickle"))
    rules.batches[-1].codemods.append("prune_record_tables")
    rest = make_batches(graph, reach, rules, list(decisions.values()))[-1]
    builders = sorted(p for p, d in decisions.items() if d.keep and p.endswith(".py")
                      and "KernelSpec(" in (tmp_path / "tree" / p).read_text())
    assert rest.codemods["prune_record_tables"] == builders
    assert "python/pkg/inventory/group.py" in builders


def test_a_record_goes_in_the_batch_that_deletes_its_module(tmp_path: Path) -> None:
    # 0.5.23: Qwen4's gate kernel is imported by the removed Qwen4 model too, so it goes with the models
    # batch, before the registries batch: its record must go there as well
    llama = MINITREE / "python" / "pkg" / "models" / "llama.py"
    reach, decisions, category, rules = _plan(
        tmp_path, extra={"python/pkg/models/llama.py": llama.read_text() + "\nfrom pkg.inventory.other_model_op import run\n"})
    graph = build_graph(tmp_path / "tree", jobs=1, cache=FactsCache(tmp_path / "facts.pickle"))
    batches = make_batches(graph, reach, rules, list(decisions.values()))
    models = next(b for b in batches if "python/pkg/inventory/other_model_op.py" in b.delete)
    assert models.name == "other models"
    assert models.codemods["prune_records"] == ["python/pkg/inventory/group.py"]
