"""prune_records: inventory records (`register_kernel(KernelSpec(op=...))`) of the keys the plan removes."""

from __future__ import annotations

from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.records import PruneRecords
from shrinker.rules.load import load_rules
from tests.codemods.helpers import PlatformCodemodTest


def _inputs() -> CodemodInputs:
    keys = {"kernel_ops": frozenset({"elementwise.fused_qwen4_gate_value", "elementwise.fused_qwen4_gate_reduce"})}
    return CodemodInputs(rules=load_rules("deepseek"), removed=Removed(registry_keys=keys))


class TestPruneRecords(PlatformCodemodTest):
    TRANSFORM = PruneRecords

    def test_records_of_removed_keys_go_and_their_heading_comment_stays(self) -> None:
        # 0.5.23 kernels/ops/elementwise/__init__.py
        self.assertCodemod(
            """
            from sglang.kernels.registry import register_kernel
            from sglang.kernels.spec import CUDA_ONLY, KernelBackend, KernelSpec

            # Public entry points inventoried by logical operator group (RFC #29630).
            register_kernel(
                KernelSpec(
                    op="elementwise.fused_qwen4_gate_value",
                    backend=KernelBackend.TRITON,
                    target="sglang.kernels.ops.elementwise.qwen4_gate:fused_qwen4_gate_value",
                    capabilities=CUDA_ONLY,
                )
            )
            register_kernel(KernelSpec(op="elementwise.fused_qwen4_gate_reduce", target="m:f"))
            register_kernel(
                KernelSpec(
                    op="elementwise.row_sum",  # asked for: stays
                    backend=KernelBackend.JIT,
                    target="sglang.kernels.ops.elementwise.row_sum:row_sum",
                )
            )
            for _fn in ("hc_combine_gate",):  # a computed key: stays
                register_kernel(KernelSpec(op=f"elementwise.{_fn}", target=f"m:{_fn}"))
            register_kernel(KernelSpec(op="elementwise.fused_qwen4_gate_value", target=pick()))  # runs code: stays
            """,
            """
            from sglang.kernels.registry import register_kernel
            from sglang.kernels.spec import CUDA_ONLY, KernelBackend, KernelSpec

            # Public entry points inventoried by logical operator group (RFC #29630).
            register_kernel(
                KernelSpec(
                    op="elementwise.row_sum",  # asked for: stays
                    backend=KernelBackend.JIT,
                    target="sglang.kernels.ops.elementwise.row_sum:row_sum",
                )
            )
            for _fn in ("hc_combine_gate",):  # a computed key: stays
                register_kernel(KernelSpec(op=f"elementwise.{_fn}", target=f"m:{_fn}"))
            register_kernel(KernelSpec(op="elementwise.fused_qwen4_gate_value", target=pick()))  # runs code: stays
            """,
            inputs=_inputs(),
        )

    def test_a_loop_of_records_of_removed_keys_goes_with_the_del_of_its_variable(self) -> None:
        # 0.5.23 kernels/ops/moe/__init__.py: a fused op inventoried per backend through its class methods
        self.assertCodemod(
            """
            # Muse Spark routing, built per layer: inventoried through its class methods.
            for _bk in ("torch", "jit", "triton"):
                register_kernel(
                    KernelSpec(
                        op="elementwise.fused_qwen4_gate_value",
                        backend=KernelBackend(_bk),
                        target="sglang.kernels.ops.moe.muse_spark_routing:FusedMuseSparkRouting."
                        + ("forward_native" if _bk == "torch" else f"forward_{_bk}"),
                        capabilities=frozenset() if _bk == "torch" else CUDA_ONLY,
                    )
                )
            del _bk
            register_kernel(KernelSpec(op="moe.kept", target="m:f"))
            for _bk in ("torch",):  # a record that stays: the loop and its del stay
                register_kernel(KernelSpec(op="moe.kept", backend=KernelBackend(_bk), target="m:g"))
            del _bk
            for _bk in ("torch",):  # the loop goes, its del is not next to it: the variable is read later
                register_kernel(KernelSpec(op="elementwise.fused_qwen4_gate_reduce", target="m:h"))
            print(_bk)
            """,
            """
            # Muse Spark routing, built per layer: inventoried through its class methods.
            register_kernel(KernelSpec(op="moe.kept", target="m:f"))
            for _bk in ("torch",):  # a record that stays: the loop and its del stay
                register_kernel(KernelSpec(op="moe.kept", backend=KernelBackend(_bk), target="m:g"))
            del _bk
            for _bk in ("torch",):  # the loop goes, its del is not next to it: the variable is read later
                register_kernel(KernelSpec(op="elementwise.fused_qwen4_gate_reduce", target="m:h"))
            print(_bk)
            """,
            inputs=_inputs(),
        )

    def test_nothing_removed_leaves_the_file_alone(self) -> None:
        self.assertCodemod(
            """
            register_kernel(KernelSpec(op="elementwise.row_sum", target="m:f"))
            """,
            """
            register_kernel(KernelSpec(op="elementwise.row_sum", target="m:f"))
            """,
            inputs=_inputs(),
        )
