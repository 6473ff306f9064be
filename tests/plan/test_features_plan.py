"""The planner and [[features]]: a module only a feature branch imports goes with the feature, in the
batch marked `features = true`, whose fold_features codemod gets the importer (mini tree + a feature)."""

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

_SERVER_TAIL = '''

def build_backend(runner):
    if cfg := linear_config(runner.model_config):
        from pkg.linear_backend import LinearBackend
        from pkg.linear_helper import helper

        return LinearBackend(cfg, helper)
    return None
'''

_RULES_TAIL = '''
[[features]]
name = "linear attention"
reason = "no kept model has it"
[[features.predicates]]
name = "linear_config"
value = false
returns_none = true
with_args = true
calls_only = true
reason = "None for every kept architecture"

[[remove]]
pattern = "pkg.linear_backend"
reason = "the linear attention backend"
category = "feature"

[[batches]]
name = "features"
risk = "medium"
categories = ["feature"]
codemods = ["fold_features", "remove_dead_imports"]
features = true
description = "features the profile does not use"
'''


def _plan(tmp_path: Path):
    tree = tmp_path / "tree"
    shutil.copytree(MINITREE, tree)
    pkg = tree / "python" / "pkg"
    (pkg / "linear_backend.py").write_text("class LinearBackend:\n    pass\n")
    (pkg / "linear_helper.py").write_text("def helper():\n    return 1\n")
    (pkg / "server.py").write_text((pkg / "server.py").read_text() + _SERVER_TAIL)
    (tree / "rules.toml").write_text((tree / "rules.toml").read_text() + _RULES_TAIL)
    rules = load_rules(path=tree / "rules.toml")
    graph = build_graph(tree, jobs=1, cache=FactsCache(tmp_path / "facts.pickle"))
    reach = compute_reach(graph, rules)
    decisions, category = decide(graph, reach, rules)
    return reach, {d.path: d for d in decisions}, category, make_batches(graph, reach, rules, decisions)


def test_feature_guard_removes_what_only_the_feature_branch_imports(tmp_path: Path) -> None:
    reach, decisions, category, batches = _plan(tmp_path)
    helper = decisions["python/pkg/linear_helper.py"]
    assert not helper.keep and helper.code == "feature_guard"
    assert category["pkg.linear_helper"] == "feature"
    backend = decisions["python/pkg/linear_backend.py"]
    assert not backend.keep and backend.rule == "feature"
    features = batches[-1]
    assert features.features and features.to_dict()["features"] is True
    assert {"python/pkg/linear_backend.py", "python/pkg/linear_helper.py"} <= set(features.delete)
    assert "python/pkg/server.py" in features.codemods["fold_features"]
    # the platform batch folds the platform's predicates only: the server is no feature target there
    assert "fold_features" not in batches[1].codemods
