"""graph/constant_functions: which functions always return one bool or None, read from the source text alone."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from shrinker.graph.constant_functions import (ConstantReturn, called_methods, constant_functions,
                                               constant_returns, may_define_constant_functions)
from shrinker.rules.patterns import pure_ast_calls


def found(code: str) -> dict[str, ConstantReturn]:
    return constant_returns(ast.parse(textwrap.dedent(code)))


def test_literal_and_empty_membership_returns() -> None:
    assert found('''
        import functools

        def is_kimi_k3(config):
            """True for Kimi K3."""
            return _hf_arch(config) in ()

        def not_listed(config):
            return config.architectures[0] not in []

        @functools.lru_cache(maxsize=1)
        def is_unified_kv_triton() -> bool:
            # only on HIP
            return (
                False
            )

        def is_minimax_sparse(config):
            arch = (config.architectures or [None])[0]
            return False
        ''') == {"is_kimi_k3": ConstantReturn(False, False), "not_listed": ConstantReturn(True, True),
                 "is_unified_kv_triton": ConstantReturn(False, True), "is_minimax_sparse": ConstantReturn(False, True)}


def test_code_after_the_first_return_never_runs() -> None:
    # 0.5.23's aiter_has_fp4_rowgroup once its try-import folded away
    assert found('''
        def has_rowgroup() -> bool:
            return False
            return True
        ''') == {"has_rowgroup": ConstantReturn(False, True)}


def test_what_is_no_constant_function() -> None:
    assert found('''
        def early(x):
            if x:
                return True
            return False

        def gen():
            yield 1
            return False

        @register("x")
        def decorated():
            return False

        async def waits():
            return False

        def computed(x):
            return x in (1,)

        def falls_off(x):
            print(x)

        def twice():
            return False

        twice = wrap(twice)

        def effect():
            log("x")
            return False
        ''') == {"effect": ConstantReturn(False, False)}


def test_a_return_of_a_nested_function_is_its_own() -> None:
    assert found('''
        def outer():
            def inner():
                return 1
            return False
        ''') == {"outer": ConstantReturn(False, False)}


def test_methods_are_keyed_by_class() -> None:
    assert found('''
        class Indexer:
            def _aiter_fused_fp8_active(self, forward_batch) -> bool:
                return False

            def forward(self, x):
                return x

            @property
            def flag(self):
                return False
        ''') == {"Indexer._aiter_fused_fp8_active": ConstantReturn(False, True)}


def test_the_text_filter_and_the_tree_table(tmp_path: Path) -> None:
    assert may_define_constant_functions("def f():\n    return False\n")
    assert may_define_constant_functions("def f(c):\n    return c in ()\n")
    assert not may_define_constant_functions("def f(c):\n    return c\n")
    package = tmp_path / "python" / "sglang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def on():\n    return True\n")
    (package / "b.py").write_text("def on(x):\n    return x\n")
    assert constant_functions(tmp_path) == {"sglang.a": {"on": ConstantReturn(True, True)}}


def test_called_methods_need_one_def_and_calls_only(tmp_path: Path) -> None:
    package = tmp_path / "python" / "sglang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "indexer.py").write_text(textwrap.dedent('''
        class Indexer:
            def _aiter_active(self, batch):
                return False

            def _aiter_twice(self):
                return False

            def _aiter_named(self):
                return False

            def _aiter_read(self):
                return False

            def _hip_on(self):
                return True
        '''))
    (package / "graph.py").write_text(textwrap.dedent('''
        class Other:
            def _aiter_twice(self):  # a second def: an override, or another class
                return True

        def run(indexer, batch):
            f = indexer._aiter_read  # read, not called
            g = getattr(indexer, "_aiter_named")  # named by a string
            return indexer._aiter_active(batch) or indexer._hip_on()
        '''))
    table = constant_functions(tmp_path)
    accepts = lambda name: "aiter" in name
    assert called_methods(tmp_path, table, accepts) == {"_aiter_active": ConstantReturn(False, True)}
    (package / "graph.py").write_text("def run(indexer):\n    indexer._aiter_active = None\n")  # a store
    assert "_aiter_active" not in called_methods(tmp_path, constant_functions(tmp_path), accepts)


def test_functions_that_always_return_none() -> None:
    # 0.5.23 disagg_service / deepseek_v4_fused_mhc / add_norm once their other-platform bodies went
    pure = pure_ast_calls(["numel()", "element_size()"])
    assert constant_returns(ast.parse(textwrap.dedent('''
        def maybe_create_ascend_config_store(transfer_backend) -> None:
            """Also called directly by the rust-server scheduler."""
            return

        def try_aiter_fused_mhc_post_pre(x):
            global _DISABLED, _WARNED

            return None

        def aiter_ar_fusion_applies(input_tensor, forward_batch):
            n = input_tensor.shape[-1]
            total_bytes = input_tensor.numel() * input_tensor.element_size()
            return (
                False
            )

        def sized(t):
            size = t.numel(1)
            return None

        def returns_a_value():
            return 0

        def init_zbal_on_npu(self):
            """NPU only."""
            pass

        def logs(x):
            log(x)
        ''')), pure) == {
        "maybe_create_ascend_config_store": ConstantReturn(False, True, none=True),
        "try_aiter_fused_mhc_post_pre": ConstantReturn(False, True, none=True),
        "aiter_ar_fusion_applies": ConstantReturn(False, True),
        "sized": ConstantReturn(False, False, none=True),  # `numel()` with an argument is no rule's pure call
        "init_zbal_on_npu": ConstantReturn(False, True, none=True),  # falls off a body that does nothing
    }
    assert may_define_constant_functions("def f():\n    return\n")
    assert may_define_constant_functions("def f():\n    return None\n")
    assert not may_define_constant_functions("def f():\n    return None or x\n")
    assert may_define_constant_functions("def f():\n    pass\n")
