"""remove_platform_enum_members: the members graph/enum_members lists leave their enum, in 0.5.23 shapes."""

from __future__ import annotations

from shrinker.codemods.enum_members import RemovePlatformEnumMembers
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
