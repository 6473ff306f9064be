"""Feature decisions ([[features]] of rules/deepseek.toml) folded by fold_platform / remove_dead_branches:
before/after cases in SGLang v0.5.16 shapes (snippets written for these tests), with idempotence."""

from __future__ import annotations

from functools import lru_cache

import libcst as cst
import pytest

from shrinker.codemods.dead_branches import RemoveDeadBranches
from shrinker.codemods.fold_platform import FoldFeatures
from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.pipeline import transform_source
from shrinker.rules.load import load_rules
from shrinker.rules.predicates import PredicateTable, evaluate, without_predicates
from tests.codemods.helpers import PlatformCodemodTest, run_transform


@lru_cache(maxsize=1)
def feature_inputs() -> CodemodInputs:
    """What apply gives a features batch: the feature decisions alone (no platform predicates)."""
    rules = load_rules("deepseek")
    return CodemodInputs(rules=rules, removed=Removed(),
                         table=PredicateTable(without_predicates(rules.platform), rules.features))


class _FeatureTest(PlatformCodemodTest):
    def assertCodemod(self, before: str, after: str, **kwargs):  # type: ignore[override]
        return super().assertCodemod(before, after, inputs=feature_inputs(), **kwargs)

    def assertUnchanged(self, code: str, **kwargs):  # type: ignore[override]
        return super().assertUnchanged(code, inputs=feature_inputs())


class TestDeadFeatureBranches(_FeatureTest):
    TRANSFORM = RemoveDeadBranches

    def test_walrus_branch_removed_when_name_read_nowhere_else(self) -> None:
        self.assertCodemod(
            """
            def attn_backend_wrapper(runner, full_attn_backend):
                if cfg := mambaish_config(runner.model_config):
                    from sglang.srt.layers.attention.linear.utils import initialize_linear_attn_config

                    initialize_linear_attn_config(runner.server_args)
                    return HybridLinearAttnBackend(full_attn_backend, cfg)

                return full_attn_backend
            """,
            """
            def attn_backend_wrapper(runner, full_attn_backend):

                return full_attn_backend
            """,
        )

    def test_walrus_read_after_binds_none_when_the_rule_says_so(self) -> None:
        """0.5.17's pool_configurator: mambaish_config returns None for every DeepSeek config (the
        rule's returns_none), so the name read later is None."""
        self.assertCodemod(
            """
            def f(kvc):
                # hybrid models count only their full-attention layers
                if mambaish := mambaish_config(kvc.model_config):
                    setup(mambaish)
                else:
                    plain()
                return mambaish is not None
            """,
            """
            def f(kvc):
                # hybrid models count only their full-attention layers
                mambaish = None
                plain()
                return mambaish is not None
            """,
        )

    def test_walrus_kept_when_name_read_after_and_its_value_is_unknown(self) -> None:
        self.assertCodemod(
            """
            def f(kvc):
                if (mambaish := mambaish_config(kvc.model_config)) and ready():
                    setup(mambaish)
                return mambaish
            """,
            """
            def f(kvc):
                if (mambaish := mambaish_config(kvc.model_config)) and ready():
                    setup(mambaish)
                return mambaish
            """,
            findings=["mambaish, bound by its assignment expression, is read elsewhere"],
        )

    def test_is_none_returns(self) -> None:
        self.assertCodemod(
            """
            def commit_mamba_states_after_verify(target_worker, batch):
                model_runner = target_worker.model_runner
                if mambaish_config(model_runner.model_config) is None:
                    return

                mamba_pool = getattr(model_runner.req_to_token_pool, "mamba_pool", None)
                mamba_pool.commit(batch)
            """,
            """
            def commit_mamba_states_after_verify(target_worker, batch):
                model_runner = target_worker.model_runner
                return
            """,
        )

    def test_predicate_with_args_and_chain(self) -> None:
        self.assertCodemod(
            """
            def f(runner, backend):
                if is_minimax_sparse(runner.model_config.hf_config):
                    return MiniMaxHybridAttnBackend(backend)
                elif backend == "x":
                    return 1
                return backend
            """,
            """
            def f(runner, backend):
                if backend == "x":
                    return 1
                return backend
            """,
        )

    def test_value_rule_on_attribute(self) -> None:
        self.assertCodemod(
            """
            def __init__(self, fa_impl_ver=3):
                self.fa_impl_ver = fa_impl_ver
                if self.fa_impl_ver == 3:
                    self.impl = fa3
                elif self.fa_impl_ver == 4:
                    from sglang.jit_kernel.flash_attention_v4 import flash_attn_varlen_func

                    self.impl = flash_attn_varlen_func
                else:
                    raise ValueError(f"Invalid version: {self.fa_impl_ver=}")
                if self.fa_impl_ver != 4:
                    self.splitkv = True
            """,
            """
            def __init__(self, fa_impl_ver=3):
                self.fa_impl_ver = fa_impl_ver
                if self.fa_impl_ver == 3:
                    self.impl = fa3
                else:
                    raise ValueError(f"Invalid version: {self.fa_impl_ver=}")
                self.splitkv = True
            """,
        )

    def test_a_name_that_only_holds_none(self) -> None:
        # 0.5.23 pool_configurator.py / draft_utils.py: qsa_profile comes from parse_qsa_profile, None for
        # every DeepSeek config (rule features.values none, in the modules the rule names)
        before = self.make_fixture_data(
            """
            def pool(self, hf_config):
                qsa_profile = parse_qsa_profile(hf_config)
                if qsa_profile is None:
                    return None
                return qsa_profile.kv_heads

            def decode_backend(self, qsa_profile=None):
                if self.qsa_profile is not None or qsa_profile is not None:
                    return self._create_qwen_qsa_decode_backend()
                if self.other is not None:  # no rule: stays
                    return self.other
                return self._default()
            """)
        after = self.make_fixture_data(
            """
            def pool(self, hf_config):
                qsa_profile = parse_qsa_profile(hf_config)
                return None

            def decode_backend(self, qsa_profile=None):
                if self.other is not None:  # no rule: stays
                    return self.other
                return self._default()
            """)
        from shrinker.rules.schema import Feature, FeatureValue

        rules = load_rules("deepseek")
        qsa = Feature(name="QSA", reason="test", values=[FeatureValue(
            name="qsa_profile", none=True, modules=["sglang.srt.speculative.draft_utils"], reason="test")])
        inputs = CodemodInputs(rules=rules, removed=Removed(),
                               table=PredicateTable(without_predicates(rules.platform), [*rules.features, qsa]))
        out, _ = run_transform(RemoveDeadBranches, before, inputs)
        # another module: the value rule does not reach `decode_backend`; `pool`'s local still folds, since the
        # predicate rule says every parse_qsa_profile(...) call is None (local_constants' None locals)
        assert out == after.split("def decode_backend")[0] + "def decode_backend" + before.split("def decode_backend")[1]
        where = dict(path="sglang/srt/speculative/draft_utils.py", module="sglang.srt.speculative.draft_utils")
        out, _ = run_transform(RemoveDeadBranches, before, inputs, **where)
        assert out == after
        again, second = run_transform(RemoveDeadBranches, out, inputs, **where)
        assert again == out and not +second.changes

    def test_value_rule_parameter_only_in_its_modules(self) -> None:
        code = """
            def flash_attn_with_kvcache(q, ver=3):
                if ver == 3:
                    return fa3(q)
                elif ver == 4:
                    return fa4(q)
                raise RuntimeError(f"Unknown flash attention version {ver}")
            """
        # elsewhere a parameter `ver` is the caller's business: untouched
        self.assertUnchanged(code)
        source = self.make_fixture_data(code)
        out, _ = run_transform(RemoveDeadBranches, source, feature_inputs(),
                               path="sglang/kernels/ops/attention/flash_attention.py",
                               module="sglang.kernels.ops.attention.flash_attention")
        assert "fa4" not in out and "elif" not in out and "return fa3(q)" in out
        again, second = run_transform(RemoveDeadBranches, out, feature_inputs(),
                                      path="sglang/kernels/ops/attention/flash_attention.py",
                                      module="sglang.kernels.ops.attention.flash_attention")
        assert again == out and not +second.changes

    def test_feature_parameter_folds_in_its_function(self) -> None:
        # 0.5.22's TritonAttnBackend: only the removed "fa4" factory passes dllm_fa4=True
        code = """
            class TritonAttnBackend:
                def __init__(self, runner, *, dllm_fa4: bool = False):
                    self.kv_indptr = torch.zeros(8, dtype=torch.int32 if dllm_fa4 else torch.int64)
                    if dllm_fa4:
                        from sglang.srt.dllm.attention import DllmFlashAttention

                        self.dllm_attention = DllmFlashAttention(self)

                def other(self, dllm_fa4):
                    if dllm_fa4:
                        return 1
            """
        module = "sglang.srt.layers.attention.triton_backend"
        source = self.make_fixture_data(code)
        out, _ = run_transform(RemoveDeadBranches, source, feature_inputs(),
                               path="sglang/srt/layers/attention/triton_backend.py", module=module)
        assert "DllmFlashAttention" not in out and "dtype=torch.int64)" in out
        assert "def other(self, dllm_fa4):\n        if dllm_fa4:" in out  # another function's parameter stays
        again, second = run_transform(RemoveDeadBranches, out, feature_inputs(),
                                      path="sglang/srt/layers/attention/triton_backend.py", module=module)
        assert again == out and not +second.changes
        # elsewhere (another module) nothing folds
        self.assertUnchanged(code)

    def test_enum_member_value_folds_its_branch(self) -> None:
        """0.5.20's attention_backend_setup: pure SSM models take the Mamba backend, which goes with
        hybrid linear attention; a DeepSeek config is never AttentionArch.SSM (rule never_members)."""
        self.assertCodemod(
            """
            def init_attention_backend(model_runner):
                # SSM models use the Mamba backend
                if model_runner.model_config.attention_arch == AttentionArch.SSM:
                    from sglang.srt.layers.attention.hybrid_linear_attn_backend import (
                        Mamba2AttnBackend,
                    )

                    return Mamba2AttnBackend(model_runner)

                server_args = model_runner.server_args
                return server_args
            """,
            """
            def init_attention_backend(model_runner):

                server_args = model_runner.server_args
                return server_args
            """,
        )

    def test_attribute_predicate_in_and(self) -> None:
        self.assertCodemod(
            """
            self.mm_receiver = None
            if (
                self.server_args.language_only
                and self.server_args.encoder_transfer_backend
                in ["zmq_to_scheduler", "mooncake"]
            ):
                self.mm_receiver = create_mm_receiver(self.server_args)
            self.counter = 0
            """,
            """
            self.mm_receiver = None
            self.counter = 0
            """,
        )

    def test_platform_predicates_left_to_their_batch(self) -> None:
        self.assertUnchanged(
            """
            if _is_hip:
                import aiter
            """
        )


class TestFoldFeatures(_FeatureTest):
    TRANSFORM = FoldFeatures

    def test_partial_test_and_ternary_and_flag(self) -> None:
        self.assertCodemod(
            """
            def f(model_runner, eager_decode_gap):
                if eager_decode_gap or mambaish_config(model_runner.model_config) is not None:
                    return 1
                n = 8 if is_minimax_sparse(model_runner.model_config.hf_config) else 2
                hybrid_ssm = mambaish_config(model_runner.model_config) is not None or (
                    model_runner.is_hybrid_swa
                )
                return n, hybrid_ssm
            """,
            """
            def f(model_runner, eager_decode_gap):
                if eager_decode_gap:
                    return 1
                n = 8 if is_minimax_sparse(model_runner.model_config.hf_config) else 2
                hybrid_ssm = (
                    model_runner.is_hybrid_swa
                )
                return n, hybrid_ssm
            """,
        )

    def test_a_config_lookup_that_returns_none_folds_to_none_as_a_value(self) -> None:
        """0.5.16's KVCacheConfigurator keeps the lookup (`self.mambaish_config = mambaish_config(...)`)
        and tests `self.mambaish_config is not None` later: folding it to `False` (its truth) crashed
        every server launch in the memory-pool set-up (GPU, 0.5.17, 2026-11-26); its value is None."""
        self.assertCodemod(
            """
            class KVCacheConfigurator:
                def __post_init__(self):
                    self.mambaish_config = mambaish_config(self.model_config)
                    configure(mambaish_config(self.model_config), strict=mambaish_config(self.model_config))

            def need(cfg):
                return mambaish_config(cfg)
            """,
            """
            class KVCacheConfigurator:
                def __post_init__(self):
                    self.mambaish_config = None
                    configure(None, strict=None)

            def need(cfg):
                return None
            """,
        )

    def test_walrus_not_dropped_by_partial_fold(self) -> None:
        self.assertUnchanged(
            """
            if (cfg := mambaish_config(mc)) or other(cfg):
                use(cfg)
            """
        )

    def test_setup_call_removed(self) -> None:
        self.assertCodemod(
            """
            def init_mamba_backend(self) -> None:
                initialize_mamba_selective_state_update_backend(self.server_args)
                self.ready = True
            """,
            """
            def init_mamba_backend(self) -> None:
                self.ready = True
            """,
        )

    def test_constant_inlined(self) -> None:
        self.assertCodemod(
            """
            import torch
            # FLA's chunk size
            from sglang.kernels.ops.attention.fla.chunk_delta_h import CHUNK_SIZE as FLA_CHUNK_SIZE
            from sglang.srt.utils import is_cuda
            """,
            """
            import torch
            # FLA's chunk size
            FLA_CHUNK_SIZE = 64  # sglang.kernels.ops.attention.fla.chunk_delta_h.CHUNK_SIZE (removed feature)
            from sglang.srt.utils import is_cuda
            """,
        )

    def test_import_with_other_names_left_alone(self) -> None:
        self.assertUnchanged(
            """
            from sglang.kernels.ops.attention.fla.chunk_delta_h import CHUNK_SIZE, chunk_fwd_h
            """
        )


def test_setup_call_emptying_a_method_leaves_pass() -> None:
    source = "def init_mamba_backend(self) -> None:\n    initialize_mamba_selective_state_update_backend(self.server_args)\n"
    result = transform_source(source, path="x.py", module="sglang.srt.managers.scheduler", inputs=feature_inputs(),
                              codemods=["fold_features"])
    assert result.status == "success", result.error
    assert result.code == "def init_mamba_backend(self) -> None:\n    pass\n"


@pytest.mark.parametrize("text, module, expected", [
    ("(cfg := mambaish_config(runner.model_config))", "", False),
    ("mambaish_config(runner.model_config) is None", "", True),
    ("not (self.fa_impl_ver == 3) and self.fa_impl_ver == 4", "", False),
    ("ver == 4", "sglang.kernels.ops.attention.flash_attention", False),
    ("ver == 4", "sgl_kernel.flash_attn", None),
    ("self.server_args.language_only", "", False),
    ("model_runner.model_config.attention_arch == AttentionArch.SSM", "", False),
    ("self.attention_arch != AttentionArch.SSM", "", True),
    ("self.attention_arch in (AttentionArch.SSM,)", "", False),
    ("self.attention_arch == AttentionArch.MLA", "", None),
    ('self.attention_arch == "AttentionArch.SSM"', "", None),  # a string is no enum member
    ("self.attention_arch == arch.SSM", "", None),  # another object's SSM: no rule says so
    ("_is_hip", "", None),  # the feature table alone: platform predicates are not in it
])
def test_planner_evaluates_feature_guards(text: str, module: str, expected) -> None:
    assert evaluate(cst.parse_expression(text), feature_inputs().table, module) is expected


def test_feature_rules_validate() -> None:
    rules = load_rules("deepseek")
    names = [f.name for f in rules.features]
    assert any("hybrid linear attention" in n for n in names) and any("FA4" in n for n in names)
    batch = next(b for b in rules.batches if b.features)
    assert batch.categories == ["feature"] and batch.name == "features DeepSeek does not use"
    order = [b.name for b in rules.batches]
    assert order.index(batch.name) < order.index("dead symbols")
    assert all(r.category == "feature" for r in rules.remove if r.pattern.startswith("sglang.kernels.ops.mamba"))
    pred = next(p for f in rules.features for p in f.predicates if p.name == "mambaish_config")
    assert pred.returns_none and pred.with_args and pred.value is False


def _inputs_removing(*modules: str) -> CodemodInputs:
    base = feature_inputs()
    return CodemodInputs(rules=base.rules, removed=Removed(modules=frozenset(modules)), table=base.table)


class TestFeatureRegistrations(PlatformCodemodTest):
    TRANSFORM = FoldFeatures

    def test_registration_naming_a_removed_module_goes(self) -> None:
        inputs = _inputs_removing("sglang.srt.mem_cache.storage.eic")
        self.assertCodemod(
            """
            StorageBackendFactory.register_backend(
                "file", "sglang.srt.mem_cache.hicache_storage", "HiCacheFile"
            )

            StorageBackendFactory.register_backend(
                "eic",
                "sglang.srt.mem_cache.storage.eic.eic_storage",
                "EICStorage",
            )
            """,
            """
            StorageBackendFactory.register_backend(
                "file", "sglang.srt.mem_cache.hicache_storage", "HiCacheFile"
            )
            """,
            inputs=inputs,
        )

    def test_kernel_record_naming_a_removed_module_goes(self) -> None:
        # 0.5.18's kept kernels/ops/mamba/__init__.py registers the removed causal_conv1d kernels
        inputs = _inputs_removing("sglang.kernels.ops.mamba.causal_conv1d")
        self.assertCodemod(
            """
            _CUDA = frozenset({CapabilityRequirement.CUDA})
            register_kernel(
                KernelSpec(
                    op="mamba.causal_conv1d_fwd",
                    backend=KernelBackend.JIT,
                    target="sglang.kernels.ops.mamba.causal_conv1d:causal_conv1d_fwd",
                    capabilities=_CUDA,
                    format_signature=FormatSignature(in_place=True, description="prefill"),
                )
            )
            register_kernel(KernelSpec(op="mamba.transfer", target="sglang.kernels.ops.mamba.transfer_mamba:run"))
            """,
            """
            _CUDA = frozenset({CapabilityRequirement.CUDA})
            register_kernel(KernelSpec(op="mamba.transfer", target="sglang.kernels.ops.mamba.transfer_mamba:run"))
            """,
            inputs=inputs,
        )

    def test_kernel_record_with_inline_frozenset_capabilities_goes(self) -> None:
        # 0.5.21's kernels/ops/mamba/__init__.py: the Qwen4 short-conv records build their capabilities inline
        inputs = _inputs_removing("sglang.kernels.ops.mamba.qwen4_short_conv")
        self.assertCodemod(
            """
            register_kernel(
                KernelSpec(
                    op="mamba.fused_qwen4_short_conv_state",
                    backend=KernelBackend.TRITON,
                    target="sglang.kernels.ops.mamba.qwen4_short_conv:fused_qwen4_short_conv_state",
                    capabilities=frozenset({CapabilityRequirement.CUDA}),
                )
            )
            register_kernel(KernelSpec(op="m.keep", target="sglang.kernels.ops.mamba.transfer_mamba:run",
                                       capabilities=frozenset(compute_caps())))
            """,
            """
            register_kernel(KernelSpec(op="m.keep", target="sglang.kernels.ops.mamba.transfer_mamba:run",
                                       capabilities=frozenset(compute_caps())))
            """,
            inputs=inputs,
        )

    def test_kernel_record_with_an_arch_window_goes(self) -> None:
        # 0.5.22's kernels/ops/attention/__init__.py: FA4's D512 GQA record names its SM window
        inputs = _inputs_removing("sglang.kernels.ops.attention.flash_attention_v4")
        self.assertCodemod(
            """
            register_kernel(
                KernelSpec(
                    op="attention.flash_attn_gqa_512",
                    target="sglang.kernels.ops.attention.flash_attention_v4:flash_attn_gqa_512",
                    capabilities=frozenset(
                        {CapabilityRequirement.cuda(min_sm=(10, 0), max_sm=(11, 9))}
                    ),
                )
            )
            register_kernel(
                KernelSpec(
                    op="attention.chunk_kda_fwd",
                    target="sglang.kernels.ops.attention.flash_attention_v4:chunk_kda_fwd",
                    capabilities=frozenset(
                        CapabilityRequirement.cuda(min_sm=sm, max_sm=sm)
                        for sm in ((10, 0), (10, 3))
                    ),
                )
            )
            register_kernel(KernelSpec(op="x", target="sglang.kernels.ops.attention.flash_attention_v4:f",
                                       capabilities=frozenset({device.cuda(min_sm=(9, 0))})))
            register_kernel(KernelSpec(op="y", target="sglang.kernels.ops.attention.flash_attention_v4:g",
                                       capabilities=frozenset(probe(sm) for sm in SMS)))
            """,
            """
            register_kernel(KernelSpec(op="x", target="sglang.kernels.ops.attention.flash_attention_v4:f",
                                       capabilities=frozenset({device.cuda(min_sm=(9, 0))})))
            register_kernel(KernelSpec(op="y", target="sglang.kernels.ops.attention.flash_attention_v4:g",
                                       capabilities=frozenset(probe(sm) for sm in SMS)))
            """,
            inputs=inputs,
        )

    def test_kernel_record_built_by_an_undeclared_call_stays(self) -> None:
        self.assertUnchanged(
            """
            register_kernel(make_spec(target="sglang.kernels.ops.mamba.causal_conv1d:causal_conv1d_fwd"))
            """,
            inputs=_inputs_removing("sglang.kernels.ops.mamba.causal_conv1d"),
        )

    def test_registration_with_a_computed_argument_stays(self) -> None:
        self.assertUnchanged(
            """
            StorageBackendFactory.register_backend("eic", "sglang.srt.mem_cache.storage.eic.eic_storage", name())
            """,
            inputs=_inputs_removing("sglang.srt.mem_cache.storage.eic"),
        )


class TestStringValues(_FeatureTest):
    TRANSFORM = RemoveDeadBranches

    def test_string_value_rule_inlines_the_early_return(self) -> None:
        self.assertCodemod(
            """
            async def add_external_corpus(self, obj):
                self.auto_create_handle_loop()
                if self.server_args.speculative_algorithm != "NGRAM":
                    return Output(success=False, message="Ngram speculative decoding is not enabled.")
                from sglang.srt.speculative.cpp_ngram.external_corpus import SEPARATOR_TOKEN

                return await self.send(obj, SEPARATOR_TOKEN)
            """,
            """
            async def add_external_corpus(self, obj):
                self.auto_create_handle_loop()
                return Output(success=False, message="Ngram speculative decoding is not enabled.")
            """,
        )

    def test_list_with_an_unknown_value_stays(self) -> None:
        self.assertUnchanged(
            """
            if self.speculative_algorithm not in ["NGRAM", None]:
                raise ValueError("LoRA needs NGRAM")
            """
        )


def test_bad_feature_field_is_one_line_error(tmp_path) -> None:
    from shrinker.errors import ShrinkError

    text = (load_rules("deepseek").source and open(load_rules("deepseek").source).read())
    bad = tmp_path / "deepseek.toml"
    bad.write_text(text.replace('returns_none = true', 'returns_none = "yes please"', 1))
    with pytest.raises(ShrinkError, match=r"features\.0\.predicates\.0\.returns_none"):
        load_rules(path=bad)


def test_value_rule_needs_a_value(tmp_path) -> None:
    from shrinker.errors import ShrinkError

    text = open(load_rules("deepseek").source).read()
    bad = tmp_path / "deepseek.toml"
    bad.write_text(text.replace('never_members = ["AttentionArch.SSM"]', "", 1))
    with pytest.raises(ShrinkError, match="give never, never_members or none"):
        load_rules(path=bad)


def test_planner_marks_feature_guards_apart() -> None:
    from shrinker.plan.reach import feature_table, record_dead
    from shrinker.plan.registries import RegistryView

    rules = load_rules("deepseek")
    table, features = PredicateTable(rules.platform), feature_table(rules)
    walrus = {"guards": ["cfg := mambaish_config(runner.model_config)"], "function": "attn_backend_wrapper"}
    assert record_dead(walrus, "m", RegistryView(), table, rules, features).code == "feature_guard"
    assert record_dead(walrus, "m", RegistryView(), table, rules) is None  # without the decisions: live
    hip = {"guards": ["_is_hip"], "function": ""}
    assert record_dead(hip, "m", RegistryView(), table, rules, features).code == "platform_guard"

    # a fixed feature parameter decides a guard only inside its own function (0.5.22's dllm_fa4)
    dllm = {"guards": ["dllm_fa4"], "function": "TritonAttnBackend.__init__"}
    backend = "sglang.srt.layers.attention.triton_backend"
    assert record_dead(dllm, backend, RegistryView(), table, rules, features).code == "feature_guard"
    assert record_dead({**dllm, "function": "TritonAttnBackend.other"}, backend, RegistryView(), table, rules,
                       features) is None
    assert record_dead(dllm, "m", RegistryView(), table, rules, features) is None


def test_fold_features_implies_dead_branches_only() -> None:
    from shrinker.codemods.pipeline import resolve_codemods

    assert resolve_codemods(["fold_features", "remove_dead_imports", "remove_unused_names"]) == [
        "fold_features", "remove_dead_branches", "remove_platform_bound", "remove_dead_imports",
        "remove_unused_names"]


VISION_0_5_21 = '''\
if _is_cuda:
    from sglang.kernels.ops.attention.flash_attention import flash_attn_varlen_func

    def flash_attn_func(*args, ver: int = 3, **kwargs):
        if ver == 4:
            from sglang.kernels.ops.attention.flash_attention_v4 import (
                flash_attn_varlen_func as flash_attn_varlen_func_fa4,
            )

            return flash_attn_varlen_func_fa4(*args, **kwargs)
        return flash_attn_varlen_func(*args, **kwargs)


class VisionFlash3Attention(nn.Module):
    def forward(self, q, k, v, **fa_kwargs):
        return flash_attn_func(q, k, v, **fa_kwargs)


class VisionFlash4Attention(nn.Module):
    def forward(self, q, k, v, cu_seqlens):
        return flash_attn_func(q, k, v, cu_seqlens_q=cu_seqlens, ver=4)


QKV_BACKEND_IMPL = {
    "fa3": VisionFlash3Attention,
    "fa4": VisionFlash4Attention,  # Blackwell's default
}
'''


@pytest.mark.parametrize("module, folds", [("sglang.srt.layers.attention.vision", True),
                                           ("sglang.srt.layers.attention.other", False)])
def test_fa4_vision_class_goes_and_its_ver_branch_folds_in_its_module_only(module: str, folds: bool) -> None:
    """0.5.21's vision tower (kept: DeepSeek V4's model file imports V4.1's ViT): VisionFlash4Attention
    is the only caller passing ver=4, so with it gone `ver == 4` folds there, and the FA4 import with it."""
    codemods = ["remove_feature_classes", "fold_features"]
    result = transform_source(VISION_0_5_21, path="vision.py", module=module, inputs=feature_inputs(),
                              codemods=codemods)
    assert result.status == "success", result.error
    assert "VisionFlash4Attention" not in result.code and '"fa4"' not in result.code
    assert "class VisionFlash3Attention" in result.code and '"fa3": VisionFlash3Attention' in result.code
    assert ("flash_attention_v4" not in result.code) is folds
    again = transform_source(result.code, path="vision.py", module=module, inputs=feature_inputs(), codemods=codemods)
    assert again.status == "skip"
