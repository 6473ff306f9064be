"""Findings inside a function nothing references wait for the dead-symbol batch (apply/deferral.py)."""

from __future__ import annotations

from functools import lru_cache

from shrinker.apply.deferral import defer_dead_functions
from shrinker.rules.load import load_rules
from shrinker.rules.predicates import PredicateTable


@lru_cache(maxsize=1)
def cuda_table() -> PredicateTable:
    return PredicateTable(load_rules("deepseek").platform)


def write_module(tmp_path, name: str, text: str) -> None:
    (tmp_path / "python/pkg").mkdir(parents=True, exist_ok=True)
    (tmp_path / "python/pkg" / name).write_text(text)

COMMON = '''import os


def load_audio(source):
    if is_audio_container(source[:16]):
        return decode_audio_container(source)
    return None


def used(x):
    return is_audio_container(x)
'''


def test_findings_in_an_unreferenced_function_are_deferred_the_rest_stand(tmp_path):
    write_module(tmp_path, "common.py", COMMON)
    (tmp_path / "python/pkg/server.py").write_text("from pkg.common import used\n")
    findings = [
        "[removed names still used] python/pkg/common.py:5: is_audio_container from removed module m is still used",
        "[undefined_names] python/pkg/common.py:6 undefined name 'decode_audio_container' (UndefinedName)",
        "[removed names still used] python/pkg/common.py:11: is_audio_container from removed module m is still used",
        "[imports of missing modules] python/pkg/other.py:1: imports missing module m",
    ]
    standing, deferred = defer_dead_functions(findings, tmp_path)
    assert standing == findings[2:]
    assert len(deferred) == 2 and all("deferred: load_audio in python/pkg/common.py" in d for d in deferred)
    # a mention anywhere (a string, __all__, getattr) keeps the finding
    (tmp_path / "python/pkg/server.py").write_text('from pkg.common import used\nNAMES = ["load_audio"]\n')
    assert defer_dead_functions(findings, tmp_path) == (findings, [])
    # ... unless that file goes in a later batch (0.5.17: the EPD encoder, load_audio's only caller)
    assert defer_dead_functions(findings, tmp_path, {"python/pkg/server.py"})[0] == findings[3:]  # used() too


def test_findings_in_a_module_level_table_nothing_reads_are_deferred(tmp_path):
    # 0.5.18 quantization/__init__: CPU_QUANTIZATION_METHODS names the removed AutoRoundConfig; nothing reads it
    write_module(tmp_path, "quant.py", 'BASE = {"fp8": Fp8Config}\n\nCPU_METHODS = {\n    "fp8": Fp8Config,\n    "auto-round": AutoRoundConfig,\n}\n'
        "\n\ndef get(name):\n    return BASE[name]\n")
    findings = ["[undefined_names] python/pkg/quant.py:5 undefined name 'AutoRoundConfig' (UndefinedName)",
                "[undefined_names] python/pkg/quant.py:1 undefined name 'Fp8Config' (UndefinedName)"]
    standing, deferred = defer_dead_functions(findings, tmp_path)
    assert standing == findings[1:]  # BASE is read by get()
    assert deferred == [findings[0] + " (deferred: CPU_METHODS in python/pkg/quant.py is referenced nowhere in "
                                      "the tree; the dead-symbol batch removes it)"]


def test_a_read_only_on_another_platform_keeps_nothing_alive(tmp_path):
    # 0.5.18: CPU_QUANTIZATION_METHODS is read only under `if is_cpu() and cpu_has_amx_support():`
    write_module(tmp_path, "quant.py", 'CPU_METHODS = {\n    "auto-round": AutoRoundConfig,\n}\n\n\ndef get(name):\n'
        "    if is_cpu() and cpu_has_amx_support():\n        return CPU_METHODS[name]\n    return None\n")
    findings = ["[undefined_names] python/pkg/quant.py:2 undefined name 'AutoRoundConfig' (UndefinedName)"]
    assert defer_dead_functions(findings, tmp_path)[0] == findings  # without the platform: the read counts
    standing, deferred = defer_dead_functions(findings, tmp_path, table=cuda_table())
    assert standing == [] and "CPU_METHODS in python/pkg/quant.py" in deferred[0]


def test_a_codemod_finding_counted_before_the_batch_edits_is_found_by_its_name(tmp_path):
    # remove_dead_imports reports lines of the file it was given; the gate reads the edited file
    write_module(tmp_path, "quant.py", 'CPU_METHODS = {\n    "auto-round": AutoRoundConfig,\n}\n\n\ndef get(name):\n'
        "    if is_cpu():\n        return CPU_METHODS[name]\n    return None\n")
    findings = ["[removed names still used] python/pkg/quant.py:4: AutoRoundConfig from removed module "
                "pkg.auto_round is still used"]
    standing, deferred = defer_dead_functions(findings, tmp_path, table=cuda_table())
    assert standing == [] and "CPU_METHODS in python/pkg/quant.py" in deferred[0]


def test_a_method_called_only_on_another_platform_is_deferred(tmp_path):
    # 0.5.20 fp8.py: Fp8MoEMethod._process_npu_fp4_expert_weights imports NPU helpers; its one call sits
    # under `if _is_npu:`, which the platform batch removes
    write_module(tmp_path, "fp8.py", "class Fp8MoEMethod:\n    def process(self, layer):\n        if _is_npu:\n"
        "            self._process_npu_fp4(layer)\n\n    def _process_npu_fp4(self, layer):\n"
        "        return npu_format_cast(layer)\n")
    findings = ["[undefined_names] python/pkg/fp8.py:7 undefined name 'npu_format_cast' (UndefinedName)"]
    assert defer_dead_functions(findings, tmp_path)[0] == findings  # the call counts without the platform
    standing, deferred = defer_dead_functions(findings, tmp_path, table=cuda_table())
    assert standing == [] and "_process_npu_fp4 in python/pkg/fp8.py" in deferred[0]


def test_a_finding_whose_line_moved_into_another_definition_is_found_by_its_name(tmp_path):
    # the batch removed lines above the use: the finding's old line now falls inside `other`
    write_module(tmp_path, "fp8.py", "class M:\n    def other(self):\n        return 1\n\n    def _npu_only(self, layer):\n"
        "        return npu_format_cast(layer)\n")
    findings = ["[removed names still used] python/pkg/fp8.py:3: npu_format_cast from removed module m is still used"]
    standing, deferred = defer_dead_functions(findings, tmp_path)
    assert standing == [] and "_npu_only in python/pkg/fp8.py" in deferred[0]


OPS = '''from pkg.selector import get_kernel


def causal_conv1d_fwd(x):
    return get_kernel("mamba.causal_conv1d_fwd")(x)


__all__ = ["causal_conv1d_fwd"]
'''


def test_a_same_named_function_elsewhere_and_its_own_key_keep_nothing_alive(tmp_path):
    # 0.5.23 batch 6: kernels/ops/mamba's records went with their kernels' module; its wrappers ask for
    # their keys until the dead-symbol batch; sgl_kernel has (and exports) another causal_conv1d_fwd
    write_module(tmp_path, "ops.py", OPS)
    (tmp_path / "sgl-kernel/python/sgl_kernel").mkdir(parents=True)
    (tmp_path / "sgl-kernel/python/sgl_kernel/__init__.py").write_text(
        'from sgl_kernel.mamba import causal_conv1d_fwd\n\n_DEBUG_EXPORT_NAMES = ["causal_conv1d_fwd"]\n'
        '__all__ = ["causal_conv1d_fwd"]\n')
    findings = ["[kernel_ops] python/pkg/ops.py:5 asks kernel_ops for 'mamba.causal_conv1d_fwd', "
                "which no record of the tree serves"]
    standing, deferred = defer_dead_functions(findings, tmp_path)
    assert standing == [] and "causal_conv1d_fwd in python/pkg/ops.py" in deferred[0]
    for user in ("from pkg.ops import causal_conv1d_fwd\n",  # imported by name
                 "from pkg import ops\n\nops.causal_conv1d_fwd(1)\n",  # through its module
                 "from pkg.ops import *\n",  # __all__ is what a star import binds
                 'import importlib\n\nT = "pkg.ops:causal_conv1d_fwd"\n'):  # a target string
        write_module(tmp_path, "user.py", user)
        assert defer_dead_functions(findings, tmp_path) == (findings, []), user
