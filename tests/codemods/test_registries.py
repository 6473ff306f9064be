"""prune_registries: decorator, dict, class-attribute, local, update(), comprehension registries."""

from __future__ import annotations

from libcst.codemod import CodemodTest

from shrinker.codemods.registries import PruneRegistries
from tests.codemods.helpers_registry import assert_idempotent, context, make_inputs, run

ATTN = "sglang.srt.layers.attention.attention_registry"
QUANT = "sglang.srt.layers.quantization"
TOOLS = "sglang.srt.function_call.function_call_parser"
REASON = "sglang.srt.parser.reasoning_parser"
CONFIGS = "sglang.srt.utils.hf_transformers.common"
DRAFT = "sglang.srt.speculative.draft_utils"
PARSERS = "sglang.srt.utils.hf_transformers.config"
HANDLERS = "sglang.srt.models.deepseek_common.attention_backend_handler"

REGISTRIES = [
    dict(name="attention_backends", kind="decorator", module=ATTN, decorator="register_attention_backend"),
    dict(name="quantization", kind="dict", module=QUANT, variable="BASE_QUANTIZATION_METHODS"),
    dict(name="tool_call_parsers", kind="dict", module=TOOLS, variable="FunctionCallParser.ToolCallParserEnum"),
    dict(name="reasoning_parsers", kind="dict", module=REASON, variable="ReasoningParser.DetectorMap"),
    dict(name="model_configs", kind="dict", module=CONFIGS, variable="_CONFIG_REGISTRY", keep_all_others=True),
    dict(name="draft_backends", kind="dict", module=DRAFT, variable="DraftBackendFactory.*.backend_map",
         follows="attention_backends"),
    dict(name="model_config_parsers", kind="decorator", module=PARSERS, decorator="register_model_config_parser"),
    dict(name="handlers", kind="decorator", module=HANDLERS, decorator="AttentionBackendRegistry.register",
         follows="attention_backends"),
]
INPUTS = make_inputs(
    ["sglang.srt.configs.kimi_vl", "sglang.srt.configs.afmoe"],
    keys={"attention_backends": ["aiter", "ascend", "wave"], "quantization": ["awq", "gguf", "mlx_q4", "mlx_q8"],
          "tool_call_parsers": ["glm", "qwen"], "reasoning_parsers": ["qwen3", "kimi"],
          "model_config_parsers": ["mistral"]},
    registries=REGISTRIES)


class TestPruneRegistries(CodemodTest):
    TRANSFORM = PruneRegistries

    def check(self, before: str, after: str, module: str, filename: str | None = None) -> None:
        self.assertCodemod(before, after, INPUTS, context_override=context(module, filename))

    def test_decorator_registry_drops_functions_of_removed_keys(self) -> None:
        self.check(
            """
            ATTENTION_BACKENDS = {}


            @register_attention_backend("flashinfer")
            def create_flashinfer_backend(runner):
                return FlashInferAttnBackend(runner)


            # AMD
            @register_attention_backend("aiter")
            def create_aiter_backend(runner):
                from sglang.srt.layers.attention.aiter_backend import AiterAttnBackend

                return AiterAttnBackend(runner)


            @register_attention_backend("wave")
            @register_attention_backend("triton")
            def create_triton_backend(runner):
                return TritonAttnBackend(runner)
            """,
            """
            ATTENTION_BACKENDS = {}


            @register_attention_backend("flashinfer")
            def create_flashinfer_backend(runner):
                return FlashInferAttnBackend(runner)


            @register_attention_backend("triton")
            def create_triton_backend(runner):
                return TritonAttnBackend(runner)
            """,
            ATTN,
        )

    def test_decorator_registry_drops_classes_of_removed_keys(self) -> None:
        # 0.5.23 utils/hf_transformers/config.py: the config parsers register classes
        self.check(
            """
            @register_model_config_parser("hf")
            class HfModelConfigParser(ModelConfigParserBase):
                def parse(self, model):
                    return AutoConfig.from_pretrained(model)


            @register_model_config_parser("mistral")
            class MistralModelConfigParser(ModelConfigParserBase):
                def parse(self, model):
                    return load_mistral_config(model)


            class Unregistered:  # no registration: stays
                pass
            """,
            """
            @register_model_config_parser("hf")
            class HfModelConfigParser(ModelConfigParserBase):
                def parse(self, model):
                    return AutoConfig.from_pretrained(model)


            class Unregistered:  # no registration: stays
                pass
            """,
            PARSERS,
        )

    def test_registration_calls_of_removed_keys(self) -> None:
        # 0.5.23 deepseek_common/attention_backend_handler.py: handlers registered by call, keyed by the
        # attention backends (the rule follows that registry)
        self.check(
            """
            AttentionBackendRegistry.register("ascend", handle_attention_ascend)
            AttentionBackendRegistry.register("flashinfer", handle_attention_flashinfer)
            AttentionBackendRegistry.register(
                "aiter",  # AMD
                handle_attention_aiter,
            )
            OtherRegistry.register("aiter", other)  # another callee: stays
            AttentionBackendRegistry.register(name, handle)  # no literal key: stays
            """,
            """
            AttentionBackendRegistry.register("flashinfer", handle_attention_flashinfer)
            OtherRegistry.register("aiter", other)  # another callee: stays
            AttentionBackendRegistry.register(name, handle)  # no literal key: stays
            """,
            HANDLERS,
        )

    def test_module_dict_update_calls_and_emptied_ifs(self) -> None:
        self.check(
            """
            BASE_QUANTIZATION_METHODS: Dict[str, Type[QuantizationConfig]] = {
                "fp8": Fp8Config,
                "awq": AWQConfig,
                "modelopt": ModelOptFp8Config,  # Auto-detect, defaults to FP8
                "gguf": GGUFConfig,
            }


            if is_cuda():
                BASE_QUANTIZATION_METHODS.update(
                    {
                        "mxfp4": Mxfp4Config,
                        "awq": AWQConfig,
                    }
                )


            if is_mps():
                BASE_QUANTIZATION_METHODS.update(
                    {
                        "mlx_q4": MlxQuantizationConfig,
                        "mlx_q8": MlxQuantizationConfig,
                    }
                )

            # subset of above quant methods, supported on CPU
            CPU_QUANTIZATION_METHODS = {"awq": AWQCPUConfig}
            """,
            """
            BASE_QUANTIZATION_METHODS: Dict[str, Type[QuantizationConfig]] = {
                "fp8": Fp8Config,
                "modelopt": ModelOptFp8Config,  # Auto-detect, defaults to FP8
            }


            if is_cuda():
                BASE_QUANTIZATION_METHODS.update(
                    {
                        "mxfp4": Mxfp4Config,
                    }
                )

            # subset of above quant methods, supported on CPU
            CPU_QUANTIZATION_METHODS = {"awq": AWQCPUConfig}
            """,
            QUANT,
            filename="sglang/srt/layers/quantization/__init__.py",
        )

    def test_class_attribute_dicts(self) -> None:
        self.check(
            """
            class FunctionCallParser:
                ToolCallParserEnum: Dict[str, Type[BaseFormatDetector]] = {
                    "deepseekv3": DeepSeekV3Detector,
                    "glm": Glm4MoeDetector,
                    "qwen": Qwen25Detector,
                }

                def __init__(self, tool_call_parser):
                    self.detector = self.ToolCallParserEnum.get(tool_call_parser)
            """,
            """
            class FunctionCallParser:
                ToolCallParserEnum: Dict[str, Type[BaseFormatDetector]] = {
                    "deepseekv3": DeepSeekV3Detector,
                }

                def __init__(self, tool_call_parser):
                    self.detector = self.ToolCallParserEnum.get(tool_call_parser)
            """,
            TOOLS,
        )
        self.check(
            """
            class ReasoningParser:
                DetectorMap = {"deepseek-r1": DeepSeekR1Detector, "qwen3": Qwen3Detector, "kimi": KimiDetector}
            """,
            """
            class ReasoningParser:
                DetectorMap = {"deepseek-r1": DeepSeekR1Detector}
            """,
            REASON,
        )

    def test_config_registry_comprehension_and_subscript_stores(self) -> None:
        self.check(
            """
            from sglang.srt.configs.afmoe import AfmoeConfig
            from sglang.srt.configs.deepseek_ocr import DeepseekVLV2Config

            _CONFIG_REGISTRY: Dict[str, Type[PretrainedConfig]] = {
                cls.model_type: cls
                for cls in [
                    AfmoeConfig,
                    DeepseekVLV2Config,
                    KimiVLConfig,
                ]
            }
            """,
            """
            from sglang.srt.configs.afmoe import AfmoeConfig
            from sglang.srt.configs.deepseek_ocr import DeepseekVLV2Config

            _CONFIG_REGISTRY: Dict[str, Type[PretrainedConfig]] = {
                cls.model_type: cls
                for cls in [
                    DeepseekVLV2Config,
                ]
            }
            """,
            CONFIGS,
        )

    def test_local_dict_follows_another_registry_and_private_helpers_go(self) -> None:
        self.check(
            """
            class DraftBackendFactory:
                def create_decode_backend(self):
                    backend_map = {
                        "flashinfer": self._create_flashinfer_decode_backend,
                        "aiter": self._create_aiter_decode_backend,
                        "ascend": self._create_ascend_decode_backend,
                    }
                    return self._create_backend(backend_map)

                def _create_flashinfer_decode_backend(self):
                    return FlashInferMultiStepDraftBackend(self)

                def _create_aiter_decode_backend(self):
                    from sglang.srt.layers.attention.aiter_backend import AiterMultiStepDraftBackend

                    return AiterMultiStepDraftBackend(self)

                def _create_ascend_decode_backend(self):
                    return self._create_aiter_decode_backend()

                def _create_wave_decode_backend(self):
                    return None
            """,
            """
            class DraftBackendFactory:
                def create_decode_backend(self):
                    backend_map = {
                        "flashinfer": self._create_flashinfer_decode_backend,
                    }
                    return self._create_backend(backend_map)

                def _create_flashinfer_decode_backend(self):
                    return FlashInferMultiStepDraftBackend(self)

                def _create_wave_decode_backend(self):
                    return None
            """,
            DRAFT,
        )

    def test_other_modules_are_byte_identical(self) -> None:
        code = 'BASE_QUANTIZATION_METHODS = {"awq": AWQConfig}\n'
        out, transform = run(PruneRegistries, code, INPUTS, module="sglang.srt.other", dedent=False)
        assert out == code and not transform.changes


def test_removed_registered_function_still_used_is_a_finding() -> None:
    code = """\
        @register_attention_backend("aiter")
        def create_aiter_backend(runner):
            return AiterAttnBackend(runner)


        @register_attention_backend("flashinfer")
        def create_flashinfer_backend(runner):
            return create_aiter_backend(runner)
        """
    out, transform = run(PruneRegistries, code, INPUTS, module=ATTN)
    assert "def create_aiter_backend" not in out
    assert transform.findings == [
        "sglang/srt/layers/attention/attention_registry.py:8: create_aiter_backend (registered as "
        "attention_backends key 'aiter') was removed but is still used"]


def test_default_pointing_to_removed_key_is_reported_not_changed() -> None:
    code = """\
        @register_attention_backend("triton")
        def create_triton_backend(runner, fallback="aiter"):
            return TritonAttnBackend(runner)
        """
    out, transform = run(PruneRegistries, code, INPUTS, module=ATTN)
    assert 'fallback="aiter"' in out and not transform.changes
    assert len(transform.findings) == 1
    assert transform.findings[0].startswith("sglang/srt/layers/attention/attention_registry.py:2: default 'aiter'")


def test_idempotent() -> None:
    code = """\
        BASE_QUANTIZATION_METHODS = {"fp8": Fp8Config, "awq": AWQConfig}
        BASE_QUANTIZATION_METHODS["gguf"] = GGUFConfig
        if is_npu():
            BASE_QUANTIZATION_METHODS.update({"gguf": GGUFConfig})
        """
    once = assert_idempotent(PruneRegistries, code, INPUTS, module=QUANT)
    assert once == 'BASE_QUANTIZATION_METHODS = {"fp8": Fp8Config}\n'
