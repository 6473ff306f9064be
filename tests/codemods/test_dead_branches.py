"""remove_dead_branches: before/after cases in SGLang v0.5.16 shapes (snippets written for these tests)."""

from __future__ import annotations

from shrinker.codemods.dead_branches import RemoveDeadBranches
from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.rules.load import load_rules
from shrinker.rules.schema import FixedParameter
import textwrap

from tests.codemods.helpers import PlatformCodemodTest, deepseek_inputs, removed_parser_inputs, run_transform


def fixed_parameter_inputs() -> CodemodInputs:
    """The deepseek rules plus one fixed parameter in the test module (sglang.srt.x)."""
    rules = load_rules("deepseek")
    rule = FixedParameter(function="sglang.srt.x:try_fused_hc_post_pre", name="is_gfx95_supported",
                          value=False, reason="its one caller passes _is_gfx95_supported")
    platform = rules.platform.model_copy(update={"parameters": [rule]})
    return CodemodInputs(rules=rules.model_copy(update={"platform": platform}), removed=Removed())


class TestDeadBranches(PlatformCodemodTest):
    TRANSFORM = RemoveDeadBranches

    def test_env_flag_predicate_decides_the_branch(self) -> None:
        # dsv4/indexer.py: SGLANG_OPT_USE_AITER_INDEXER selects aiter (rules.platform.predicates)
        self.assertCodemod(
            """
            if envs.SGLANG_OPT_USE_AITER_INDEXER.get():
                logits = _aiter_fp8_paged_mqa_logits(q)
            else:
                logits = deepgemm(q)
            """,
            """
            logits = deepgemm(q)
            """,
        )

    def test_facts_and_device_probes_decide_branches(self) -> None:
        # 0.5.23: parallel_state's device pick and serving_hook's facts object ([platform] fact_objects,
        # device_probes); torch.cuda's probe and a compute-capability fact stay
        self.assertCodemod(
            """
            def device():
                if torch.cuda.is_available():
                    return "cuda"
                elif hasattr(torch, "xpu") and torch.xpu.is_available():
                    return "xpu"
                elif hasattr(torch, "npu") and torch.npu.is_available():
                    return "npu"
                if not get_platform().is_cuda:
                    raise ValueError("CUDA only")
                if get_platform().is_sm100:
                    return "sm100"
                return "cpu"
            """,
            """
            def device():
                if torch.cuda.is_available():
                    return "cuda"
                if get_platform().is_sm100:
                    return "sm100"
                return "cpu"
            """,
        )

    def test_fixed_parameter_folds_inside_its_function_only(self) -> None:
        # deepseek_v4_fused_mhc.py: the rule's function returns at once; the code after the return
        # goes (the aiter import with it), and then the `global` nothing binds; a same-named parameter
        # elsewhere is left alone.
        self.assertCodemod(
            """
            def try_fused_hc_post_pre(x, residual, is_gfx95_supported: bool):
                global _DISABLED

                if (
                    _DISABLED
                    or not envs.SGLANG_OPT_USE_TRITON_FUSED_MHC.get()
                    or not is_gfx95_supported
                    or x.shape[0] == 0
                ):
                    return None

                ops = _get_triton_mhc_post_pre_ops()  # imports aiter
                return ops(x, residual)


            def other(is_gfx95_supported):
                if is_gfx95_supported:
                    return 1
                return 0
            """,
            """
            def try_fused_hc_post_pre(x, residual, is_gfx95_supported: bool):
                return None


            def other(is_gfx95_supported):
                if is_gfx95_supported:
                    return 1
                return 0
            """,
            inputs=fixed_parameter_inputs(),
        )

    def test_module_level_platform_import_block_removed(self) -> None:
        self.assertCodemod(
            """
            import torch

            if _use_aiter:
                from aiter import rmsnorm2d_fwd as rms_norm
            if _is_npu:
                import torch_npu

            logger = logging.getLogger(__name__)
            """,
            """
            import torch

            logger = logging.getLogger(__name__)
            """,
        )

    def test_if_not_inlines_body_with_comments(self) -> None:
        self.assertCodemod(
            """
            def __init__(self, hidden_size):
                super().__init__()
                # The fused kernel only exists on CUDA.
                if not _is_npu:  # sgl-kernel
                    from sgl_kernel import fused_add_rmsnorm

                    self.fused = fused_add_rmsnorm
                self.hidden_size = hidden_size
            """,
            """
            def __init__(self, hidden_size):
                super().__init__()
                # The fused kernel only exists on CUDA.
                # sgl-kernel
                from sgl_kernel import fused_add_rmsnorm

                self.fused = fused_add_rmsnorm
                self.hidden_size = hidden_size
            """,
        )

    def test_dispatch_chain_keeps_cuda_branch(self) -> None:
        self.assertCodemod(
            """
            def dispatch_forward(self):
                if _is_cuda:
                    return self.forward_cuda
                elif _is_hip:
                    return self.forward_hip
                elif _is_cpu and _is_cpu_amx_available:
                    return self.forward_cpu
                elif _is_npu:
                    return self.forward_npu
                else:
                    return self.forward_native
            """,
            """
            def dispatch_forward(self):
                return self.forward_cuda
            """,
        )

    def test_elif_dead_in_the_middle(self) -> None:
        self.assertCodemod(
            """
            if use_triton:
                out = triton_op(x)
            elif is_npu():
                out = npu_op(x)
            else:
                out = native_op(x)
            """,
            """
            if use_triton:
                out = triton_op(x)
            else:
                out = native_op(x)
            """,
        )

    def test_dead_if_makes_the_elif_the_if(self) -> None:
        self.assertCodemod(
            """
            # choose the allocator
            if _is_hip:
                alloc = hip_alloc
            # paged path
            elif page_size > 1:
                alloc = paged_alloc
            else:
                alloc = token_alloc
            """,
            """
            # choose the allocator
            # paged path
            if page_size > 1:
                alloc = paged_alloc
            else:
                alloc = token_alloc
            """,
        )

    def test_true_elif_becomes_the_else(self) -> None:
        self.assertCodemod(
            """
            if enable_dp_attention:
                size = dp_size
            elif not _is_npu:
                size = tp_size
            else:
                size = 1
            """,
            """
            if enable_dp_attention:
                size = dp_size
            else:
                size = tp_size
            """,
        )

    def test_else_of_a_dead_if_is_inlined(self) -> None:
        self.assertCodemod(
            """
            if _is_npu:
                self._reduce_scatter_tensor(output, input)
            else:
                # CUDA goes through the custom op.
                reg_reduce_scatter(output, input)
            """,
            """
            # CUDA goes through the custom op.
            reg_reduce_scatter(output, input)
            """,
        )

    def test_one_line_body(self) -> None:
        self.assertCodemod(
            """
            if not _is_hip: x = fused(x)
            if _is_hip: x = hip(x)
            """,
            """
            x = fused(x)
            """,
        )

    def test_ternaries(self) -> None:
        self.assertCodemod(
            """
            fp8_dtype = torch.float8_e4m3fnuz if _is_hip else torch.float8_e4m3fn
            out = (
                self.forward_cuda(x)
                if not _is_hip
                else self.forward_hip(x)
            )
            scale = (a if is_npu() else b) * 2
            return_val = f(x if _is_cuda else y)
            """,
            """
            fp8_dtype = torch.float8_e4m3fn
            out = self.forward_cuda(x)
            scale = (b) * 2
            return_val = f(x)
            """,
        )

    def test_parenthesized_ternary_as_return_value(self) -> None:
        self.assertCodemod(
            """
            def f():
                return (a if _is_hip else b)
            """,
            """
            def f():
                return b
            """,
        )

    def test_emptied_blocks_get_pass_and_emptied_else_goes(self) -> None:
        self.assertCodemod(
            """
            def maybe_init_aiter(self):
                if _use_aiter:
                    init_aiter()

            if use_graph:
                capture()
            else:
                if _is_npu:
                    npu_capture()
            """,
            """
            def maybe_init_aiter(self):
                pass

            if use_graph:
                capture()
            """,
        )

    def test_predicate_called_alone_on_a_line_goes(self) -> None:
        # 0.5.19 arg_groups/platform_hook.py: use_mlx() is called for its check only (it validates the
        # MLX runtime when SGLANG_USE_MLX is set); on CUDA the rules fix it to False. A call next to
        # something else (`use_mlx() or log()`), or a call that is not a predicate, stays.
        self.assertCodemod(
            """
            def handle_hardware_runtime_validation():
                # the flag opts into MLX
                use_mlx()


            def handle(server_args):
                use_mlx()
                validate(server_args)
                use_mlx() or log()


            def capture(self):
                # --- aiter chip info pre-warming (AMD) ---
                maybe_pre_warm_aiter_chip_info()

                self.device_module.synchronize()
            """,
            """
            def handle_hardware_runtime_validation():
                pass


            def handle(server_args):
                validate(server_args)
                use_mlx() or log()


            def capture(self):

                self.device_module.synchronize()
            """,
        )

    def test_code_after_an_inlined_return_is_unreachable(self) -> None:
        self.assertCodemod(
            """
            def get_torch_distributed_pg_options(group_name=None):
                if not _is_npu:
                    return None

                import torch_npu

                options = torch_npu.Options()
                return options
            """,
            """
            def get_torch_distributed_pg_options(group_name=None):
                return None
            """,
        )

    def test_platform_try_import_keeps_the_cuda_path(self) -> None:
        self.assertCodemod(
            """
            try:
                from aiter.ops.triton.quant import dynamic_mxfp4_quant
            except ImportError:

                def raise_aiter_import_error(*args, **kwargs):
                    raise ImportError("Failed to import aiter.")

                dynamic_mxfp4_quant = raise_aiter_import_error
            from torch import nn
            """,
            """
            def raise_aiter_import_error(*args, **kwargs):
                raise ImportError("Failed to import aiter.")

            dynamic_mxfp4_quant = raise_aiter_import_error
            from torch import nn
            """,
        )

    def test_platform_try_import_with_else_and_finally(self) -> None:
        self.assertCodemod(
            """
            try:
                import torch_npu  # noqa: F401
                HAS_NPU = True
            except RuntimeError:
                HAS_NPU = None
            except (ImportError, OSError):
                HAS_NPU = False
            else:
                enable_npu()
            finally:
                done = True
            """,
            """
            HAS_NPU = False
            done = True
            """,
        )

    def test_platform_try_import_with_pass_handler_goes(self) -> None:
        self.assertCodemod(
            """
            try:
                import sgl_kernel_npu
            except ImportError:
                pass
            x = 1
            """,
            """
            x = 1
            """,
        )

    def test_try_imports_that_must_stay(self) -> None:
        instance = self.assertUnchanged(
            """
            try:
                from aiter import flash_attn_varlen_func
            except ImportError as e:
                raise ImportError("aiter is AMD specific") from e
            try:
                from aiter import moe_sum
            except MyError:
                moe_sum = None
            try:
                from flashinfer import gdn_decode
            except ImportError:
                gdn_decode = None
            try:
                setup()
                import aiter
            except ImportError:
                aiter = None
            """
        )
        self.assertEqual(len(instance.findings), 2, instance.findings)
        self.assertIn("handler uses the exception", instance.findings[0])
        self.assertIn("unknown exception type", instance.findings[1])

    def test_kept_try_import_inside_a_dead_branch_is_no_finding(self) -> None:
        # mxfp4.py: the try-import that keeps its exception sits under `if _is_hip:`, which goes whole
        instance = self.assertCodemod(
            """
            if _is_hip:
                try:
                    from aiter.ops.shuffle import shuffle_weight
                except ImportError as err:
                    shuffle_weight = err
            x = 1
            """,
            """
            x = 1
            """,
        )
        self.assertEqual(instance.findings, [])

    def test_comprehension_filter_always_true_goes(self) -> None:
        self.assertCodemod(
            """
            groups = [g for g in groups if not _is_npu]
            """,
            """
            groups = [g for g in groups]
            """,
        )

    def test_isinstance_of_a_class_from_a_removed_module(self) -> None:
        # disaggregation/utils.py shape: the NPU pool's branch goes, its else is inlined.
        from shrinker.codemods.inputs import CodemodInputs, Removed
        from shrinker.rules.load import load_rules

        inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(
            modules=frozenset({"sglang.srt.hardware_backend.npu.memory_pool_npu"})))
        self.assertCodemod(
            """
            def setup(kv_args, pool):
                from sglang.srt.hardware_backend.npu.memory_pool_npu import NPUMLATokenToKVPool

                if isinstance(pool, NPUMLATokenToKVPool):
                    kv_args.kv_buf_groups = pool.layer_num
                else:
                    append_state_component(kv_args)
            """,
            """
            def setup(kv_args, pool):
                from sglang.srt.hardware_backend.npu.memory_pool_npu import NPUMLATokenToKVPool

                append_state_component(kv_args)
            """,
            inputs=inputs,
        )

    def test_side_effect_test_is_kept_and_reported(self) -> None:
        self.assertCodemod(
            """
            if self.queue.pop().done() and is_npu():
                dispatcher = NpuDispatcher()
            """,
            """
            if self.queue.pop().done() and is_npu():
                dispatcher = NpuDispatcher()
            """,
            findings=["platform test kept: an operand may have side effects"],
        )

    def test_side_effect_test_in_a_dead_branch_goes_unreported(self) -> None:
        """0.5.21's vision backend choice: the ROCm branch holds `capability() >= (9, 4) and _use_aiter`,
        undecidable alone, but `elif is_cuda():` before it holds, so the branch (and its test) goes."""
        self.assertCodemod(
            """
            def choose():
                if is_cuda():
                    backend = "fa3"
                elif _is_hip:
                    if get_device_capability() >= (9, 4) and _is_hip:
                        backend = "aiter_attn"
                    else:
                        backend = "triton_attn"
                return backend
            """,
            """
            def choose():
                backend = "fa3"
                return backend
            """,
            findings=[],
        )

    def test_a_false_comprehension_filter_is_a_finding_where_it_survives(self) -> None:
        self.assertCodemod(
            """
            layers = [m for m in modules if is_npu()]
            """,
            """
            layers = [m for m in modules if is_npu()]
            """,
            findings=["comprehension filter is always false on CUDA: kept"],
        )

    def test_a_false_comprehension_filter_after_an_inlined_return_goes_unreported(self) -> None:
        # 0.5.23 eagle_worker_v2._configure_qsa_mtp_index_share: the early return's test holds, so the
        # comprehension below it (`if isinstance(module, QSAIndexer)`) never runs
        self.assertCodemod(
            """
            def configure(self):
                if not is_npu():
                    return
                layers = {m.layer_id for m in self.modules() if is_npu()}
                self.share(layers)
            """,
            """
            def configure(self):
                return
            """,
            findings=[],
        )

    def test_untouched_shapes(self) -> None:
        self.assertUnchanged(
            """
            while not _is_hip:
                step()
            assert not _is_npu
            if True:  # cute DSL scoping
                x = 1
            if False:
                debug()
            y = a if False else b
            if x.device.type == "cpu":
                x = x.cuda()
            """
        )


def removed_architecture_inputs() -> CodemodInputs:
    """The deepseek rules with Qwen2/Llama removed by the model registry (as the plan records it)."""
    keys = {"models": frozenset({"Qwen2ForCausalLM", "LlamaForCausalLM"})}
    return CodemodInputs(rules=load_rules("deepseek"), removed=Removed(registry_keys=keys))


def test_a_decided_ternary_unwraps_only_itself() -> None:
    """0.5.16 deepep.py: `**(dict(topk_weights=w) if _is_npu else dict())` becomes `**dict()`; the
    parenthesised call the assignment holds keeps its parentheses. The transform once tracked the nodes
    it wrapped by id alone: a node made later could take a freed node's id, and then whether the call
    lost its parentheses depended on memory layout. Repeated so that a reused id would show."""
    before = (
        "def f(self, buffer, w):\n"
        "    a, b = (\n"
        "        buffer.low_latency_dispatch(\n"
        "            w,\n"
        "            **(dict(topk_weights=w) if _is_npu else dict()),\n"
        "            **(dict(use_nvfp4=True) if self.use_nvfp4 else dict()),\n"
        "        )\n"
        "    )\n"
        "    return a\n"
    )
    expected = before.replace("**(dict(topk_weights=w) if _is_npu else dict())", "**dict()")
    for _ in range(20):
        out, _ = run_transform(RemoveDeadBranches, before, deepseek_inputs())
        assert out == expected


class TestRemovedArchitectures(PlatformCodemodTest):
    TRANSFORM = RemoveDeadBranches

    def test_a_test_for_a_removed_architecture_goes_with_its_branch(self) -> None:
        # 0.5.18 startup_weight_load._get_canonical_model_class: one branch per architecture, each
        # importing its model lazily; the removed ones go, the kept one and the rest stay.
        self.assertCodemod(
            """
            def canonical(architecture: str):
                if architecture == "Qwen2ForCausalLM":
                    from sglang.srt.models.qwen2 import Qwen2ForCausalLM

                    return Qwen2ForCausalLM
                if architecture == "DeepseekV3ForCausalLM":  # kept
                    return deepseek()
                if architecture in ("LlamaForCausalLM", "Qwen2ForCausalLM"):
                    return llama()
                if architecture != "LlamaForCausalLM":
                    note()
                raise ValueError(architecture)
            """,
            """
            def canonical(architecture: str):
                if architecture == "DeepseekV3ForCausalLM":  # kept
                    return deepseek()
                note()
                raise ValueError(architecture)
            """,
            inputs=removed_architecture_inputs(),
        )

    def test_a_test_of_the_picked_parser_for_a_removed_one_goes_with_its_branch(self) -> None:
        # 0.5.23 serving_chat.py: per-parser branches on the picked tool-call / reasoning parser (rules'
        # held_at); a removed parser's branch goes, a kept one's, "auto"'s and another place's stay.
        self.assertCodemod(
            """
            if self.tool_call_parser == "kimi_k3":
                from sglang.srt.kimi import encode

                kimi()
            elif self.reasoning_parser != "hunyuan":
                generic()
            if self.tool_call_parser == "deepseekv3" or self.chat_encoding_spec == "kimi_k3":
                ds()
            """,
            """
            generic()
            if self.tool_call_parser == "deepseekv3" or self.chat_encoding_spec == "kimi_k3":
                ds()
            """,
            inputs=removed_parser_inputs(),
        )

    def test_membership_in_a_collection_or_a_kept_name_stays(self) -> None:
        # `"X" in SUPPORTED` asks a collection, not the served model; a mixed tuple may hold a kept one
        self.assertUnchanged(
            """
            if "Qwen2ForCausalLM" in SUPPORTED:
                a()
            if arch in ("Qwen2ForCausalLM", "DeepseekV3ForCausalLM"):
                b()
            if arch == "Qwen3ForCausalLM":  # not removed in these inputs
                c()
            """,
            inputs=removed_architecture_inputs(),
        )


def test_module_constant_decides_a_branch_after_fold_platform_rewrote_its_binding() -> None:
    # v0.5.23 kernels/ops/attention/decode_attention.py: `_is_gfx1250 = _is_hip and is_gfx1250_supported()`.
    # fold_platform makes the binding `= False` first; remove_dead_branches reads the constant from the
    # file as it was, and the dead arm goes.
    from shrinker.codemods.pipeline import transform_source

    source = textwrap.dedent(
        """
        _is_hip = is_hip()
        _is_gfx1250 = _is_hip and is_gfx1250_supported()


        def block_size(n):
            if n > 8:
                return 128
            elif _is_gfx1250:
                return 256
            return 64
        """
    )
    result = transform_source(source, path="sglang/kernels/x.py", module="sglang.kernels.x",
                              inputs=deepseek_inputs(), codemods=["fold_platform"])
    assert result.status == "success", result.error
    assert "_is_gfx1250:" not in result.code and "return 256" not in result.code
    assert "if n > 8:\n        return 128\n    return 64" in result.code


def test_function_local_constant_decides_a_branch_and_its_binding_goes() -> None:
    # v0.5.23 dsv4/compressor_v2.py: `use_hip_fp4 = _is_hip and ...` then `if use_hip_fp4: ... else: ...`
    from shrinker.codemods.pipeline import transform_source

    source = textwrap.dedent(
        """
        _is_hip = is_hip()


        def compress(x, cfg):
            use_hip_fp4 = _is_hip and cfg.fp4
            if use_hip_fp4:
                y = hip_fp4(x)
            else:
                y = cuda_fp8(x)
            return y
        """
    )
    result = transform_source(source, path="sglang/srt/x.py", module="sglang.srt.x",
                              inputs=deepseek_inputs(), codemods=["fold_platform"])
    assert result.status == "success", result.error
    assert "def compress(x, cfg):\n    y = cuda_fp8(x)\n    return y\n" in result.code


def test_a_local_bound_in_a_block_decides_the_branches_below_it() -> None:
    # v0.5.23 deepseek_v4.py: `use_npu_cp_full_metadata = use_cp and _is_npu` at the top of an `else:`,
    # then `if use_npu_cp_full_metadata:` twice; rotary factory's `use_aiter_rope = False` (a folded
    # binding an earlier batch left) with a plain `debug = False` beside it
    from shrinker.codemods.pipeline import transform_source

    source = textwrap.dedent(
        """
        def forward(self, x, use_cp):
            if x is None:
                return None
            else:
                use_npu_cp_full_metadata = use_cp and _is_npu
                if use_npu_cp_full_metadata:
                    y = npu(x)
                else:
                    y = cuda(x)
                if use_npu_cp_full_metadata:
                    y = y + 1
                return y


        def get_rope(dim):
            use_aiter_rope = False
            debug = False
            if use_aiter_rope:
                return aiter_rope(dim)
            if debug:
                print(dim)
            return rope(dim)
        """
    )
    result = transform_source(source, path="sglang/srt/x.py", module="sglang.srt.x",
                              inputs=deepseek_inputs(), codemods=["fold_platform"])
    assert result.status == "success", result.error
    assert "    else:\n        y = cuda(x)\n        return y\n" in result.code, result.code
    assert "def get_rope(dim):\n    debug = False\n    if debug:\n        print(dim)\n    return rope(dim)\n" in result.code


def test_a_literal_agreeing_with_a_decided_binding_folds() -> None:
    # 0.5.23 deepseek_v4_memory_pool.py: `index_k_page8 = _is_hip and envs...get()`, then `index_k_page8 = False`
    # inside `if index_k_page8:`; a literal that disagrees (`other = True`), or literals alone (`debug`), stay
    from shrinker.codemods.pipeline import transform_source

    source = textwrap.dedent(
        """
        def build(ratio):
            index_k_page8 = _is_hip and envs.PAGE8.get()
            if index_k_page8:
                from sglang.kernels.ops.attention.dsv4.fp4_indexer_hip import aiter_has_fp4_rowgroup

                index_k_page8 = False
            pools = make(page8=ratio == 1 and index_k_page8)
            other = _is_hip and ready()
            if other:
                other = True
            debug = False
            if ratio:
                debug = False
            return pools, other, debug
        """
    )
    result = transform_source(source, path="sglang/srt/x.py", module="sglang.srt.x",
                              inputs=deepseek_inputs(), codemods=["fold_platform"])
    assert result.status == "success", result.error
    assert result.code == textwrap.dedent(
        """
        def build(ratio):
            pools = make(page8=False)
            other = False
            if other:
                other = True
            debug = False
            if ratio:
                debug = False
            return pools, other, debug
        """), result.code


def test_a_branch_for_another_stack_s_torch_build_goes() -> None:
    # 0.5.23 sgl_kernel/__init__.py: `if hasattr(torch.version, "musa") and torch.version.musa is not None:`
    result = run_transform(RemoveDeadBranches, textwrap.dedent(
        """
        if hasattr(torch.version, "musa") and torch.version.musa is not None:
            from sgl_kernel.musa import top_k_top_p_sampling_from_probs
        x = 1
        """))[0]
    assert result == "\nx = 1\n"
