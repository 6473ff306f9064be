"""The DiGraph over the mini tree: edges for every mechanism, namespace packages, parse cache."""

from shrinker.graph.build import build_graph
from shrinker.graph.cache import FactsCache
from tests.conftest import MINITREE


def test_edges_for_each_mechanism(tmp_path):
    g = build_graph(MINITREE, jobs=1, cache=FactsCache(tmp_path / "c.pickle"))
    edges = g.graph
    kinds = lambda u, v: {r["kind"] for r in edges.edges[u, v]["imports"]}  # noqa: E731
    assert "from" in kinds("pkg.server", "pkg.layers")
    assert "from_submodule" in kinds("pkg.server", "pkg.layers.attention_registry")
    assert "string" in kinds("pkg.server", "pkg.hooks")  # "pkg.hooks:install"
    assert "string" in kinds("pkg", "pkg.backends_lazy")  # LazyImport
    assert "string" in kinds("pkg.kernels.ops", "pkg.kernels.ops.norm")  # f-string over a tuple
    assert "implicit_parent" in kinds("pkg.kernels.ops.norm", "pkg.kernels.ops")
    # Namespace package (no __init__.py): a node without a file, and no parent edge into it.
    assert g.module_path["pkg.models"] == ""
    assert not edges.has_edge("pkg.models.llama", "pkg.models")
    assert "from" in kinds("pkg.models.deepseek", "pkg.configs.deepseek_config")  # `from ..configs...`
    assert g.facts["pkg.broken"].parse_error


def test_cache_reparses_only_changed_files(tmp_path):
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(MINITREE, tree)
    cache_file = tmp_path / "c.pickle"
    first = build_graph(tree, jobs=1, cache=FactsCache(cache_file))
    assert first.stats.parsed == first.stats.files
    (tree / "python/pkg/hooks.py").write_text("import pkg.rocm_only\n")
    second = build_graph(tree, jobs=1, cache=FactsCache(cache_file))
    assert second.stats.parsed == 1 and second.stats.cached == second.stats.files - 1
    assert second.graph.has_edge("pkg.hooks", "pkg.rocm_only")
