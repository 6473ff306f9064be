"""Rule names that follow a module move (plan/moves.py): 0.5.17 moved sglang.jit_kernel.* under
sglang.kernels.*, and the FA4 removal rules matched nothing any more."""

from __future__ import annotations

from shrinker.graph.build import build_graph
from shrinker.plan.moves import adopt_moves, find_moves, follow_roots, rewrite_rules
from tests.plan.test_roots import _rules, _tree

FLASH_FWD = "".join(f"def kernel_{i}(x):\n    return x + {i}\n\n\n" for i in range(20))


def _releases(tmp_path):
    before = build_graph(_tree(tmp_path / "a", {
        "python/pkg/server.py": "import pkg.jit.flash_attention\n",
        "python/pkg/jit/__init__.py": "",
        "python/pkg/jit/flash_attention.py": "def run(ver):\n    if ver == 4:\n        from pkg.jit.fa4 import go\n",
        "python/pkg/jit/fa4.py": "from pkg.jit.fa.cute import flash_fwd\n" + FLASH_FWD,
        "python/pkg/jit/fa/__init__.py": "",
        "python/pkg/jit/fa/cute/__init__.py": "",
        "python/pkg/jit/fa/cute/flash_fwd.py": "from pkg.jit.fa.cute import utils\n" + FLASH_FWD,
        "python/pkg/jit/fa/cute/utils.py": "X = 1\n",
        "python/pkg/jit/rewritten.py": "A = 1\n",
    }), jobs=1)
    after = build_graph(_tree(tmp_path / "b", {
        "python/pkg/server.py": "import pkg.ops.attention.flash_attention\n",
        "python/pkg/ops/__init__.py": "",
        "python/pkg/ops/attention/__init__.py": "",
        "python/pkg/ops/attention/flash_attention.py":
            "def run(ver):\n    if ver == 4:\n        from pkg.ops.attention.fa4 import go\n",
        "python/pkg/ops/attention/fa4.py": "from pkg.ops.attention.fa.cute import flash_fwd\n" + FLASH_FWD,
        "python/pkg/ops/attention/fa/__init__.py": "",
        "python/pkg/ops/attention/fa/cute/__init__.py": "",
        "python/pkg/ops/attention/fa/cute/flash_fwd.py": "from pkg.ops.attention.fa.cute import utils\n" + FLASH_FWD,
        "python/pkg/ops/attention/fa/cute/utils.py": "X = 1\n",
        "python/pkg/other/rewritten.py": "".join(f"B{i} = {i}\n" for i in range(30)),
    }), jobs=1)
    return before, after


def test_rule_names_follow_a_moved_module_and_package_and_nothing_else(tmp_path):
    before, after = _releases(tmp_path)
    rules = _rules(
        remove=[{"pattern": "pkg.jit.fa4", "reason": "fa4", "category": "feature"},
                {"pattern": "pkg.jit.fa.**", "reason": "fa4 kernels", "category": "feature"},
                {"pattern": "pkg.jit.rewritten", "reason": "a file whose text changed wholly", "category": "feature"},
                {"pattern": "pkg.gone.**", "reason": "never there", "category": "feature"}],
        features=[{"name": "fa4", "reason": "t", "values": [
            {"name": "ver", "never": [4], "modules": ["pkg.jit.flash_attention"], "reason": "t"}]}])
    moves = {m.old: m for m in find_moves(rules, before, after)}
    assert {k: m.new for k, m in moves.items()} == {"pkg.jit.fa": "pkg.ops.attention.fa",
                                                   "pkg.jit.fa4": "pkg.ops.attention.fa4",
                                                   "pkg.jit.flash_attention": "pkg.ops.attention.flash_attention"}
    assert moves["pkg.jit.fa"].evidence == "4 of its 4 modules moved there"
    assert moves["pkg.jit.fa4"].evidence == "the same module moved"
    followed = rewrite_rules(rules, {k: m.new for k, m in moves.items()})
    assert [r.pattern for r in followed.remove] == ["pkg.ops.attention.fa4", "pkg.ops.attention.fa.**",
                                                    "pkg.jit.rewritten", "pkg.gone.**"]
    assert followed.features[0].values[0].modules == ["pkg.ops.attention.flash_attention"]
    assert followed.roots == rules.roots  # roots follow their own rule (roots.py)
    assert rewrite_rules(followed, {k: m.new for k, m in moves.items()}) == followed  # idempotent


def test_a_plan_with_the_release_before_removes_what_the_moved_rule_names(tmp_path):
    from shrinker.plan.reach import compute_reach

    before, after = _releases(tmp_path)
    rules = _rules(roots=[{"module": "pkg.server", "reason": "root"}],
                   remove=[{"pattern": "pkg.jit.fa4", "reason": "fa4", "category": "feature"},
                           {"pattern": "pkg.jit.fa.**", "reason": "fa4 kernels", "category": "feature"}])
    plain = compute_reach(after, rules, strict=False)
    assert "pkg.ops.attention.fa.cute.flash_fwd" in plain.kept  # the rule matched nothing: kept, quietly
    moved = rewrite_rules(rules, {m.old: m.new for m in find_moves(rules, before, after)})
    reach = compute_reach(after, moved, strict=False)
    assert "pkg.ops.attention.fa.cute.flash_fwd" not in reach.kept and "pkg.ops.attention.fa4" not in reach.kept
    assert not reach.rule_warnings


def test_adopting_rewrites_quoted_names_only_and_roots_follow_their_successor():
    text = ('pattern = "pkg.jit.fa.**"\nmodules = ["pkg.jit.fa", "pkg.jit.fa_other", "pkg.jit.fa:f"]\n'
            'reason = "pkg.jit.fa moved"  # pkg.jit.fa\n')
    new, done = adopt_moves(text, {"pkg.jit.fa": "pkg.ops.fa"})
    assert new == ('pattern = "pkg.ops.fa.**"\nmodules = ["pkg.ops.fa", "pkg.jit.fa_other", "pkg.ops.fa:f"]\n'
                   'reason = "pkg.jit.fa moved"  # pkg.jit.fa\n')
    assert done == ["pkg.jit.fa -> pkg.ops.fa (3x)"]
    assert adopt_moves(new, {"pkg.jit.fa": "pkg.ops.fa"}) == (new, [])
    rules = _rules(roots=[{"module": "pkg.bench_one", "reason": "bench"}, {"module": "pkg.server", "reason": "r"}])
    assert [r.module for r in follow_roots(rules, {"pkg.bench_one": "pkg.bench.one"}).roots] == [
        "pkg.bench.one", "pkg.server"]


def test_a_resumed_walk_starts_from_the_rules_the_walk_from_the_pin_would_carry(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from shrinker.regen import walk

    before, after = _releases(tmp_path)
    trees = {"pypi:pkg==1": before.tree, "pypi:pkg==2": after.tree}
    monkeypatch.setattr(walk, "fetch", lambda spec, **_: SimpleNamespace(root=trees[spec]))
    monkeypatch.setattr(walk, "releases_between", lambda a, b: ["pypi:pkg==2"])
    rules = _rules(remove=[{"pattern": "pkg.jit.fa.**", "reason": "fa4 kernels", "category": "feature"}])
    carried, moves = walk.rules_at(rules, "pypi:pkg==1", "pypi:pkg==2", with_kernel=False, jobs=1)
    assert [r.pattern for r in carried.remove] == ["pkg.ops.attention.fa.**"]
    # what --adopt writes into the rules file for the releases before a resumed walk's start
    assert moves == [({}, {"pkg.jit.fa": "pkg.ops.attention.fa"})]
