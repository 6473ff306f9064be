"""A kept module that imports, from a model module the plan removes, a name that module only re-exports
(0.5.23's deepseek_v4 taking ReplicatedLinear from models/dbrx): the import is redirected to the module
that defines the name, which stays, and the removed module keeps nothing alive."""

from __future__ import annotations

import shutil
from pathlib import Path

from shrinker.graph.build import build_graph
from shrinker.graph.cache import FactsCache
from shrinker.plan.reach import compute_reach
from shrinker.rules.load import load_rules
from tests.conftest import MINITREE


def _reach(tmp_path: Path, line: str):
    tree = tmp_path / "tree"
    shutil.copytree(MINITREE, tree)
    model = tree / "python/pkg/models/deepseek.py"
    model.write_text(f"{line}\n" + model.read_text())
    rules = load_rules(path=tree / "rules.toml")
    return compute_reach(build_graph(tree, jobs=1, cache=FactsCache(tmp_path / "facts.pickle")), rules)


def test_a_reexport_of_a_removed_model_module_is_redirected(tmp_path: Path) -> None:
    # models/llama.py: `from .llama_helper import rope`, bound by that import alone
    reach = _reach(tmp_path, "from pkg.models.llama import rope")
    assert reach.reexports == {"pkg.models.llama": {"rope": "pkg.models.llama_helper"}}
    assert "pkg.models.llama" not in reach.kept
    assert "through the re-export of removed pkg.models.llama" in reach.kept["pkg.models.llama_helper"]
    assert not [c for c in reach.cuts if c[1] == "pkg.models.llama"]


def test_a_name_the_removed_module_defines_is_cut(tmp_path: Path) -> None:
    reach = _reach(tmp_path, "from pkg.models.llama import LlamaForCausalLM, rope")
    assert reach.reexports == {}
    assert [c[:2] for c in reach.cuts if c[1] == "pkg.models.llama"] == [("pkg.models.deepseek", "pkg.models.llama")]
