"""prune_architecture_literals (shrinker/codemods/architecture_literals.py): removed architectures leave the
literals that `in` tests compare against; a collection read any other way stays whole."""

from __future__ import annotations

from libcst.codemod import CodemodTest

from shrinker.codemods.architecture_literals import PruneArchitectureLiterals, PrunePlatformCollections
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


def test_collections_read_by_intersection_or_get_lose_removed_architectures() -> None:
    # 0.5.23's arg_groups/boundary_reduction.py, parser/python_chat_template.py, configs/moe_model_registry.py
    code = """\
        _RSV_ARCHITECTURES = {
            "HYV4ForCausalLM",
            "Qwen3NextForCausalLM",
        }
        _TEMPLATES_BY_ARCH = {
            "Qwen3NextForCausalLM": QWEN,  # the Qwen template
            "DeepseekV3ForCausalLM": DSV3,
        }
        _POLICIES: dict[str, Policy] = {
            "DeepseekV3ForCausalLM": Policy(),
            "KimiLinearForCausalLM": Policy(),
        }
        _ONLY_REMOVED = {"HYV4ForCausalLM": HY}
        _DEEPEP_V2_MODELS = {
            "DeepseekV3ForCausalLM": _DeepEPv2ModelPolicy(),
            "Qwen3NextForCausalLM": _DeepEPv2ModelPolicy(),
        }


        def register(architecture):
            _ONLY_REMOVED[architecture] = Policy()


        def apply_overrides(config, architectures):
            if architectures & _RSV_ARCHITECTURES:
                return "rsv"
            return _TEMPLATES_BY_ARCH.get(architectures[0]), _POLICIES.get(architectures[0]), _ONLY_REMOVED[1], _DEEPEP_V2_MODELS.get(a)
        """
    once = assert_idempotent(PruneArchitectureLiterals, code, inputs(), module=MODULE)
    assert once.startswith("_RSV_ARCHITECTURES = set()\n_TEMPLATES_BY_ARCH = {\n"
                           '    "DeepseekV3ForCausalLM": DSV3,\n}\n')
    # `Policy()` may run code: its entry stays
    assert '"KimiLinearForCausalLM": Policy(),' in once
    assert "_ONLY_REMOVED = {}\n" in once
    # the rules call this record pure (rules/deepseek.toml, pure_methods)
    assert '_DEEPEP_V2_MODELS = {\n    "DeepseekV3ForCausalLM": _DeepEPv2ModelPolicy(),\n}\n' in once


def test_collections_used_by_a_literal_key_or_other_methods_stay_whole() -> None:
    code = """\
        _BY_ARCH = {"Qwen3NextForCausalLM": QWEN, "DeepseekV3ForCausalLM": DSV3}
        _POPPED = {"Qwen3NextForCausalLM": QWEN}
        _UNITED = {"Qwen3NextForCausalLM", "DeepseekV3ForCausalLM"}


        def pick(arch):
            _POPPED.pop(arch)
            del _BY_ARCH["Qwen3NextForCausalLM"]
            return _BY_ARCH[arch], _UNITED | {arch}
        """
    out, _ = run(PruneArchitectureLiterals, code, inputs(), module=MODULE)
    import textwrap

    assert out == textwrap.dedent(code)


class TestPrunePlatformCollections(CodemodTest):
    """prune_platform_collections: the platform vocabulary's strings leave module collections only tested by
    key, as fold_platform takes them from inline `in` literals (0.5.23's attention_backend_handler, overrides)."""

    TRANSFORM = PrunePlatformCollections

    def check(self, before: str, after: str, **kwargs) -> None:
        self.assertCodemod(before, after, inputs(**kwargs), context_override=context(MODULE))

    def test_named_collections_tested_by_key_lose_other_platforms_names(self) -> None:
        self.check(
            """
            MHA_ONE_SHOT_SUPPORTED_BACKENDS = ["fa3", "flashinfer", "flashmla", "aiter"]
            _A2A_EP_SPANNING_BACKENDS = frozenset(
                {
                    "deepep",
                    "ascend_fuseep",  # Ascend
                    "mori",
                }
            )
            _ONLY_NPU = ("npu",)


            def apply_overrides(view, backend_name):
                if view.moe_a2a_backend in _A2A_EP_SPANNING_BACKENDS or view.device in _ONLY_NPU:
                    return {}
                return {"one_shot": backend_name in MHA_ONE_SHOT_SUPPORTED_BACKENDS, "hip": "hip" in view.x}
            """,
            """
            MHA_ONE_SHOT_SUPPORTED_BACKENDS = ["fa3", "flashinfer", "flashmla"]
            _A2A_EP_SPANNING_BACKENDS = frozenset(
                {
                    "deepep",
                }
            )
            _ONLY_NPU = ()


            def apply_overrides(view, backend_name):
                if view.moe_a2a_backend in _A2A_EP_SPANNING_BACKENDS or view.device in _ONLY_NPU:
                    return {}
                return {"one_shot": backend_name in MHA_ONE_SHOT_SUPPORTED_BACKENDS, "hip": "hip" in view.x}
            """,
        )

    def test_an_imported_collection_every_importer_reads_by_key_loses_them_too(self) -> None:
        # 0.5.23's models/deepseek_common/utils FORWARD_ABSORB_CORE_ATTENTION_BACKENDS, read by forward_mla only as
        # `backend in ...` (graph/key_reads)
        inputs_ = inputs(imported={MODULE: frozenset({"FORWARD_ABSORB", "OTHER"})})
        inputs_.key_read_imports = {MODULE: frozenset({"FORWARD_ABSORB"})}
        self.assertCodemod(
            """
            FORWARD_ABSORB = ["fa3", "ascend", "intel_xpu"]
            OTHER = ["fa3", "ascend"]
            """,
            """
            FORWARD_ABSORB = ["fa3"]
            OTHER = ["fa3", "ascend"]
            """,
            inputs_,
            context_override=context(MODULE),
        )

    def test_collections_read_otherwise_or_imported_stay_whole(self) -> None:
        source = """
            __all__ = ["is_hip", "apply_overrides"]  # the language reads it (`import *`)
            SUPPORTED_DEVICES = ["cuda", "xpu", "cpu"]
            _STAGING = ("cuda", "xpu")
            FORWARD_ABSORB = ["fa3", "ascend"]


            def apply_overrides(device):
                if device not in _STAGING:
                    raise ValueError(", ".join(_STAGING))
                return device in SUPPORTED_DEVICES
            """
        # _STAGING is printed; FORWARD_ABSORB is imported elsewhere; SUPPORTED_DEVICES would go but is imported
        self.check(source, source, imported={MODULE: frozenset({"FORWARD_ABSORB", "SUPPORTED_DEVICES"})})
