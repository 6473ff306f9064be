"""remove_platform_bound: functions that always raise NameError on CUDA once platform-only bindings
are folded away (SGLang v0.5.16 shapes: dsa_backend's `_forward_aiter`, communicator's aiter helpers)."""

from __future__ import annotations

import textwrap
from dataclasses import replace

from shrinker.codemods.inputs import Removed
from shrinker.codemods.pipeline import transform_source
from tests.codemods.helpers import deepseek_inputs

MODULE = "sglang.srt.layers.attention.dsa_backend"


_NONE_IMPORTED: dict = {}


def run(source: str, *, shared=frozenset(), imported=_NONE_IMPORTED):
    inputs = replace(deepseek_inputs(), shared_methods=shared, removed=Removed(imported=imported))
    return transform_source(textwrap.dedent(source), path="sglang/srt/x.py", module=MODULE, inputs=inputs,
                            codemods=["fold_platform"])


DSA = """
from sglang.srt.utils import is_hip

_is_hip = is_hip()
if _is_hip:
    from aiter.mla import mla_decode_fwd


class DSABackend(AttentionBackend):
    def forward_decode(self, q):
        if self.dsa_decode_impl == "flashmla":
            return self._forward_flashmla(q)
        return self._forward_aiter(q)

    def _forward_flashmla(self, q):
        return q

    def _forward_aiter(self, q):
        out = q.new_empty(q.shape)
        mla_decode_fwd(q, out)  # always raises on CUDA: nothing binds mla_decode_fwd there
        return out
"""


def test_method_that_always_raises_goes() -> None:
    result = run(DSA)
    assert result.status == "success", result.error
    assert "def _forward_aiter" not in result.code
    assert "def _forward_flashmla" in result.code and "self._forward_aiter(q)" in result.code
    assert "mla_decode_fwd" not in result.code
    assert result.undefined == []
    assert result.changes["remove_platform_bound.functions_removed"] == 1
    again = transform_source(result.code, path="sglang/srt/x.py", module=MODULE,
                             inputs=replace(deepseek_inputs(), shared_methods=frozenset(),
                                            removed=Removed(imported={})), codemods=["fold_platform"])
    assert again.status == "skip" and again.code == result.code


def test_method_another_class_defines_stays() -> None:
    result = run(DSA, shared=frozenset({"_forward_aiter"}))
    assert "def _forward_aiter" in result.code
    assert any("mla_decode_fwd" in u for u in result.undefined)


def test_unknown_shared_methods_removes_no_method() -> None:
    result = run(DSA, shared=None)
    assert "def _forward_aiter" in result.code


def test_conditional_use_stays_and_is_reported() -> None:
    result = run("""
        from sglang.srt.utils import is_hip

        if is_hip():
            from aiter import rmsnorm_quant


        def fused_norm(x, impl):
            if impl == "fused":
                return rmsnorm_quant(x)
            return x
        """)
    assert "def fused_norm" in result.code
    assert any("rmsnorm_quant" in u for u in result.undefined)


def test_use_after_an_early_return_stays() -> None:
    result = run("""
        from sglang.srt.utils import is_hip

        if is_hip():
            from aiter import shuffle_weight


        def process(w, skip):
            if skip:
                return w
            return shuffle_weight(w)
        """)
    assert "def process" in result.code


def test_module_functions_go_to_a_fixpoint() -> None:
    result = run("""
        from sglang.srt.utils import is_npu

        if is_npu():
            import torch_npu


        def npu_rotary(x):
            return torch_npu.npu_rotary_mul(x)


        def rotary_npu_wrapper(x):
            y = x * 2
            return npu_rotary(y)


        def rotary(x):
            return x
        """)
    assert "def npu_rotary" not in result.code
    assert "def rotary_npu_wrapper" not in result.code
    assert "def rotary(x)" in result.code
    assert result.undefined == []


def test_module_function_other_modules_import_stays() -> None:
    source = """
        from sglang.srt.utils import is_npu

        if is_npu():
            import torch_npu


        def npu_rotary(x):
            return torch_npu.npu_rotary_mul(x)
        """
    assert "def npu_rotary" in run(source, imported={MODULE: frozenset({"npu_rotary"})}).code
    assert "def npu_rotary" in run(source, imported=None).code  # unknown importers: keep


def test_dunder_stays_and_an_emptied_class_gets_pass() -> None:
    result = run("""
        from sglang.srt.utils import is_hip

        if is_hip():
            from aiter import QuantType


        class HipQuant:
            def __init__(self):
                self.q = QuantType.per_Token

            def quant_type(self):
                return QuantType.per_Token
        """)
    assert "def __init__" in result.code and "def quant_type" not in result.code
    compile(result.code, "<after>", "exec")


def test_methods_of_a_class_without_bases_go_even_with_common_names() -> None:
    # hpu_communicator.py: `htorch` is bound only under `if is_hpu():`; all_reduce is a common name
    result = run("""
        from sglang.srt.utils import is_hpu

        if is_hpu():
            import habana_frameworks.torch as htorch


        class HpuCommunicator:
            def __init__(self, group):
                self.disabled = not is_hpu()

            def all_reduce(self, x):
                htorch.core.mark_step()
                return x
        """, shared=frozenset({"all_reduce"}))
    assert "def all_reduce" not in result.code and "def __init__" in result.code
    assert result.undefined == []


def test_function_local_platform_import_and_annotation() -> None:
    # parallel_state.py: QuickAllReduce imported inside __init__ under `if is_hip():`
    result = run("""
        from typing import Optional

        from sglang.srt.utils import is_hip


        class GroupCoordinator:
            def __init__(self, group):
                if is_hip():
                    from sglang.srt.distributed.quick_all_reduce import QuickAllReduce
                self.qr_comm: Optional[QuickAllReduce] = None
                self.group = group
        """)
    assert "self.qr_comm = None" in result.code
    assert "QuickAllReduce" not in result.code
    assert result.undefined == []
    assert result.changes["remove_platform_bound.annotations_dropped"] == 1


def test_function_importing_a_platform_package_first_goes() -> None:
    # jit_kernel/dsa/paged_mqa_logits.py shape: the aiter import is the function's first line
    result = run("""
        def aiter_paged_mqa_logits(q, kv):
            from aiter.ops.triton.pa_mqa_logits import deepgemm_fp8_paged_mqa_logits

            return deepgemm_fp8_paged_mqa_logits(q, kv)


        def paged_mqa_logits(q, kv):
            return q @ kv
        """)
    assert "aiter" not in result.code and "def paged_mqa_logits" in result.code


def test_platform_named_function_with_a_conditional_platform_use_goes() -> None:
    # fp8_utils.aiter_w8a8_block_fp8_linear: the aiter kernels are picked under `if use_triton:`
    result = run("""
        from sglang.srt.utils import is_hip

        if is_hip():
            from aiter.ops.triton.gemm_a8w8_blockscale import gemm_a8w8_blockscale as triton_gemm


        def aiter_w8a8_block_fp8_linear(x, w, use_triton=True):
            if use_triton:
                op = triton_gemm
            else:
                op = None
            return op(x, w)


        def cuda_w8a8_block_fp8_linear(x, w, use_triton=True):
            if use_triton:
                return x @ w
            return w
        """)
    assert "def aiter_w8a8_block_fp8_linear" not in result.code
    assert "def cuda_w8a8_block_fp8_linear" in result.code and result.undefined == []
