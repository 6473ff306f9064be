"""remove_unused_names: only what this run's edits made unused goes (original vs edited)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from libcst.codemod import CodemodContext, CodemodTest

from shrinker.codemods.unused_names import (ORIGINAL_KEY, RemoveNewlyUnusedNames, RemoveUnreadPredicateImports,
                                            imported_names_from_facts)
from shrinker.errors import ShrinkError
from shrinker.graph.records import FileFacts, ImportRecord, Where
from tests.codemods.helpers_registry import context, make_inputs

INPUTS = make_inputs()  # importers unknown: public names are assumed imported elsewhere


def with_imported(imported: dict[str, set[str]]):
    inputs = make_inputs()
    inputs.removed.imported = {k: frozenset(v) for k, v in imported.items()}  # type: ignore[attr-defined]
    return inputs


class TestRemoveNewlyUnusedNames(CodemodTest):
    TRANSFORM = RemoveNewlyUnusedNames

    def check(self, original: str, edited: str, after: str, inputs=None, module: str = "sglang.srt.layers.x"):
        self.assertCodemod(edited, after, inputs or with_imported({}),
                           original=textwrap.dedent(original), context_override=context(module))

    def test_a_platform_constant_nothing_ever_read_goes_with_its_predicate_import(self) -> None:
        """torch_symm_mem.py (0.5.23): `_is_hip = is_hip()` was never read, upstream either. A platform
        fact nobody imports goes; a plain setting unused upstream (DEBUG = False) stays, as does a
        constant another module imports."""
        source = """
            from sglang.srt.utils import is_cuda, is_hip, is_npu

            try:
                import torch.distributed._symmetric_memory as torch_symm_mem

                _is_cuda = is_cuda()
                _is_hip = is_hip()
                _is_npu = is_npu()
                DEBUG = False

                available = _is_cuda
            except ImportError:
                available = False
            """
        self.check(original=source, edited=source, after="""
            from sglang.srt.utils import is_cuda, is_npu

            try:
                import torch.distributed._symmetric_memory as torch_symm_mem

                _is_cuda = is_cuda()
                _is_npu = is_npu()
                DEBUG = False

                available = _is_cuda
            except ImportError:
                available = False
            """, inputs=with_imported({"sglang.srt.layers.x": {"_is_npu"}}))
        # importers unknown (the dead-symbol batch's passes): a private name may be imported, so it stays
        self.check(original=source, edited=source, after=source, inputs=INPUTS)

    def test_a_function_s_own_import_it_no_longer_reads(self) -> None:
        """0.5.23's fused_op `_platform_key()` once the platform fold left `return "cuda"`; an import the function
        never read (a side-effect import), one still read, one a nested function reads, and one in a `try` stay."""
        self.check(
            original="""
                def _platform_key() -> str:
                    \"\"\"The dispatch key.\"\"\"
                    from sglang.srt.utils import (
                        is_cpu,
                        is_cuda,
                        is_hip,
                    )
                    import sglang.srt.patches  # noqa: F401
                    from sglang.srt.utils import log

                    if is_cpu() or is_hip():
                        return "other"
                    log(is_cuda())
                    return "cuda"


                class Runner:
                    def run(self):
                        from torch import npu_ops

                        if is_npu():
                            return npu_ops.run()

                        def inner():
                            return cuda_ops.run()

                        from torch import cuda_ops
                        try:
                            from torch import maybe
                        except ImportError:
                            maybe = None
                        return inner()
                """,
            edited="""
                def _platform_key() -> str:
                    \"\"\"The dispatch key.\"\"\"
                    from sglang.srt.utils import (
                        is_cpu,
                        is_cuda,
                        is_hip,
                    )
                    import sglang.srt.patches  # noqa: F401
                    from sglang.srt.utils import log

                    log(is_cuda())
                    return "cuda"


                class Runner:
                    def run(self):
                        from torch import npu_ops

                        def inner():
                            return cuda_ops.run()

                        from torch import cuda_ops
                        try:
                            from torch import maybe
                        except ImportError:
                            maybe = None
                        return inner()
                """,
            after="""
                def _platform_key() -> str:
                    \"\"\"The dispatch key.\"\"\"
                    from sglang.srt.utils import (
                        is_cuda,
                    )
                    import sglang.srt.patches  # noqa: F401
                    from sglang.srt.utils import log

                    log(is_cuda())
                    return "cuda"


                class Runner:
                    def run(self):

                        def inner():
                            return cuda_ops.run()

                        from torch import cuda_ops
                        try:
                            from torch import maybe
                        except ImportError:
                            maybe = None
                        return inner()
                """)

    def test_flags_and_then_the_predicate_imports_they_used(self) -> None:
        self.check(
            original="""
                from sglang.srt.utils import is_cuda, is_hip, is_npu, get_bool_env_var

                _is_cuda = is_cuda()
                _is_hip = is_hip()
                _is_npu = is_npu()
                _use_aiter = get_bool_env_var("SGLANG_USE_AITER") and _is_hip

                def f(x):
                    if _use_aiter:
                        return x
                    if _is_npu:
                        return -x
                    return x + _is_cuda
                """,
            edited="""
                from sglang.srt.utils import is_cuda, is_hip, is_npu, get_bool_env_var

                _is_cuda = is_cuda()
                _is_hip = is_hip()
                _is_npu = is_npu()
                _use_aiter = get_bool_env_var("SGLANG_USE_AITER") and _is_hip

                def f(x):
                    return x + _is_cuda
                """,
            after="""
                from sglang.srt.utils import is_cuda

                _is_cuda = is_cuda()

                def f(x):
                    return x + _is_cuda
                """,
        )

    def test_an_emptied_line_leaves_its_blank_lines_to_the_next_statement(self) -> None:
        # 0.5.17 topk.py: the blank line under `from __future__ import annotations` stays when the
        # `import logging` below it goes; a comment above a removed line goes with it, the blank above
        # that comment stays
        self.check(
            original="""
                from __future__ import annotations

                import logging
                import math

                # for the ROCm path
                import aiter_helpers
                if TYPE_CHECKING:
                    import torch

                    from x import Y

                logger = logging.getLogger(__name__)
                z = aiter_helpers.f(math.pi) + Y
                """,
            edited="""
                from __future__ import annotations

                import logging
                import math

                # for the ROCm path
                import aiter_helpers
                if TYPE_CHECKING:
                    import torch

                    from x import Y

                z = math.pi + Y
                """,
            after="""
                from __future__ import annotations

                import math

                if TYPE_CHECKING:
                    import torch

                    from x import Y

                z = math.pi + Y
                """,
        )

    def test_names_unused_upstream_stay(self) -> None:
        self.check(
            original="""
                import os
                from sglang.srt.layers.quantization.fp8_kernel import per_token_quant  # re-export
                from sglang.srt.utils import is_hip

                _unused_flag = 3

                if is_hip():
                    os.environ["X"] = "1"
                """,
            edited="""
                import os
                from sglang.srt.layers.quantization.fp8_kernel import per_token_quant  # re-export
                from sglang.srt.utils import is_hip

                _unused_flag = 3
                """,
            after="""
                from sglang.srt.layers.quantization.fp8_kernel import per_token_quant  # re-export

                _unused_flag = 3
                """,
        )

    def test_dunder_all_and_names_imported_elsewhere_stay(self) -> None:
        self.check(
            original="""
                from sglang.srt.utils import is_hip, is_npu, is_cuda

                __all__ = ["is_npu"]
                x = [is_hip(), is_npu(), is_cuda()]
                """,
            edited="""
                from sglang.srt.utils import is_hip, is_npu, is_cuda

                __all__ = ["is_npu"]
                x = []
                """,
            after="""
                from sglang.srt.utils import is_hip, is_npu

                __all__ = ["is_npu"]
                x = []
                """,
            inputs=with_imported({"sglang.srt.layers.x": {"is_hip"}}),
        )

    def test_unknown_importers_keep_public_names(self) -> None:
        self.check(
            original="""
                from sglang.srt.utils import is_hip
                from sglang.srt.utils import is_npu as _is_npu_fn

                y = (is_hip(), _is_npu_fn())
                """,
            edited="""
                from sglang.srt.utils import is_hip
                from sglang.srt.utils import is_npu as _is_npu_fn

                y = ()
                """,
            after="""
                from sglang.srt.utils import is_hip

                y = ()
                """,
            inputs=INPUTS,
        )

    def test_type_checking_block_try_fallback_and_conditional_flags(self) -> None:
        self.check(
            original="""
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from sglang.srt.hardware_backend.npu.runner import NPURunner

                try:
                    from sgl_kernel_npu import fused  # NPU only
                except ImportError:
                    fused = None

                if _cond:
                    MODE = 1
                else:
                    MODE = 2

                def f(r: "NPURunner"):
                    return fused(r), MODE
                """,
            edited="""
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from sglang.srt.hardware_backend.npu.runner import NPURunner

                try:
                    from sgl_kernel_npu import fused  # NPU only
                except ImportError:
                    fused = None

                if _cond:
                    MODE = 1
                else:
                    MODE = 2

                def f(r):
                    return None
                """,
            after="""
                def f(r):
                    return None
                """,
        )

    def test_side_effects_stay(self) -> None:
        self.check(
            original="""
                _lib = make_library([op for op in OPS])
                _handle = register(lambda: 1)
                _a = _b = flag()
                def f():
                    return _lib, _handle, _a, _b
                """,
            edited="""
                _lib = make_library([op for op in OPS])
                _handle = register(lambda: 1)
                _a = _b = flag()
                def f():
                    return None
                """,
            after="""
                _lib = make_library([op for op in OPS])
                _handle = register(lambda: 1)
                _a = _b = flag()
                def f():
                    return None
                """,
        )

    def test_dotted_import_goes_only_when_its_path_is_unused(self) -> None:
        self.check(
            original="""
                import sglang.srt.layers.a
                import sglang.srt.layers.b

                def f():
                    return sglang.srt.layers.a.x, sglang.srt.layers.b.y
                """,
            edited="""
                import sglang.srt.layers.a
                import sglang.srt.layers.b

                def f():
                    return sglang.srt.layers.b.y
                """,
            after="""
                import sglang.srt.layers.b

                def f():
                    return sglang.srt.layers.b.y
                """,
        )


class TestRemoveUnreadPredicateImports(CodemodTest):
    """The refold's final sweep: a predicate import nothing reads goes though this run did not make it so."""

    TRANSFORM = RemoveUnreadPredicateImports
    MODULE = "sglang.srt.distributed.bootstrap"

    def check(self, before: str, after: str, imported: dict[str, set[str]] | None = None,
              modules: frozenset[str] = frozenset()) -> None:
        inputs = with_imported(imported or {})
        inputs.kept_modules = modules
        self.assertCodemod(before, after, inputs, context_override=context(self.MODULE))

    def test_bootstrap_s_stale_predicate_import(self) -> None:
        """0.5.23 bootstrap.py: `cpu_has_amx_support`'s read went in the platform batch while model_runner still
        read the module whole. Only the unread predicate goes: `get_bool_env_var` (no predicate) stays unread,
        `is_npu` stays read, and its comment and layout stay."""
        self.check("""
            from sglang.srt.utils import (
                cpu_has_amx_support,  # AMX
                get_bool_env_var,
                is_npu,
            )

            def init():
                return is_npu()
            """, """
            from sglang.srt.utils import (
                get_bool_env_var,
                is_npu,
            )

            def init():
                return is_npu()
            """)

    def test_a_module_flag_only_the_predicate_set_goes_with_it(self) -> None:
        self.check("""
            import logging
            from sglang.srt.utils import is_hip, is_mps

            _is_hip = is_hip()
            logger = logging.getLogger(__name__)
            """, """
            import logging

            logger = logging.getLogger(__name__)
            """)

    def test_what_another_module_reads_or_all_lists_stays(self) -> None:
        """A name another kept module takes (`bootstrap.is_mps`, "bootstrap:is_mps") or `__all__` lists stays;
        a string naming the module whole ("*": a logger key) keeps no predicate."""
        source = """
            from sglang.srt.utils import cpu_has_amx_support, is_mps

            __all__ = ["cpu_has_amx_support"]
            """
        self.check(source, source, {self.MODULE: {"is_mps"}})
        self.check(source, """
            from sglang.srt.utils import cpu_has_amx_support

            __all__ = ["cpu_has_amx_support"]
            """, {self.MODULE: {"*"}})

    def test_submodules_relative_and_plain_imports_stay(self) -> None:
        """`from pkg import mxfp8_amd_gfx95` runs that module when it is one (the graph knows it as a module);
        a relative import and `import aiter` are no predicate imports."""
        source = """
            from sglang.kernels.ops.gemm import mxfp8_amd_gfx95
            from .utils import is_hip
            import aiter
            """
        self.check(source, source, modules=frozenset({"sglang.kernels.ops.gemm.mxfp8_amd_gfx95"}))
        self.check(source, """
            from .utils import is_hip
            import aiter
            """)

    def test_a_function_s_own_unread_predicate_import(self) -> None:
        """0.5.23 model_overrides/deepseek_v2: a function-local import whose one read (a constant False) went in
        an earlier batch; one the function reads stays."""
        self.check("""
            def overrides(cfg):
                from sglang.srt.layers.attention.dsa.utils import (
                    aiter_can_use_preshuffle_paged_mqa,
                    is_dsa_enabled,
                )

                return is_dsa_enabled(cfg)


            def other():
                from sglang.srt.utils import is_npu

                return is_npu()
            """, """
            def overrides(cfg):
                from sglang.srt.layers.attention.dsa.utils import (
                    is_dsa_enabled,
                )

                return is_dsa_enabled(cfg)


            def other():
                from sglang.srt.utils import is_npu

                return is_npu()
            """)


def test_unread_predicate_imports_idempotent_and_prefiltered() -> None:
    inputs = with_imported({})
    source = "from sglang.srt.utils import get_bool_env_var, is_mps\n\nx = get_bool_env_var('A')\n"
    assert not RemoveUnreadPredicateImports.wants(source, inputs)  # the tree's modules unknown: nothing goes
    inputs.kept_modules = frozenset({"m"})
    assert RemoveUnreadPredicateImports.wants(source, inputs)
    assert not RemoveUnreadPredicateImports.wants("from sglang.srt.utils import get_bool_env_var\n", inputs)
    once = RemoveUnreadPredicateImports(context("m"), inputs).transform_module(cst.parse_module(source))
    assert once.code == "from sglang.srt.utils import get_bool_env_var\n\nx = get_bool_env_var('A')\n"
    again = RemoveUnreadPredicateImports(context("m"), inputs)
    assert again.transform_module(once).code == once.code and not again.changes


def test_original_from_context_scratch_and_missing_original_is_an_error() -> None:
    ctx = CodemodContext(filename="m.py", full_module_name="m", scratch={ORIGINAL_KEY: "_x = 1\ny = _x\n"})
    out = RemoveNewlyUnusedNames(ctx, with_imported({})).transform_module(cst.parse_module("_x = 1\ny = 2\n"))
    assert out.code == "y = 2\n"
    with pytest.raises(ShrinkError):
        RemoveNewlyUnusedNames(CodemodContext(filename="m.py"), INPUTS)


def test_idempotent_and_untouched_code_identical() -> None:
    original = "from a import b, c\n\n_f = b()\n\n\ndef g():  # keep\n    return _f, c\n"
    edited = "from a import b, c\n\n_f = b()\n\n\ndef g():  # keep\n    return c\n"
    inputs = with_imported({})
    once = RemoveNewlyUnusedNames(context("m"), inputs, original=original).transform_module(cst.parse_module(edited))
    assert once.code == "from a import c\n\n\ndef g():  # keep\n    return c\n"
    again = RemoveNewlyUnusedNames(context("m"), inputs, original=original)
    assert again.transform_module(once).code == once.code and not again.changes
    same = RemoveNewlyUnusedNames(context("m"), inputs, original=original)
    assert same.transform_module(cst.parse_module(original)).code == original and not same.changes


def test_imported_names_from_facts() -> None:
    where = Where()
    facts = [
        FileFacts(path="a.py", module="pkg.a", is_package=False, lines=1, imports=[
            ImportRecord("pkg.b", ["x", "sub"], 1, True, where),
            ImportRecord("pkg.c", [], 2, False, where),
            ImportRecord("pkg.d", ["*"], 3, True, where)]),
        FileFacts(path="b/__init__.py", module="pkg.b", is_package=True, lines=1),
        FileFacts(path="b/sub.py", module="pkg.b.sub", is_package=False, lines=1),
        FileFacts(path="gone.py", module="pkg.gone", is_package=False, lines=1, imports=[
            ImportRecord("pkg.b", ["y"], 1, True, where)]),
    ]
    removed = make_inputs(["pkg.gone"]).removed
    assert imported_names_from_facts(facts, removed) == {
        "pkg.b": frozenset({"x", "sub"}), "pkg.b.sub": frozenset({"*"}),
        "pkg.c": frozenset({"*"}), "pkg.d": frozenset({"*"})}


def test_imported_names_narrow_whole_module_uses_with_sources() -> None:
    """`from m import *` takes what the star importer reads plus what its importers take from it (to a
    fixpoint); a module bound as an object gives the attributes read through the binding."""
    where = Where()
    sources = {
        "pkg.dist": "from pkg.dist.state import *\n",  # a re-export package (sglang.srt.distributed)
        "pkg.dist.state": "from pkg.utils import is_hip, is_cuda\ndef get_tp(): ...\ndef helper(): ...\n",
        "pkg.user": "from pkg.dist import get_tp\nget_tp()\n",
        "pkg.dumper": "from pkg import dist as _dist\nx = _dist.world_size()\n",
        "pkg.reader": "from pkg.dist.state import *\nhelper()\n",
        "pkg.lazy": "from pkg import other\nf(other)\n",
        "pkg.other": "",
        "pkg.dyn": "from pkg.dyn2 import *\nglobals()['x']\n",
        "pkg.dyn2": "",
        # reads its namespace whole (0.5.23's test_utils: `mod.__dict__`): a module it binds at the top may be
        # handed on; one bound inside a function is no namespace entry, only its attribute reads count
        "pkg.helpers": ("from pkg import top\n"
                        "def f(mod):\n    from pkg import inner\n    return inner._WORLD, mod.__dict__\n"),
        "pkg.top": "",
        "pkg.inner": "",
    }
    facts = [
        FileFacts(path="dist/__init__.py", module="pkg.dist", is_package=True, lines=1, imports=[
            ImportRecord("pkg.dist.state", ["*"], 1, True, where)]),
        FileFacts(path="dist/state.py", module="pkg.dist.state", is_package=False, lines=3),
        FileFacts(path="user.py", module="pkg.user", is_package=False, lines=2, imports=[
            ImportRecord("pkg.dist", ["get_tp"], 1, True, where)]),
        FileFacts(path="dumper.py", module="pkg.dumper", is_package=False, lines=2, imports=[
            ImportRecord("pkg", ["dist"], 1, True, where)]),
        FileFacts(path="reader.py", module="pkg.reader", is_package=False, lines=2, imports=[
            ImportRecord("pkg.dist.state", ["*"], 1, True, where)]),
        FileFacts(path="lazy.py", module="pkg.lazy", is_package=False, lines=2, imports=[
            ImportRecord("pkg", ["other"], 1, True, where)]),
        FileFacts(path="other.py", module="pkg.other", is_package=False, lines=0),
        FileFacts(path="dyn.py", module="pkg.dyn", is_package=False, lines=2, imports=[
            ImportRecord("pkg.dyn2", ["*"], 1, True, where)]),
        FileFacts(path="dyn2.py", module="pkg.dyn2", is_package=False, lines=0),
        FileFacts(path="helpers.py", module="pkg.helpers", is_package=False, lines=4, imports=[
            ImportRecord("pkg", ["top"], 1, True, where), ImportRecord("pkg", ["inner"], 3, True, where)]),
        FileFacts(path="top.py", module="pkg.top", is_package=False, lines=0),
        FileFacts(path="inner.py", module="pkg.inner", is_package=False, lines=0),
    ]
    removed = make_inputs([]).removed
    narrowed = imported_names_from_facts(facts, removed, sources.get)
    assert narrowed["pkg.dist"] == {"get_tp", "world_size"}
    assert narrowed["pkg.dist.state"] == {"get_tp", "world_size", "helper"}  # no is_hip: nobody takes it
    assert narrowed["pkg.other"] == {"*"}  # passed on whole: any attribute may be read
    assert narrowed["pkg.dyn2"] == {"*"}  # the star importer reads its namespace whole
    assert narrowed["pkg.top"] == {"*"} and narrowed["pkg.inner"] == {"_WORLD"}
    assert imported_names_from_facts(facts, removed)["pkg.dist.state"] == {"*"}  # no sources: whole


def test_a_module_object_passed_on_gives_everything() -> None:
    """`from pkg import dist` in pkg.hub, `from pkg.hub import dist` elsewhere: hub reads nothing through
    it, but its importer may; so pkg.dist gives everything, as before the narrowing."""
    where = Where()
    sources = {"pkg.hub": "from pkg import dist\n", "pkg.user": "from pkg.hub import dist\ndist.rank()\n",
               "pkg.dist": "def rank(): ...\ndef size(): ...\n"}
    facts = [
        FileFacts(path="hub.py", module="pkg.hub", is_package=False, lines=1, imports=[
            ImportRecord("pkg", ["dist"], 1, True, where)]),
        FileFacts(path="user.py", module="pkg.user", is_package=False, lines=2, imports=[
            ImportRecord("pkg.hub", ["dist"], 1, True, where)]),
        FileFacts(path="dist.py", module="pkg.dist", is_package=False, lines=2),
    ]
    assert imported_names_from_facts(facts, make_inputs([]).removed, sources.get)["pkg.dist"] == {"*"}
    alone = [facts[0], facts[2]]  # nobody takes `dist` from the hub: it gives nothing
    assert imported_names_from_facts(alone, make_inputs([]).removed, sources.get).get("pkg.dist", set()) == set()
