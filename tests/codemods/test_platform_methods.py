"""remove_platform_methods: before/after cases in SGLang v0.5.16 shapes (snippets written for these tests)."""

from __future__ import annotations

from dataclasses import replace

from shrinker.codemods.platform_methods import RemovePlatformMethods
from tests.codemods.helpers import PlatformCodemodTest, deepseek_inputs


class TestPlatformMethods(PlatformCodemodTest):
    TRANSFORM = RemovePlatformMethods

    def test_multi_platform_op_keeps_cuda_and_native(self) -> None:
        self.assertCodemod(
            """
            class SiluAndMul(MultiPlatformOp):
                def forward_native(self, x: torch.Tensor) -> torch.Tensor:
                    d = x.shape[-1] // 2
                    return F.silu(x[..., :d]) * x[..., d:]

                def forward_cuda(self, x: torch.Tensor) -> torch.Tensor:
                    out = torch.empty_like(x[..., : x.shape[-1] // 2])
                    silu_and_mul(x, out)
                    return out

                # Ascend fused op.
                def forward_npu(self, x: torch.Tensor) -> torch.Tensor:
                    return torch_npu.npu_swiglu(x)

                @torch.compile(dynamic=True)
                def forward_hip(self, x: torch.Tensor) -> torch.Tensor:
                    return self.forward_native(x)

                def forward_xpu(self, x):
                    return self.forward_native(x)

                forward_musa = forward_cuda
            """,
            """
            class SiluAndMul(MultiPlatformOp):
                def forward_native(self, x: torch.Tensor) -> torch.Tensor:
                    d = x.shape[-1] // 2
                    return F.silu(x[..., :d]) * x[..., d:]

                def forward_cuda(self, x: torch.Tensor) -> torch.Tensor:
                    out = torch.empty_like(x[..., : x.shape[-1] // 2])
                    silu_and_mul(x, out)
                    return out
            """,
        )

    def test_class_body_that_empties_gets_pass(self) -> None:
        self.assertCodemod(
            """
            class NpuOnlyMixin:
                def forward_npu(self, x):
                    return x
            """,
            """
            class NpuOnlyMixin:
                pass
            """,
        )

    def test_dispatch_table_entries(self) -> None:
        self.assertCodemod(
            """
            class Op(MultiPlatformOp):
                def forward_cuda(self, x):
                    return x

                def forward_npu(self, x):
                    return x

                def forward_hip(self, x):
                    return x

                def table(self):
                    one_line = {"npu": self.forward_npu, "cuda": self.forward_cuda}
                    return {
                        "cuda": self.forward_cuda,
                        "hip": self.forward_hip,
                        "npu": self.forward_npu,
                    }
            """,
            """
            class Op(MultiPlatformOp):
                def forward_cuda(self, x):
                    return x

                def table(self):
                    one_line = {"cuda": self.forward_cuda}
                    return {
                        "cuda": self.forward_cuda,
                    }
            """,
        )

    def test_referenced_methods_stay_as_they_are(self) -> None:
        self.assertCodemod(
            """
            class UnquantizedFusedMoEMethod:
                def forward_cuda(self, layer, x):
                    return self.runner.run(x)

                def forward_cpu(self, layer, x):
                    return self.forward_npu(layer, x)

                def forward_npu(self, layer, x):
                    return x

                def forward_xpu(self, layer, x):
                    return x

                forward_native = forward_cpu
            """,
            """
            class UnquantizedFusedMoEMethod:
                def forward_cuda(self, layer, x):
                    return self.runner.run(x)

                def forward_cpu(self, layer, x):
                    return self.forward_npu(layer, x)

                def forward_npu(self, layer, x):
                    return x

                forward_native = forward_cpu
            """,
            findings=[],  # kept as upstream had them: they still work, nothing to report
        )

    def test_call_from_kept_code_keeps_the_method(self) -> None:
        self.assertCodemod(
            """
            class DeepseekV2MoE(nn.Module):
                def forward_normal(self, hidden_states):
                    if use_intel_amx_backend(self.gate_up_proj):
                        return self.forward_cpu(hidden_states)
                    return self.experts(hidden_states)

                def forward_cpu(self, hidden_states):
                    return hidden_states
            """,
            """
            class DeepseekV2MoE(nn.Module):
                def forward_normal(self, hidden_states):
                    if use_intel_amx_backend(self.gate_up_proj):
                        return self.forward_cpu(hidden_states)
                    return self.experts(hidden_states)

                def forward_cpu(self, hidden_states):
                    return hidden_states
            """,
            findings=[],
        )

    def test_strings_and_dynamic_lookups_stay(self) -> None:
        # kernels/fused_op.py shape: a table of method names for getattr dispatch keeps every entry
        # (BaseFusedOp indexes it by every KernelBackend member); a string elsewhere (getattr) stays,
        # with a finding.
        instance = self.assertCodemod(
            """
            BACKEND_METHODS = {
                KernelBackend.TORCH: "forward_native",
                KernelBackend.TORCH_NPU: "forward_npu",
            }
            FALLBACK = getattr(Op, "forward_npu", None)

            class Op:
                def dispatch(self, key):
                    return getattr(self, f"forward_{key}", None)

                def forward_npu(self, x):
                    return x
            """,
            """
            BACKEND_METHODS = {
                KernelBackend.TORCH: "forward_native",
                KernelBackend.TORCH_NPU: "forward_npu",
            }
            FALLBACK = getattr(Op, "forward_npu", None)

            class Op:
                def dispatch(self, key):
                    return getattr(self, f"forward_{key}", None)
            """,
            findings=["string names platform method `forward_npu`"],
        )
        self.assertEqual(instance.changes["methods_removed"], 1)
        self.assertNotIn("dispatch_entries_removed", instance.changes)

    def test_string_naming_a_method_no_class_defines_is_a_label(self) -> None:
        # 0.5.19's arg_groups/platform_hook.py: ServerArgs' _handle_*_backends methods became module
        # functions; the resolution labels still carry the old method names. No class of the tree
        # defines them, so the string cannot look a removed method up: no finding. A name some class
        # does define (forward_npu) is still reported.
        code = """
            def handle_cpu_backends(server_args):
                declare_resolution(server_args, "_handle_cpu_backends", sampling_backend="pytorch")
                return getattr(server_args, "forward_npu", None)
            """
        inputs = replace(deepseek_inputs(), defined_methods=frozenset({"forward_npu"}))
        instance = self.assertUnchanged(code, inputs=inputs)
        self.assertEqual(len(instance.findings), 1, instance.findings)
        self.assertIn("`forward_npu`", instance.findings[0])
        unknown = self.assertUnchanged(code)  # tree-wide methods not known: every string is reported
        self.assertEqual(len(unknown.findings), 2, unknown.findings)

    def test_reference_to_a_method_defined_elsewhere_is_reported(self) -> None:
        self.assertCodemod(
            """
            class Child(Base):
                def forward(self, x):
                    return self.forward_musa(x)
            """,
            """
            class Child(Base):
                def forward(self, x):
                    return self.forward_musa(x)
            """,
            findings=["reference to platform method `forward_musa`"],
        )

    def test_module_functions_and_other_names_untouched(self) -> None:
        self.assertUnchanged(
            """
            def forward_cuda_graph(x):
                return x

            class Op:
                def forward_cuda(self, x):
                    return x

                def _forward_npu_fused(self, x):
                    return x
            """
        )

    def test_methods_named_by_glob(self) -> None:
        # kv_cache_configurator.py shape: `_build_ascend_*_kv_pool` builders (rules give a glob);
        # a name the glob does not match stays.
        self.assertCodemod(
            """
            class KVCacheConfigurator:
                def build(self):
                    return self._build_mla_kv_pool()

                def _build_mla_kv_pool(self):
                    return MLATokenToKVPool()

                def _build_ascend_mla_kv_pool(self):
                    from sglang.srt.hardware_backend.npu.memory_pool_npu import NPUMLATokenToKVPool

                    return NPUMLATokenToKVPool()
            """,
            """
            class KVCacheConfigurator:
                def build(self):
                    return self._build_mla_kv_pool()

                def _build_mla_kv_pool(self):
                    return MLATokenToKVPool()
            """,
        )

    def test_method_names_glob_matching(self) -> None:
        from shrinker.codemods.platform_methods import MethodNames

        names = MethodNames(["forward_npu", "_build_ascend_*"])
        self.assertIn("forward_npu", names)
        self.assertIn("_build_ascend_swa_kv_pool", names)
        self.assertNotIn("_build_mla_kv_pool", names)
        self.assertNotIn("forward_npu_fused", names)
        self.assertIsNotNone(names.regex().search("self._build_ascend_mha_kv_pool("))
        self.assertIsNone(names.regex().search("self._build_mla_kv_pool("))


class TestPlatformCallSites(PlatformCodemodTest):
    TRANSFORM = RemovePlatformMethods

    def test_call_site_on_its_own_line_goes_with_the_method(self) -> None:
        # ServerArgs.__post_init__ shape: per-device set-up methods called one per line
        self.assertCodemod(
            """
            class ServerArgs:
                def __post_init__(self):
                    self._handle_cpu_backends()
                    self._handle_cuda_graph_config()

                def _handle_cpu_backends(self):
                    if self.device == "cpu":
                        self.attention_backend = "intel_amx"

                def _handle_cuda_graph_config(self):
                    pass


            class Only:
                def setup(self):
                    self._handle_npu_backends()

                def _handle_npu_backends(self):
                    pass
            """,
            """
            class ServerArgs:
                def __post_init__(self):
                    self._handle_cuda_graph_config()

                def _handle_cuda_graph_config(self):
                    pass


            class Only:
                def setup(self):
                    pass
            """,
        )
