"""remove_platform_enum_members: the members graph/enum_members lists leave their enum, in 0.5.23 shapes."""

from __future__ import annotations

import textwrap

from shrinker.codemods.enum_members import DropNeverProducedMembers, RemovePlatformEnumMembers
from tests.codemods.helpers import PlatformCodemodTest, deepseek_inputs


def inputs(members: dict[str, set[str]]):
    out = deepseek_inputs()
    out.platform_enum_members = {k: frozenset(v) for k, v in members.items()}
    return out


class TestPlatformEnumMembers(PlatformCodemodTest):
    TRANSFORM = RemovePlatformEnumMembers

    def test_listed_members_go_with_their_comments(self) -> None:
        self.assertCodemod(
            """
            class Mxfp8DenseGemmBackend(Enum):
                \"\"\"Enum for MXFP8 dense linear backend selection.\"\"\"

                DEEP_GEMM = "deep_gemm"
                GFX95_DOT_SCALED = "gfx95_dot_scaled"
                # gfx950 aiter MXFP8 GEMM: plain fp8 weight
                GFX95_MXFP8_AITER = "gfx95_mxfp8_aiter"
                UNSUPPORTED = "unsupported"  # the last resort

                def is_deep_gemm(self) -> bool:
                    GFX95_DOT_SCALED = 1  # a local of that name is no member
                    return self == Mxfp8DenseGemmBackend.DEEP_GEMM


            class Other(Enum):
                GFX95_DOT_SCALED = "gfx95_dot_scaled"
            """,
            """
            class Mxfp8DenseGemmBackend(Enum):
                \"\"\"Enum for MXFP8 dense linear backend selection.\"\"\"

                DEEP_GEMM = "deep_gemm"
                UNSUPPORTED = "unsupported"  # the last resort

                def is_deep_gemm(self) -> bool:
                    GFX95_DOT_SCALED = 1  # a local of that name is no member
                    return self == Mxfp8DenseGemmBackend.DEEP_GEMM


            class Other(Enum):
                GFX95_DOT_SCALED = "gfx95_dot_scaled"
            """,
            inputs=inputs({"Mxfp8DenseGemmBackend": {"GFX95_DOT_SCALED", "GFX95_MXFP8_AITER"}}),
        )

    def test_nothing_listed_nothing_changes(self) -> None:
        code = """
            class TransferBackend(Enum):
                MOONCAKE = "mooncake"
                MORI = "mori"
            """
        self.assertCodemod(code, code, inputs=inputs({}))
        self.assertCodemod(code, code)  # not known (None): nothing goes


def never_inputs(members: dict[str, set[str]]):
    out = deepseek_inputs()
    out.never_produced_members = {k: frozenset(v) for k, v in members.items()}
    return out


NEVER = never_inputs({"StateType": {"QSA_PENDING", "QSA_COMPRESSED", "MINIMAX_DENSE_KV"}})


class TestNeverProducedMembers(PlatformCodemodTest):
    TRANSFORM = DropNeverProducedMembers

    def test_members_leave_literals_and_tables_tests_alone_read(self) -> None:
        self.assertCodemod(
            """
            _FLAT_STATE_TYPES = frozenset(
                (
                    StateType.MAMBA,
                    StateType.QSA_PENDING,  # Qwen4
                    StateType.QSA_COMPRESSED,
                )
            )


            def send(self, st):
                payloads = {
                    StateType.MAMBA: _mamba_payload,
                    StateType.QSA_PENDING: _qsa_pending_payload,
                }
                if st in (StateType.QSA_PENDING, StateType.QSA_COMPRESSED):  # members alone: the Folder's
                    return payloads[st]()
                return st in (StateType.MAMBA, StateType.MINIMAX_DENSE_KV) or st == StateType.QSA_PENDING
            """,
            """
            _FLAT_STATE_TYPES = frozenset(
                (
                    StateType.MAMBA,
                )
            )


            def send(self, st):
                payloads = {
                    StateType.MAMBA: _mamba_payload,
                }
                if st in (StateType.QSA_PENDING, StateType.QSA_COMPRESSED):  # members alone: the Folder's
                    return payloads[st]()
                return st in (StateType.MAMBA,) or st == StateType.QSA_PENDING
            """,
            inputs=NEVER,
        )


def _fold(code: str):
    from shrinker.codemods.pipeline import transform_source

    return transform_source(textwrap.dedent(code).lstrip(), path="sglang/srt/x.py", module="sglang.srt.x",
                            inputs=NEVER, codemods=["drop_never_produced_members", "fold_platform"])


def test_fold_platform_decides_the_tests_of_members_no_code_produces() -> None:
    # fold_platform's Folder decides them; the dead-branch pass it brings takes the branches
    result = _fold("""
        def send(self, st, kv_args):
            if st in (StateType.QSA_PENDING, StateType.QSA_COMPRESSED):
                return 1
            elif st in frozenset((StateType.MAMBA, StateType.SWA, StateType.QSA_PENDING)):
                return 2
            if StateType.MINIMAX_DENSE_KV in getattr(kv_args, "state_types", ()) and st != StateType.QSA_PENDING:
                return 3
            x = 4 if st is StateType.MINIMAX_DENSE_KV else 5
            return x, st == StateType.MINIMAX_DENSE_KV
        """)
    assert result.status == "success" and not result.findings
    assert result.code == textwrap.dedent("""
        def send(self, st, kv_args):
            if st in frozenset((StateType.MAMBA, StateType.SWA)):
                return 2
            x = 5
            return x, False
        """).lstrip()


def test_a_test_whose_other_side_may_do_something_is_a_finding() -> None:
    result = _fold("""
        if make_state() == StateType.QSA_PENDING:
            pass
        """)
    assert result.findings and "make_state()" in result.code
