"""Names bound upstream only under another platform's guard: a pruned use of one is no regression."""

from __future__ import annotations

from shrinker.rules.load import load_rules
from shrinker.rules.predicates import PredicateTable
from shrinker.checks.platform_names import bindings_by_liveness, split_undefined
from shrinker.checks.static import Finding

SOURCE = '''
from sglang.srt.utils import is_hip, is_cuda

_is_hip = is_hip()
if _is_hip:
    from aiter.ops.shuffle import shuffle_weight
    from aiter import both
else:
    from sgl_kernel import both
if is_cuda():
    pass
else:
    from aiter import rocm_only_else
try:
    from aiter import tried
except ImportError:
    fallback = None
'''


def _table():
    rules = load_rules("deepseek")
    return rules, PredicateTable(rules.platform), frozenset(rules.platform.packages)


def test_dead_only_bindings() -> None:
    rules, table, packages = _table()
    live, dead_only = bindings_by_liveness(SOURCE, table, packages)
    assert {"shuffle_weight", "rocm_only_else", "tried"} <= dead_only
    assert "both" in live and "both" not in dead_only
    assert "fallback" in live


def test_split_keeps_real_regressions(tmp_path) -> None:
    rules, _, _ = _table()
    (tmp_path / "m.py").write_text(SOURCE)
    kept = Finding(("m.py", "undefined", "make_pool"), "m.py:3 undefined name 'make_pool'")
    platform = Finding(("m.py", "undefined", "shuffle_weight"), "m.py:9 undefined name 'shuffle_weight'")
    real, notes = split_undefined([kept, platform], tmp_path, rules)
    assert real == [kept]
    assert len(notes) == 1 and "shuffle_weight" in notes[0]
    assert split_undefined([platform], tmp_path, None) == ([platform], [])
