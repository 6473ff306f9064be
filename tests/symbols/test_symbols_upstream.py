"""The symbol graph on the pinned upstream as the plan keeps it (in memory, never written).

Marked `upstream`: the files remove.txt lists are left out (what batches 1-5 delete), the graph is
built over the rest, and remove_dead_symbols runs in memory over every module with dead symbols:
no failure, nothing newly undefined, and SGLang's known dispatch shapes stay.

    /tmp/venv/bin/pytest -m upstream -s tests/symbols/test_symbols_upstream.py
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from shrinker import paths
from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.pipeline import FileItem, summarize, transform_files
from shrinker.errors import ShrinkError
from shrinker.graph.cache import FactsCache
from shrinker.rules.load import load_rules
from shrinker.symbols.fixpoint import _register
from shrinker.symbols.graph import build_symbol_graph
from shrinker.symbols.rules import load_symbol_rules

pytestmark = pytest.mark.upstream


@pytest.fixture(scope="module")
def kept_tree(tmp_path_factory) -> Path:
    from shrinker.upstream import load

    try:
        upstream = load()
    except ShrinkError as exc:
        pytest.skip(f"upstream cache absent: {exc}")
    manifest = paths.manifests_dir("deepseek", upstream.version) / "remove.txt"
    removed = {line.split("\t", 1)[0] for line in manifest.read_text().splitlines()
               if line and not line.startswith("#")}
    root = tmp_path_factory.mktemp("kept")
    for tree_path in ("python", "sgl-kernel"):
        source = Path(upstream.root) / tree_path
        if source.is_dir():
            shutil.copytree(source, root / tree_path, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in removed:
        if (root / rel).is_file():
            (root / rel).unlink()
    return root


@pytest.fixture(scope="module")
def graph(kept_tree: Path, tmp_path_factory):
    cache = FactsCache(tmp_path_factory.mktemp("cache") / "symbols.pickle")
    start = time.perf_counter()
    g = build_symbol_graph(kept_tree, load_symbol_rules("deepseek"), jobs=2, cache=cache)
    print(f"\nsymbol graph: {len(g.symbols)} symbols, {len(g.live)} live, {g.dead_lines()} dead lines, "
          f"{time.perf_counter() - start:.1f}s")
    return g


def test_known_shapes_stay(graph) -> None:
    live = graph.live
    # Engine's public API (rule); a @register_custom_op function stays while its name is read anywhere
    # (by name, or as torch.ops.sglang.<name>), and one that goes is named by no attribute or string.
    assert "sglang.srt.entrypoints.engine:Engine.generate" in live
    registered = [s for s, item in graph.symbols.items()
                  if any(d.endswith("register_custom_op") for d in item.sym.decorators)]
    assert registered and any(s in live for s in registered)
    assert all(graph.symbols[s].name not in graph.used for s in registered if graph.is_dead(s))
    # The model's entry point and its forward.
    assert "sglang.srt.models.deepseek_v2:EntryClass" in live
    assert "sglang.srt.models.deepseek_v2:DeepseekV2ForCausalLM.forward" in live
    # CustomOp dispatches forward_cuda / forward_native by name.
    assert any(s.endswith(".forward_cuda") for s in live)
    assert graph.dead_lines() > 0


def test_remove_dead_symbols_over_every_module_with_dead_symbols(graph, kept_tree: Path) -> None:
    _register()
    dead = graph.dead()
    removed = Removed()
    removed.dead_symbols = dead  # type: ignore[attr-defined]
    inputs = CodemodInputs(rules=load_rules("deepseek"), removed=removed)
    items = [FileItem(str(kept_tree / graph.modules[m].path), m) for m in dead]
    results = transform_files(items, inputs, ["remove_dead_symbols"], jobs=2)
    summary = summarize(results)
    print(f"remove_dead_symbols: {summary['success']} files changed, {summary['changes']}, {summary['seconds']}s")
    assert summary["failure"] == 0, summary["failures"][:10]
    assert [u for r in results for u in r.undefined] == []
    assert summary["findings"] == 0
