"""prune_record_tables: rows of a kernel inventory's table whose record no CUDA deployment can use."""

from __future__ import annotations

from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.record_tables import PruneRecordTables
from shrinker.rules.load import load_rules
from tests.codemods.helpers import PlatformCodemodTest

_OPS = "sglang.kernels.ops.attention"


def _inputs() -> CodemodInputs:
    removed = Removed(modules=frozenset({f"{_OPS}.rocm_mla_decode_rope", f"{_OPS}.aiter_unified_page_table",
                                         f"{_OPS}.attn_res_hip"}),
                      registry_keys={"kernel_ops": frozenset({"attention.qwen4_gate"})})
    return CodemodInputs(rules=load_rules("deepseek"), removed=removed)


class TestPruneRecordTables(PlatformCodemodTest):
    TRANSFORM = PruneRecordTables

    def test_rows_naming_a_removed_module_leave_a_named_table(self) -> None:
        # 0.5.23 kernels/ops/attention/__init__.py
        self.assertCodemod(
            """
            # (module, public_fn) migrated from layers/attention/triton_ops.
            _TRITON_KERNELS = [
                ("decode_attention", "decode_attention_fwd"),
                ("rocm_mla_decode_rope", "decode_attention_fwd_grouped_rope"),
                ("verify_splitkv", "verify_splitkv_fwd"),  # split-KV verify
                # ROCm page tables
                ("aiter_unified_page_table", "scatter_ragged_to_page_table_kernel"),
                ("aiter_unified_page_table", "scatter_req_to_token_to_page_table_kernel"),
                ("mla_qk_prep", "concat_and_cast_mha_k_triton"),
            ]
            for _mod, _fn in _TRITON_KERNELS:
                register_kernel(
                    KernelSpec(
                        op=f"attention.{_fn}",
                        backend=KernelBackend.TRITON,
                        target=f"sglang.kernels.ops.attention.{_mod}:{_fn}",
                    )
                )
            del _mod, _fn
            """,
            """
            # (module, public_fn) migrated from layers/attention/triton_ops.
            _TRITON_KERNELS = [
                ("decode_attention", "decode_attention_fwd"),
                ("verify_splitkv", "verify_splitkv_fwd"),  # split-KV verify
                ("mla_qk_prep", "concat_and_cast_mha_k_triton"),
            ]
            for _mod, _fn in _TRITON_KERNELS:
                register_kernel(
                    KernelSpec(
                        op=f"attention.{_fn}",
                        backend=KernelBackend.TRITON,
                        target=f"sglang.kernels.ops.attention.{_mod}:{_fn}",
                    )
                )
            del _mod, _fn
            """,
            inputs=_inputs(),
        )

    def test_rows_served_only_by_other_devices_leave_a_literal_table(self) -> None:
        code = self.make_fixture_data(
            """
            for _mod, _fn, _backend, _device in [
                ("attn_res", "attn_res_fused_tma", KernelBackend.JIT, CapabilityRequirement.CUDA),
                ("attn_res_hip", "attn_res_hip", KernelBackend.TRITON, CapabilityRequirement.HIP),
                (
                    "kda_flydsl.kimi_k3_kda_decode",
                    "flydsl_kimi_k3_kda_decode_with_f_b",
                    KernelBackend.FLYDSL,
                    CapabilityRequirement.HIP,
                ),
            ]:
                register_kernel(
                    KernelSpec(
                        op=f"attention.{_fn}",
                        backend=_backend,
                        target=f"sglang.kernels.ops.attention.{_mod}:{_fn}",
                        capabilities=frozenset({_device}),
                    )
                )
            del _mod, _fn, _backend, _device
            """)
        instance = self.assertCodemod(
            code,
            """
            for _mod, _fn, _backend, _device in [
                ("attn_res", "attn_res_fused_tma", KernelBackend.JIT, CapabilityRequirement.CUDA),
            ]:
                register_kernel(
                    KernelSpec(
                        op=f"attention.{_fn}",
                        backend=_backend,
                        target=f"sglang.kernels.ops.attention.{_mod}:{_fn}",
                        capabilities=frozenset({_device}),
                    )
                )
            del _mod, _fn, _backend, _device
            """,
            inputs=_inputs(),
        )
        self.assertEqual(instance.changes["table_rows_removed"], 2)

    def test_a_loop_whose_rows_all_go_goes_with_its_del_and_its_comment_heads_the_next_statement(self) -> None:
        self.assertCodemod(
            """
            # The context-parallel indexer serves only the gfx950 ROCm top-k contract.
            for _fn in ("score_local_blocks", "merge_candidates"):
                register_kernel(
                    KernelSpec(
                        op=f"attention.{_fn}",
                        backend=KernelBackend.TRITON,
                        target=f"sglang.kernels.ops.attention.indexer_cp:{_fn}",
                        capabilities=frozenset({CapabilityRequirement.HIP}),
                    )
                )
            del _fn
            register_kernel(KernelSpec(op="attention.merge_state", target="m.merge_state:merge_state"))
            """,
            """
            # The context-parallel indexer serves only the gfx950 ROCm top-k contract.
            register_kernel(KernelSpec(op="attention.merge_state", target="m.merge_state:merge_state"))
            """,
            inputs=_inputs(),
        )

    def test_a_record_through_a_module_constant_goes_and_the_constant_is_left_to_unused_names(self) -> None:
        # 0.5.23 kernels/ops/moe/__init__.py: `capabilities=_HIP`
        self.assertCodemod(
            """
            _HIP = frozenset({CapabilityRequirement.HIP})

            register_kernel(
                KernelSpec(op="moe.topk_softmax", backend=KernelBackend.AOT, target="sgl_kernel:topk_softmax",
                           capabilities=_HIP)
            )
            register_kernel(
                KernelSpec(op="moe.topk_softmax", backend=KernelBackend.JIT,
                           target="sglang.kernels.ops.moe.moe_topk_softmax:topk_softmax", capabilities=CUDA_ONLY)
            )
            """,
            """
            _HIP = frozenset({CapabilityRequirement.HIP})
            register_kernel(
                KernelSpec(op="moe.topk_softmax", backend=KernelBackend.JIT,
                           target="sglang.kernels.ops.moe.moe_topk_softmax:topk_softmax", capabilities=CUDA_ONLY)
            )
            """,
            inputs=_inputs(),
        )

    def test_a_key_a_str_method_computes_from_the_row_decides_like_a_literal(self) -> None:
        # 0.5.23 kernels/ops/moe/__init__.py: `op=f"moe.{_fn.lstrip('_')}"`; the row's value put in, str's own
        # method runs nothing (a call of anything else on it would keep the row, as in test_what_stays)
        self.assertCodemod(
            """
            _PHASE25_TRITON_KERNELS = [
                ("decode_attention", "_decode"),
                ("rocm_mla_decode_rope", "_fused_experts_mxfp8"),
            ]
            for _mod, _fn in _PHASE25_TRITON_KERNELS:
                register_kernel(KernelSpec(op=f"attention.{_fn.lstrip('_')}", target=f"sglang.kernels.ops.attention.{_mod}:{_fn}"))
            """,
            """
            _PHASE25_TRITON_KERNELS = [
                ("decode_attention", "_decode"),
            ]
            for _mod, _fn in _PHASE25_TRITON_KERNELS:
                register_kernel(KernelSpec(op=f"attention.{_fn.lstrip('_')}", target=f"sglang.kernels.ops.attention.{_mod}:{_fn}"))
            """,
            inputs=_inputs(),
        )

    def test_what_stays(self) -> None:
        # a row whose value runs code, a table read elsewhere, a table bound twice, a body doing more than
        # registering, a key computed by a method call with a kept module, an f-string with a format spec
        code = """
            _SHARED = [("rocm_mla_decode_rope", "f")]
            for _mod, _fn in _SHARED:
                register_kernel(KernelSpec(op=f"attention.{_fn}", target=f"sglang.kernels.ops.attention.{_mod}:{_fn}"))
            print(_SHARED)
            _TWICE = [("rocm_mla_decode_rope", "f")]
            _TWICE = [("rocm_mla_decode_rope", "g")]
            for _mod, _fn in _TWICE:
                register_kernel(KernelSpec(op=f"attention.{_fn}", target=f"sglang.kernels.ops.attention.{_mod}:{_fn}"))
            for _mod, _fn in [("rocm_mla_decode_rope", pick())]:
                register_kernel(KernelSpec(op=f"attention.{_fn}", target=f"sglang.kernels.ops.attention.{_mod}:{_fn}"))
            for _mod in ["rocm_mla_decode_rope"]:
                register_kernel(KernelSpec(op="attention.x", target=f"sglang.kernels.ops.attention.{_mod}:f"))
                _seen.add(_mod)
            for _mod, _fn in [("decode_attention", "_decode")]:
                register_kernel(KernelSpec(op=f"attention.{_fn.lstrip('_')}", target=f"sglang.kernels.ops.attention.{_mod}:{_fn}"))
            for _mod in ["rocm_mla_decode_rope"]:
                register_kernel(KernelSpec(op="attention.x", target=f"sglang.kernels.ops.attention.{_mod!s}:f"))
            """
        self.assertCodemod(code, code, inputs=_inputs())

    def test_a_row_of_a_removed_key_goes_through_a_computed_key(self) -> None:
        self.assertCodemod(
            """
            for _fn in ("qwen4_gate", "row_sum"):
                register_kernel(KernelSpec(op=f"attention.{_fn}", target=f"sglang.kernels.ops.attention.rows:{_fn}"))
            """,
            """
            for _fn in ("row_sum",):
                register_kernel(KernelSpec(op=f"attention.{_fn}", target=f"sglang.kernels.ops.attention.rows:{_fn}"))
            """,
            inputs=_inputs(),
        )
