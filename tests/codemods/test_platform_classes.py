"""remove_platform_classes: classes rules.platform.classes names, in SGLang v0.5.16 shapes."""

from __future__ import annotations

from shrinker.codemods.platform_classes import RemovePlatformClasses, class_names, platform_classes_defined
from tests.codemods.helpers import PlatformCodemodTest, deepseek_inputs


class TestPlatformClasses(PlatformCodemodTest):
    TRANSFORM = RemovePlatformClasses

    def test_ascend_scheme_goes_cuda_scheme_stays(self) -> None:
        self.assertCodemod(
            """
            from .awq_scheme import AWQMoESchemeBase

            __all__ = ["AWQMoEScheme", "AWQAscendMoEScheme"]


            class AWQMoEScheme(AWQMoESchemeBase):
                def _init_kernel(self, quant_config):
                    return AWQMarlinMoEKernel(quant_config)


            class AWQAscendMoEScheme(AWQMoEScheme):
                def _init_kernel(self, quant_config):
                    from sglang.srt.hardware_backend.npu.quantization.awq_kernels import (
                        AWQAscendMoEKernel,
                    )

                    return AWQAscendMoEKernel(quant_config)
            """,
            """
            from .awq_scheme import AWQMoESchemeBase

            __all__ = ["AWQMoEScheme"]


            class AWQMoEScheme(AWQMoESchemeBase):
                def _init_kernel(self, quant_config):
                    return AWQMarlinMoEKernel(quant_config)
            """,
        )

    def test_table_entry_naming_a_platform_class_goes(self) -> None:
        self.assertCodemod(
            """
            CPU_QUANTIZATION_METHODS = {
                "fp8": Fp8Config,
                "awq": AWQCPUConfig,  # Intel AMX
                "gptq": CPUGPTQConfig,
            }
            """,
            """
            CPU_QUANTIZATION_METHODS = {
                "fp8": Fp8Config,
            }
            """,
        )

    def test_similar_names_and_nested_classes_stay(self) -> None:
        self.assertUnchanged(
            """
            class AWQMoEScheme:
                class AWQAscendMoEScheme:  # nested: not a module-level definition
                    pass


            def make():
                return AWQMoEScheme()
            """
        )


def test_text_scan_finds_module_level_platform_classes() -> None:
    source = "class GPTQAscendConfig:\n    pass\nclass PyNcclCommunicator:\n    pass\n    class AWQCPUConfig: ...\n"
    assert platform_classes_defined(source, class_names(deepseek_inputs())) == {"GPTQAscendConfig"}
