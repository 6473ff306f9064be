"""The pipeline: one parse per file, codemods in order, success / failure / skip, many files in parallel.

Also the generated (property) tests: code without platform predicates passes through every
platform codemod byte-identical; code with them comes out compiling, idempotent and without a
platform test left.
"""

from __future__ import annotations

import tempfile
import textwrap
from dataclasses import replace

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.configuration import set_hypothesis_home_dir

from shrinker.codemods import pipeline
from shrinker.codemods.base import ShrinkCodemod, new_context
from shrinker.codemods.fold_platform import Folder, platform_tests
from shrinker.codemods.inputs import Removed
from shrinker.codemods.pipeline import (
    CODEMODS,
    PLATFORM_GROUP,
    FileItem,
    resolve_codemods,
    summarize,
    transform_files,
    transform_source,
)
from shrinker.errors import ShrinkError
from tests.codemods.gen import NEUTRAL_TESTS, PREDICATE_TESTS, modules
from tests.codemods.helpers import deepseek_inputs

PLATFORM = ["fold_platform", "remove_platform_methods"]

# Hypothesis writes failure patches under its home directory: keep them out of the checkout.
set_hypothesis_home_dir(tempfile.mkdtemp(prefix="shrinker-hypothesis-"))

LAYERNORM = '''\
import torch

from sglang.srt.utils import get_bool_env_var, is_hip, is_npu

_is_hip = is_hip()
_is_npu = is_npu()
_use_aiter = get_bool_env_var("SGLANG_USE_AITER") and _is_hip

if _use_aiter:
    from aiter import rmsnorm2d_fwd as rms_norm
elif _is_npu:
    import torch_npu
else:
    from sgl_kernel import rmsnorm  # CUDA kernels


class RMSNorm(MultiPlatformOp):
    def forward_cuda(self, x):
        return rmsnorm(x, self.weight.data, self.variance_epsilon)

    def forward_npu(self, x):
        return torch_npu.npu_rms_norm(x, self.weight, self.variance_epsilon)[0]

    def forward_hip(self, x):
        return rms_norm(x, self.weight.data, self.variance_epsilon)
'''

LAYERNORM_AFTER = '''\
import torch

from sglang.srt.utils import get_bool_env_var, is_hip, is_npu

_is_hip = is_hip()
_is_npu = is_npu()
_use_aiter = False

from sgl_kernel import rmsnorm  # CUDA kernels


class RMSNorm(MultiPlatformOp):
    def forward_cuda(self, x):
        return rmsnorm(x, self.weight.data, self.variance_epsilon)
'''


def run(source: str, codemods=PLATFORM, path: str = "sglang/srt/layers/layernorm.py"):
    return transform_source(source, path=path, module="sglang.srt.layers.layernorm",
                            inputs=deepseek_inputs(), codemods=codemods)


# -- registry and order ------------------------------------------------------------------------

def test_registry_names_match_the_rules_batches() -> None:
    for name in PLATFORM_GROUP:
        assert CODEMODS[name].NAME == name
    batch_names = {n for b in deepseek_inputs().rules.batches for n in b.codemods}
    assert {"fold_platform", "remove_platform_methods"} <= batch_names
    assert {"fold_platform", "remove_platform_methods"} <= set(CODEMODS)


def test_resolve_completes_and_orders_the_platform_group() -> None:
    assert resolve_codemods(["fold_platform", "remove_platform_methods"]) == [
        "fold_platform", "remove_dead_branches", "remove_platform_methods", "remove_other_device_backends",
        "remove_platform_bound", "remove_platform_imports"]
    assert resolve_codemods(["remove_platform_classes", "remove_platform_methods", "fold_platform"]) == list(
        PLATFORM_GROUP)
    assert resolve_codemods(["remove_platform_methods"]) == ["remove_platform_methods", "remove_other_device_backends",
                                                             "remove_platform_imports"]
    assert resolve_codemods([]) == []
    # dead_branches decides `isinstance(x, RemovedClass)` branches before the class's import goes (and brings
    # remove_platform_bound: test_an_early_dead_branch_pass_brings_remove_platform_bound)
    assert resolve_codemods(["prune_registries", "remove_dead_imports", "remove_unused_names"]) == [
        "prune_registries", "remove_dead_branches", "remove_platform_bound", "remove_dead_imports",
        "remove_unused_names"]


def test_resolve_keeps_other_codemods_in_place(monkeypatch) -> None:
    monkeypatch.setitem(CODEMODS, "zz_first", ShrinkCodemod)
    monkeypatch.setitem(CODEMODS, "zz_last", ShrinkCodemod)
    assert resolve_codemods(["zz_first", "fold_platform", "zz_last"]) == [
        "zz_first", "fold_platform", "remove_dead_branches", "remove_platform_bound", "remove_platform_imports",
        "zz_last"]


def test_unknown_codemod_is_a_clear_error() -> None:
    with pytest.raises(ShrinkError, match="unknown codemod"):
        resolve_codemods(["fold_platform", "no_such_codemod"])


# -- one file ----------------------------------------------------------------------------------

def test_one_parse_runs_every_platform_codemod() -> None:
    result = run(LAYERNORM)
    assert result.status == "success", result.error
    assert result.code == LAYERNORM_AFTER
    assert result.changes == {
        "fold_platform.flags_folded": 1,
        "remove_dead_branches.branches_decided": 2,
        "remove_dead_branches.blocks_inlined": 1,
        "remove_platform_methods.methods_removed": 2,
    }
    assert result.changed_by("remove_dead_branches") == 3
    assert result.findings == []
    assert run(result.code).status == "skip"  # idempotent as a whole


DSV4 = """\
from sglang.srt.utils import is_npu

_is_npu = is_npu()
if _is_npu:
    import torch_npu


class Attention(nn.Module):
    def _get_npu_rope_position_cache(self, positions):
        return Dsv4NpuRoPE.for_freqs(self.freqs_cis).get_cos_sin(positions)

    def _forward_prepare_multi_stream_npu(self, x, positions):
        cos, sin = self._get_npu_rope_position_cache(positions)
        return torch_npu.npu_rms_norm(x, cos, sin)

    def forward(self, x):
        return x
"""


def test_a_platform_method_whose_callers_another_codemod_took_goes_too() -> None:
    # 0.5.18: the NPU RoPE cache is called only from a function remove_platform_bound removes
    inputs = replace(deepseek_inputs(), shared_methods=frozenset(), removed=Removed(imported={}))

    def run_dsv4(source: str):
        return transform_source(source, path="sglang/srt/models/deepseek_v4.py", module="sglang.srt.models.deepseek_v4",
                                inputs=inputs, codemods=PLATFORM)

    result = run_dsv4(DSV4)
    assert result.status == "success", result.error
    assert "_get_npu_rope_position_cache" not in result.code and "_forward_prepare_multi_stream_npu" not in result.code
    assert "def forward(self, x)" in result.code and result.undefined == []
    assert result.changes["remove_platform_bound.functions_removed"] == 1
    assert result.changes["remove_platform_methods.methods_removed"] == 1
    assert run_dsv4(result.code).status == "skip"  # idempotent


@pytest.mark.parametrize("path,source,expected", [
    # 0.5.18's mem_cache/registry.py: only the NPU DSV4 pool has req_to_c128_sidecar (hasattr is False)
    ("sglang/srt/mem_cache/registry.py",
     "def build(params):\n"
     "    components = [FULL]\n"
     '    if hasattr(params.req_to_token_pool, "req_to_c128_sidecar"):\n'
     "        from sglang.srt.hardware_backend.npu.dsv4.c128_sidecar_component import C128SidecarComponent\n"
     "\n"
     "        components.append(C128SidecarComponent)\n"
     "    return components\n",
     "def build(params):\n    components = [FULL]\n    return components\n"),
    # 0.5.23's layers/cp/cp_decode_attn_tp.py: aiter_bpreshuffled is set only by aiter's ROCm weight shuffle
    # (getattr with a literal default is that default)
    ("sglang/srt/layers/cp/cp_decode_attn_tp.py",
     "def slice_weights(self, obj, raw):\n"
     '    if raw is not None and getattr(obj, "aiter_bpreshuffled", False):\n'
     "        raw = self._slice_aiter_bpreshuffled_weight(raw)\n"
     "    return raw\n",
     "def slice_weights(self, obj, raw):\n    return raw\n"),
])
def test_a_probe_for_an_attribute_only_another_platform_sets_folds(path, source, expected) -> None:
    result = run(source, path=path)
    assert result.status == "success", result.error
    assert result.code == expected


def test_skip_when_nothing_can_change_never_parses() -> None:
    # No trigger word: not even parsed (this text would not parse).
    result = run("def broken(:\n")
    assert (result.status, result.code, result.changes) == ("skip", "def broken(:\n", {})


def test_skip_when_triggers_change_nothing() -> None:
    source = "_is_hip = is_hip()\n"
    result = run(source)
    assert (result.status, result.code) == ("skip", source)


def test_unused_names_runs_only_after_an_edit(monkeypatch) -> None:
    # remove_unused_names drops what this run's edits left unused: on a file no codemod changed it
    # cannot drop anything, so the pipeline does not build it (two scope analyses saved).
    built = []
    cls = CODEMODS["remove_unused_names"]
    monkeypatch.setattr(cls, "__init__", lambda self, *a, **k: (built.append(1), super(cls, self).__init__(*a[:2]))[1])
    monkeypatch.setattr(cls, "transform_module", lambda self, tree: tree)
    untouched = "from sglang.srt.utils import is_hip\n\n_is_hip = is_hip()\nUNUSED = 1\n"
    assert run(untouched, codemods=["fold_platform", "remove_unused_names"]).status == "skip"
    assert built == []
    assert run(LAYERNORM, codemods=["fold_platform", "remove_unused_names"]).status == "success"
    assert built == [1]


def test_failure_when_the_file_does_not_parse() -> None:
    result = run("if _is_hip\n    pass\n")
    assert result.status == "failure"
    assert result.error.startswith("does not parse")
    assert result.code == "if _is_hip\n    pass\n"


class _Raises(ShrinkCodemod):
    NAME = "zz_raises"

    def leave_Name(self, original_node, updated_node):
        raise RuntimeError("boom")


class _BreaksCode(ShrinkCodemod):
    NAME = "zz_breaks"

    def leave_Module(self, original_node, updated_node):
        self.count("broke")
        return updated_node.with_changes(body=[*updated_node.body, cst.parse_statement("return 1\n")])


def test_failure_when_a_codemod_raises(monkeypatch) -> None:
    monkeypatch.setitem(CODEMODS, "zz_raises", _Raises)
    result = run(LAYERNORM, codemods=["fold_platform", "zz_raises"])
    assert result.status == "failure"
    assert result.error == "zz_raises: RuntimeError: boom"
    assert result.code == LAYERNORM  # never half-transformed code


def test_failure_when_the_result_does_not_compile(monkeypatch) -> None:
    monkeypatch.setitem(CODEMODS, "zz_breaks", _BreaksCode)
    result = run(LAYERNORM, codemods=["fold_platform", "zz_breaks"])
    assert result.status == "failure"
    assert "does not compile" in result.error and "'return' outside function" in result.error
    assert result.code == LAYERNORM


def test_findings_carry_path_and_line() -> None:
    source = "def f(self):\n    if self.ready() and _is_hip:\n        pass\n"
    result = run(source, path="sglang/srt/a.py")
    assert result.status == "skip"
    assert result.findings == [
        "sglang/srt/a.py:2: platform test kept: an operand may have side effects: self.ready() and _is_hip"]


# -- many files --------------------------------------------------------------------------------

def test_transform_files_in_workers_keeps_order_and_reads_paths(tmp_path) -> None:
    sources = {f"m{i}.py": (LAYERNORM if i % 2 else "x = 1\n") for i in range(12)}
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
    items = [FileItem(str(tmp_path / name), name[:-3]) for name in sources]
    parallel = transform_files(items, deepseek_inputs(), PLATFORM, jobs=2, chunk_size=3)
    serial = transform_files(items, deepseek_inputs(), PLATFORM, jobs=1)
    assert [r.path for r in parallel] == [i.path for i in items]
    assert [(r.status, r.code) for r in parallel] == [(r.status, r.code) for r in serial]
    assert [r.status for r in parallel] == ["skip", "success"] * 6
    assert all((tmp_path / n).read_text() == t for n, t in sources.items())  # nothing written
    summary = summarize(parallel)
    assert (summary["files"], summary["success"], summary["skip"], summary["failure"]) == (12, 6, 6, 0)
    assert summary["changes"]["remove_platform_methods.methods_removed"] == 12


def test_transform_files_with_in_memory_sources() -> None:
    items = [FileItem("a.py", "a", LAYERNORM), FileItem("b.py", "b", "if _is_npu:\n    x = 1\n")]
    results = transform_files(items, deepseek_inputs(), PLATFORM, jobs=1)
    assert [r.status for r in results] == ["success", "success"]
    assert results[1].code.strip() == ""


# -- generated code ----------------------------------------------------------------------------

def test_generator_pools_are_what_they_claim() -> None:
    folder = Folder(deepseek_inputs())
    for text in NEUTRAL_TESTS:
        assert not folder.fold(cst.parse_expression(text)).pred, text
    for text in PREDICATE_TESTS:
        assert folder.fold(cst.parse_expression(text)).pred, text


def _run_all_unpruned(source: str):
    """Every platform codemod on one parse, without the text prefilter and pruning shortcuts (a codemod
    that reads the file as it was before the run gets it, as in transform_source)."""
    tree = original = cst.parse_module(source)
    changes = {}
    for name in PLATFORM_GROUP:
        cls = type(f"Unpruned_{name}", (CODEMODS[name],), {"prune_pattern": lambda self: None})
        before = {"original": original} if getattr(cls, "NEEDS_ORIGINAL", False) else {}
        instance = cls(new_context("sglang/srt/gen.py", "sglang.srt.gen"), deepseek_inputs(), **before)
        tree = instance.transform_module(tree)
        changes.update({f"{name}.{k}": v for k, v in instance.changes.items() if v})
    return tree.code, changes


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(with_predicates=False))
def test_code_without_platform_predicates_is_byte_identical(source: str) -> None:
    compile(source, "<generated>", "exec")
    code, changes = _run_all_unpruned(source)
    assert code == source
    assert changes == {}
    result = transform_source(source, path="sglang/srt/gen.py", module="sglang.srt.gen",
                              inputs=deepseek_inputs(), codemods=list(PLATFORM_GROUP))
    assert (result.status, result.code) == ("skip", source)


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(with_predicates=True))
def test_code_with_platform_predicates_folds_completely(source: str) -> None:
    compile(source, "<generated>", "exec")
    result = transform_source(source, path="sglang/srt/gen.py", module="sglang.srt.gen",
                              inputs=deepseek_inputs(), codemods=PLATFORM)
    assert result.status in ("success", "skip"), result.error
    code = result.code
    # Every test left that still holds a predicate was kept for a side effect, and says so.
    kept = [f for f in result.findings if "side effects" in f or "always false" in f]
    assert len(platform_tests(code, deepseek_inputs())) <= len(kept)
    # The same result without the shortcuts, and a second run changes nothing.
    assert _run_all_unpruned(source)[0] == code
    again = transform_source(code, path="sglang/srt/gen.py", module="sglang.srt.gen",
                             inputs=deepseek_inputs(), codemods=PLATFORM)
    assert (again.status, again.code) == ("skip", code)
    assert "forward_npu" not in code and "forward_hip" not in code


def test_names_left_undefined_by_a_removed_branch_are_listed() -> None:
    source = (
        "if _use_aiter:\n"
        "    from aiter import rms_norm\n"
        "\n"
        "\n"
        "def forward_aiter(x):\n"
        "    return rms_norm(x) + never_defined_upstream_either(x)\n"
    )
    result = run(source, path="sglang/srt/n.py")
    assert result.status == "success", result.error
    assert result.code.startswith("def forward_aiter")
    # Only what the transform made undefined (upstream's own undefined names are not ours).
    assert result.undefined == ["sglang/srt/n.py:2: `rms_norm` is used but no longer defined"]
    assert summarize([result])["undefined"] == 1


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(with_predicates=True))
def test_prune_index_agrees_with_each_nodes_own_code(source: str) -> None:
    """The prune index reads one code generation of the module: for every statement, function and
    class it must answer as a search of that node's own code does (only indentation differs)."""
    from shrinker.codemods.base import _PRUNABLE, _PruneIndex
    from shrinker.codemods.fold_platform import predicate_triggers

    module = cst.parse_module(source)
    pattern = predicate_triggers(deepseek_inputs())
    index = _PruneIndex(module, pattern)
    nodes: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, _PRUNABLE):
                nodes.append(node)
            return True

    module.visit(Collect())
    assert nodes and all(id(n) in index.ranges for n in nodes)
    for node in nodes:
        assert index.matches(node) == (pattern.search(module.code_for_node(node)) is not None)


def test_a_branch_only_an_instance_of_a_removed_class_takes_goes_with_its_import() -> None:
    # 0.5.23's function_call_parser.py: Glm47MoeDetector's grammar, under isinstance of the removed detector
    from tests.codemods.helpers_registry import make_inputs

    source = textwrap.dedent("""\
        from pkg.glm import Glm47Detector, generate
        from pkg.ds import DeepSeekDetector


        def pick(detector, tools):
            if isinstance(detector, Glm47Detector) and detector.native():
                return generate(tools)
            return DeepSeekDetector
        """)
    result = transform_source(source, path="pkg/parser.py", module="pkg.parser",
                              inputs=make_inputs(modules=["pkg.glm"]),
                              codemods=["remove_dead_imports", "remove_unused_names"])
    assert result.status == "success" and result.findings == []
    assert result.code == textwrap.dedent("""\
        from pkg.ds import DeepSeekDetector


        def pick(detector, tools):
            return DeepSeekDetector
        """)


def test_a_class_a_package_lost_folds_its_test_and_branch() -> None:
    # 0.5.23's configs/hybrid_arch.py once the symbol batch removed configs/bailing_hybrid: the class comes
    # through the package's re-export (`Removed.names`), which no removed module's name in the file shows
    from tests.codemods.helpers_registry import make_inputs

    source = textwrap.dedent("""\
        from pkg.configs import BailingConfig, MambaConfig


        def hybrid(config):
            if isinstance(config, BailingConfig) and not config.use_kda:
                return config
            return MambaConfig
        """)
    inputs = make_inputs(modules=["pkg.configs.bailing"], names={"pkg.configs": ["BailingConfig"]})
    codemods = ["fold_platform", "remove_dead_imports", "remove_unused_names"]
    result = transform_source(source, path="pkg/arch.py", module="pkg.arch", inputs=inputs, codemods=codemods)
    assert result.status == "success" and result.findings == []
    assert result.code == textwrap.dedent("""\
        from pkg.configs import MambaConfig


        def hybrid(config):
            return MambaConfig
        """)
    # without the lost name nothing in the file names a removed module: fold_platform leaves it alone
    result = transform_source(source, path="pkg/arch.py", module="pkg.arch",
                              inputs=make_inputs(modules=["pkg.configs.bailing"]), codemods=codemods)
    assert result.code == source


def test_a_use_a_later_codemod_took_away_is_no_finding() -> None:
    # 0.5.23's quantization/__init__.py: the CPU table names a class of a removed module; the table is read
    # only under `if is_cpu()`, which folds, and then goes as an unused name
    from tests.codemods.helpers_registry import make_inputs

    source = textwrap.dedent("""\
        from pkg.auto_round import AutoRoundConfig
        from pkg.utils import is_cpu

        CPU_METHODS = {"auto-round": AutoRoundConfig}


        def get(q):
            if is_cpu():
                return CPU_METHODS[q]
            return None
        """)
    inputs = make_inputs(modules=["pkg.auto_round"])
    inputs.removed.imported = {"pkg.quant": frozenset({"get"})}  # what kept modules take from it
    result = transform_source(source, path="pkg/quant.py", module="pkg.quant", inputs=inputs,
                              codemods=["remove_dead_imports", "remove_unused_names"])
    assert result.status == "success" and result.findings == []
    assert "AutoRoundConfig" not in result.code and "CPU_METHODS" not in result.code
    # while the table stays (read where nothing folds), the use is a finding
    kept = transform_source(source.replace("if is_cpu():", "if q:"), path="pkg/quant.py", module="pkg.quant",
                            inputs=inputs, codemods=["remove_dead_imports", "remove_unused_names"])
    assert [f.split(": ", 1)[1] for f in kept.findings] == [
        "AutoRoundConfig from removed module pkg.auto_round is still used"]


# 0.5.23's deepseek_v4 (shortened): the models batch edits the file (remove_dead_imports), and the dead-branch
# pass that runs before it removes the NPU-only `import torch_npu`. The NPU method that used it, and the rope
# cache only that method called, must go in the same run: remove_platform_bound sees a platform-only binding
# only in the run that removed it, so a later platform batch would leave the rope cache calling a removed rope.
DEEPSEEK_V4_NPU = '''\
from sglang.srt.utils import is_npu

_is_npu = is_npu()

if _is_npu:
    import torch_npu


class Attention:
    def _get_npu_rope_position_cache(self, positions):
        return self.rope.npu_cache(positions)

    def _forward_prepare_multi_stream_npu(self, q, positions):
        q = torch_npu.npu_rms_norm(q, self.ones, self.eps)[0]
        return self._get_npu_rope_position_cache(positions)

    def forward(self, q, positions):
        if _is_npu:
            return self._forward_prepare_multi_stream_npu(q, positions)
        return q
'''

DEEPSEEK_V4_CUDA = '''\
from sglang.srt.utils import is_npu

_is_npu = is_npu()


class Attention:

    def forward(self, q, positions):
        return q
'''


def test_an_early_dead_branch_pass_brings_remove_platform_bound() -> None:
    early = resolve_codemods(["remove_dead_imports"])
    assert early == ["remove_dead_branches", "remove_platform_bound", "remove_dead_imports"]
    result = transform_source(DEEPSEEK_V4_NPU, path="sglang/srt/models/deepseek_v4.py",
                              module="sglang.srt.models.deepseek_v4", inputs=deepseek_inputs(),
                              codemods=["remove_dead_imports"])
    assert result.status == "success", result.error
    assert "torch_npu" not in result.code and "_npu_rope" not in result.code
    assert result.undefined == []
    again = transform_source(result.code, path="sglang/srt/models/deepseek_v4.py",
                             module="sglang.srt.models.deepseek_v4", inputs=deepseek_inputs(),
                             codemods=["remove_dead_imports"])
    assert again.status == "skip"
