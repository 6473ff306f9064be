"""Classes the tree only tests against: `isinstance(x, C)` is False when nothing can build a C."""

from __future__ import annotations

import textwrap

import pytest

from shrinker.graph.tested_classes import classes_only_tested_in

POOL = """
    class KVCache:
        pass

    class MiniMaxSparseKVPool(KVCache):
        def __init__(self, size):
            self.size = size
"""

USERS = """
    from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, MiniMaxSparseKVPool

    _SIZEABLE_POOLS = (MHATokenToKVPool, MiniMaxSparseKVPool)

    def page_bytes(pool):
        if isinstance(pool, MiniMaxSparseKVPool):
            raise ValueError("MiniMaxSparseKVPool stores no V")  # prose names it: no lookup
        return isinstance(pool, (MHATokenToKVPool, MiniMaxSparseKVPool)) or isinstance(pool, _SIZEABLE_POOLS)

    def hisparse(kvcache: MHATokenToKVPool | MiniMaxSparseKVPool) -> None:
        local: MiniMaxSparseKVPool = kvcache
"""


def found(*texts: str) -> frozenset[str]:
    return classes_only_tested_in(textwrap.dedent(t) for t in texts)


def test_a_class_only_tests_and_annotations_read() -> None:
    # 0.5.23's MiniMaxSparseKVPool once the MiniMax models went; KVCache is a base, MHATokenToKVPool never tested
    # alone but built elsewhere
    assert found(POOL, USERS, "class MHATokenToKVPool:\n    pass\n", "pool = MHATokenToKVPool()\n") == {
        "MiniMaxSparseKVPool"}


@pytest.mark.parametrize("use", [
    "MiniMaxSparseKVPool(8)",                                   # built
    "class Sub(MiniMaxSparseKVPool):\n    pass",                # a subclass may be built
    "factory = MiniMaxSparseKVPool",                            # passed on as a value
    "n = MiniMaxSparseKVPool.page_size",                        # an attribute read (a classmethod call)
    "import sglang.srt.mem_cache.memory_pool as m\nm.MiniMaxSparseKVPool",
    'cls = getattr(memory_pool, "MiniMaxSparseKVPool")',        # a lookup by name
    'TARGET = "sglang.srt.mem_cache.memory_pool:MiniMaxSparseKVPool"',
    "for cls in _SIZEABLE_POOLS:\n    cls()",                   # the tuple is iterated: its classes are read
    "from x import MiniMaxSparseKVPool as Pool",                # another name we do not follow
    "def f(MiniMaxSparseKVPool):\n    return isinstance(1, MiniMaxSparseKVPool)",  # a parameter shadows it
    "class MiniMaxSparseKVPool:\n    pass",                     # two classes of one name
    "@app.post('/x')\ndef endpoint(req: MiniMaxSparseKVPool):\n    pass",  # a framework builds its parameter
    "class Req(BaseModel):\n    pool: MiniMaxSparseKVPool",    # a field a parser may build
])
def test_any_other_use_keeps_it(use: str) -> None:
    assert found(POOL, USERS, use) == frozenset()


@pytest.mark.parametrize("pool", [
    "class MiniMaxSparseKVPool(Protocol):\n    size: int",      # structural: any object with the members
    "class MiniMaxSparseKVPool(metaclass=Meta):\n    pass",     # a metaclass may answer isinstance
    "class MiniMaxSparseKVPool:\n    @classmethod\n    def __subclasshook__(cls, other):\n        return True",
    "@register_pool('minimax')\nclass MiniMaxSparseKVPool:\n    pass",  # a registry builds it by key
    "import dill\nclass MiniMaxSparseKVPool:\n    pass",        # its module unpickles: bytes may hold one
])
def test_a_class_isinstance_may_hold_for_without_a_constructor_call(pool: str) -> None:
    assert found(pool, USERS) == frozenset()


def test_a_class_nothing_tests_is_no_concern_of_the_fold() -> None:
    assert found(POOL, "def f(pool: MiniMaxSparseKVPool):\n    return pool\n") == frozenset()


def test_a_module_with_its_own_isinstance_tests_nothing() -> None:
    users = USERS + "\n    def isinstance(a, b):\n        return True\n"
    assert found(POOL, users) == frozenset()


NORM = """
    class GemmaRMSNorm(BaseFusedOp):
        def forward_with_allreduce_fusion(self, x):
            return x

        @classmethod
        def build(cls):
            return cls()

        @staticmethod
        def make():
            return 1

        def rebound(self):
            return 0

        rebound = classmethod(rebound)

        def twice(self):
            return 0

        if FLAG:
            def twice(self):
                return 1
"""

NORM_USERS = """
    from sglang.srt.layers.layernorm import GemmaRMSNorm, RMSNorm

    def fusion(norm):
        return isinstance(norm, (RMSNorm, GemmaRMSNorm)) and type(norm).forward_with_allreduce_fusion in (
            RMSNorm.forward_with_allreduce_fusion,
            GemmaRMSNorm.forward_with_allreduce_fusion,
        )
"""


def test_a_plain_method_compared_by_membership_builds_nothing() -> None:
    # 0.5.23's fusions/allreduce.py once the Gemma models went: `C.m` in `in`'s literal reads the function only
    assert found(NORM, NORM_USERS) == {"GemmaRMSNorm"}


@pytest.mark.parametrize("use", [
    "x = GemmaRMSNorm.build()",                                  # a classmethod builds one
    "ok = f in (GemmaRMSNorm.build,)",                           # a classmethod, even compared only
    "ok = f in (GemmaRMSNorm.make,)",                            # a staticmethod is no plain method
    "ok = f in (GemmaRMSNorm.rebound,)",                         # rebound in the class body
    "ok = f in (GemmaRMSNorm.twice,)",                           # defined again under an `if`
    "ok = f in (GemmaRMSNorm.inherited,)",                       # not defined in the body: a base's may build
    "fns = [GemmaRMSNorm.forward_with_allreduce_fusion]",        # stored: passed on as a value
    "ok = f == GemmaRMSNorm.forward_with_allreduce_fusion",      # not a membership literal
])
def test_other_method_reads_keep_it(use: str) -> None:
    assert found(NORM, NORM_USERS, use) == frozenset()
