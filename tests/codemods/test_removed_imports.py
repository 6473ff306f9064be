"""remove_dead_imports: before/after cases on SGLang's import shapes, findings, idempotence."""

from __future__ import annotations

import textwrap

from libcst.codemod import CodemodTest

from shrinker.codemods.removed_imports import RemoveImportsOfRemovedModules
from tests.codemods.helpers_registry import assert_idempotent, context, make_inputs, run

NPU = "sglang.srt.hardware_backend.npu"
MM = "sglang.srt.multimodal"
INPUTS = make_inputs([NPU, MM, "sglang.srt.layers.moe.moe_runner.aiter", "sglang.srt.configs.afmoe"])


class TestRemoveDeadImports(CodemodTest):
    TRANSFORM = RemoveImportsOfRemovedModules

    def check(self, before: str, after: str, module: str = "sglang.srt.model_executor.runner", **kw) -> None:
        self.assertCodemod(before, after, kw.pop("inputs", INPUTS), context_override=context(module, **kw))

    def test_module_level_absolute(self) -> None:
        self.check(
            """
            import torch

            # graph runners per platform
            from sglang.srt.hardware_backend.npu.graph_runner import NPUGraphRunner
            from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner  # keep me
            import sglang.srt.hardware_backend.npu.utils as npu_utils
            """,
            """
            import torch
            from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner  # keep me
            """,
        )

    def test_relative_imports_resolve_against_package(self) -> None:
        self.check(
            """
            from . import cuda_ops
            from ..npu import graph_runner
            from ..npu.utils import npu_format
            from .. import gpu, npu
            """,
            """
            from . import cuda_ops
            from .. import gpu
            """,
            module="sglang.srt.hardware_backend.gpu.ops",
        )

    def test_relative_import_in_package_init(self) -> None:
        self.check(
            """
            from .npu import x
            from .gpu import y
            """,
            """
            from .gpu import y
            """,
            module="sglang.srt.hardware_backend",
            filename="sglang/srt/hardware_backend/__init__.py",
        )

    def test_from_package_import_removed_submodule_keeps_other_names(self) -> None:
        self.check(
            """
            from sglang.srt.layers.moe.moe_runner import (  # noqa: F401
                aiter,
                triton,
            )
            from sglang.srt.layers.moe.moe_runner import triton, aiter
            """,
            """
            from sglang.srt.layers.moe.moe_runner import (  # noqa: F401
                triton,
            )
            from sglang.srt.layers.moe.moe_runner import triton
            """,
        )

    def test_function_level_import_block_empties_to_pass(self) -> None:
        self.check(
            """
            def init(runner):
                if runner.device == "npu":
                    from sglang.srt.hardware_backend.npu.allocator import NPUAllocator
                return runner
            """,
            """
            def init(runner):
                if runner.device == "npu":
                    pass
                return runner
            """,
        )

    def test_type_checking_block_that_empties_is_removed(self) -> None:
        self.check(
            """
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                # evade circular imports
                from sglang.srt.multimodal.processors.base_processor import BaseProcessor

            def f(p: "BaseProcessor") -> None:
                x: BaseProcessor = p
            """,
            """
            from typing import TYPE_CHECKING

            def f(p: "BaseProcessor") -> None:
                x: BaseProcessor = p
            """,
        )

    def test_type_checking_block_keeps_other_imports(self) -> None:
        self.check(
            """
            if TYPE_CHECKING:
                from sglang.srt.model_executor.model_runner import ModelRunner
                from sglang.srt.multimodal.mm_utils import MMItem
            """,
            """
            if TYPE_CHECKING:
                from sglang.srt.model_executor.model_runner import ModelRunner
            """,
        )

    def test_try_import_error_folds_to_fallback(self) -> None:
        self.check(
            """
            x = 1

            # optional NPU kernels
            try:
                from sglang.srt.hardware_backend.npu.kernels import fused_op

                _has_npu_kernels = True
            except ImportError:
                # not installed
                _has_npu_kernels = False
                fused_op = None
            y = fused_op
            """,
            """
            x = 1

            # optional NPU kernels
            # not installed
            _has_npu_kernels = False
            fused_op = None
            y = fused_op
            """,
        )

    def test_try_with_earlier_import_keeps_that_part(self) -> None:
        self.check(
            """
            try:
                from sgl_kernel import gptq_gemm

                from sglang.srt.hardware_backend.npu.gptq import repack
            except Exception:
                repack = None
            """,
            """
            try:
                from sgl_kernel import gptq_gemm
            except Exception:
                pass
            repack = None
            """,
        )

    def test_try_that_only_imports_disappears(self) -> None:
        self.check(
            """
            def load():
                try:
                    import sglang.srt.multimodal.processors
                except ImportError:
                    pass
                return 1
            """,
            """
            def load():
                return 1
            """,
        )

    def test_dunder_all_entries_of_removed_names_go(self) -> None:
        self.check(
            """
            from sglang.srt.configs.afmoe import AfmoeConfig
            from sglang.srt.configs.deepseekvl2 import DeepseekVL2Config

            __all__ = [
                "AfmoeConfig",
                "DeepseekVL2Config",
            ]
            """,
            """
            from sglang.srt.configs.deepseekvl2 import DeepseekVL2Config

            __all__ = [
                "DeepseekVL2Config",
            ]
            """,
            module="sglang.srt.configs",
            filename="sglang/srt/configs/__init__.py",
        )

    def test_name_a_kept_package_no_longer_provides(self) -> None:
        inputs = make_inputs([], names={"sglang.srt.configs": ["AfmoeConfig"]})
        self.check(
            """
            from sglang.srt.configs import (
                AfmoeConfig,
                DeepseekVL2Config,
            )
            """,
            """
            from sglang.srt.configs import (
                DeepseekVL2Config,
            )
            """,
            inputs=inputs,
        )

    def test_a_signature_annotation_naming_a_removed_name_goes(self) -> None:
        # 0.5.23 speculative/draft_utils.py (no `from __future__ import annotations`):
        # `qsa_profile: Optional[QSAProfile] = None` would raise NameError when the def runs
        self.check(
            """
            from typing import Optional

            from sglang.srt.hardware_backend.npu.config import NPUProfile


            class Factory:
                def __init__(self, runner, profile: Optional[NPUProfile] = None, topk: int = 1):
                    self.profile = profile

                def make(self, x) -> NPUProfile:
                    return x

                def keep(self, y: int) -> int:
                    return y
            """,
            """
            from typing import Optional


            class Factory:
                def __init__(self, runner, profile=None, topk: int = 1):
                    self.profile = profile

                def make(self, x):
                    return x

                def keep(self, y: int) -> int:
                    return y
            """,
        )

    def test_a_class_list_only_isinstance_reads_loses_a_removed_class(self) -> None:
        # 0.5.23 speculative/eagle_worker_v2.py: graph_supported_backend_types
        self.check(
            """
            from sglang.srt.hardware_backend.npu.backend import NPUBackend


            def supported(self):
                types = [
                    TritonBackend,
                    NPUBackend,
                ]
                if cuda:
                    types.append(FlashBackend)
                return isinstance(self.backend, tuple(types))
            """,
            """


            def supported(self):
                types = [
                    TritonBackend,
                ]
                if cuda:
                    types.append(FlashBackend)
                return isinstance(self.backend, tuple(types))
            """,
        )

    def test_untouched_file_is_byte_identical(self) -> None:
        code = "import os  # c\nfrom sglang.srt.utils import is_hip\n\n\ndef f():\n    return os\n"
        out, transform = run(RemoveImportsOfRemovedModules, code, INPUTS, dedent=False)
        assert out == code and not transform.changes and not transform.findings


def test_removed_name_still_used_is_a_finding_with_file_and_line() -> None:
    code = """\
        from sglang.srt.hardware_backend.npu.graph_runner import NPUGraphRunner, npu_sync
        import sglang.srt.hardware_backend.npu.utils


        def make(runner):
            sglang.srt.hardware_backend.npu.utils.init()
            return NPUGraphRunner(runner)
        """
    out, transform = run(RemoveImportsOfRemovedModules, code, INPUTS,
                         module="sglang.srt.model_executor.runner")
    assert "NPUGraphRunner" not in out.splitlines()[0]
    assert transform.findings == [
        "sglang/srt/model_executor/runner.py:6: sglang.srt.hardware_backend.npu.utils from removed module "
        "sglang.srt.hardware_backend.npu.utils is still used",
        "sglang/srt/model_executor/runner.py:7: NPUGraphRunner from removed module "
        "sglang.srt.hardware_backend.npu.graph_runner is still used",
    ]


def test_name_still_bound_elsewhere_is_not_a_finding() -> None:
    code = """\
        try:
            from sglang.srt.hardware_backend.npu.ops import op
        except ImportError:
            op = None
        y = op
        import sglang.srt.hardware_backend.npu.ops
        import sglang.srt.utils
        sglang.srt.utils.f()
        """
    _, transform = run(RemoveImportsOfRemovedModules, code, INPUTS)
    assert transform.findings == []


def test_type_checking_names_used_at_runtime_are_findings_annotations_are_not() -> None:
    code = """\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from sglang.srt.multimodal.mm_utils import MMItem

        def f(item: "MMItem", other: "list[MMItem]"):
            local: MMItem = item
            return isinstance(item, MMItem)
        """
    _, transform = run(RemoveImportsOfRemovedModules, code, INPUTS, module="sglang.srt.managers.io")
    assert transform.findings == [
        "sglang/srt/managers/io.py:8: MMItem from removed module sglang.srt.multimodal.mm_utils is still used"]


def test_evaluated_annotation_is_a_finding_unless_future_annotations() -> None:
    # a decorated def: the decorator may read its annotations (an undecorated one's go, test above)
    code = """\
        from sglang.srt.multimodal.mm_utils import MMItem

        @router.post("/items")
        def f(item: MMItem) -> None:
            pass
        """
    _, plain = run(RemoveImportsOfRemovedModules, code, INPUTS)
    assert [f.split(": ", 1)[1] for f in plain.findings] == [
        "MMItem from removed module sglang.srt.multimodal.mm_utils is still used"]
    future_code = "from __future__ import annotations\n" + textwrap.dedent(code)
    _, future = run(RemoveImportsOfRemovedModules, future_code, INPUTS, dedent=False)
    assert future.findings == []


def test_try_that_cannot_be_folded_stays_as_it_is() -> None:
    # 0.5.23's DSv4 runtime: `except ImportError as e:` reads e, so no fold; the import stays and fails
    # into the same handler (ModuleNotFoundError), which is what the fold would have made explicit
    code = """\
        if fly is None:
            try:
                from sglang.srt.hardware_backend.npu import ops as fly

                origin = "in-tree"
            except ImportError as e:
                fly = None
                logger.warning("unavailable: %s", e)
        """
    out, transform = run(RemoveImportsOfRemovedModules, code, INPUTS)
    assert out == textwrap.dedent(code)
    assert transform.findings == []


def test_star_import_of_removed_module_reports_unresolved_names() -> None:
    code = "from sglang.srt.multimodal.utils import *\n\nx = helper()\n"
    out, transform = run(RemoveImportsOfRemovedModules, code, INPUTS, dedent=False)
    assert out == "\nx = helper()\n"
    assert transform.findings == ["pkg/mod.py:?: helper may have come from a star import from removed module "
                                  "sglang.srt.multimodal.utils"]


ISINSTANCE_BEFORE = """\
    def _is_unquantized(linear):
        quant_method = getattr(linear, "quant_method", None)
        if quant_method is None:
            return True
        from sglang.srt.multimodal.linear import UnquantizedLinearMethod

        return isinstance(quant_method, UnquantizedLinearMethod)  # a diffusion model's linear


    def pick(layer):
        from sglang.srt.multimodal.a import A, B
        from torch import nn

        ok = isinstance(layer.m, (nn.Linear, A))
        return ok and isinstance(layer, (A, B))
    """


class TestIsinstanceOfRemovedClasses(CodemodTest):
    """0.5.17's kernels/ops/diffusion/fused_linear_gelu.py: no instance of a removed class exists."""

    TRANSFORM = RemoveImportsOfRemovedModules

    def test_folds_to_false_and_drops_tuple_members(self) -> None:
        self.assertCodemod(ISINSTANCE_BEFORE, """
            def _is_unquantized(linear):
                quant_method = getattr(linear, "quant_method", None)
                if quant_method is None:
                    return True

                return False  # a diffusion model's linear


            def pick(layer):
                from torch import nn

                ok = isinstance(layer.m, (nn.Linear,))
                return ok and False
            """, INPUTS, context_override=context("sglang.kernels.ops.gelu"))


    def test_union_members_go_with_their_spacing(self) -> None:
        """0.5.23's configs/hybrid_arch.py: `isinstance(config, Qwen3NextConfig | ... | JetVLMConfig)`."""
        self.assertCodemod("""
            from sglang.srt.multimodal.a import A, B
            from torch import nn


            def gdn(config):
                if isinstance(
                    config,
                    A
                    | nn.Linear
                    | B,  # the hybrid ones
                ):
                    return config
                return isinstance(config, A | B) or isinstance(config, (A | B))
            """, """
            from torch import nn


            def gdn(config):
                if isinstance(
                    config,
                    nn.Linear,  # the hybrid ones
                ):
                    return config
                return False or False
            """, INPUTS, context_override=context("sglang.srt.configs.hybrid_arch"))


def test_isinstance_of_a_call_or_a_shadowed_isinstance_stays_a_finding() -> None:
    code = """\
        from sglang.srt.multimodal.a import A

        x = isinstance(make(), A)
        y = isinstance(x, (A | int) | str)  # an inner chain is one member
        z = isinstance(x, (A | int, str))


        def isinstance(a, b):
            return True
        """
    _, transform = run(RemoveImportsOfRemovedModules, code, INPUTS)
    assert [f.split(": ", 1)[1] for f in transform.findings] == [
        "A from removed module sglang.srt.multimodal.a is still used"] * 3
    assert assert_idempotent(RemoveImportsOfRemovedModules, ISINSTANCE_BEFORE, INPUTS).count("isinstance(") == 1


def test_idempotent() -> None:
    code = """\
        from typing import TYPE_CHECKING
        from sglang.srt.layers.moe.moe_runner import aiter, triton

        if TYPE_CHECKING:
            from sglang.srt.multimodal.mm_utils import MMItem
        try:
            from sglang.srt.hardware_backend.npu.ops import op
        except ImportError:
            op = None
        """
    once = assert_idempotent(RemoveImportsOfRemovedModules, code, INPUTS)
    assert "op = None" in once and "MMItem" not in once and "aiter" not in once


def test_nested_function_parameter_annotation_is_evaluated_local_annotation_is_not() -> None:
    code = """\
        from sglang.srt.multimodal.mm_utils import MMItem

        def outer():
            item: MMItem = None

            @register
            def inner(x: MMItem):
                return x
            return inner

        __all__ = ["outer"]
        __all__ += ["MMItem"]
        """
    out, transform = run(RemoveImportsOfRemovedModules, code, INPUTS)
    assert [f.split(": ", 1)[1] for f in transform.findings] == [
        "MMItem from removed module sglang.srt.multimodal.mm_utils is still used"]
    assert transform.findings[0].startswith("pkg/mod.py:7:")
    assert '__all__ += []' in out and '__all__ = ["outer"]' in out


def test_a_class_list_read_otherwise_keeps_the_finding() -> None:
    code = """\
        from sglang.srt.multimodal.mm_utils import MMItem

        def f(x):
            types = [int, MMItem]
            log(types)
            return isinstance(x, tuple(types))
        """
    _, transform = run(RemoveImportsOfRemovedModules, code, INPUTS)
    assert [f.split(": ", 1)[1] for f in transform.findings] == [
        "MMItem from removed module sglang.srt.multimodal.mm_utils is still used"]


def test_wants_is_a_cheap_word_test() -> None:
    assert RemoveImportsOfRemovedModules.wants("from sglang.srt.hardware_backend import npu\n", INPUTS)
    assert not RemoveImportsOfRemovedModules.wants("import torch\nfrom sglang.srt.utils import x\n", INPUTS)


def test_registered_in_the_pipeline() -> None:
    from shrinker.codemods.pipeline import CODEMODS, transform_source

    assert CODEMODS["remove_dead_imports"] is RemoveImportsOfRemovedModules
    result = transform_source("import os\nfrom sglang.srt.multimodal import mm_utils\n", path="sglang/srt/a.py",
                              module="sglang.srt.a", inputs=INPUTS, codemods=["remove_dead_imports"])
    assert result.status == "success" and result.code == "import os\n"
    assert result.changes == {"remove_dead_imports.imports_removed": 1}


def test_lost_names_from_facts_follow_reexport_chains() -> None:
    from shrinker.codemods.removed_imports import lost_names_from_facts
    from shrinker.graph.records import FileFacts, ImportRecord, Where

    def facts(module: str, *imports: ImportRecord, defined: list[str]) -> FileFacts:
        return FileFacts(path=module.replace(".", "/") + ".py", module=module, is_package=False, lines=1,
                         imports=list(imports), defined=defined)

    plain, guarded = Where(), Where(guards=["_is_npu"])
    graph = [
        facts("pkg.configs", ImportRecord("pkg.configs.afmoe", ["AfmoeConfig"], 1, True, plain),
              ImportRecord("pkg.configs.dsv2", ["DeepseekV2Config"], 2, True, plain),
              ImportRecord("pkg.configs.npu", ["NpuConfig"], 3, True, guarded),
              defined=["AfmoeConfig", "DeepseekV2Config", "NpuConfig"]),
        facts("pkg.utils.common", ImportRecord("pkg.configs", ["AfmoeConfig", "DeepseekV2Config"], 1, True, plain),
              defined=["AfmoeConfig", "DeepseekV2Config"]),
        facts("pkg.user", ImportRecord("pkg.utils.common", ["AfmoeConfig"], 1, True, plain), defined=["AfmoeConfig"]),
    ]
    removed = make_inputs(["pkg.configs.afmoe", "pkg.configs.npu"]).removed
    assert lost_names_from_facts(graph, removed) == {
        "pkg.configs": frozenset({"AfmoeConfig"}), "pkg.utils.common": frozenset({"AfmoeConfig"}),
        "pkg.user": frozenset({"AfmoeConfig"})}


class TestRecordsNamingRemovedModules(CodemodTest):
    """0.5.18's managers/rust_server.py: a table of literal records, one naming the removed Qwen VL
    processor by string (`"module:Class"`); the record goes, records naming kept modules stay."""

    TRANSFORM = RemoveImportsOfRemovedModules

    def test_a_literal_record_naming_a_removed_module_goes(self) -> None:
        self.assertCodemod(
            """
            FAMILIES = (
                Family(
                    name="qwen_vl",
                    processor="sglang.srt.multimodal.processors.qwen_vl:QwenVLImageProcessor",
                    model_types=frozenset(("qwen2_vl", "qwen3_vl")),
                    resample={"Qwen2VLImageProcessor": "aten_u8"},
                ),
                Family(name="deepseek", processor="sglang.srt.models.deepseek_v2:Thing"),  # stays
            )
            PAIRS = [("npu", "sglang.srt.hardware_backend.npu.utils"), ("cuda", "sglang.srt.utils")]
            """,
            """
            FAMILIES = (
                Family(name="deepseek", processor="sglang.srt.models.deepseek_v2:Thing"),  # stays
            )
            PAIRS = [("cuda", "sglang.srt.utils")]
            """,
            INPUTS, context_override=context("sglang.srt.managers.rust_server"))

    def test_a_record_with_code_in_it_or_a_plain_string_stays(self) -> None:
        before = """
            ENTRIES = (
                Family(processor="sglang.srt.multimodal.processors.qwen_vl:X", make=build()),
                "sglang.srt.multimodal.processors.qwen_vl:X",
                Family(processor=f"sglang.srt.multimodal.{name}"),
            )
            """
        self.assertCodemod(before, before, INPUTS, context_override=context("sglang.srt.managers.rust_server"))


def test_an_import_of_a_removed_modules_reexport_is_redirected_to_its_definition() -> None:
    # 0.5.23's models/deepseek_v4: `from sglang.srt.models.dbrx import ReplicatedLinear`, which dbrx only
    # re-exports from layers.linear (the plan's reexports_of_removed)
    inputs = make_inputs(["sglang.srt.models.dbrx", NPU])
    inputs.removed.reexports = {"sglang.srt.models.dbrx": {"ReplicatedLinear": "sglang.srt.layers.linear",
                                                           "RowParallelLinear": "sglang.srt.layers.linear"},
                                NPU: {"npu_op": "sglang.srt.hardware_backend.npu.ops"}}
    code = """\
        from sglang.srt.models.dbrx import ReplicatedLinear  # the one linear V4 needs
        from .dbrx import ReplicatedLinear as RL, RowParallelLinear
        from sglang.srt.models.dbrx import DbrxModel, ReplicatedLinear as Linear2


        def make():
            return ReplicatedLinear, RL, RowParallelLinear, Linear2
        """
    out, transform = run(RemoveImportsOfRemovedModules, code, inputs, module="sglang.srt.models.deepseek_v4")
    assert out.splitlines()[:2] == [
        "from sglang.srt.layers.linear import ReplicatedLinear  # the one linear V4 needs",
        "from sglang.srt.layers.linear import ReplicatedLinear as RL, RowParallelLinear"]
    # a name the removed module defines itself keeps the whole import on the removal path
    assert "DbrxModel" not in out and transform.findings == [
        "sglang/srt/models/deepseek_v4.py:7: Linear2 from removed module sglang.srt.models.dbrx is still used"]
    assert transform.changes["imports_redirected"] == 2
    assert assert_idempotent(RemoveImportsOfRemovedModules, code, inputs,
                             module="sglang.srt.models.deepseek_v4").splitlines()[:2] == out.splitlines()[:2]
