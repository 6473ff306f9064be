"""Constant parameters (graph/constant_parameters): folded inside their function by fold_platform, then dropped
from the signature and every call by remove_constant_parameters once nothing reads them."""

from __future__ import annotations

import textwrap

from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.pipeline import transform_source
from shrinker.graph.constant_parameters import ConstantParameter, ConstantParameters
from shrinker.rules.load import load_rules


def run(code: str, table: dict, codemods: list[str], module: str = "sglang.srt.x",
        homonyms: frozenset[str] = frozenset()) -> str:
    inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(origins={}, imported={}),
                           single_file_words=frozenset(),
                           constant_parameters=ConstantParameters(by_function=table, homonyms=homonyms))
    code = textwrap.dedent(code)
    result = transform_source(code, path="sglang/srt/x.py", module=module, inputs=inputs, codemods=codemods)
    assert result.status in ("success", "skip"), result.error
    again = transform_source(result.code, path="sglang/srt/x.py", module=module, inputs=inputs, codemods=codemods)
    assert again.code == result.code, "not idempotent"
    assert not result.findings, result.findings
    return result.code


def test_a_read_parameter_folds_inside_its_function_only() -> None:
    out = run('''
        def verify_uses_greedy(*, is_all_greedy: bool, is_cpu: bool, is_hip: bool, use_rejection: bool) -> bool:
            # HIP goes greedy without rejection sampling
            return is_all_greedy or is_cpu or (is_hip and not use_rejection)


        def other(is_hip):
            return is_hip
        ''', {"sglang.srt.x:verify_uses_greedy": (ConstantParameter("is_cpu", False, None, True),
                                                   ConstantParameter("is_hip", False, None, True))},
        ["fold_platform"])
    assert "    # HIP goes greedy without rejection sampling\n    return is_all_greedy or False\n" in out
    assert "def other(is_hip):\n    return is_hip\n" in out  # another function's parameter of that name


def test_an_unread_parameter_leaves_the_signature_and_every_call() -> None:
    out = run('''
        def weight_sizes(inter_dim, is_concat, is_aiter_moe):
            return inter_dim * 2 if is_concat else inter_dim


        def emit(m: int, *, on_gfx95: bool) -> bool:
            return m >= 2


        class Pool:
            def dedup(self, is_npu, is_cpu, topk):
                return topk


        def build(pool, m):
            pool.dedup(False, False, 1)  # the positions go
            emit(m, on_gfx95=False)
            return weight_sizes(
                4,
                is_aiter_moe=False,  # a keyword goes with its comment
                is_concat=True,
            ), weight_sizes(4, True, False)
        ''', {"sglang.srt.x:weight_sizes": (ConstantParameter("is_aiter_moe", False, 2, False),),
              "sglang.srt.x:emit": (ConstantParameter("on_gfx95", False, None, False),),
              "sglang.srt.x:Pool.dedup": (ConstantParameter("is_npu", False, 0, False),
                                          ConstantParameter("is_cpu", False, 1, False))},
        ["remove_constant_parameters"])
    assert out == textwrap.dedent('''
        def weight_sizes(inter_dim, is_concat):
            return inter_dim * 2 if is_concat else inter_dim


        def emit(m: int) -> bool:
            return m >= 2


        class Pool:
            def dedup(self, topk):
                return topk


        def build(pool, m):
            pool.dedup(1)  # the positions go
            emit(m)
            return weight_sizes(
                4,
                is_concat=True,
            ), weight_sizes(4, True)
        ''')


def test_a_call_in_another_module_loses_the_argument_the_definition_is_not_touched() -> None:
    code = '''
        from sglang.srt.x import weight_sizes


        def weight_sizes_user(is_aiter_moe):
            return weight_sizes(8, True, is_aiter_moe=False), is_aiter_moe
        '''
    out = run(code, {"sglang.srt.x:weight_sizes": (ConstantParameter("is_aiter_moe", False, 2, False),)},
              ["remove_constant_parameters"], module="sglang.srt.y")
    assert "weight_sizes(8, True), is_aiter_moe" in out and "def weight_sizes_user(is_aiter_moe):" in out


def test_a_homonym_s_calls_resolve_by_the_file_s_bindings() -> None:
    """0.5.23: the fused MoE kernels call layers/moe/utils' `get_moe_padding_size(False)`; update_config calls its
    own `get_moe_padding_size(weight_block_size)`, whose argument stays."""
    table = {"sglang.srt.layers.moe.utils:get_moe_padding_size": (ConstantParameter("is_aiter_moe", False, 0, False),)}
    importer = run('''
        from sglang.srt.layers.moe.utils import get_moe_padding_size

        padding_size = get_moe_padding_size(False)
        ''', table, ["remove_constant_parameters"], module="sglang.kernels.ops.moe.fused",
        homonyms=frozenset({"get_moe_padding_size"}))
    assert "padding_size = get_moe_padding_size()" in importer
    own = '''
        def get_moe_padding_size(weight_block_size):
            return 0


        size = get_moe_padding_size(False)
        '''
    out = run(own, table, ["remove_constant_parameters"], module="sglang.srt.configs.update_config",
              homonyms=frozenset({"get_moe_padding_size"}))
    assert "def get_moe_padding_size(weight_block_size):" in out and "get_moe_padding_size(False)" in out
