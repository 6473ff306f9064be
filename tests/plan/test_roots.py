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


def _rules(**sections):
    """Rules for the fixture package `pkg`, rooted at pkg.server."""
    from shrinker.rules.schema import Rules

    return Rules.model_validate({
        "profile": {"name": "t", "description": "t", "package": "pkg"},
        "roots": [{"module": "pkg.server", "reason": "root"}],
        "architectures": {"keep": [], "reason": "t"},
        "platform": {"predicates": [], "strings": {"strings": ["npu"], "reason": "t"}, "methods": [], "packages": []},
        "requirements": {"target": {"sys_platform": "linux", "platform_machine": "x86_64", "python_version": "3.12"}},
        **sections,
    })


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


def test_kept_plumbing_keeps_its_module_level_siblings_under_the_same_removal_rule(tmp_path):
    """0.5.17: the pinned multimodal base_processor imports a new sibling (processors.executor) at
    module level; the removal rule of its folder no longer cuts that sibling. A lazy import, or one
    of a module another rule cuts, is still cut."""
    from shrinker.plan.reach import compute_reach

    tree = _tree(tmp_path, {
        "python/pkg/server.py": "import pkg.mm.base\n",
        "python/pkg/mm/__init__.py": "",
        "python/pkg/mm/base.py": "from pkg.mm.executor import Executor\nimport pkg.npu.ops\n\n\n"
                                 "def later():\n    from pkg.mm.lazy import x\n",
        "python/pkg/mm/executor.py": "class Executor:\n    pass\n",
        "python/pkg/mm/lazy.py": "x = 1\n",
        "python/pkg/mm/image.py": "import pkg.mm.base\n",
        "python/pkg/npu/__init__.py": "",
        "python/pkg/npu/ops.py": "",
    })
    rules = _rules(remove=[{"pattern": "pkg.mm.**", "reason": "text only", "category": "multimodal"},
                           {"pattern": "pkg.npu.**", "reason": "npu", "category": "platform"}],
                   keep=[{"pattern": "pkg.mm.base", "reason": "plumbing the server uses"}])
    reach = compute_reach(build_graph(tree, jobs=1), rules)
    assert "pkg.mm.executor" in reach.kept and "pkg.mm.base" in reach.kept
    assert {"pkg.mm.lazy", "pkg.mm.image", "pkg.npu.ops"} <= set(reach.cut_by_rule)


def test_a_keep_rule_since_a_later_release_is_left_out_of_older_ones():
    from shrinker.plan.reach import active_rules
    from shrinker.rules.load import load_rules

    rules = load_rules("deepseek")
    assert any(r.since == "0.5.17" for r in rules.keep)
    assert not any(r.since for r in active_rules(rules, "0.5.16").keep)
    assert [r.since for r in active_rules(rules, "0.5.17").keep if r.since] == ["0.5.17"] * sum(
        r.since == "0.5.17" for r in rules.keep)  # 0.5.18's cuda_ipc rule is not active yet
    newest = max((r.since for r in rules.keep if r.since), key=lambda v: tuple(map(int, v.split("."))))
    assert active_rules(rules, newest).keep == rules.keep == active_rules(rules, "").keep


def test_a_module_below_a_package_a_rule_cuts_is_cut_with_it(tmp_path):
    """The rule names the package (`*ascend*` matches disaggregation.ascend, not .ascend.conn); apply
    removes the package's whole subtree, so the plan may not keep a child that kept code imports."""
    from shrinker.plan.reach import compute_reach

    tree = _tree(tmp_path, {
        "python/pkg/server.py": "def later():\n    from pkg.pd.ascend.conn import State\n",
        "python/pkg/pd/__init__.py": "",
        "python/pkg/pd/ascend/__init__.py": "",
        "python/pkg/pd/ascend/conn.py": "State = 1\n",
    })
    rules = _rules(remove=[{"pattern": "pkg.**.*ascend*", "reason": "Ascend NPU code", "category": "platform"}])
    reach = compute_reach(build_graph(tree, jobs=1), rules)
    assert "pkg.pd.ascend.conn" not in reach.kept
    assert reach.cut_by_rule["pkg.pd.ascend.conn"][1].startswith("inside pkg.pd.ascend, which rule remove[0]")
    assert ("pkg.server", "pkg.pd.ascend.conn") in {(a, b) for a, b, _, _ in reach.cuts}
