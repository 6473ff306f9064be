"""prune_cli_choices: choices lists, inline option choices, literal growth, defaults reported."""

from __future__ import annotations

from libcst.codemod import CodemodTest

from shrinker.codemods.cli_choices import PruneCliChoices
from tests.codemods.helpers_registry import assert_idempotent, context, make_inputs, run

ARGS = "sglang.srt.server_args"
REGISTRIES = [
    dict(name="attention_backends", kind="decorator", module="sglang.srt.layers.attention.attention_registry",
         decorator="register_attention_backend"),
    dict(name="attention_backend_choices", kind="choices", module=ARGS, variable="ATTENTION_BACKEND_CHOICES",
         follows="attention_backends"),
    dict(name="quantization_choices", kind="choices", module=ARGS, variable="QUANTIZATION_CHOICES",
         follows="quantization"),
    dict(name="mm_attention_backend_choices", kind="choices", module=ARGS, variable="mm_attention_backend",
         keep=["sdpa", "fa3", "triton_attn"]),
    dict(name="sampling_backend_choices", kind="choices", module=ARGS, variable="SAMPLING_BACKEND_CHOICES",
         keep=["flashinfer", "pytorch"]),
    dict(name="lora_backend_choices", kind="choices", module=ARGS, variable="--lora-backend",
         follows="attention_backends"),
]
INPUTS = make_inputs(keys={"attention_backends": ["aiter", "wave", "intel_amx", "ascend"],
                           "quantization": ["awq", "gguf"]}, registries=REGISTRIES)


class TestPruneCliChoices(CodemodTest):
    TRANSFORM = PruneCliChoices

    def check(self, before: str, after: str) -> None:
        self.assertCodemod(before, after, INPUTS, context_override=context(ARGS))

    def test_module_level_choices_lists(self) -> None:
        self.check(
            """
            QUANTIZATION_CHOICES = [
                "awq",
                "fp8",  # MOE + linear online quantization.
                "gguf",
                # Modelopt has some online quantization support through ModelOptModelLoader.
                "modelopt",
            ]

            ATTENTION_BACKEND_CHOICES = [
                # Common
                "triton",
                "torch_native",
                # AMD specific
                "aiter",
                "wave",
                # Other platforms
                "intel_amx",
                "ascend",
            ]
            """,
            """
            QUANTIZATION_CHOICES = [
                "fp8",  # MOE + linear online quantization.
                # Modelopt has some online quantization support through ModelOptModelLoader.
                "modelopt",
            ]

            ATTENTION_BACKEND_CHOICES = [
                # Common
                "triton",
                "torch_native",
            ]
            """,
        )

    def test_keep_list_and_literal_growth(self) -> None:
        self.check(
            """
            SAMPLING_BACKEND_CHOICES = {"flashinfer", "pytorch", "ascend"}
            if envs.SGLANG_KV_CANARY_ENABLE_TOKEN_ORACLE.get():
                SAMPLING_BACKEND_CHOICES.add("token_oracle")
            SAMPLING_BACKEND_CHOICES.add("pytorch")
            ATTENTION_BACKEND_CHOICES.extend(["wave", "fa3"])
            """,
            """
            SAMPLING_BACKEND_CHOICES = {"flashinfer", "pytorch"}
            if envs.SGLANG_KV_CANARY_ENABLE_TOKEN_ORACLE.get():
                pass
            SAMPLING_BACKEND_CHOICES.add("pytorch")
            ATTENTION_BACKEND_CHOICES.extend(["fa3"])
            """,
        )

    def test_inline_choices_of_dataclass_field_and_add_argument(self) -> None:
        self.check(
            """
            @dataclass
            class ServerArgs:
                mm_attention_backend: A[
                    Optional[str],
                    Arg(
                        help="Set multimodal attention backend.",
                        choices=[
                            "sdpa",
                            "fa3",
                            "triton_attn",
                            "ascend_attn",
                        ],
                    ),
                ] = None

                @staticmethod
                def add_cli_args(parser):
                    parser.add_argument(
                        "--lora-backend",
                        type=str,
                        choices=["triton", "ascend", "torch_native"],
                        default="triton",
                    )
                    parser.add_argument("--other", choices=["ascend"])
            """,
            """
            @dataclass
            class ServerArgs:
                mm_attention_backend: A[
                    Optional[str],
                    Arg(
                        help="Set multimodal attention backend.",
                        choices=[
                            "sdpa",
                            "fa3",
                            "triton_attn",
                        ],
                    ),
                ] = None

                @staticmethod
                def add_cli_args(parser):
                    parser.add_argument(
                        "--lora-backend",
                        type=str,
                        choices=["triton", "torch_native"],
                        default="triton",
                    )
                    parser.add_argument("--other", choices=["ascend"])
            """,
        )

    def test_other_modules_untouched(self) -> None:
        code = 'ATTENTION_BACKEND_CHOICES = ["aiter"]\n'
        out, transform = run(PruneCliChoices, code, INPUTS, module="sglang.srt.other", dedent=False)
        assert out == code and not transform.changes


def test_choices_moved_to_a_module_the_registry_module_re_exports_from() -> None:
    # 0.5.23: server_args does `from sglang.srt.arg_groups.choices import ATTENTION_BACKEND_CHOICES`
    import dataclasses

    moved = "sglang.srt.arg_groups.choices"
    inputs = dataclasses.replace(INPUTS, removed=dataclasses.replace(
        INPUTS.removed, origins={ARGS: {"ATTENTION_BACKEND_CHOICES": moved}}))
    code = 'ATTENTION_BACKEND_CHOICES = ["triton", "wave"]\nQUANTIZATION_CHOICES = ["awq", "fp8"]\n'
    out, transform = run(PruneCliChoices, code, inputs, module=moved, dedent=False)
    # only the re-exported variable's registry follows it there
    assert out == 'ATTENTION_BACKEND_CHOICES = ["triton"]\nQUANTIZATION_CHOICES = ["awq", "fp8"]\n'
    out, _ = run(PruneCliChoices, code, INPUTS, module=moved, dedent=False)
    assert out == code  # without the origins fact nothing there is a registry


def test_defaults_pointing_to_removed_keys_are_reported_not_changed() -> None:
    code = """\
        ATTENTION_BACKEND_CHOICES = ["triton", "aiter"]
        SPEC_CHOICES = ATTENTION_BACKEND_CHOICES


        @dataclass
        class ServerArgs:
            attention_backend: A[Optional[str], Arg(choices=ATTENTION_BACKEND_CHOICES)] = "aiter"
            draft_backend: A[Optional[str], Arg(choices=SPEC_CHOICES)] = "triton"

            def __post_init__(self):
                if self.device == "cpu":
                    self.draft_backend = "intel_amx"
                    self.attention_backend = ("torch_native" if arm64() else "wave")

            @staticmethod
            def add_cli_args(parser):
                parser.add_argument("--lora-backend", choices=["triton", "ascend"], default="ascend")
        """
    out, transform = run(PruneCliChoices, code, INPUTS, module=ARGS)
    assert '= "aiter"' in out and '"intel_amx"' in out and 'default="ascend"' in out
    assert transform.findings == [
        "sglang/srt/server_args.py:7: default 'aiter' of attention_backend is a key removed from "
        "attention_backends (a rule decision: keep the key or change the default)",
        "sglang/srt/server_args.py:17: default 'ascend' of lora_backend is a key removed from "
        "attention_backends (a rule decision: keep the key or change the default)",
        "sglang/srt/server_args.py:12: draft_backend is set to 'intel_amx', a key removed from "
        "attention_backends (a rule decision: keep the key or change this)",
        "sglang/srt/server_args.py:13: attention_backend is set to 'wave', a key removed from "
        "attention_backends (a rule decision: keep the key or change this)",
    ]


def test_list_that_would_empty_is_left_and_reported() -> None:
    code = 'ATTENTION_BACKEND_CHOICES = ["intel_amx", "wave"]\n'
    out, transform = run(PruneCliChoices, code, INPUTS, module=ARGS, dedent=False)
    assert out == code
    assert transform.findings == ["sglang/srt/server_args.py:1: every choice of ATTENTION_BACKEND_CHOICES is "
                                  "a removed key of attention_backends: left as is (a rule decision)"]


def test_idempotent() -> None:
    code = """\
        ATTENTION_BACKEND_CHOICES = ["triton", "aiter", "wave"]
        ATTENTION_BACKEND_CHOICES.append("ascend")
        """
    once = assert_idempotent(PruneCliChoices, code, INPUTS, module=ARGS)
    assert once == 'ATTENTION_BACKEND_CHOICES = ["triton"]\n'


def test_choices_named_for_another_platform_go_with_their_literal_values() -> None:
    # 0.5.23 arg_groups/fields/exec_.py: no registry names these options; the platform vocabulary does
    code = '''\
moe_a2a_backend: A[
    Literal[
        "none",
        "mori",
        "deepep",
        "ascend_tp",
    ],
    Arg(
        help="Choose the backend for MoE A2A.",
        choices=[
            "none",
            "mori",  # AMD
            "deepep",
            "ascend_tp",
        ],
    ),
] = "none"
dsa_backend: A[Optional[str], Arg(choices=["flashmla_sparse", "aiter", "intel_xpu"])] = "intel_xpu"
y: A[str, Arg(choices=["aiter"])] = None
x = Arg(choices=["aiter"])  # not an option
'''
    out, transform = run(PruneCliChoices, code, INPUTS, module="sglang.srt.arg_groups.fields.exec_", dedent=False)
    assert out == '''\
moe_a2a_backend: A[
    Literal[
        "none",
        "deepep",
    ],
    Arg(
        help="Choose the backend for MoE A2A.",
        choices=[
            "none",
            "deepep",
        ],
    ),
] = "none"
dsa_backend: A[Optional[str], Arg(choices=["flashmla_sparse"])] = "intel_xpu"
y: A[str, Arg(choices=["aiter"])] = None
x = Arg(choices=["aiter"])  # not an option
'''
    assert transform.changes["platform_choices_removed"] == 4
    findings = sorted(transform.findings)
    assert len(findings) == 2, findings
    assert "default 'intel_xpu' of dsa_backend names another platform" in findings[0] + findings[1]
    assert "every choice of y names another platform: left as is" in findings[0] + findings[1]
    assert_idempotent(PruneCliChoices, code, INPUTS, module="sglang.srt.arg_groups.fields.exec_")


def test_module_level_choices_lists_lose_platform_strings() -> None:
    # 0.5.23 arg_groups/choices.py: lists no registry names (rules.platform.choices_variables = *_CHOICES)
    code = ('DISAGG_TRANSFER_BACKEND_CHOICES = [\n    "mooncake",\n    "ascend",\n    "mori",\n    "nixl",\n]\n'
            'GRAMMAR = ["xgrammar", "ascend"]\n'
            'def f():\n    LOCAL_CHOICES = ["a", "npu"]\n')
    out, transform = run(PruneCliChoices, code, INPUTS, module="sglang.srt.arg_groups.choices", dedent=False)
    assert out == ('DISAGG_TRANSFER_BACKEND_CHOICES = [\n    "mooncake",\n    "nixl",\n]\n'
                   'GRAMMAR = ["xgrammar", "ascend"]\n'
                   'def f():\n    LOCAL_CHOICES = ["a", "npu"]\n')
    assert transform.changes["platform_choices_removed"] == 2


DETECTION = "sglang.srt.parser.template_detection"
DETECTION_INPUTS = make_inputs(
    keys={"tool_call_parsers": ["qwen", "glm45", "kimi_k2"]},
    registries=[dict(name="tool_call_parser_detection", kind="choices", module=DETECTION,
                     variable="TOOL_CALL_PARSER_RULES", element_key="value", follows="tool_call_parsers")])


def test_rules_that_pick_a_removed_key_go_by_their_element_key() -> None:
    code = """\
        TOOL_CALL_PARSER_RULES = (
            DetectionRule(name="kimi_k2", value="kimi_k2", predicate=_is_kimi_k2),
            # DeepSeek V3.2 before V3.1: its template also matches V3.1's markers
            DetectionRule(name="deepseek_v32", value="deepseekv32", predicate=_is_deepseek_v32),
            DetectionRule(
                name="xml_kv_tool_call", value="glm45", predicate=_is_xml_kv_tool_call
            ),
            DetectionRule(name="qwen", value="qwen", predicate=_is_qwen3),
            DetectionRule(name="deepseek_v3", value="deepseekv3", predicate=_is_deepseek_v3),
        )
        OTHER_RULES = (DetectionRule(name="qwen", value="qwen", predicate=_is_qwen3),)
        """
    once = assert_idempotent(PruneCliChoices, code, DETECTION_INPUTS, module=DETECTION)
    assert once == """\
TOOL_CALL_PARSER_RULES = (
    # DeepSeek V3.2 before V3.1: its template also matches V3.1's markers
    DetectionRule(name="deepseek_v32", value="deepseekv32", predicate=_is_deepseek_v32),
    DetectionRule(name="deepseek_v3", value="deepseekv3", predicate=_is_deepseek_v3),
)
OTHER_RULES = (DetectionRule(name="qwen", value="qwen", predicate=_is_qwen3),)
"""


def test_an_element_key_reads_only_that_keyword() -> None:
    # `name="qwen"` is not the key; a rule without `value=` or given positionally is not judged
    code = """\
        TOOL_CALL_PARSER_RULES = [
            DetectionRule(name="qwen", value="deepseekv3", predicate=_is_deepseek_v3),
            DetectionRule("glm", "glm45", _is_glm),
            _RULE_FROM_ELSEWHERE,
        ]
        """
    out, transform = run(PruneCliChoices, code, DETECTION_INPUTS, module=DETECTION)
    assert out == CodemodTest.make_fixture_data(code)
    assert transform.findings == []
