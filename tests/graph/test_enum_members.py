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


# 0.5.23's disaggregation: StateType members the Qwen4 QSA and MiniMax models appended, tested after they went
STATES = """
    import enum

    class StateType(str, enum.Enum):
        MAMBA = "mamba"
        QSA_PENDING = "qsa_pending"
        SWA = "swa"
        MINIMAX_DENSE_KV = "minimax_dense_kv"
"""

TRANSFER = """
    from sglang.srt.disaggregation.base.conn import StateType

    _FLAT_STATE_TYPES = frozenset((StateType.MAMBA, StateType.QSA_PENDING))

    def append_states(kv_args):
        kv_args.state_types.append(StateType.MAMBA)
        kv_args.state_types.append(StateType.SWA)

    def send(kv_args, st: StateType):
        payloads = {StateType.MAMBA: _mamba, StateType.QSA_PENDING: _qsa, StateType.SWA: _swa}
        rows = payloads[st]() if st in payloads else None
        if st in (StateType.QSA_PENDING, StateType.SWA) or st in _FLAT_STATE_TYPES:
            return rows
        if StateType.MINIMAX_DENSE_KV in getattr(kv_args, "state_types", ()):
            return None
        return st == StateType.MINIMAX_DENSE_KV
"""


def never(*texts: str) -> dict[str, frozenset[str]]:
    from shrinker.graph.enum_members import enum_facts_in, never_produced

    return never_produced(enum_facts_in(textwrap.dedent(t) for t in texts))


def test_members_only_tests_read_are_never_produced() -> None:
    assert never(STATES, TRANSFER) == {"StateType": frozenset({"QSA_PENDING", "MINIMAX_DENSE_KV"})}


def test_a_read_that_may_make_one_makes_it() -> None:
    for use in ("x = StateType.QSA_PENDING", "f(StateType.QSA_PENDING)", "ok = StateType.QSA_PENDING == make()",
                "d = {StateType.QSA_PENDING: build()}", "for s in _FLAT_STATE_TYPES: pass",
                "_FLAT_STATE_TYPES = None", "names = [StateType.QSA_PENDING]\nuse(names)"):
        assert "QSA_PENDING" not in never(STATES, TRANSFER, use + "\n").get("StateType", ()), use
    # a module-level collection another file names may be read there in any way
    assert "QSA_PENDING" not in never(STATES, TRANSFER, "from x import _FLAT_STATE_TYPES\n").get("StateType", ())


def test_a_lookup_by_value_a_parsed_field_or_an_equal_literal_makes_every_member() -> None:
    assert never(STATES, TRANSFER, "s = StateType(raw)\n") == {}
    assert never(STATES, TRANSFER, "class Req(BaseModel):\n    state: StateType\n") == {}
    assert never(STATES, TRANSFER, "@app.post('/x')\ndef endpoint(state: StateType): pass\n") == {}
    assert never(STATES, TRANSFER, 'RAW = "qsa_pending"\n') == {"StateType": frozenset({"MINIMAX_DENSE_KV"})}


def test_a_plain_dataclass_field_builds_nothing_unless_the_class_is_passed_on() -> None:
    # 0.5.23's disaggregation KVArgs: `state_types: List[StateType]`
    kv_args = "import dataclasses\n\n@dataclasses.dataclass\nclass KVArgs:\n    state_types: List[StateType]\n"
    assert "StateType" in never(STATES, TRANSFER, "class Args:\n    state_types: List[StateType]\n")
    assert "StateType" in never(STATES, TRANSFER, kv_args)
    assert never(STATES, TRANSFER, kv_args, "args = msgspec.convert(raw, KVArgs)\n") == {}
    assert never(STATES, TRANSFER, kv_args.replace("import dataclasses", "import pydantic, dataclasses")) == {}


def test_a_never_produced_member_nothing_names_any_more_is_unnamed() -> None:
    from shrinker.graph.enum_members import enum_facts_in, unnamed_members

    folded = """
        from sglang.srt.disaggregation.base.conn import StateType

        def send(kv_args, st):
            if st in (StateType.MAMBA, StateType.SWA):
                return st
            return st == StateType.MINIMAX_DENSE_KV
    """
    among = {"StateType": frozenset({"QSA_PENDING", "MINIMAX_DENSE_KV"})}
    facts = enum_facts_in(textwrap.dedent(t) for t in (STATES, folded))
    # QSA_PENDING's reads went; `st == StateType.MINIMAX_DENSE_KV` still names the other (a file put back)
    assert unnamed_members(facts, among) == {"StateType": frozenset({"QSA_PENDING"})}
    called = enum_facts_in(textwrap.dedent(t) for t in (STATES, folded, "s = StateType(raw)\n"))
    assert unnamed_members(called, among) == {}


A2A = """
    from enum import Enum

    class MoeA2ABackend(Enum):
        NONE = "none"
        DEEPEP = "deepep"
        MORI = "mori"

        @classmethod
        def _missing_(cls, value):
            if value is None:
                return cls.NONE
            for member in cls:
                if value == member.value:
                    return member
            raise ValueError(f"No {cls.__name__} member for value {value}")

    def backend(name):
        return MoeA2ABackend(name)
"""


def test_a_missing_hook_that_finds_members_by_value_alone_keeps_nothing() -> None:
    # 0.5.23's MoeA2ABackend: without MORI, "mori" raises in _missing_ as the default lookup would
    assert found(A2A) == {"MoeA2ABackend": frozenset({"MORI"})}
    mapped = A2A.replace("if value is None:", 'if value == "ascend":')
    assert found(mapped) == {}
    listed = A2A.replace("if value == member.value:", "if value.startswith(member.value):")
    assert found(listed) == {}


def test_a_record_class_a_factory_returns_to_callers_that_only_instantiate_it() -> None:
    # 0.5.23's disaggregation: get_kv_class returns KVArgs; prefill and decode only call what it returns
    kv_args = """
        class KVArgs:
            state_types: List[StateType]

        def get_kv_class(backend, class_type):
            if class_type == "kvargs":
                return KVArgs
            return None
    """
    prefill = """
        def init(self):
            kv_args_class = get_kv_class(self.transfer_backend, "kvargs")
            kv_args = kv_args_class()
            other = utils.get_kv_class(self.transfer_backend, "kvargs")()
    """
    assert "StateType" in never(STATES, TRANSFER, kv_args, prefill)
    escaped = prefill.rstrip() + "\n            register(kv_args_class)\n"
    assert never(STATES, TRANSFER, kv_args, escaped) == {}
    assert never(STATES, TRANSFER, kv_args, prefill, "factory = get_kv_class\n") == {}


def test_a_factory_s_overloads_and_tested_values_are_no_escape() -> None:
    kv_args = """
        class KVArgs:
            state_types: List[StateType]

        @overload
        def get_kv_class(backend, class_type: Literal["kvargs"]) -> type[KVArgs]: ...
        def get_kv_class(backend, class_type):
            return KVArgs
    """
    server = """
        def serves(backend):
            server_class = get_kv_class(backend, "server")
            return server_class is not None and issubclass(server_class, Base)
    """
    assert "StateType" in never(STATES, TRANSFER, kv_args, server)
