"""prune_architecture_literals (shrinker/codemods/architecture_literals.py): removed architectures leave the
literals that `in` tests compare against; a collection read any other way stays whole."""

from __future__ import annotations

from libcst.codemod import CodemodTest

from shrinker.codemods.architecture_literals import PruneArchitectureLiterals
from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.rules.load import load_rules
from tests.codemods.helpers_registry import assert_idempotent, context, run

MODULE = "sglang.srt.arg_groups.overrides"
REMOVED = ["Qwen3NextForCausalLM", "KimiLinearForCausalLM", "HYV4ForCausalLM", "HYV4ForCausalLMNextN"]


def inputs(imported: dict[str, frozenset[str]] | None = None) -> CodemodInputs:
    removed = Removed(registry_keys={"models": frozenset(REMOVED)})
    removed.imported = {MODULE: frozenset({"apply_overrides"})} if imported is None else imported
    return CodemodInputs(rules=load_rules("deepseek"), removed=removed)


class TestPruneArchitectureLiterals(CodemodTest):
    TRANSFORM = PruneArchitectureLiterals

    def check(self, before: str, after: str, **kwargs) -> None:
        self.assertCodemod(before, after, inputs(**kwargs), context_override=context(MODULE))

    def test_named_collections_only_tested_with_in_lose_removed_architectures(self) -> None:
        self.check(
            """
            # Keep this hybrid-model set in sync with model_hook.
            _MAMBA_ARCHS = frozenset(
                {
                    "KimiLinearForCausalLM",
                    # Text-only entries of the same hybrid stack
                    "Qwen3NextForCausalLM",
                }
            )
            _DEEPSEEK_FAMILY_ARCHS = [
                "DeepseekV3ForCausalLM",
                "KimiLinearForCausalLM",  # Kimi Linear
                "DeepseekV32ForCausalLM",
            ]


            def apply_overrides(model_arch):
                if model_arch not in _DEEPSEEK_FAMILY_ARCHS:
                    return {}
                return {"mamba": model_arch in _MAMBA_ARCHS}
            """,
            """
            # Keep this hybrid-model set in sync with model_hook.
            _MAMBA_ARCHS = frozenset()
            _DEEPSEEK_FAMILY_ARCHS = [
                "DeepseekV3ForCausalLM",
                "DeepseekV32ForCausalLM",
            ]


            def apply_overrides(model_arch):
                if model_arch not in _DEEPSEEK_FAMILY_ARCHS:
                    return {}
                return {"mamba": model_arch in _MAMBA_ARCHS}
            """,
        )

    def test_inline_literals_keep_what_is_served(self) -> None:
        self.check(
            """
            if model_arch in ("HYV4ForCausalLM", "DeepseekV3ForCausalLM", OTHER):
                pass
            if model_arch in ("HYV4ForCausalLM", "HYV4ForCausalLMNextN"):
                pass
            """,
            """
            if model_arch in ("DeepseekV3ForCausalLM", OTHER):
                pass
            if model_arch in ("HYV4ForCausalLM", "HYV4ForCausalLMNextN"):
                pass
            """,
        )

    def test_collections_read_any_other_way_stay_whole(self) -> None:
        code = """
            ITERATED = ["Qwen3NextForCausalLM", "DeepseekV3ForCausalLM"]
            REBOUND = ("Qwen3NextForCausalLM",)
            TAKEN = {"Qwen3NextForCausalLM", "DeepseekV3ForCausalLM"}
            for arch in ITERATED:
                register(arch)
            if arch in REBOUND:
                REBOUND = ()
            """
        self.check(code, code, imported={MODULE: frozenset({"TAKEN"})})

    def test_a_module_whose_importers_are_unknown_keeps_its_collections(self) -> None:
        code = 'ARCHS = ["Qwen3NextForCausalLM", "DeepseekV3ForCausalLM"]\nok = x in ARCHS\n'
        out, _ = run(PruneArchitectureLiterals, code, inputs(imported={MODULE: frozenset({"*"})}), module=MODULE,
                     dedent=False)
        assert out == code


def test_a_module_no_kept_module_imports_is_judged_too() -> None:
    code = 'ARCHS = ["Qwen3NextForCausalLM", "DeepseekV3ForCausalLM"]\nok = x in ARCHS\n'
    out, _ = run(PruneArchitectureLiterals, code, inputs(imported={}), module=MODULE, dedent=False)
    assert out == 'ARCHS = ["DeepseekV3ForCausalLM"]\nok = x in ARCHS\n'
    unknown = inputs()
    unknown.removed.imported = None
    out, _ = run(PruneArchitectureLiterals, code, unknown, module=MODULE, dedent=False)
    assert out == code


def test_idempotent() -> None:
    code = """\
        ARCHS = ["Qwen3NextForCausalLM", "DeepseekV3ForCausalLM"]
        ok = x in ARCHS or x in ("HYV4ForCausalLM", "DeepseekV4ForCausalLM")
        """
    once = assert_idempotent(PruneArchitectureLiterals, code, inputs(), module=MODULE)
    assert once == 'ARCHS = ["DeepseekV3ForCausalLM"]\nok = x in ARCHS or x in ("DeepseekV4ForCausalLM",)\n'


def test_a_registration_decorator_loses_removed_architectures() -> None:
    # 0.5.23's arg_groups/model_overrides/deepseek_v2.py; `_register_for` is model_overrides' decorator
    code = """\
        @_register_for(
            "DeepseekV3ForCausalLM",
            "HYV4ForCausalLM",
            "DeepseekV32ForCausalLM",
            "HYV4ForCausalLMNextN",
        )
        def overrides(args, cfg):
            return {}


        @_register_for("HYV4ForCausalLM")
        def only_removed(args, cfg):
            return {}


        @other_decorator("HYV4ForCausalLM", "DeepseekV3ForCausalLM")
        def not_a_registry(args, cfg):
            return {}
        """
    once = assert_idempotent(PruneArchitectureLiterals, code, inputs(), module=MODULE)
    assert once.startswith('@_register_for(\n    "DeepseekV3ForCausalLM",\n    "DeepseekV32ForCausalLM",\n)\n')
    assert '@_register_for("HYV4ForCausalLM")' in once
    assert '@other_decorator("HYV4ForCausalLM", "DeepseekV3ForCausalLM")' in once


def test_in_its_batch_a_test_of_removed_architectures_only_goes_with_its_branch() -> None:
    import textwrap

    from shrinker.codemods.pipeline import transform_source

    source = textwrap.dedent("""\
        @_register_for("DeepseekV3ForCausalLM", "HYV4ForCausalLM")
        def overrides(server_args, hf_config):
            model_arch = (getattr(hf_config, "architectures", None) or [None])[0]
            if model_arch in ("HYV4ForCausalLM", "HYV4ForCausalLMNextN"):
                raise ValueError("HYV4 needs ...")
            return {}
        """)
    result = transform_source(source, path="sglang/srt/arg_groups/overrides.py", module=MODULE, inputs=inputs(),
                              codemods=["prune_architecture_literals", "remove_unused_names"])
    assert result.status == "success" and result.findings == []
    assert result.code == textwrap.dedent("""\
        @_register_for("DeepseekV3ForCausalLM")
        def overrides(server_args, hf_config):
            model_arch = (getattr(hf_config, "architectures", None) or [None])[0]
            return {}
        """)
