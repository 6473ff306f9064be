"""fold_platform: before/after cases in SGLang v0.5.16 shapes (snippets written for these tests)."""

from __future__ import annotations

from shrinker.codemods.fold_platform import FoldPlatformPredicates, Folder, platform_tests
from shrinker.codemods.inputs import CodemodInputs, Removed
from tests.codemods.helpers import PlatformCodemodTest, deepseek_inputs, removed_parser_inputs

import libcst as cst


class TestFoldPlatform(PlatformCodemodTest):
    TRANSFORM = FoldPlatformPredicates

    def test_derived_flag_from_env_and_module_flag(self) -> None:
        self.assertCodemod(
            """
            _is_hip = is_hip()
            _use_aiter = get_bool_env_var("SGLANG_USE_AITER") and _is_hip
            _use_aiter_gfx95 = _use_aiter and is_gfx95_supported()
            """,
            """
            _is_hip = is_hip()
            _use_aiter = False
            _use_aiter_gfx95 = False
            """,
        )

    def test_derived_flag_from_envs_object_and_call(self) -> None:
        self.assertCodemod(
            """
            _use_aiter = envs.SGLANG_USE_AITER.get() and is_hip()
            _use_cutlass: bool = _is_cuda and envs.SGLANG_USE_CUTLASS.get()
            """,
            """
            _use_aiter = False
            _use_cutlass: bool = envs.SGLANG_USE_CUTLASS.get()
            """,
        )

    def test_env_flag_a_rule_names_folds_in_tests(self) -> None:
        # dsv4/indexer.py: SGLANG_OPT_USE_AITER_INDEXER is a platform predicate (rules: env flag that
        # selects aiter); other flags, and other uses of the same one (.set), stay as they are. A test
        # that folds whole is remove_dead_branches' (tests/codemods/test_dead_branches.py).
        self.assertCodemod(
            """
            if envs.SGLANG_OPT_USE_AITER_INDEXER.get():
                logits = _aiter_fp8_paged_mqa_logits(q)
            elif envs.SGLANG_OPT_USE_CUTEDSL.get():
                logits = cutedsl(q)
            use_aiter = envs.SGLANG_OPT_USE_AITER_INDEXER.get() and not use_fp4
            skip = get_bool_env_var("SGLANG_OPT_USE_AITER_INDEXER", "false") or force
            envs.SGLANG_OPT_USE_AITER_INDEXER.set(False)
            """,
            """
            if envs.SGLANG_OPT_USE_AITER_INDEXER.get():
                logits = _aiter_fp8_paged_mqa_logits(q)
            elif envs.SGLANG_OPT_USE_CUTEDSL.get():
                logits = cutedsl(q)
            use_aiter = False
            skip = force
            envs.SGLANG_OPT_USE_AITER_INDEXER.set(False)
            """,
        )

    def test_call_in_test_is_simplified(self) -> None:
        self.assertCodemod(
            """
            def forward(self, x):
                if self.use_fused and not is_hip():
                    return fused(x)
                return x
            """,
            """
            def forward(self, x):
                if self.use_fused:
                    return fused(x)
                return x
            """,
        )

    def test_platform_object_call(self) -> None:
        self.assertCodemod(
            """
            if current_platform.is_npu() or server_args.enable_torch_compile:
                warmup()
            """,
            """
            if server_args.enable_torch_compile:
                warmup()
            """,
        )

    def test_platform_strings(self) -> None:
        self.assertCodemod(
            """
            if self.device == "npu" or use_graph:
                capture()
            if x.device.type == "cpu" and _is_cuda:
                move(x)
            if device in ("npu", "xpu") or pinned:
                pin()
            """,
            """
            if use_graph:
                capture()
            if x.device.type == "cpu":
                move(x)
            if pinned:
                pin()
            """,
        )

    def test_predicate_called_with_arguments(self) -> None:
        # deepseek_v2.py shape: `use_intel_amx_backend(self.shared_experts.gate_up_proj)` (with_args in
        # the rules); an argument with a side effect, or a predicate without with_args, keeps the call.
        self.assertCodemod(
            """
            if use_intel_amx_backend(self.shared_experts.gate_up_proj) or ready:
                out = self.forward_cpu(hidden_states)
            if use_intel_amx_backend(make_layer()) or ready:
                go()
            if is_hip(device) or ready:
                go()
            """,
            """
            if ready:
                out = self.forward_cpu(hidden_states)
            if use_intel_amx_backend(make_layer()) or ready:
                go()
            if is_hip(device) or ready:
                go()
            """,
        )

    def test_isinstance_of_a_class_from_a_removed_module(self) -> None:
        # disaggregation/utils.py / deepseek_v4_nextn.py shapes: no instance of a removed class exists.
        from shrinker.codemods.inputs import CodemodInputs, Removed
        from shrinker.rules.load import load_rules

        inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(modules=frozenset({
            "sglang.srt.hardware_backend.npu.memory_pool_npu", "sglang.srt.layers.quantization.modelslim"})))
        self.assertCodemod(
            """
            from sglang.srt.hardware_backend.npu.memory_pool_npu import NPUMLATokenToKVPool
            from sglang.srt.layers.quantization.modelslim.modelslim import ModelSlimConfig

            if isinstance(pool, (DSATokenToKVPool, NPUMLATokenToKVPool)):
                register(pool)
            elif isinstance(pool, (NPUMLATokenToKVPool, MHATokenToKVPool, DSATokenToKVPool)) and ready:
                other(pool)
            if isinstance(quant_config, ModelSlimConfig) or verbose:
                log()
            if isinstance(pool, MHATokenToKVPool):
                plain()
            """,
            """
            from sglang.srt.hardware_backend.npu.memory_pool_npu import NPUMLATokenToKVPool
            from sglang.srt.layers.quantization.modelslim.modelslim import ModelSlimConfig

            if isinstance(pool, DSATokenToKVPool):
                register(pool)
            elif isinstance(pool, (MHATokenToKVPool, DSATokenToKVPool)) and ready:
                other(pool)
            if verbose:
                log()
            if isinstance(pool, MHATokenToKVPool):
                plain()
            """,
            inputs=inputs,
        )

    def test_isinstance_of_a_class_the_tree_only_tests_against(self) -> None:
        # 0.5.23's hisparse_coordinator / hybrid_pool_assembler once the MiniMax models went: the class stays
        # defined (its module is kept) but nothing builds one (graph/tested_classes)
        from shrinker.codemods.inputs import CodemodInputs, Removed
        from shrinker.rules.load import load_rules

        inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(),
                               tested_only_classes=frozenset({"MiniMaxSparseKVPool"}))
        self.assertCodemod(
            """
            from sglang.srt.mem_cache.memory_pool import MiniMaxSparseKVPool, ReqToTokenPool

            class Coordinator:
                def __init__(self, kvcache):
                    self.is_m3_hisparse = isinstance(kvcache, MiniMaxSparseKVPool)

                def matches(self, kvcache, components):
                    if isinstance(kvcache, (ReqToTokenPool, MiniMaxSparseKVPool)):
                        return False
                    return isinstance(kvcache, MiniMaxSparseKVPool) and components == {"k"}
            """,
            """
            from sglang.srt.mem_cache.memory_pool import MiniMaxSparseKVPool, ReqToTokenPool

            class Coordinator:
                def __init__(self, kvcache):
                    self.is_m3_hisparse = False

                def matches(self, kvcache, components):
                    if isinstance(kvcache, ReqToTokenPool):
                        return False
                    return False
            """,
            inputs=inputs,
        )

    def test_a_method_of_a_class_the_tree_only_tests_against_leaves_membership_literals(self) -> None:
        # 0.5.23's layer_boundary/fusions/allreduce.py once the Gemma models went (graph/tested_classes admits
        # `GemmaRMSNorm.forward_with_allreduce_fusion` only as such an element)
        from shrinker.codemods.inputs import CodemodInputs, Removed
        from shrinker.rules.load import load_rules

        inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(),
                               tested_only_classes=frozenset({"GemmaRMSNorm"}))
        self.assertCodemod(
            """
            from sglang.srt.layers.layernorm import GemmaRMSNorm, RMSNorm

            def preserves(plan):
                return (
                    flashinfer_preserves_residual
                    if isinstance(plan.norm, (RMSNorm, GemmaRMSNorm))
                    and type(plan.norm).forward_with_allreduce_fusion
                    in (
                        RMSNorm.forward_with_allreduce_fusion,
                        GemmaRMSNorm.forward_with_allreduce_fusion,  # gemma
                    )
                    else None
                )

            def only(f):
                return f not in (GemmaRMSNorm.forward_with_allreduce_fusion,)  # nothing left: stays
            """,
            """
            from sglang.srt.layers.layernorm import GemmaRMSNorm, RMSNorm

            def preserves(plan):
                return (
                    flashinfer_preserves_residual
                    if isinstance(plan.norm, RMSNorm)
                    and type(plan.norm).forward_with_allreduce_fusion
                    in (
                        RMSNorm.forward_with_allreduce_fusion,
                    )
                    else None
                )

            def only(f):
                return f not in (GemmaRMSNorm.forward_with_allreduce_fusion,)  # nothing left: stays
            """,
            inputs=inputs,
        )

    def test_a_class_only_tested_against_leaves_module_tuples_and_unions(self) -> None:
        # 0.5.23's hicache_auto_size `_SIZEABLE_POOLS` (read only as isinstance's classes, as graph/tested_classes
        # checks) and hisparse's `kvcache: HiSparseDSATokenToKVPool | MiniMaxSparseKVPool`
        from shrinker.codemods.inputs import CodemodInputs, Removed
        from shrinker.rules.load import load_rules

        inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(),
                               tested_only_classes=frozenset({"MiniMaxSparseKVPool"}))
        self.assertCodemod(
            """
            from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, MiniMaxSparseKVPool

            _SIZEABLE_POOLS = (
                MHATokenToKVPool,
                MiniMaxSparseKVPool,  # sparse
            )
            _ONLY = (MiniMaxSparseKVPool,)

            class Allocator:
                def __init__(self, kvcache: HiSparseDSATokenToKVPool | MiniMaxSparseKVPool, n: int) -> None:
                    self.kvcache: MiniMaxSparseKVPool | None = kvcache

                def pool(self) -> MiniMaxSparseKVPool:
                    local = (MiniMaxSparseKVPool, MHATokenToKVPool)  # not at module level: stays
                    return self.kvcache
            """,
            """
            from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, MiniMaxSparseKVPool

            _SIZEABLE_POOLS = (
                MHATokenToKVPool,
            )
            _ONLY = ()

            class Allocator:
                def __init__(self, kvcache: HiSparseDSATokenToKVPool, n: int) -> None:
                    self.kvcache: None = kvcache

                def pool(self) -> MiniMaxSparseKVPool:
                    local = (MiniMaxSparseKVPool, MHATokenToKVPool)  # not at module level: stays
                    return self.kvcache
            """,
            inputs=inputs,
        )

    def test_enum_member_named_for_a_platform(self) -> None:
        # disaggregation/utils.py shape: `transfer_backend == TransferBackend.ASCEND`; lower-case
        # attributes (`self.npu`) are not enum members and stay.
        self.assertCodemod(
            """
            if transfer_backend == TransferBackend.MOONCAKE:
                use_mooncake()
            elif transfer_backend == TransferBackend.ASCEND or forced:
                use_ascend()
            if backend != TransferBackend.NPU and x == self.npu:
                go()
            """,
            """
            if transfer_backend == TransferBackend.MOONCAKE:
                use_mooncake()
            elif forced:
                use_ascend()
            if x == self.npu:
                go()
            """,
        )

    def test_factory_registered_under_a_platform_name(self) -> None:
        # lora/backend/lora_registry.py shape; a registration under another name stays.
        self.assertCodemod(
            """
            @register_lora_backend("triton")
            def create_triton_backend():
                from sglang.srt.lora.backend.triton_backend import TritonLoRABackend

                return TritonLoRABackend


            @register_lora_backend("ascend")
            def create_ascend_backend():
                from sglang.srt.lora.backend.ascend_backend import AscendLoRABackend

                return AscendLoRABackend


            @register_lora_backend("torch_native")
            def create_torch_native_backend():
                return TorchNativeLoRABackend
            """,
            """
            @register_lora_backend("triton")
            def create_triton_backend():
                from sglang.srt.lora.backend.triton_backend import TritonLoRABackend

                return TritonLoRABackend


            @register_lora_backend("torch_native")
            def create_torch_native_backend():
                return TorchNativeLoRABackend
            """,
        )

    def test_function_local_flag_from_a_predicate_call(self) -> None:
        # bench_one_batch shape: `_use_mlx = use_mlx()` inside a function; the module flag stays.
        self.assertCodemod(
            """
            _is_hip = is_hip()

            def load_model(server_args):
                _use_mlx = use_mlx()
                runner = make_runner()
                if _use_mlx:
                    runner = MlxRunner()
                return runner
            """,
            """
            _is_hip = is_hip()

            def load_model(server_args):
                _use_mlx = False
                runner = make_runner()
                if _use_mlx:
                    runner = MlxRunner()
                return runner
            """,
        )

    def test_device_keyed_table_entries(self) -> None:
        # cuda_graph_setup.py / allocation.py / eagle_worker_v2.py shapes: entries for other devices go;
        # "cpu" goes only from a table that also has another platform's key.
        self.assertCodemod(
            """
            graph_runners = defaultdict(
                lambda: DecodeCudaGraphRunner,
                {
                    "cpu": CPUGraphRunner,
                    "npu": NPUGraphRunner,
                    "xpu": XPUGraphRunner,
                },
            )
            runners = {"xpu": EAGLEDraftCudaGraphRunner, "npu": Npu, "cuda": EAGLEDraftCudaGraphRunner}
            placement = {"cpu": pinned, "cuda": device}
            """,
            """
            graph_runners = defaultdict(
                lambda: DecodeCudaGraphRunner,
                {},
            )
            runners = {"cuda": EAGLEDraftCudaGraphRunner}
            placement = {"cpu": pinned, "cuda": device}
            """,
        )

    def test_not_of_a_partly_folded_expression(self) -> None:
        self.assertCodemod(
            """
            if not (enable_dp_attention and _is_cuda):
                pass
            if not(_is_npu or overlap):
                pass
            """,
            """
            if not enable_dp_attention:
                pass
            if not overlap:
                pass
            """,
        )

    def test_multiline_test_loses_parentheses_and_keeps_comments_elsewhere(self) -> None:
        self.assertCodemod(
            """
            # Pick the kernel.
            if (
                get_bool_env_var("SGLANG_ENABLE_JIT_DEEPGEMM")
                and not _is_hip
            ):  # CUDA only
                use_deep_gemm = True
            """,
            """
            # Pick the kernel.
            if get_bool_env_var("SGLANG_ENABLE_JIT_DEEPGEMM"):  # CUDA only
                use_deep_gemm = True
            """,
        )

    def test_or_group_keeps_its_parentheses_inside_and(self) -> None:
        self.assertCodemod(
            """
            if is_sm100 and (use_fp8 or use_fp4 or _use_aiter):
                pass
            """,
            """
            if is_sm100 and (use_fp8 or use_fp4):
                pass
            """,
        )

    def test_multiline_remainder_keeps_parentheses(self) -> None:
        self.assertCodemod(
            """
            if (
                self.enable_overlap
                and self.page_size > 1
                and not _is_npu
            ):
                pass
            """,
            """
            if (
                self.enable_overlap
                and self.page_size > 1
            ):
                pass
            """,
        )

    def test_no_keyword_glued_to_operand(self) -> None:
        self.assertCodemod(
            """
            if(_is_cuda and ready):
                pass
            x = a if(ready and not _is_hip)else b
            """,
            """
            if ready:
                pass
            x = a if ready else b
            """,
        )

    def test_ternary_and_comprehension_tests(self) -> None:
        self.assertCodemod(
            """
            block = 128 if (use_fp8 and _is_cuda) else 64
            sizes = [s for s in sizes if s > 0 and not _is_npu]
            """,
            """
            block = 128 if use_fp8 else 64
            sizes = [s for s in sizes if s > 0]
            """,
        )

    def test_side_effects_are_kept(self) -> None:
        self.assertUnchanged(
            """
            if self.ready() and _is_hip:
                pass
            _flag = load_kernel() and _is_hip
            if not (init() or _is_cuda):
                pass
            """
        )

    def test_side_effect_before_a_dropped_constant(self) -> None:
        # `True and f()` is f(): dropping the constant keeps the call.
        self.assertCodemod(
            """
            if _is_cuda and self.ready():
                pass
            """,
            """
            if self.ready():
                pass
            """,
        )

    def test_whole_constant_tests_are_left_to_dead_branches(self) -> None:
        self.assertUnchanged(
            """
            if not _is_hip:
                pass
            x = a if _is_npu else b
            """
        )

    def test_bindings_and_loops_untouched(self) -> None:
        self.assertUnchanged(
            """
            _is_hip = is_hip()
            _is_npu = is_npu()
            while not _is_hip:
                break
            """
        )

    def test_build_attribute_read_folds_even_in_a_predicate_definition(self) -> None:
        """`torch.version.hip` is None on a CUDA build wherever it stands, so the definition that reads
        it returns its CUDA value; the definition and its bindings stay (unused-names decides them).
        The file's only platform read is the attribute: the pre-filter must still pick it (0.5.23's
        dsv41_sparse.py, inkling_common/moe.py)."""
        self.assertCodemod(
            """
            def is_hip() -> bool:
                return torch.version.hip is not None  # ROCm build

            def scale(x):
                if x > 0 and torch.version.hip is None:
                    x = 2 * x
                return x
            """,
            """
            def is_hip() -> bool:
                return False  # ROCm build

            def scale(x):
                if x > 0:
                    x = 2 * x
                return x
            """,
        )

    def test_values_fold_where_they_stand(self) -> None:
        """Arguments, decorator keywords, return values and lambda bodies (issue 17's shapes from
        v0.5.16: topk.py, fp8.py, server_args.py, memory_pool.py)."""
        self.assertCodemod(
            """
            from .utils import _is_hip

            _is_npu = is_npu()
            _is_cpu = is_cpu()
            _use_aiter = False


            @torch.compile(dynamic=True, backend=get_compiler_backend(), disable=_is_npu)  # why
            def f(x, is_aiter_moe):
                padding_size = get_moe_padding_size(_use_aiter)
                g(is_aiter_moe, IS_HIP=_is_hip, enable=_is_hip and x)
                check = lambda: is_hip() or is_npu() or is_cpu()
                return _is_cpu or self.use_flashinfer_trtllm_moe
            """,
            """
            from .utils import _is_hip

            _is_npu = is_npu()
            _is_cpu = is_cpu()
            _use_aiter = False


            @torch.compile(dynamic=True, backend=get_compiler_backend(), disable=False)  # why
            def f(x, is_aiter_moe):
                padding_size = get_moe_padding_size(False)
                g(is_aiter_moe, IS_HIP=False, enable=False)
                check = lambda: False
                return self.use_flashinfer_trtllm_moe
            """,
        )

    def test_a_value_keeps_what_is_not_a_bool(self) -> None:
        """`y or False` is `y` only when y is a bool (`0 or False` is False): the honest form stays."""
        self.assertCodemod(
            """
            _is_hip = is_hip()
            y = dict(k=n or _is_hip, j=(n > 1) or _is_hip, m=n and _is_hip, b=bool(n) and _is_hip)
            """,
            """
            _is_hip = is_hip()
            y = dict(k=n or False, j=(n > 1), m=n and False, b=False)
            """,
        )

    def test_a_bare_predicate_function_as_a_value_stays(self) -> None:
        """`register(is_npu)` passes the function; only names bound to values (flags) fold as values."""
        self.assertUnchanged(
            """
            from sglang.srt.utils import is_npu

            register(is_npu)
            hooks = [is_hip]
            """
        )

    def test_a_none_constant_whose_platform_binding_folds_away(self) -> None:
        """0.5.20 deepseek_v4_wo_a_fp8: the aiter import was the only other binding; once its branch is
        dead, `_kernel is not None` is False (and its try-import, whose handler logs the error, goes)."""
        self.assertCodemod(
            """
            _kernel = None
            if _is_hip and _is_gfx95_supported:
                from aiter.ops import kernel as _kernel

            def supported() -> bool:
                return _kernel is not None
            """,
            """
            _kernel = None
            if _is_hip and _is_gfx95_supported:
                from aiter.ops import kernel as _kernel

            def supported() -> bool:
                return False
            """,
        )

    def test_a_none_constant_bound_elsewhere_stays(self) -> None:
        self.assertUnchanged(
            """
            _kernel = None
            _cache = None

            def supported() -> bool:
                return _kernel is not None

            def load():
                global _cache
                _cache = build()
                return _cache is None

            def local(_kernel=None):
                return _kernel is None
            """
        )

    def test_an_attribute_set_from_a_platform_call_folds(self) -> None:
        """0.5.20 deepseek_v4: `self.use_npu_arch35_mxfp8_wo_a = use_npu_arch35_mxfp8_wo_a(quant_config)`,
        a predicate the vocabulary names (first word 'npu'), called with an argument."""
        self.assertCodemod(
            """
            def __init__(self, quant_config):
                self.use_npu_arch35_mxfp8_wo_a = use_npu_arch35_mxfp8_wo_a(quant_config)
                if not (_FP8_WO_A_GEMM or use_npu_arch35_mxfp8_wo_a(self.quant_config)):
                    self.x = 1
            """,
            """
            def __init__(self, quant_config):
                self.use_npu_arch35_mxfp8_wo_a = False
                if not _FP8_WO_A_GEMM:
                    self.x = 1
            """,
        )

    def test_npu_env_switches_fold(self) -> None:
        self.assertCodemod(
            """
            if kvc.use_mla_backend:
                if envs.SGLANG_NPU_ENABLE_SPARSE_KV_OFFLOAD.get() or ready:
                    size = npu_size()
            """,
            """
            if kvc.use_mla_backend:
                if ready:
                    size = npu_size()
            """,
        )

    def test_asserts(self) -> None:
        """One that holds on CUDA goes; one that fails there keeps its message (the answer a CUDA user
        gets) with its test written `False`, so it reads no predicate the platform batch takes away; a
        partly platform test is simplified."""
        self.assertCodemod(
            """
            def check(self, x):
                assert not _is_npu and not (
                    _is_cpu and _cpu_has_amx_support
                ), "not on npu"
                assert is_npu(), "MindSpore model impl is only supported on Ascend npu."
                assert(get_platform().is_npu)  # an error path
                assert False, "already folded"
                assert x and not _is_npu
            """,
            """
            def check(self, x):
                assert False, "MindSpore model impl is only supported on Ascend npu."
                assert False  # an error path
                assert False, "already folded"
                assert x
            """,
        )

    def test_fstring_fields_fold_as_values(self) -> None:
        self.assertCodemod(
            """
            raise RuntimeError(f"needs gfx95 ({is_gfx95_supported()}), hip={get_platform().is_hip!r} {n}")
            print(f"{is_npu()=}")
            """,
            """
            raise RuntimeError(f"needs gfx95 ({False}), hip={False!r} {n}")
            print(f"{is_npu()=}")
            """,
        )

    def test_parameters_named_like_predicates_are_not_folded(self) -> None:
        instance = self.assertUnchanged(
            """
            def get_moe_padding_size(is_aiter_moe):
                if is_aiter_moe and pad:
                    return 128
                return 0
            """
        )
        self.assertEqual(instance.findings, [])  # left alone, which is right: nothing to report

    def test_calls_only_predicate_needs_a_call(self) -> None:
        # `is_cpu` is calls_only in the rules: a bare `is_cpu` may be a local bool of anything.
        self.assertCodemod(
            """
            if is_cpu and x:
                pass
            if is_cpu() or x:
                pass
            """,
            """
            if is_cpu and x:
                pass
            if x:
                pass
            """,
        )


def test_folder_values_and_purity() -> None:
    folder = Folder(deepseek_inputs())

    def fold(text: str):
        result = folder.fold(cst.parse_expression(text))
        return result.value, result.pure, result.pred

    assert fold("_is_hip") == (False, True, True)
    assert fold("is_cuda()") == (True, True, True)
    assert fold("not current_platform.is_npu()") == (True, True, True)
    assert fold('get_bool_env_var("X") and _is_hip') == (False, True, True)
    assert fold("self.ready() and _is_hip") == (False, False, True)
    assert fold("False or _is_hip") == (False, True, True)
    assert fold("x and True") == (None, True, False)  # no predicate: nothing to fold
    assert fold('device.type == "cpu"') == (None, True, False)
    # 0.5.17's runtime_context accessors; `get_model()` is pure with no arguments only (a loader shares the name)
    assert fold("get_disagg().language_only and _is_hip") == (False, True, True)
    assert fold('get_model().model_impl.lower() == "mindspore" and _is_npu') == (False, True, True)
    assert fold("get_model(model_config=cfg).ok and _is_npu") == (False, False, True)


def test_platform_tests_lists_what_is_left() -> None:
    code = "if _is_hip:\n    pass\nif x:\n    pass\ny = 1 if self.f() and is_npu() else 2\n"
    assert platform_tests(code, deepseek_inputs()) == [(1, "_is_hip"), (5, "self.f() and is_npu()")]
    assert platform_tests("if x:\n    pass\n", deepseek_inputs()) == []


def test_pure_methods_from_the_rules_let_a_platform_test_fold():
    """`a2a_backend.is_none() and is_npu()`: is_* queries are declared pure, so the test is False."""
    from shrinker.codemods.inputs import CodemodInputs, Removed
    from shrinker.codemods.pipeline import transform_source
    from shrinker.rules.load import load_rules

    inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed())
    src = ("def make(a2a_backend):\n"
           "    if a2a_backend.is_none() and is_npu():\n        return npu()\n"
           "    if self.flush() and is_npu():\n        return other()\n"
           "    return cuda()\n")
    out = transform_source(src, path="x.py", module="x", inputs=inputs, codemods=["fold_platform"]).code
    assert "return npu()" not in out  # decided: a pure query and a False predicate
    assert "self.flush()" in out  # an unknown call keeps its test (its side effect stays)


def test_a_removed_architecture_folds_inside_a_larger_test() -> None:
    from shrinker.codemods.inputs import CodemodInputs, Removed
    from shrinker.rules.load import load_rules
    from tests.codemods.helpers import run_transform

    inputs = CodemodInputs(rules=load_rules("deepseek"),
                           removed=Removed(registry_keys={"models": frozenset({"Qwen2ForCausalLM"})}))
    code, _ = run_transform(FoldPlatformPredicates, 'if ready and arch != "Qwen2ForCausalLM":\n    go()\n', inputs)
    assert code == "if ready:\n    go()\n"
    code, _ = run_transform(FoldPlatformPredicates, 'if ready or arch == "Qwen2ForCausalLM":\n    go()\n', inputs)
    assert code == "if ready:\n    go()\n"


def test_a_removed_architecture_test_with_side_effects_stays_without_a_finding() -> None:
    # 0.5.16 eagle_worker_v2: `...hf_config.architectures[0] == "Qwen3MoeForCausalLMMTP"`: an index read
    # is pure, so the test is False (remove_dead_branches takes the branch); one that calls stays
    from shrinker.codemods.dead_branches import RemoveDeadBranches
    from shrinker.codemods.inputs import CodemodInputs, Removed
    from shrinker.rules.load import load_rules
    from tests.codemods.helpers import run_transform

    inputs = CodemodInputs(rules=load_rules("deepseek"),
                           removed=Removed(registry_keys={"models": frozenset({"Qwen2ForCausalLM"})}))
    src = 'if cfg.architectures[0] == "Qwen2ForCausalLM":\n    go()\nx()\n'
    code, _ = run_transform(RemoveDeadBranches, src, inputs)
    assert code == "x()\n"
    src = 'if load(cfg)[0] == "Qwen2ForCausalLM":\n    go()\n'
    code, instance = run_transform(FoldPlatformPredicates, src, inputs)
    assert code == src
    assert instance.findings == []
    code, _ = run_transform(RemoveDeadBranches, src, inputs)
    assert code == src


def test_a_mapping_lookup_by_key_is_pure() -> None:
    """rules: pure_methods `get("")`: 0.5.20 weight_utils tests `hf_quant_config.get("quant_method") ==
    "quark" and is_hip()`; a queue's `q.get()` / `q.get(block)` may have effects."""
    from shrinker.codemods.fold_platform import Folder

    folder = Folder(deepseek_inputs())
    assert folder.pure(cst.parse_expression('hf_quant_config.get("quant_method") == "quark"'))
    assert not folder.pure(cst.parse_expression("q.get()"))
    assert not folder.pure(cst.parse_expression("q.get(block)"))
    test = 'not (cfg.is_draft and hf_quant_config.get("quant_method") == "quark" and is_hip() and f(cfg))'
    folded = folder.fold(cst.parse_expression(test))
    assert folded.value is True and folded.pure


class TestFoldPlatformFactsAndProbes(PlatformCodemodTest):
    """0.5.23 shapes: the runtime context's facts object and torch's per-vendor device probes, folded
    wherever they stand (tests, tuple elements, local flags); a tensor's `.is_cuda` stays torch's."""

    TRANSFORM = FoldPlatformPredicates

    def test_facts_object_attributes_fold_like_the_predicate_calls(self) -> None:
        # deepseek_v4_hook.py: `is_cuda` is a calls-only predicate, yet on get_platform() it is the probe
        self.assertCodemod(
            """
            def check(cfg, x):
                if get_platform().is_cuda and cfg.on:
                    run()
                if not get_platform().is_hip or x.is_cuda:
                    other()
                is_hip = get_platform().is_hip
                if get_platform().is_sm90 and not get_platform().is_npu:
                    hopper()
            """,
            """
            def check(cfg, x):
                if cfg.on:
                    run()
                if not get_platform().is_hip or x.is_cuda:
                    other()
                is_hip = False
                if get_platform().is_sm90:
                    hopper()
            """,
        )

    def test_facts_in_tuple_elements_fold_as_values(self) -> None:
        # deepseek_v4_hook.py: a table of (feature, enabled) pairs; `X and False` is False only where X is
        # a bool, and `X or False` keeps its honest form (its value is X's only when X is a bool)
        self.assertCodemod(
            """
            incompatible = (
                ("PD prefill on ROCm", cfg.mode == "prefill" and get_platform().is_hip),
                ("DP attention on ROCm", get_platform().is_hip and attn_dp_enabled_of(cfg)),
                ("LoRA", cfg.enable_lora),
                ("or value", cfg.name or get_platform().is_npu),
            )
            table = {"amd": get_platform().is_hip, "nvidia": get_platform().is_cuda}
            """,
            """
            incompatible = (
                ("PD prefill on ROCm", False),
                ("DP attention on ROCm", False),
                ("LoRA", cfg.enable_lora),
                ("or value", cfg.name or False),
            )
            table = {"amd": False, "nvidia": True}
            """,
        )

    def test_device_probes_of_other_vendors_fold(self) -> None:
        # srt/utils/common.py and parallel_state.py: torch.cuda's probe stays, other vendors' fold (a
        # test that folds whole is remove_dead_branches', below)
        self.assertCodemod(
            """
            def is_xpu() -> bool:
                return hasattr(torch, "xpu") and torch.xpu.is_available()

            def device():
                if torch.cuda.is_available():
                    return "cuda"
                elif hasattr(torch, "npu") and torch.npu.is_available():
                    return "npu"
                if torch.backends.mps.is_available() or torch.backends.cudnn.is_available():
                    return "x"
                return torch.xpu.is_available(0)
            """,
            """
            def is_xpu() -> bool:
                return False

            def device():
                if torch.cuda.is_available():
                    return "cuda"
                elif hasattr(torch, "npu") and torch.npu.is_available():
                    return "npu"
                if torch.backends.cudnn.is_available():
                    return "x"
                return torch.xpu.is_available(0)
            """,
        )

    def test_planner_evaluates_facts_and_probes(self) -> None:
        from shrinker.rules.predicates import evaluate

        table = deepseek_inputs().table
        value = lambda code: evaluate(cst.parse_expression(code), table)  # noqa: E731
        self.assertIs(value("get_platform().is_hip"), False)
        self.assertIs(value("get_platform().is_cuda"), True)
        self.assertIs(value("x.is_cuda"), None)
        self.assertIs(value("get_platform().is_sm90"), None)
        self.assertIs(value("platform().is_hip"), False)  # `is_hip` itself is a predicate name
        self.assertIs(value("torch.xpu.is_available()"), False)
        self.assertIs(value("torch.cuda.is_available()"), None)


class TestRemovedArchitectures(PlatformCodemodTest):
    """0.5.23 model_config.py / model_loader shapes: the served model is never an architecture the plan
    removes, so asking the served architectures for one is False and architecture lists lose it."""

    TRANSFORM = FoldPlatformPredicates

    @staticmethod
    def inputs():
        from shrinker.codemods.inputs import CodemodInputs, Removed
        from shrinker.rules.load import load_rules

        removed = frozenset({"Qwen2ForCausalLM", "MixtralForCausalLM", "Glm4MoeForCausalLMNextN"})
        return CodemodInputs(rules=load_rules("deepseek"), removed=Removed(registry_keys={"models": removed}))

    def test_membership_in_the_served_architectures(self) -> None:
        self.assertCodemod(
            """
            if ready and "Glm4MoeForCausalLMNextN" in self.hf_config.architectures:
                glm()
            skip = "MixtralForCausalLM" not in model_architectures and ready
            if "Qwen2ForCausalLM" in SUPPORTED or "DeepseekV3ForCausalLM" in architectures:
                go()
            if "Qwen2ForCausalLM" in arch:  # a substring test on a string: stays
                sub()
            """,
            """
            if ready and "Glm4MoeForCausalLMNextN" in self.hf_config.architectures:
                glm()
            skip = ready
            if "Qwen2ForCausalLM" in SUPPORTED or "DeepseekV3ForCausalLM" in architectures:
                go()
            if "Qwen2ForCausalLM" in arch:  # a substring test on a string: stays
                sub()
            """,
            inputs=self.inputs(),
        )

    def test_a_literal_compared_whole_keeps_its_architectures(self) -> None:
        """0.5.23 model_config.py: `names == ["Qwen2ForCausalLM"]` asks for equality with the whole list:
        dropping its removed architecture would make it `== []`, true for an empty list, so it stays; the
        served architectures (`hf_config.architectures`) never equal a list of removed ones: False.
        Membership may lose them."""
        self.assertCodemod(
            """
            qwen = self.hf_config.architectures == ["Qwen2ForCausalLM"] and ready
            other = ("MixtralForCausalLM", "DeepseekV3ForCausalLM") != names
            member = arch in ["Qwen2ForCausalLM", "DeepseekV3ForCausalLM"]
            if self.hf_config.architectures == ["Qwen2ForCausalLM", "DeepseekV3ForCausalLM"]:
                mixed()
            if names == ["Qwen2ForCausalLM"]:
                named()
            """,
            """
            qwen = False
            other = ("MixtralForCausalLM", "DeepseekV3ForCausalLM") != names
            member = arch in ["DeepseekV3ForCausalLM"]
            if self.hf_config.architectures == ["Qwen2ForCausalLM", "DeepseekV3ForCausalLM"]:
                mixed()
            if names == ["Qwen2ForCausalLM"]:
                named()
            """,
            inputs=self.inputs(),
        )

    def test_the_served_architectures_read_through_a_reader(self) -> None:
        """0.5.23 dspark_config.py: `_cfg_get(draft_hf_config, "architectures", [])` (a reader the rules name)
        and `getattr(hf_config, "architectures", None)` read the served architectures; a default that could
        hold a name is no such read."""
        self.assertCodemod(
            """
            mixtral = _cfg_get(draft_hf_config, "architectures", []) == ["MixtralForCausalLM"]
            qwen = "Qwen2ForCausalLM" in getattr(self.hf_config, "architectures", None)
            first = getattr(hf_config, "architectures", [None])[0] == "Qwen2ForCausalLM"
            other = helper(hf_config, "architectures", []) == ["Qwen2ForCausalLM"]
            kind = getattr(hf_config, "model_type", "glm5_next") == "glm5_next"
            """,
            """
            mixtral = False
            qwen = False
            first = False
            other = helper(hf_config, "architectures", []) == ["Qwen2ForCausalLM"]
            kind = getattr(hf_config, "model_type", "glm5_next") == "glm5_next"
            """,
            inputs=self.inputs(),
        )

    def test_the_served_architectures_with_an_empty_fallback(self) -> None:
        """0.5.23 attention_hook.py / model_override_base.py: `"WhisperForConditionalGeneration" in
        (model_config.hf_config.architectures or [])`; a fallback that may hold a name is no such read."""
        self.assertCodemod(
            """
            qwen = "Qwen2ForCausalLM" in (model_config.hf_config.architectures or [])
            mixtral = "MixtralForCausalLM" not in (self.hf_config.architectures or ()) and ready
            other = "Qwen2ForCausalLM" in (model_config.hf_config.architectures or DEFAULT)
            """,
            """
            qwen = False
            mixtral = ready
            other = "Qwen2ForCausalLM" in (model_config.hf_config.architectures or DEFAULT)
            """,
            inputs=self.inputs(),
        )

    def test_the_served_model_type_is_a_kept_one(self) -> None:
        """0.5.23 serving_chat.py / hybrid_arch.py / model_config.py: the served checkpoint's model_type is
        one the kept architectures serve (rules' [architectures].model_types)."""
        self.assertCodemod(
            """
            self.is_gpt_oss = (
                hasattr(self.tokenizer_manager.model_config, "hf_config")
                and self.tokenizer_manager.model_config.hf_config.model_type == "gpt_oss"
            )
            glm = getattr(hf_config, "model_type", None) == "glm5_next" and not draft
            is_gemma4 = self.model_config.hf_text_config.model_type in ("gemma4", "gemma4_unified")
            other = hf_config.model_type not in ["dbrx", "mpt"]
            dsv41 = getattr(self.hf_config, "model_type", None) == "deepseek_v41"
            k2 = self.hf_config.model_type in ("kimi_k2", "gpt_oss")
            task = self.model_type == "embedding"  # not the checkpoint's model_type: stays
            vision = self.vision_config.model_type == "siglip"  # a sub-config's: stays
            qwen = config.model_type in {"qwen2_vl", "sarashina2_vision"}  # a config loaded for the checkpoint
            mini = getattr(config, "model_type", None) == "minicpmv" and old
            v41 = config.model_type == "deepseek_v41"
            """,
            """
            self.is_gpt_oss = False
            glm = False
            is_gemma4 = False
            other = True
            dsv41 = getattr(self.hf_config, "model_type", None) == "deepseek_v41"
            k2 = self.hf_config.model_type in ("kimi_k2", "gpt_oss")
            task = self.model_type == "embedding"  # not the checkpoint's model_type: stays
            vision = self.vision_config.model_type == "siglip"  # a sub-config's: stays
            qwen = False  # a config loaded for the checkpoint
            mini = False
            v41 = config.model_type == "deepseek_v41"
            """,
            inputs=self.inputs(),
        )

    def test_a_named_tuple_of_strings_tests_as_its_literal(self) -> None:
        """0.5.23 hf_transformers/config.py: `config.model_type in _GEMMA4_MODEL_TYPES`, a private tuple bound
        once, tests as the literal does, and so does a set only `in` reads (qwen3_vl's `_HOPPER_QWEN3_VL_TYPES`);
        a name bound twice, a list that may grow (read otherwise than by `in`), or a public name another file
        may rebind (single_file_words unknown here) stays."""
        self.assertCodemod(
            """
            _GEMMA4_MODEL_TYPES = (
                "gemma4",
                "gemma4_unified",
            )
            _HOPPER_TYPES = {"qwen3_vl", "qwen3_vl_moe"}
            _MIXED = frozenset({"deepseek_v3", "glm5"})
            _GROWS = ["gemma4"]
            _GROWS.append(extra)
            PUBLIC = ("gemma4",)
            _TWICE = ("gemma4",)
            _TWICE = ("glm5",)
            gemma = config.model_type in _GEMMA4_MODEL_TYPES
            hopper = config.model_type not in _HOPPER_TYPES
            mixed = config.model_type in _MIXED
            grows = config.model_type in _GROWS
            public = config.model_type not in PUBLIC
            twice = config.model_type in _TWICE
            """,
            """
            _GEMMA4_MODEL_TYPES = (
                "gemma4",
                "gemma4_unified",
            )
            _HOPPER_TYPES = {"qwen3_vl", "qwen3_vl_moe"}
            _MIXED = frozenset({"deepseek_v3", "glm5"})
            _GROWS = ["gemma4"]
            _GROWS.append(extra)
            PUBLIC = ("gemma4",)
            _TWICE = ("gemma4",)
            _TWICE = ("glm5",)
            gemma = False
            hopper = True
            mixed = config.model_type in _MIXED
            grows = config.model_type in _GROWS
            public = config.model_type not in PUBLIC
            twice = config.model_type in _TWICE
            """,
            inputs=self.inputs(),
        )

    def test_a_local_holding_the_served_architecture_or_model_type(self) -> None:
        """0.5.23 chat_encoding.py / template_detection.py / loader.py: a local bound once to an element of the
        served architectures, or to the served model_type, tests as that place does. A fragment of a removed
        architecture is in no kept architecture's name, nor in the "" the local holds without one."""
        from shrinker.codemods.inputs import CodemodInputs, Removed
        from shrinker.rules.load import load_rules

        removed = frozenset({"Qwen2ForCausalLM", "KimiK3ForConditionalGeneration"})
        inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(registry_keys={"models": removed}))
        self.assertCodemod(
            """
            def spec(hf_config):
                architectures = hf_config.architectures
                arch = architectures[0] if architectures else ""
                v4 = "DeepseekV4" in arch
                kimi = "KimiK3" in arch or ready
                v41 = "DeepseekV41" in arch  # in no removed architecture: stays
                first = hf_config.architectures[0]
                return "Qwen2" not in first and "Qwen2" in hf_config.architectures[-1]

            def loader(model_config, name):
                model_type = model_config.hf_config.model_type
                mllama = model_type == "mllama" and "vision_model" in name
                kind = getattr(model_config.hf_config, "model_type", "")
                return model_type in ["qwen2_vl", "qwen2_5_vl"] or kind == "deepseek_v3"

            def fallback(hf_config):
                arch = hf_config.architectures[0] if hf_config.architectures else "KimiK3-lite"
                return "KimiK3" in arch  # the other arm holds it: stays

            def rebound(hf_config):
                model_type = hf_config.model_type
                model_type = "x"  # bound twice: stays
                return model_type == "mllama"

            def read_first(hf_config):
                if ready:
                    print(model_type == "mllama")  # a read before the binding: stays
                model_type = hf_config.model_type

            def shadowed(hf_config):
                arch = hf_config.architectures[0]

                def inner(arch):  # its parameter: stays
                    return "KimiK3" in arch
                return inner
            """,
            """
            def spec(hf_config):
                architectures = hf_config.architectures
                arch = architectures[0] if architectures else ""
                v4 = "DeepseekV4" in arch
                kimi = ready
                v41 = "DeepseekV41" in arch  # in no removed architecture: stays
                first = hf_config.architectures[0]
                return False

            def loader(model_config, name):
                model_type = model_config.hf_config.model_type
                kind = getattr(model_config.hf_config, "model_type", "")
                return kind == "deepseek_v3"

            def fallback(hf_config):
                arch = hf_config.architectures[0] if hf_config.architectures else "KimiK3-lite"
                return "KimiK3" in arch  # the other arm holds it: stays

            def rebound(hf_config):
                model_type = hf_config.model_type
                model_type = "x"  # bound twice: stays
                return model_type == "mllama"

            def read_first(hf_config):
                if ready:
                    print(model_type == "mllama")  # a read before the binding: stays
                model_type = hf_config.model_type

            def shadowed(hf_config):
                arch = hf_config.architectures[0]

                def inner(arch):  # its parameter: stays
                    return "KimiK3" in arch
                return inner
            """,
            inputs=inputs,
        )

    def test_a_branch_on_a_served_local_goes(self) -> None:
        # 0.5.23 chat_encoding.resolve_chat_encoding_spec: remove_dead_branches decides the `if` tests
        from shrinker.codemods.dead_branches import RemoveDeadBranches
        from shrinker.codemods.inputs import CodemodInputs, Removed
        from shrinker.rules.load import load_rules
        from tests.codemods.helpers import run_transform

        removed = frozenset({"KimiK3ForConditionalGeneration"})
        inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(registry_keys={"models": removed}))
        src = ('def spec(hf_config):\n    architectures = hf_config.architectures\n'
               '    arch = architectures[0] if architectures else ""\n'
               '    if "KimiK3" in arch:\n        return "kimi_k3"\n    return None\n')
        code, _ = run_transform(RemoveDeadBranches, src, inputs)
        assert code == ('def spec(hf_config):\n    architectures = hf_config.architectures\n'
                        '    arch = architectures[0] if architectures else ""\n    return None\n')

    def test_an_option_holding_a_removed_parser(self) -> None:
        """0.5.23 serving_chat.py / chat_encoding.py / detokenizer_manager.py: the picked tool-call or
        reasoning parser (rules' `held_at`) is never one the plan removed from its registry."""
        self.assertCodemod(
            """
            gpt_oss = get_serving().tool_call_parser == "gpt-oss"
            thinking = self.reasoning_parser in ["mistral", "hunyuan"] or ready
            generic = "hunyuan" != reasoning_parser and tool_call_parser != "glm47"
            ds = self.tool_call_parser == "deepseekv3"  # a kept parser: stays
            mixed = self.reasoning_parser in ["mistral", "deepseek-r1"]  # the removed one leaves the literal
            auto = self.tool_call_parser == "auto"  # not a key: stays
            other = self.reasoning_parser == "kimi_k3"  # a tool-call key, not a reasoning one: stays
            spec = self.chat_encoding_spec == "kimi_k3"  # a place no rule names: stays
            """,
            """
            gpt_oss = False
            thinking = ready
            generic = True
            ds = self.tool_call_parser == "deepseekv3"  # a kept parser: stays
            mixed = self.reasoning_parser in ["deepseek-r1"]  # the removed one leaves the literal
            auto = self.tool_call_parser == "auto"  # not a key: stays
            other = self.reasoning_parser == "kimi_k3"  # a tool-call key, not a reasoning one: stays
            spec = self.chat_encoding_spec == "kimi_k3"  # a place no rule names: stays
            """,
            inputs=removed_parser_inputs(),
        )

    def test_an_option_holding_a_removed_attention_backend(self) -> None:
        """0.5.23 arg_groups/overrides.py, kv_cache_hook.py, forward_mla.py: the picked attention backends
        (the rules' held_at of attention_backends) are never one the plan removed."""
        from shrinker.codemods.inputs import CodemodInputs, Removed
        from shrinker.rules.load import load_rules

        keys = {"attention_backends": frozenset({"fa4", "hpc_ops", "aiter"})}
        self.assertCodemod(
            """
            hpc = view.attention_backend == "hpc_ops" or view.decode_attention_backend == "hpc_ops"
            fa4_prefill = prefill_attention_backend == "fa4" and not sm100
            rocm = attention_backend in {"aiter", "fa4"}
            one_shot = attention_backend in {"flashmla", "cutedsl_mla", "aiter"}
            not_rocm = self.decode_attention_backend not in ("aiter", "fa3")
            fa3 = view.attention_backend == "fa3"  # a kept backend: stays
            graph = self.prefill_backend_name == "fa4"  # a place no rule names: stays
            """,
            """
            hpc = False
            fa4_prefill = False
            rocm = False
            one_shot = attention_backend in {"flashmla", "cutedsl_mla"}
            not_rocm = self.decode_attention_backend not in ("fa3",)
            fa3 = view.attention_backend == "fa3"  # a kept backend: stays
            graph = self.prefill_backend_name == "fa4"  # a place no rule names: stays
            """,
            inputs=CodemodInputs(rules=load_rules("deepseek"), removed=Removed(registry_keys=keys)),
        )

    def test_a_literal_loses_the_platform_strings_it_is_tested_against(self) -> None:
        """0.5.23 speculative_hook.py, xgrammar_backend.py, hicache_hook.py: `x == "mori"` is False on CUDA,
        so a literal tested against loses such a string; all of them gone, the test folds whole."""
        self.assertCodemod(
            """
            if cfg.moe_a2a_backend not in ("none", "megamoe", "mori"):
                fail()
            on_gpu = logits.device.type in {"cuda", "xpu", "musa"}
            ok = cfg.hicache_storage_backend not in ("mooncake", "npu_memcache")
            amd = backend in ("aiter", "mori")
            devices = ["cuda", "xpu"]  # no test: a value stays whole
            """,
            """
            if cfg.moe_a2a_backend not in ("none", "megamoe"):
                fail()
            on_gpu = logits.device.type in {"cuda"}
            ok = cfg.hicache_storage_backend not in ("mooncake",)
            amd = False
            devices = ["cuda", "xpu"]  # no test: a value stays whole
            """,
        )

    def test_a_platform_string_tested_against_a_literal_of_values(self) -> None:
        """0.5.23 overrides.py `_intel_xpu_page_constraint`: `"intel_xpu" in (prefill_backend, decode_backend)`
        asks each value `== "intel_xpu"`, False on CUDA; a literal naming a platform itself, or a starred
        element, decides nothing."""
        self.assertCodemod(
            """
            if "intel_xpu" in (prefill_backend, decode_backend) or small:
                constrain()
            keep = "npu" not in [device, self.device]
            same = "npu" in ("npu", device)
            spread = "npu" in (*devices, device)
            """,
            """
            if small:
                constrain()
            keep = True
            same = "npu" in ("npu", device)
            spread = "npu" in (*devices, device)
            """,
        )

    def test_a_device_name_split_off_its_index_is_no_platform_s(self) -> None:
        """0.5.23 model_runner.py / server_args.py: `str(self.device).split(":", 1)[0] == "mps"` (split is a
        pure method by the rules, str a pure builtin): False on CUDA (the pipeline's local-constant step then
        folds the local's tests)."""
        self.assertCodemod(
            """
            def init(self):
                is_mps_device = str(self.device).split(":", 1)[0] == "mps"
                if not is_mps_device:
                    set_device(self.device)
                on_npu = make_device().split(":")[0] == "npu"  # the call may do anything: stays
            """,
            """
            def init(self):
                is_mps_device = False
                if not is_mps_device:
                    set_device(self.device)
                on_npu = make_device().split(":")[0] == "npu"  # the call may do anything: stays
            """,
        )

    def test_architecture_lists_lose_the_removed_ones(self) -> None:
        self.assertCodemod(
            """
            MOE = [
                "DeepseekV3ForCausalLM",
                "MixtralForCausalLM",  # Mistral's
                "Qwen2ForCausalLM",
            ]
            GONE = ("Qwen2ForCausalLM", "MixtralForCausalLM")
            ONE = {"Qwen2ForCausalLM", "DeepseekV2ForCausalLM"}
            MIXED = ["Qwen2ForCausalLM", "not an architecture"]
            MOST = [*EXTRA, "Qwen2ForCausalLM", "MixtralForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM",
                    "DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM", "DeepseekForCausalLM",
                    "DeepseekV3ForCausalLMNextN", "DeepseekV4ForCausalLMNextN", "UnregisteredForCausalLM"]
            """,
            """
            MOE = [
                "DeepseekV3ForCausalLM",
            ]
            GONE = ()
            ONE = {"DeepseekV2ForCausalLM"}
            MIXED = ["Qwen2ForCausalLM", "not an architecture"]
            MOST = [*EXTRA, "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM",
                    "DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM", "DeepseekForCausalLM",
                    "DeepseekV3ForCausalLMNextN", "DeepseekV4ForCausalLMNextN", "UnregisteredForCausalLM"]
            """,
            inputs=self.inputs(),
        )

    def test_a_test_against_an_emptied_literal_is_decided(self) -> None:
        # 0.5.23 model_hook.py: `model_arch in ("KimiK3ForConditionalGeneration", ...)` loses every element
        # (leave_Tuple) before the test folds: `in ()` is False, so remove_dead_branches takes the branch
        from shrinker.codemods.dead_branches import RemoveDeadBranches
        from tests.codemods.helpers import run_transform

        src = 'if model_arch in ("Qwen2ForCausalLM", "MixtralForCausalLM"):\n    from x import kimi\n    kimi()\ngo()\n'
        folded, _ = run_transform(FoldPlatformPredicates, src, self.inputs())
        assert folded == 'if model_arch in ():\n    from x import kimi\n    kimi()\ngo()\n'
        code, _ = run_transform(RemoveDeadBranches, folded, self.inputs())
        assert code == "go()\n"

    def test_planner_evaluates_served_membership(self) -> None:
        from shrinker.rules.predicates import evaluate

        table = self.inputs().table
        value = lambda code: evaluate(cst.parse_expression(code), table)  # noqa: E731
        self.assertIs(value('"Qwen2ForCausalLM" in self.model_config.hf_config.architectures'), False)
        self.assertIs(value('"Qwen2ForCausalLM" not in architectures'), True)
        self.assertIs(value('"Qwen2ForCausalLM" in SUPPORTED'), None)
        self.assertIs(value('"DeepseekV3ForCausalLM" in architectures'), None)


class TestModuleConstants(PlatformCodemodTest):
    """Issue 17 item 2: a top-level name bound once to a value a predicate decides is that constant
    wherever it is read (v0.5.23's decode_attention: `IS_GFX1250=_is_gfx1250` in a Triton launch)."""

    TRANSFORM = FoldPlatformPredicates

    def test_derived_constant_folds_in_arguments_and_tests(self) -> None:
        self.assertCodemod(
            """
            _is_hip = is_hip()
            _is_gfx1250 = _is_hip and is_gfx1250_supported()
            _is_gfx1250_fp8 = _is_gfx1250 and fp8_ok()
            _use_fast = not _is_gfx1250_fp8 or torch.version.hip  # kept below

            def launch(grid):
                kernel[grid](IS_GFX1250=_is_gfx1250, OTHER=_is_gfx1250_fp8)
                if flag and not _is_gfx1250:
                    pass
            """,
            """
            _is_hip = is_hip()
            _is_gfx1250 = False
            _is_gfx1250_fp8 = False
            _use_fast = True  # kept below

            def launch(grid):
                kernel[grid](IS_GFX1250=False, OTHER=False)
                if flag:
                    pass
            """,
        )

    def test_plain_settings_and_rebound_names_stay(self) -> None:
        # `DEBUG = False` is a setting, not a platform fact; `_is_gfx` is rebound in a function;
        # a parameter hides the module name.
        self.assertUnchanged(
            """
            DEBUG = False
            _is_gfx = is_gfx1250_supported()

            def setup():
                global _is_gfx
                _is_gfx = True

            def run(x):
                return f(DEBUG, _is_gfx, x)
            """
        )

    def test_function_local_constant_folds_and_its_binding_goes(self) -> None:
        # v0.5.23 fp8.py: `use_rocm_mxfp8 = _use_aiter and ...` then `use_mxfp8=use_rocm_mxfp8`
        self.assertCodemod(
            """
            from sglang.srt.layers.quantization.fp8_utils import _use_aiter

            def create_weights(layer, cfg):
                use_rocm_mxfp8 = _use_aiter and cfg.is_mx
                runner_is_aiter = is_hip()
                kernel = make(use_mxfp8=use_rocm_mxfp8, use_fp8_w8a8=not use_rocm_mxfp8)
                return kernel, runner_is_aiter.__class__
            """,
            """
            from sglang.srt.layers.quantization.fp8_utils import _use_aiter

            def create_weights(layer, cfg):
                runner_is_aiter = False
                kernel = make(use_mxfp8=False, use_fp8_w8a8=True)
                return kernel, runner_is_aiter.__class__
            """,
        )

    def test_function_locals_read_before_or_bound_twice_stay(self) -> None:
        # the local flag itself becomes the constant (as before); its reads stay
        self.assertCodemod(
            """
            def f(x):
                print(flag)
                flag = is_npu()
                return g(flag)

            def h(x):
                flag = is_npu()
                if x:
                    flag = True
                return g(flag)

            def k(flag):
                return g(flag)
            """,
            """
            def f(x):
                print(flag)
                flag = False
                return g(flag)

            def h(x):
                flag = False
                if x:
                    flag = True
                return g(flag)

            def k(flag):
                return g(flag)
            """,
        )


class TestLocalConstants(PlatformCodemodTest):
    """codemods/local_constants.py: locals bound in blocks, in several branches, or to a literal the
    vocabulary names (0.5.23's deepseek_v4.py, fp8.py, rotary_embedding/factory.py shapes)."""

    TRANSFORM = FoldPlatformPredicates

    def test_binding_at_the_top_of_a_nested_block(self) -> None:
        # deepseek_v4.py: `use_npu_cp_full_metadata = use_cp and _is_npu` at the top of an `else:`
        self.assertCodemod(
            """
            def forward(self, x, use_cp):
                if x is None:
                    return None
                else:
                    use_npu_cp_full_metadata = use_cp and _is_npu
                    self.indexer(x, full=use_npu_cp_full_metadata)
                    return [use_npu_cp_full_metadata]
            """,
            """
            def forward(self, x, use_cp):
                if x is None:
                    return None
                else:
                    self.indexer(x, full=False)
                    return [False]
            """,
        )

    def test_bound_in_each_branch_and_read_below_each(self) -> None:
        # fp8.py: `runner_is_aiter = ...is_aiter()` in three branches
        self.assertCodemod(
            """
            def process(self, layer, mode):
                if mode:
                    runner_is_aiter = self.runner.runner_backend.is_aiter()
                    prepare(layer, shuffle=runner_is_aiter)
                    return
                runner_is_aiter = self.runner.runner_backend.is_aiter()
                finish(layer, shuffle=runner_is_aiter)
            """,
            """
            def process(self, layer, mode):
                if mode:
                    prepare(layer, shuffle=False)
                    return
                finish(layer, shuffle=False)
            """,
        )

    def test_literal_named_by_the_vocabulary_folds_a_setting_stays(self) -> None:
        # rotary_embedding/factory.py: `use_aiter_rope = False` left by an earlier fold
        self.assertCodemod(
            """
            def get_rope(dim):
                use_aiter_rope = False
                debug = False
                return make(dim, aiter=use_aiter_rope, debug=debug)
            """,
            """
            def get_rope(dim):
                debug = False
                return make(dim, aiter=False, debug=debug)
            """,
        )

    def test_reads_no_binding_covers_stay(self) -> None:
        # a read after the `if` that binds it, one in the handler of the `try` that binds it, one in a
        # loop header the body binds, one bound otherwise too (a `for` target, a `match` capture): each stays
        self.assertUnchanged(
            """
            def a(x):
                if x:
                    use_aiter_rope = False
                return g(use_aiter_rope)

            def b(x):
                try:
                    is_mori = False
                    g(x)
                except ValueError:
                    g(is_mori)

            def c(x):
                while g(use_rocm_triton):
                    use_rocm_triton = False

            def d(xs):
                use_aiter_fp4 = False
                for use_aiter_fp4 in xs:
                    pass
                return g(use_aiter_fp4)

            def e(point):
                is_mori = False
                match point:
                    case [is_mori]:
                        pass
                return g(is_mori)
            """
        )

    def test_idempotent_on_the_folded_form(self) -> None:
        self.assertUnchanged(
            """
            def get_rope(dim):
                return make(dim, aiter=False)
            """
        )

    def test_a_global_nothing_binds_any_more_goes(self) -> None:
        # 0.5.23 deepseek_v4.py: `global _wo_a_aiter_batched_gemm_disabled` once the ROCm branch that set it
        # went (the comments above it stay); a declared name the function still binds stays (in any branch,
        # decided or not: this codemod leaves the dead branch to remove_dead_branches), and so does a nested
        # function's binding; deepseek_v4_fused_mhc's `global ...` + blank line before `return None`
        self.assertCodemod(
            """
            def gemm(o, wo_a):
                global _wo_a_aiter_batched_gemm_disabled, _calls, _hip_warned
                # the fast paths below are gated on the validated shapes
                global _warned_aiter
                _calls += 1
                if _is_hip:
                    _hip_warned = True
                return o @ wo_a


            def warn():
                global _warned_aiter

                def inner():
                    _warned_aiter = 1
                return inner


            def fallback(x):
                # aiter's fused kernel, when it loads
                global _AITER_DISABLED

                return None


            def only():
                # nothing else
                global _AITER_DISABLED


            def last(x):
                x.run()
                # trailing note
                global _AITER_DISABLED
            """,
            """
            def gemm(o, wo_a):
                global _calls, _hip_warned
                # the fast paths below are gated on the validated shapes
                _calls += 1
                if _is_hip:
                    _hip_warned = True
                return o @ wo_a


            def warn():
                global _warned_aiter

                def inner():
                    _warned_aiter = 1
                return inner


            def fallback(x):
                # aiter's fused kernel, when it loads
                return None


            def only():
                # nothing else
                pass


            def last(x):
                x.run()
                # trailing note
            """,
        )


class TestAssignedValues(PlatformCodemodTest):
    """An assignment's value folds as a value where a flag stands alone or as a nested boolean operand
    (0.5.23's deepseek_v2.py, custom_all_reduce_ops.py, fp8.py)."""

    TRANSFORM = FoldPlatformPredicates

    def test_a_flag_assigned_and_a_nested_operand(self) -> None:
        self.assertCodemod(
            """
            _is_hip = is_hip()
            IS_QUICK_AR_AVAILABLE = _is_hip
            handler = is_hip


            class MLP:
                def __init__(self, cfg, per_config):
                    self.use_fused_clamp_act_mul = _is_hip
                    self.convert: bool = cfg.mx and (
                        (cfg.required or (_is_hip and envs.FORCE.get())) if per_config is None else per_config
                    )
                    self.plain = cfg.mx and cfg.required
            """,
            """
            _is_hip = is_hip()
            IS_QUICK_AR_AVAILABLE = False
            handler = is_hip


            class MLP:
                def __init__(self, cfg, per_config):
                    self.use_fused_clamp_act_mul = False
                    self.convert: bool = cfg.mx and (
                        (cfg.required or False) if per_config is None else per_config
                    )
                    self.plain = cfg.mx and cfg.required
            """,
        )


class TestElementReads(PlatformCodemodTest):
    """A name or attribute read as a tuple or list element folds as a value (0.5.23's lora_hook.py);
    one a statement binds stays."""

    TRANSFORM = FoldPlatformPredicates

    def test_read_elements_fold_bound_ones_stay(self) -> None:
        self.assertCodemod(
            """
            _is_hip = is_hip()


            def check(cfg):
                for unsupported, mode in (
                    (cfg.tbo, "two-batch overlap"),
                    (get_platform().is_hip, "ROCm"),
                    (_is_hip, "ROCm"),
                    [is_npu, "function"],
                ):
                    if unsupported:
                        raise ValueError(mode)
                (get_platform().is_hip, x) = f()
                [_is_hip, y] = g()
            """,
            """
            _is_hip = is_hip()


            def check(cfg):
                for unsupported, mode in (
                    (cfg.tbo, "two-batch overlap"),
                    (False, "ROCm"),
                    (False, "ROCm"),
                    [is_npu, "function"],
                ):
                    if unsupported:
                        raise ValueError(mode)
                (get_platform().is_hip, x) = f()
                [_is_hip, y] = g()
            """,
        )


class TestOtherDeviceRecords(PlatformCodemodTest):
    """0.5.23 kernels/ops/attention/__init__.py: records served only by other platforms' devices go."""

    TRANSFORM = FoldPlatformPredicates

    def test_hip_only_record_goes_cuda_and_loop_records_stay(self) -> None:
        self.assertCodemod(
            """
            del _mod
            # Called through ops.attention.kda_fused_decode_gfx950, which checks for gfx950.
            register_kernel(
                KernelSpec(
                    op="attention.kda_decode_gfx950",
                    target="sglang.kernels.kda_kernels.kda_decode_gfx950:kda_decode_gfx950",
                    capabilities=frozenset({CapabilityRequirement.HIP}),
                )
            )
            register_kernel(KernelSpec(op="a.b", target="m:f", capabilities=frozenset({CapabilityRequirement.CUDA, CapabilityRequirement.HIP})))
            register_kernel(KernelSpec(op="a.c", target="m:g", capabilities=frozenset({_device})))
            """,
            """
            del _mod
            register_kernel(KernelSpec(op="a.b", target="m:f", capabilities=frozenset({CapabilityRequirement.CUDA, CapabilityRequirement.HIP})))
            register_kernel(KernelSpec(op="a.c", target="m:g", capabilities=frozenset({_device})))
            """,
        )


def test_other_devices_only_reads_attribute_names():
    from shrinker.rules.predicates import other_devices_only

    strings = deepseek_inputs().table.strings
    assert other_devices_only("frozenset({CapabilityRequirement.HIP, CapabilityRequirement.NPU})", strings) == ["HIP", "NPU"]
    assert other_devices_only("frozenset({CapabilityRequirement.cuda(min_sm=90)})", strings) is None
    assert other_devices_only("frozenset({_device})", strings) is None
    assert other_devices_only("CUDA_ONLY", strings) is None


class TestBuildAttributes(PlatformCodemodTest):
    """[platform].build_attributes: what the CUDA build of torch says of other stacks (0.5.23
    sgl_kernel/__init__.py's MUSA branch, kernels/spec.py's device detection)."""

    TRANSFORM = FoldPlatformPredicates

    def test_torch_version_of_other_stacks_is_none(self) -> None:
        # the `if` folds whole (False): remove_dead_branches takes it (test_dead_branches.py)
        self.assertCodemod(
            """
            if x and hasattr(torch.version, "musa") and torch.version.musa is not None:
                load_musa()
            fast = ready and not getattr(torch.version, "hip", None)
            version = torch.version.cuda
            """,
            """
            if x and hasattr(torch.version, "musa") and torch.version.musa is not None:
                load_musa()
            fast = ready
            version = torch.version.cuda
            """,
        )


def test_the_planner_evaluates_build_attributes_too():
    from shrinker.rules.predicates import PredicateTable, evaluate_source

    table = PredicateTable(deepseek_inputs().rules.platform)
    assert evaluate_source('hasattr(torch.version, "musa") and torch.version.musa is not None', table) is False
    assert evaluate_source("torch.version.hip is None", table) is True
    assert evaluate_source("torch.version.cuda is None", table) is None


class TestEmptyCollections(PlatformCodemodTest):
    TRANSFORM = FoldPlatformPredicates

    def test_a_collection_the_architecture_prune_emptied_holds_nothing(self) -> None:
        # 0.5.23 configs/model_config.py once prune_architecture_literals emptied MiMo's architecture tuples
        from shrinker.codemods.inputs import CodemodInputs, Removed
        from shrinker.rules.load import load_rules

        inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(),
                               single_file_words=frozenset({"MIMO_V2_MODEL_ARCHS"}))
        self.assertCodemod(
            """
            MIMO_V2_MODEL_ARCHS = ()
            _MAMBA_ARCHS = frozenset()
            SHARED = ()  # named in another file: another module may rebind it
            _TWICE = ()
            _TWICE = ("A",)
            mimo = arch in MIMO_V2_MODEL_ARCHS
            mamba = arch not in _MAMBA_ARCHS and ready
            multi = f(any(a in MIMO_V2_MODEL_ARCHS for a in archs))
            every = f(all(a not in _MAMBA_ARCHS for a in archs))
            none = f(any(a in archs for a in (*MIMO_V2_MODEL_ARCHS,)))
            some = f(any(a in archs for a in (*MIMO_V2_MODEL_ARCHS, x)))  # an element that does not fold: stays
            ALL = [
                "DeepseekV3ForCausalLM",
                *MIMO_V2_MODEL_ARCHS,
            ]
            ONLY = (*_MAMBA_ARCHS,)
            shared = arch in SHARED
            twice = arch in _TWICE
            called = _hf_arch(cfg) in MIMO_V2_MODEL_ARCHS  # an operand that runs: stays, no finding
            _GROWN = []  # a list may grow: not empty for good
            grown = arch in _GROWN
            literal = arch not in ()
            literal_called = _hf_arch(cfg) in ()
            """,
            """
            MIMO_V2_MODEL_ARCHS = ()
            _MAMBA_ARCHS = frozenset()
            SHARED = ()  # named in another file: another module may rebind it
            _TWICE = ()
            _TWICE = ("A",)
            mimo = False
            mamba = ready
            multi = f(False)
            every = f(True)
            none = f(False)
            some = f(any(a in archs for a in (x,)))  # an element that does not fold: stays
            ALL = [
                "DeepseekV3ForCausalLM",
            ]
            ONLY = ()
            shared = arch in SHARED
            twice = arch in _TWICE
            called = _hf_arch(cfg) in MIMO_V2_MODEL_ARCHS  # an operand that runs: stays, no finding
            _GROWN = []  # a list may grow: not empty for good
            grown = arch in _GROWN
            literal = True
            literal_called = _hf_arch(cfg) in ()
            """,
            inputs=inputs,
            findings=[],
        )


class TestRegistrationsOfRemovedModules(PlatformCodemodTest):
    """The platform batch drops a registration that names a module it removed, as the features batch does
    (0.5.23: `register_backend("npu_memcache", "...npu_memcache_store", ...)` once npu_memcache went)."""

    TRANSFORM = FoldPlatformPredicates

    def test_registration_naming_a_removed_module_goes(self) -> None:
        inputs = CodemodInputs(rules=deepseek_inputs().rules,
                               removed=Removed(modules=frozenset({"sglang.srt.mem_cache.storage.npu_memcache"})))
        self.assertCodemod(
            """
            StorageBackendFactory.register_backend(
                "mooncake", "sglang.srt.mem_cache.storage.mooncake_store.mooncake_store", "MooncakeStore"
            )

            StorageBackendFactory.register_backend(
                "npu_memcache",
                "sglang.srt.mem_cache.storage.npu_memcache.npu_memcache_store",
                "NpuMemcacheStore",
            )
            """,
            """
            StorageBackendFactory.register_backend(
                "mooncake", "sglang.srt.mem_cache.storage.mooncake_store.mooncake_store", "MooncakeStore"
            )
            """,
            inputs=inputs,
        )
