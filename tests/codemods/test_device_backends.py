"""remove_other_device_backends (shrinker/codemods/device_backends.py): a fused op's backend method whose
capabilities name only other platforms' devices goes; everything that might still run it stays."""

from __future__ import annotations

from shrinker.codemods.device_backends import RemoveOtherDeviceBackends
from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.rules.load import load_rules
from tests.codemods.helpers import PlatformCodemodTest

# fused_op.BACKEND_METHODS, as shrinker.graph.sources.name_table reads it
METHODS = {"TORCH": "forward_native", "AOT": "forward_aot", "JIT": "forward_jit", "AITER": "forward_aiter"}


def inputs(words: frozenset[str] = frozenset({"QuickGELUOp", "SiluAndMulOp"})) -> CodemodInputs:
    return CodemodInputs(rules=load_rules("deepseek"), removed=Removed(), single_file_words=words,
                         backend_methods=METHODS)


# 0.5.17 kernels/ops/activation/__init__.py, cut down
BEFORE = """
    _CUDA = frozenset({CapabilityRequirement.CUDA})
    _HIP = frozenset({CapabilityRequirement.HIP})
    _CUDA_HIP = frozenset({CapabilityRequirement.CUDA, CapabilityRequirement.HIP})


    class SiluAndMulOp(BaseFusedOp):
        capabilities = {
            KernelBackend.AOT: _CUDA_HIP,
            KernelBackend.JIT: _CUDA,
        }

        def forward_native(self, x):
            return x

        def forward_aot(self, x):
            from sgl_kernel import silu_and_mul

            return silu_and_mul(x)


    class QuickGELUOp(BaseFusedOp):
        \"\"\"Only ROCm has a native kernel.\"\"\"

        capabilities = {KernelBackend.AOT: _HIP}

        # the torch reference
        def forward_native(self, x):
            return x * torch.sigmoid(1.702 * x)

        def forward_aot(self, x):
            from sgl_kernel import gelu_quick

            return gelu_quick(x)
"""


class TestRemoveOtherDeviceBackends(PlatformCodemodTest):
    TRANSFORM = RemoveOtherDeviceBackends

    def test_a_backend_only_other_devices_run_goes(self) -> None:
        # through the module constant `_HIP`; SiluAndMulOp's AOT also names CUDA and stays
        after = BEFORE[:BEFORE.index("        def forward_aot(self, x):\n            from sgl_kernel import gelu_quick")]
        self.assertCodemod(BEFORE, after.rstrip() + "\n", inputs=inputs())

    def test_an_inline_capability_set_counts_too(self) -> None:
        self.assertCodemod(
            """
            class Op(BaseFusedOp):
                capabilities = {KernelBackend.AITER: frozenset({CapabilityRequirement.HIP}),
                                KernelBackend.JIT: {CapabilityRequirement.cuda(min_sm=90)}}

                def forward_jit(self, x):
                    return x

                def forward_aiter(self, x):
                    return x
            """,
            """
            class Op(BaseFusedOp):
                capabilities = {KernelBackend.AITER: frozenset({CapabilityRequirement.HIP}),
                                KernelBackend.JIT: {CapabilityRequirement.cuda(min_sm=90)}}

                def forward_jit(self, x):
                    return x
            """,
            inputs=inputs(frozenset({"Op"})),
        )

    def test_a_class_named_elsewhere_keeps_its_methods(self) -> None:
        # a subclass in another file may override `capabilities`
        self.assertCodemod(BEFORE, BEFORE, inputs=inputs(frozenset({"SiluAndMulOp"})),
                           findings=["`QuickGELUOp` may be subclassed (named elsewhere): its backend methods "
                                     "forward_aot for HIP only are kept"])

    def test_a_base_class_of_this_file_keeps_its_methods(self) -> None:
        code = BEFORE + "\n\n    class FastGELU(QuickGELUOp):\n        capabilities = {}\n"
        self.assertCodemod(code, code, inputs=inputs(), findings=["`QuickGELUOp` may be subclassed"])

    def test_a_method_referenced_in_its_class_stays(self) -> None:
        code = BEFORE.replace("        capabilities = {KernelBackend.AOT: _HIP}\n",
                              "        capabilities = {KernelBackend.AOT: _HIP}\n        forward_rocm = forward_aot\n")
        self.assertCodemod(code, code, inputs=inputs(), findings=["`QuickGELUOp.forward_aot` is referenced"])

    def test_a_rebound_constant_or_unknown_devices_say_nothing(self) -> None:
        rebound = BEFORE.replace("    class SiluAndMulOp", "    _HIP = _HIP | _CUDA\n\n\n    class SiluAndMulOp")
        self.assertUnchanged(rebound, inputs=inputs())
        rebound_in_a_function = BEFORE + "\n\n    def use_cuda():\n        global _HIP\n        _HIP = _CUDA\n"
        self.assertUnchanged(rebound_in_a_function, inputs=inputs())
        self.assertUnchanged(BEFORE.replace("{KernelBackend.AOT: _HIP}", "{KernelBackend.AOT: CUDA_ONLY}"),
                             inputs=inputs())

    def test_nothing_without_the_backend_table(self) -> None:
        # a release before sglang.kernels (or a profile without [platform].backend_methods)
        none = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(), single_file_words=frozenset({"QuickGELUOp"}))
        self.assertFalse(RemoveOtherDeviceBackends.wants(self.make_fixture_data(BEFORE), none))
        self.assertTrue(RemoveOtherDeviceBackends.wants(self.make_fixture_data(BEFORE), inputs()))
