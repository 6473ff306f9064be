"""Enum members of another platform no kept code names: a lookup by a value that names that platform alone
could produce one (graph/enum_members)."""

from __future__ import annotations

import textwrap

from shrinker.graph.enum_members import platform_enum_members_in

PLATFORM = {"mori", "ascend", "ascend_tp", "intel_xpu", "aiter", "gfx95_dot_scaled"}

ENUMS = """
    from enum import Enum

    class TransferBackend(Enum):
        MOONCAKE = "mooncake"
        MORI = "mori"
        NIXL = "nixl"
        ASCEND = "ascend"

    class MoeRunnerBackend(_Predicates, Enum):
        AUTO = "auto"
        ASCEND_TP = "ascend_tp"
        AITER = "aiter"

        def is_auto(self):
            return self == MoeRunnerBackend.AUTO

    MoeRunnerBackendLike = MoeRunnerBackend | RegisteredMoeRunnerBackend
"""

USERS = """
    from sglang.srt.disaggregation.utils import TransferBackend
    from sglang.srt.layers.moe.utils import MoeRunnerBackend, MoeRunnerBackendLike

    def start(args) -> TransferBackend:
        backend = TransferBackend(args.disaggregation_transfer_backend)
        if backend == TransferBackend.MOONCAKE or isinstance(backend, (TransferBackend, str)):
            return backend

    def runner(name: str) -> MoeRunnerBackendLike:
        if name == "aiter":
            return MoeRunnerBackend.AITER  # named: stays
        return MoeRunnerBackend(name)
"""


def found(*texts: str) -> dict[str, frozenset[str]]:
    return platform_enum_members_in((textwrap.dedent(t) for t in texts), PLATFORM.__contains__)


def test_unnamed_platform_members_of_enums_used_by_member_lookup_and_tests() -> None:
    # 0.5.23's TransferBackend.MORI/ASCEND and MoeRunnerBackend.ASCEND_TP; AITER is read, AUTO names no platform
    assert found(ENUMS, USERS) == {"TransferBackend": frozenset({"MORI", "ASCEND"}),
                                   "MoeRunnerBackend": frozenset({"ASCEND_TP"})}


def test_a_member_named_anywhere_stays() -> None:
    for use in ('getattr(backends, "MORI")', "x.MORI", 'f"{MORI}"', "f(MORI=1)"):
        assert found(ENUMS, USERS, f"y = {use}\n").get("TransferBackend") == frozenset({"ASCEND"}), use


def test_a_lookup_by_a_removed_value_keeps_that_member() -> None:
    assert found(ENUMS, USERS, 'b = TransferBackend("mori")\n')["TransferBackend"] == frozenset({"ASCEND"})


def test_iteration_membership_or_a_value_passed_on_keeps_every_member() -> None:
    for use in ("for b in TransferBackend: pass", "names = list(TransferBackend)", 'ok = "mori" in TransferBackend',
                "m = TransferBackend.__members__", "m = TransferBackend._value2member_map_", "register(TransferBackend)",
                "b = TransferBackend['MORI']"):
        assert "TransferBackend" not in found(ENUMS, USERS, use + "\n"), use


def test_an_alias_used_otherwise_keeps_its_classes_members() -> None:
    assert "MoeRunnerBackend" not in found(ENUMS, USERS, "choices = list(MoeRunnerBackendLike.__args__)\n")


def test_value_hooks_decorators_and_homonyms_keep_every_member() -> None:
    missing = ENUMS.replace("        NIXL = \"nixl\"", "        NIXL = \"nixl\"\n\n        @classmethod\n"
                            "        def _missing_(cls, value):\n            return cls.MOONCAKE")
    assert "TransferBackend" not in found(missing, USERS)
    assert "TransferBackend" not in found(ENUMS.replace("    class TransferBackend", "    @register\n    class TransferBackend"),
                                          USERS)
    assert "TransferBackend" not in found(ENUMS, USERS, "class TransferBackend:\n    pass\n")


def test_an_enum_left_without_members_keeps_them() -> None:
    only = """
        from enum import Enum

        class AscendFormat(Enum):
            ASCEND_TP = "ascend_tp"
    """
    assert found(only) == {}


def test_a_method_that_may_list_the_members_keeps_them() -> None:
    for body in ("return [m.value for m in cls]", "return cls.__members__", "return list(type(self))",
                 "return self.__class__"):
        listing = ENUMS.replace("    class MoeRunnerBackend(_Predicates, Enum):",
                                "    class MoeRunnerBackend(_Predicates, Enum):\n"
                                f"        @classmethod\n        def names(cls, self=None):\n            {body}\n")
        assert "MoeRunnerBackend" not in found(listing, USERS), body
    lookup = ENUMS.replace("    class MoeRunnerBackend(_Predicates, Enum):",
                           "    class MoeRunnerBackend(_Predicates, Enum):\n"
                           "        @classmethod\n        def of(cls, v):\n            return cls(v) or cls.AUTO\n")
    assert found(lookup, USERS)["MoeRunnerBackend"] == frozenset({"ASCEND_TP"})


def test_another_class_member_of_that_name_is_no_read_of_this_one() -> None:
    # 0.5.23: KernelBackend.AITER is read, Fp8GemmRunnerBackend.AITER is not
    other = """
        from enum import Enum

        class KernelBackend(Enum):
            AOT = "aot"
            AITER = "aiter"

        SPEC = {KernelBackend.AITER: "forward_aiter"}
        MESSAGE = "FP8 weight unshuffle requires AITER"  # prose: no lookup
    """
    fp8 = """
        from enum import Enum

        class Fp8GemmRunnerBackend(Enum):
            AUTO = "auto"
            AITER = "aiter"

        def pick(value: str) -> Fp8GemmRunnerBackend:
            return Fp8GemmRunnerBackend(value)
    """
    assert found(other, fp8) == {"Fp8GemmRunnerBackend": frozenset({"AITER"})}
    assert found(other, fp8, "KernelBackend = make()\n") == {}  # rebound: it may hold any class
    assert found(other, fp8, 'x = getattr(spec, "AITER")\n') == {}
