"""Roots that follow a move (plan/roots.py): a shim's single import, or the same file elsewhere."""

from __future__ import annotations

from pathlib import Path

from shrinker.graph.build import build_graph
from shrinker.plan.roots import root_moves


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"python/pkg/__init__.py": "", "python/pkg/bench/__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


ONE_BATCH = "def cli_main():\n    return 1\n"
SHIM = ('"""Deprecated path."""\nimport warnings\n\nfrom pkg.bench.one_batch import *  # noqa\n'
        'from pkg.bench.one_batch import cli_main\n\nif __name__ == "__main__":\n    cli_main()\n')


def test_a_gone_shim_root_follows_what_it_imported_and_a_moved_file_follows_its_bytes(tmp_path):
    before = build_graph(_tree(tmp_path / "a", {
        "python/pkg/bench_one_batch.py": SHIM, "python/pkg/bench/one_batch.py": ONE_BATCH,
        "python/pkg/serve.py": "PORT = 30000\n", "python/pkg/lost.py": "import pkg.bench\nimport pkg.serve\n"}), jobs=1)
    after = build_graph(_tree(tmp_path / "b", {
        "python/pkg/bench/one_batch.py": ONE_BATCH, "python/pkg/bench/serve.py": "PORT = 30000\n"}), jobs=1)
    roots = ["pkg.bench_one_batch", "pkg.serve", "pkg.lost", "pkg.bench.one_batch", "pkg.never"]
    moves = root_moves(before, after, roots)
    assert {r: m.successor for r, m in moves.items()} == {"pkg.bench_one_batch": "pkg.bench.one_batch",
                                                          "pkg.serve": "pkg.bench.serve"}
    assert moves["pkg.bench_one_batch"].note("1.0") == (
        "root pkg.bench_one_batch is gone; followed to pkg.bench.one_batch (its shim imported "
        "pkg.bench.one_batch in 1.0)")
    assert moves["pkg.serve"].evidence == "the same file moved"
