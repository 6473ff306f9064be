"""remove_platform_imports: before/after cases in SGLang v0.5.16 shapes (snippets written for these tests)."""

from __future__ import annotations

from shrinker.codemods.pipeline import transform_source
from shrinker.codemods.platform_imports import RemovePlatformPackageImports
from tests.codemods.helpers import PlatformCodemodTest, deepseek_inputs


class TestPlatformImports(PlatformCodemodTest):
    TRANSFORM = RemovePlatformPackageImports

    def test_unused_platform_imports_go(self) -> None:
        self.assertCodemod(
            """
            import os

            import aiter
            import torch_npu  # noqa: F401
            import mlx.core as mx
            from sgl_kernel_npu.norm import l1_norm
            import torch

            def f():
                import wave_lang.kernel.lang as tkl
                return os.getpid()
            """,
            """
            import os
            import torch

            def f():
                return os.getpid()
            """,
        )

    def test_from_import_is_trimmed_to_the_used_names(self) -> None:
        self.assertCodemod(
            """
            from aiter import (
                ActivationType,
                QuantType,
                dtypes,
            )

            def quant_type():
                return QuantType.per_Token
            """,
            """
            from aiter import (
                QuantType,
            )

            def quant_type():
                return QuantType.per_Token
            """,
            findings=["import of `QuantType` (aiter) kept: still used at line 8"],
        )

    def test_used_imports_stay_with_a_finding(self) -> None:
        self.assertCodemod(
            """
            import torch_npu

            def hccl_options():
                return torch_npu._C._distributed_c10d.ProcessGroupHCCL.Options()
            """,
            """
            import torch_npu

            def hccl_options():
                return torch_npu._C._distributed_c10d.ProcessGroupHCCL.Options()
            """,
            findings=["import of `torch_npu` (torch_npu) kept: still used at line 4"],
        )

    def test_used_function_level_import_stays_without_a_finding(self) -> None:
        # it raises ImportError on CUDA exactly where upstream's did
        self.assertCodemod(
            """
            def run(self, runner_input):
                from aiter import ActivationType, QuantType

                return ActivationType.Silu
            """,
            """
            def run(self, runner_input):
                from aiter import ActivationType

                return ActivationType.Silu
            """,
            findings=[],
        )

    def test_guarded_star_and_other_imports_untouched(self) -> None:
        instance = self.assertUnchanged(
            """
            import os
            import json as _json
            from aiter.ops import *
            try:
                import aiter
            except ImportError:
                aiter = None
            from sglang.srt.utils import is_hip
            """
        )
        self.assertEqual(len(instance.findings), 1)
        self.assertIn("star import", instance.findings[0])


def test_imports_freed_by_folding_go_in_the_same_run() -> None:
    source = (
        "import torch\n"
        "import torch_npu\n"
        "from aiter import rmsnorm2d_fwd\n"
        "\n"
        "from sglang.srt.utils import is_npu\n"
        "\n"
        "_is_npu = is_npu()\n"
        "_use_aiter = get_bool_env_var(\"SGLANG_USE_AITER\") and _is_hip\n"
        "\n"
        "\n"
        "class RMSNorm(MultiPlatformOp):\n"
        "    def forward_cuda(self, x):\n"
        "        if _use_aiter:\n"
        "            return rmsnorm2d_fwd(x)\n"
        "        return torch.ops.sgl_kernel.rmsnorm(x)\n"
        "\n"
        "    def forward_npu(self, x):\n"
        "        return torch_npu.npu_rms_norm(x)[0]\n"
    )
    expected = (
        "import torch\n"
        "\n"
        "from sglang.srt.utils import is_npu\n"
        "\n"
        "_is_npu = is_npu()\n"
        "_use_aiter = False\n"
        "\n"
        "\n"
        "class RMSNorm(MultiPlatformOp):\n"
        "    def forward_cuda(self, x):\n"
        "        return torch.ops.sgl_kernel.rmsnorm(x)\n"
    )
    result = transform_source(source, path="sglang/srt/layers/layernorm.py", module="sglang.srt.layers.layernorm",
                              inputs=deepseek_inputs(), codemods=["fold_platform", "remove_platform_methods"])
    assert result.status == "success", result.error
    assert result.code == expected
    assert result.changes["remove_platform_imports.imports_removed"] == 2
    assert result.findings == []
