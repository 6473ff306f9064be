"""The models batch gives prune_entry_classes the kept model modules whose EntryClass names a removed class."""

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


def _batches(tmp_path: Path, keep_llama: bool):
    tree = tmp_path / "tree"
    shutil.copytree(MINITREE, tree)
    if keep_llama:  # as 0.5.23's rule keeps models/llama for LlamaMLP
        (tree / "rules.toml").write_text((tree / "rules.toml").read_text()
                                         + '\n[[keep]]\npattern = "pkg.models.llama"\nreason = "a base class"\n')
    rules = load_rules(path=tree / "rules.toml")
    rules.batches[0].codemods.append("prune_entry_classes")
    graph = build_graph(tree, jobs=1, cache=FactsCache(tmp_path / "facts.pickle"))
    reach = compute_reach(graph, rules)
    decisions, _ = decide(graph, reach, rules)
    return make_batches(graph, reach, rules, decisions)


def test_a_kept_model_module_registers_no_removed_class(tmp_path: Path) -> None:
    models = _batches(tmp_path, keep_llama=True)[0]
    assert "python/pkg/models/llama.py" not in models.delete
    assert models.codemods["prune_entry_classes"] == ["python/pkg/models/llama.py"]


def test_a_removed_model_module_needs_no_edit(tmp_path: Path) -> None:
    models = _batches(tmp_path / "plain", keep_llama=False)[0]
    assert "python/pkg/models/llama.py" in models.delete
    assert models.codemods["prune_entry_classes"] == []
