"""remove_dead_symbols: exactly the statements binding the dead names go; comments and layout stay.

`assertCodemod` (tests/codemods/helpers.py) also checks that the output compiles and that a second
run with the same inputs changes nothing (idempotence).
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shrinker.codemods.base import new_context
from shrinker.codemods.dead_symbols import RemoveDeadSymbols
from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.symbols.graph import DeadSymbols
from tests.codemods.helpers import PlatformCodemodTest, deepseek_inputs
from tests.codemods.helpers_registry import deepseek_rules

MODULE = "sglang.srt.x"  # the module helpers.run_transform gives the file


def inputs(names=(), members=(), imports=(), module: str = MODULE,
           pure_calls=("frozenset", "logging.getLogger")) -> CodemodInputs:
    removed = Removed()
    removed.dead_symbols = {module: DeadSymbols(  # type: ignore[attr-defined]
        frozenset(names), frozenset(members), frozenset(imports), frozenset(pure_calls))}
    return CodemodInputs(rules=deepseek_rules(), removed=removed)


class TestRemoveDeadSymbols(PlatformCodemodTest):
    TRANSFORM = RemoveDeadSymbols

    def test_functions_and_classes_with_their_attached_comments(self) -> None:
        instance = self.assertCodemod(
            """
            import torch


            # Helper for the removed feature.
            def unused(x):
                return x


            @torch.compile
            def used(x):
                return x


            class Gone:
                def method(self):
                    pass
            """,
            """
            import torch


            @torch.compile
            def used(x):
                return x
            """,
            inputs=inputs(names={"unused", "Gone"}))
        assert instance.changes["functions"] == 1 and instance.changes["classes"] == 1

    def test_class_attributes_of_a_table_go_with_their_comments(self) -> None:
        instance = self.assertCodemod(
            """
            class Envs:
                # Model loading
                SGLANG_USE_MODELSCOPE = EnvBool(False)
                # AMD only
                SGLANG_USE_AITER = EnvBool(False)
                SGLANG_OPT_USE_AITER_INDEXER: EnvBool = EnvBool(False)

                # Scheduler
                SGLANG_LOG_GC = EnvBool(False)
            """,
            """
            class Envs:
                # Model loading
                SGLANG_USE_MODELSCOPE = EnvBool(False)

                # Scheduler
                SGLANG_LOG_GC = EnvBool(False)
            """,
            inputs=inputs(members={"Envs.SGLANG_USE_AITER", "Envs.SGLANG_OPT_USE_AITER_INDEXER"}))
        assert instance.changes["class_attributes"] == 2

    def test_fields_under_ruled_headings(self) -> None:
        """ServerArgs frames its sections with `# ---` rules: the heading of a section that keeps a field
        passes to that field; a section whose every field goes loses its heading too."""
        self.assertCodemod(
            """
            class ServerArgs:
                tp_size: A[int, "Tensor parallel size."] = 1

                # -------------------------------------------------
                # Speculative decoding (ngram)
                # -------------------------------------------------
                speculative_ngram_min_bfs_breadth: A[int, "Min breadth."] = 1
                speculative_ngram_max_bfs_breadth: A[int, "Max breadth."] = 10

                # -------------------------------------------------
                # FlexKV
                # -------------------------------------------------
                enable_flexkv: A[bool, "Use FlexKV."] = False
                flexkv_config_file: A[Optional[str], "Config."] = None

                # -------------------------------------------------
                # PD-Multiplexing
                # -------------------------------------------------
                enable_pdmux: A[bool, "PD-Multiplexing."] = False
            """,
            """
            class ServerArgs:
                tp_size: A[int, "Tensor parallel size."] = 1

                # -------------------------------------------------
                # Speculative decoding (ngram)
                # -------------------------------------------------
                speculative_ngram_max_bfs_breadth: A[int, "Max breadth."] = 10

                # -------------------------------------------------
                # PD-Multiplexing
                # -------------------------------------------------
                enable_pdmux: A[bool, "PD-Multiplexing."] = False
            """,
            inputs=inputs(members={"ServerArgs.speculative_ngram_min_bfs_breadth", "ServerArgs.enable_flexkv",
                                   "ServerArgs.flexkv_config_file"}))

    def test_all_loses_the_names_that_go(self) -> None:
        instance = self.assertCodemod(
            """
            from .paged_mqa_logits import (
                aiter_paged_mqa_logits,
                deepgemm_paged_mqa_logits,
            )


            def unused():
                pass


            __all__ = [
                "aiter_paged_mqa_logits",  # ROCm
                "deepgemm_paged_mqa_logits",
                "unused",
            ]
            __all__ += ("unused",)
            """,
            """
            from .paged_mqa_logits import (
                deepgemm_paged_mqa_logits,
            )


            __all__ = [
                "deepgemm_paged_mqa_logits",
            ]
            __all__ += ()
            """,
            inputs=inputs(names={"unused"}, imports={
                ("sglang.srt.paged_mqa_logits", "aiter_paged_mqa_logits", "aiter_paged_mqa_logits")}))
        assert instance.changes["export_names"] == 3

    def test_a_section_heading_above_a_removed_def_stays(self) -> None:
        self.assertCodemod(
            """
            def first():
                pass


            # ---- utilities ----


            def unused():
                pass


            def kept():
                pass
            """,
            """
            def first():
                pass


            # ---- utilities ----


            def kept():
                pass
            """,
            inputs=inputs(names={"unused"}))

    def test_methods_of_a_kept_class_and_a_property_with_its_setter(self) -> None:
        self.assertCodemod(
            """
            class Scheduler:
                \"\"\"Runs batches.\"\"\"

                def run(self):
                    return self.step()

                # Only the removed pipeline called this.
                def unused(self):
                    pass

                @property
                def size(self):
                    return self._size

                @size.setter
                def size(self, value):
                    self._size = value

                def step(self):
                    pass
            """,
            """
            class Scheduler:
                \"\"\"Runs batches.\"\"\"

                def run(self):
                    return self.step()

                def step(self):
                    pass
            """,
            inputs=inputs(members={"Scheduler.unused", "Scheduler.size"}))

    def test_a_class_left_without_members_gets_pass(self) -> None:
        self.assertCodemod(
            """
            class Hooks:
                def a(self):
                    pass

                def b(self):
                    pass
            """,
            """
            class Hooks:
                pass
            """,
            inputs=inputs(members={"Hooks.a", "Hooks.b"}))

    def test_import_aliases_in_a_parenthesised_import(self) -> None:
        self.assertCodemod(
            """
            from sglang.srt.utils import (
                get_device,  # the device helper
                unused_helper,
                is_cuda,
            )
            from sglang.srt.layers.linear import Unused as Alias
            import os
            """,
            """
            from sglang.srt.utils import (
                get_device,  # the device helper
                is_cuda,
            )
            import os
            """,
            inputs=inputs(imports={("sglang.srt.utils", "unused_helper", "unused_helper"),
                                   ("sglang.srt.layers.linear", "Unused", "Alias")}))

    def test_relative_imports_resolve_against_the_file(self) -> None:
        self.assertCodemod(
            """
            from .common import kept, dropped
            from ..layers import thing
            """,
            """
            from .common import kept
            """,
            inputs=inputs(imports={("sglang.srt.common", "dropped", "dropped"),
                                   ("sglang.layers", "thing", "thing")}))

    def test_an_import_emptied_inside_try_and_if_leaves_pass(self) -> None:
        self.assertCodemod(
            """
            try:
                from sgl_kernel import fast_op
            except ImportError:
                fast_op = None

            if TYPE_CHECKING:
                from sglang.srt.managers.schedule_batch import ScheduleBatch
            """,
            """
            try:
                pass
            except ImportError:
                fast_op = None

            if TYPE_CHECKING:
                pass
            """,
            inputs=inputs(imports={("sgl_kernel", "fast_op", "fast_op"),
                                   ("sglang.srt.managers.schedule_batch", "ScheduleBatch", "ScheduleBatch")}))

    def test_only_side_effect_free_assignments_go(self) -> None:
        self.assertCodemod(
            """
            import logging

            LIMIT = 3
            LIMIT = compute_limit()
            KINDS: frozenset = frozenset({"a", "b"})
            logger = logging.getLogger(__name__)
            x = 1; LIMIT = 4
            """,
            """
            import logging
            LIMIT = compute_limit()
            x = 1
            """,
            inputs=inputs(names={"LIMIT", "KINDS", "logger"}))

    def test_names_elsewhere_are_left_alone(self) -> None:
        # Only module-body and class-body statements bind symbols: a def nested in an `if` or in a
        # function is module code. (A class attribute the graph lists goes: only attribute tables'.)
        self.assertUnchanged(
            """
            if USE_FAST:
                def unused():
                    pass

            def outer():
                def unused():
                    pass
                return unused

            class A:
                unused = 1
            """,
            inputs=inputs(names={"unused"}, members={"B.unused"}))

    def test_a_module_with_nothing_dead_is_skipped(self) -> None:
        code = "def f():\n    pass\n"
        instance = RemoveDeadSymbols(new_context("sglang/srt/y.py", "sglang.srt.y"), inputs(names={"f"}))
        from libcst.codemod import SkipFile
        try:
            instance.transform_module(cst.parse_module(code))
        except SkipFile:
            pass
        assert not instance.changes
        assert RemoveDeadSymbols(new_context("sglang/srt/x.py", MODULE), deepseek_inputs()).dead is None


def test_pipeline_runs_it_by_name_and_checks_the_result() -> None:
    from shrinker.codemods.pipeline import CODEMODS, transform_source

    CODEMODS.setdefault(RemoveDeadSymbols.NAME, RemoveDeadSymbols)
    source = textwrap.dedent("""
        from sglang.srt.utils import helper, unused


        def kept():
            return helper()


        def gone():
            return unused()
        """)
    result = transform_source(source, path="sglang/srt/x.py", module=MODULE,
                              inputs=inputs(names={"gone"}, imports={("sglang.srt.utils", "unused", "unused")}),
                              codemods=["remove_dead_symbols"])
    assert result.status == "success", result.error
    assert "gone" not in result.code and "unused" not in result.code
    assert result.undefined == []
    assert result.changes["remove_dead_symbols.lines"] == 2
