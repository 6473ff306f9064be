"""A module of a removed package_exports key (a config class of a removed model) that kept code imports only to
test isinstance against is cut like a removed model, and what only it imported goes with it."""

from __future__ import annotations

import shutil

import pytest
from pathlib import Path

from shrinker.graph.build import build_graph
from shrinker.graph.cache import FactsCache
from shrinker.plan.reach import compute_reach
from shrinker.rules.load import load_rules
from tests.conftest import MINITREE

REGISTRY = '''
[[registries]]
name = "model_configs"
kind = "package_exports"
module = "pkg.configs"
keep = ["deepseek_config"]
reason = "config classes of the models"
'''


def _reach(tmp_path: Path, use: str):
    tree = tmp_path / "tree"
    shutil.copytree(MINITREE, tree)
    configs = tree / "python/pkg/configs"
    (configs / "__init__.py").write_text("from pkg.configs.deepseek_config import DeepseekConfig\n"
                                         "from pkg.configs.llama_config import LlamaConfig\n")
    (configs / "llama_config.py").write_text("from pkg.configs.llama_base import LlamaBase\n\n\n"
                                             "class LlamaConfig(LlamaBase):\n    pass\n")
    (configs / "llama_base.py").write_text("class LlamaBase:\n    pass\n")
    model = tree / "python/pkg/models/deepseek.py"
    model.write_text(model.read_text() + "\n\ndef is_llama(config):\n"
                     "    from pkg.configs.llama_config import LlamaConfig\n\n"
                     f"    return {use}\n")
    (tree / "rules.toml").write_text((tree / "rules.toml").read_text() + REGISTRY)
    rules = load_rules(path=tree / "rules.toml")
    return compute_reach(build_graph(tree, jobs=1, cache=FactsCache(tmp_path / "facts.pickle")), rules)


def test_a_config_module_kept_only_by_isinstance_tests_is_cut(tmp_path: Path) -> None:
    reach = _reach(tmp_path, "isinstance(config, LlamaConfig)")
    code, reason, category = reach.cut_by_rule["pkg.configs.llama_config"]
    assert category == "registry:model_configs"
    assert "only to test isinstance against (pkg.models.deepseek:" in reason
    assert "pkg.configs.llama_config" not in reach.kept
    assert "pkg.configs.llama_base" not in reach.kept  # only the cut module imported it
    assert [c[:2] for c in reach.cuts if c[1] == "pkg.configs.llama_config"] == [
        ("pkg.models.deepseek", "pkg.configs.llama_config")]


def test_a_config_module_whose_class_kept_code_builds_stays(tmp_path: Path) -> None:
    reach = _reach(tmp_path, "LlamaConfig() if config is None else isinstance(config, LlamaConfig)")
    assert "pkg.configs.llama_config" in reach.kept
    assert "pkg.configs.llama_base" in reach.kept
    assert "pkg.configs.llama_config" not in reach.cut_by_rule


def _reach_plain(tmp_path: Path, module_text: str, use: str = "isinstance(layer, NgramEmbedding)"):
    """A kept model that imports a plain module (no registry) only to test isinstance against its class."""
    tree = tmp_path / "tree"
    shutil.copytree(MINITREE, tree)
    (tree / "python/pkg/ngram.py").write_text(module_text)
    (tree / "python/pkg/ngram_helper.py").write_text("class Helper:\n    pass\n")
    model = tree / "python/pkg/models/deepseek.py"
    model.write_text(model.read_text() + "\n\ndef is_ngram(layer):\n"
                     "    from pkg.ngram import NgramEmbedding\n\n"
                     f"    return {use}\n")
    rules = load_rules(path=tree / "rules.toml")
    return compute_reach(build_graph(tree, jobs=1, cache=FactsCache(tmp_path / "facts.pickle")), rules)


PLAIN = "from pkg.ngram_helper import Helper\n\n\nclass NgramEmbedding(Helper):\n    pass\n"


def test_a_plain_module_that_only_defines_and_is_only_tested_against_is_cut(tmp_path: Path) -> None:
    reach = _reach_plain(tmp_path, PLAIN)
    code, reason, category = reach.cut_by_rule["pkg.ngram"]
    assert (code, category) == ("isinstance", "unreachable:isinstance")
    assert "only to test isinstance against (pkg.models.deepseek:" in reason and "only defines" in reason
    assert "pkg.ngram_helper" not in reach.kept  # only the cut module imported it


@pytest.mark.parametrize("text", [
    "from pkg.ngram_helper import Helper\nfrom pkg.registry import register\n\n\n@register('ngram')\n"
    "class NgramEmbedding(Helper):\n    pass\n",  # registers itself where kept code may look it up
    "from pkg.ngram_helper import Helper\n\n\nclass NgramEmbedding(Helper):\n    pass\n\n\nHelper.default = NgramEmbedding\n",
])
def test_a_plain_module_whose_import_runs_something_stays(tmp_path: Path, text: str) -> None:
    reach = _reach_plain(tmp_path, text)
    assert "pkg.ngram" in reach.kept and "pkg.ngram" not in reach.cut_by_rule


def test_a_plain_module_whose_class_kept_code_builds_stays(tmp_path: Path) -> None:
    reach = _reach_plain(tmp_path, PLAIN, "NgramEmbedding() if layer is None else isinstance(layer, NgramEmbedding)")
    assert "pkg.ngram" in reach.kept
