"""The symbol graph, one case per reference kind (Fixit-style): KEPT symbols must stay, DEAD ones go.

Each case is a small tree of in-memory modules shaped like SGLang's code (not copied from it).
The cases marked "must NOT be removed" are the ones a plain "is the name used?" check gets wrong.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pytest

from shrinker.symbols.graph import SymbolGraph, graph_from_sources
from shrinker.symbols.rules import SymbolRules, load_symbol_rules

RULES_FILE = Path(__file__).parent.parent / "fixtures" / "symbols" / "rules-symbols.toml"


@lru_cache(maxsize=1)
def rules() -> SymbolRules:
    return load_symbol_rules(path=RULES_FILE)


def graph(sources: dict[str, str]) -> SymbolGraph:
    return graph_from_sources({m: textwrap.dedent(s) for m, s in sources.items()}, rules())


@dataclass
class Case:
    name: str
    sources: dict[str, str]
    kept: dict[str, str] = field(default_factory=dict)  # symbol -> the reason code(s) it is kept for ("a|b")
    dead: list[str] = field(default_factory=list)


CASES = [
    Case("name read by module code", {"pkg.a": """
        def used(): pass
        def unused(): pass
        used()
        """}, kept={"pkg.a:used": "name"}, dead=["pkg.a:unused"]),
    Case("dead cycle goes whole", {"pkg.a": """
        def ping(): return pong()
        def pong(): return ping()
        def main(): return leaf()
        def leaf(): pass
        main()
        """}, kept={"pkg.a:main": "name", "pkg.a:leaf": "name"}, dead=["pkg.a:ping", "pkg.a:pong"]),
    Case("import alias: the used one keeps its target, the unused alias and target go", {
        "pkg.util": """
            def helper(): pass
            def lonely(): pass
            """,
        "pkg.main": """
            from pkg.util import helper, lonely
            helper()
            """}, kept={"pkg.main:helper": "name", "pkg.util:helper": "import"},
        dead=["pkg.main:lonely", "pkg.util:lonely"]),
    Case("re-export through a package's `import *`", {
        "pkg.__init__": "from pkg.impl import *\n",
        "pkg.impl": """
            def api(): pass
            def internal(): pass
            """,
        "pkg.user": """
            from pkg import api
            api()
            """}, kept={"pkg.impl:api": "import"}, dead=["pkg.impl:internal"]),
    Case("relative import", {
        "pkg.layers.util": "def scale(x): return x\ndef unused(x): return x\n",
        "pkg.layers.linear": "from .util import scale\nscale(2)\n"},
        kept={"pkg.layers.util:scale": "import"}, dead=["pkg.layers.util:unused"]),
    Case("attribute keeps members of that name only", {"pkg.a": """
        class Runner:
            def run(self): pass
            def idle(self): pass
        def go(r): r.run()
        go(Runner())
        """}, kept={"pkg.a:Runner.run": "attr"}, dead=["pkg.a:Runner.idle"]),
    Case("attribute keeps a module-level function (mod.func)", {
        "pkg.lib": "def exported(): pass\ndef other(): pass\n",
        "pkg.main": "import pkg.lib\npkg.lib.exported()\n"},
        kept={"pkg.lib:exported": "attr"}, dead=["pkg.lib:other"]),
    Case("attribute keeps module-level names only of modules held as objects", {
        "pkg.held": "def by_attr(): pass\n",
        "pkg.sub.mod": "def by_attr(): pass\n",
        "pkg.plugins.p1": "def by_attr(): pass\n",
        "pkg.never": "def by_attr(): pass\n",
        "pkg.main": """
            import pkg.held
            from pkg.sub import mod
            from importlib import import_module
            def load(name): return import_module(f"pkg.plugins.{name}")
            load("p1")
            x.by_attr()
            """}, kept={"pkg.held:by_attr": "attr", "pkg.sub.mod:by_attr": "attr", "pkg.plugins.p1:by_attr": "attr"},
        dead=["pkg.never:by_attr"]),
    Case("attribute seen before its class is kept still keeps the member", {"pkg.a": """
        def call(x): return x.late()
        call(1)
        def make(): return Late()
        class Late:
            def late(self): pass
            def never(self): pass
        make()
        """}, kept={"pkg.a:Late.late": "attr"}, dead=["pkg.a:Late.never"]),
    Case("decorator-registered functions must NOT be removed", {"pkg.ops": """
        @register_attention_backend("fa3")
        def fused_op(x): return x

        @app.post("/generate")
        async def generate(req): pass

        @some_decorator_nobody_knows
        def maybe_registered(): pass

        @triton.jit
        def unused_kernel(x): pass

        @lru_cache
        def unused_cached(): pass
        """}, kept={"pkg.ops:fused_op": "decorator", "pkg.ops:generate": "decorator",
                    "pkg.ops:maybe_registered": "decorator"},
        dead=["pkg.ops:unused_kernel", "pkg.ops:unused_cached"]),
    Case("methods called via getattr(self, f\"forward_{mode}\") must NOT be removed", {"pkg.layer": """
        class Layer:
            def forward(self, x, mode):
                return getattr(self, f"forward_{mode}")(x)
            def forward_cuda(self, x): pass
            def forward_native(self, x): pass
            def helper(self): pass
        Layer()
        """}, kept={"pkg.layer:Layer.forward": "protect", "pkg.layer:Layer.forward_cuda": "pattern",
                    "pkg.layer:Layer.forward_native": "pattern"}, dead=["pkg.layer:Layer.helper"]),
    Case("\"forward_%s\" % mode and \"forward_\" + mode dispatch too", {"pkg.layer": """
        class A:
            def go(self, m): return getattr(self, "run_%s" % m)() or getattr(self, "step_" + m)()
            def run_fast(self): pass
            def step_slow(self): pass
            def other(self): pass
        A().go("fast")
        """}, kept={"pkg.layer:A.run_fast": "pattern", "pkg.layer:A.step_slow": "pattern"},
        dead=["pkg.layer:A.other"]),
    Case("an f-string label in a module without dynamic lookups keeps nothing", {"pkg.w": """
        class Worker:
            def __init__(self): self.name = f"create_{id(self)}"
            def create_thing(self): pass
        Worker()
        """}, kept={"pkg.w:Worker.__init__": "protect"}, dead=["pkg.w:Worker.create_thing"]),
    Case("setattr with a computed name binds, it looks nothing up: labels there keep nothing", {"pkg.w": """
        TAG = "_loaded"
        class Worker:
            def __init__(self, t):
                setattr(t, TAG, True)
                self.name = f"create_{id(self)}"
            def create_thing(self): pass
        Worker(None)
        """}, kept={"pkg.w:Worker.__init__": "protect"}, dead=["pkg.w:Worker.create_thing"]),
    Case("a string-built name reaches module-level functions only in modules some file holds as objects", {
        "pkg.kern": "def stage1_attn_fwd(): pass\ndef other(): pass\n",
        "pkg.ops": "def run_attn_fused(): pass\n",
        "pkg.w": """
            import pkg.ops
            from pkg.kern import other
            def remap(obj, prefix, suffix):
                other()
                return getattr(obj, f"{prefix}attn{suffix}")
            remap(None, "a", "b")
            """}, kept={"pkg.ops:run_attn_fused": "pattern"}, dead=["pkg.kern:stage1_attn_fwd"]),
    Case("LazyImport(\"pkg.a\", \"f\") keeps pkg.a's f, not every f (rule attribute_calls)", {
        "pkg.a": "def renorm(): pass\n",
        "pkg.b": "def renorm(): pass\n",
        "pkg.main": "from pkg.utils import LazyImport\nr = LazyImport(\"pkg.a\", \"renorm\")\nr()\n",
        "pkg.utils": "class LazyImport:\n    def __init__(self, m, n): pass\n"},
        kept={"pkg.a:renorm": "lazy import"}, dead=["pkg.b:renorm"]),
    Case("without the rule, a call's name string is a string like any other", {
        "pkg.a": "def renorm(): pass\n",
        "pkg.b": "def renorm(): pass\n",
        "pkg.main": "r = load_later(\"pkg.a\", \"renorm\")\n"},
        kept={"pkg.a:renorm": "string", "pkg.b:renorm": "string"}),
    Case("a class named only in a string must NOT be removed", {
        "pkg.quant": "class Fp8Config: pass\nclass UnusedConfig: pass\n",
        "pkg.main": "load_lazily(\"pkg.quant:Fp8Config\")\n"},
        kept={"pkg.quant:Fp8Config": "string"}, dead=["pkg.quant:UnusedConfig"]),
    Case("rules: EntryClass, forward, hooks of a known base; other members go", {"pkg.models.m": """
        from torch import nn
        class Model(nn.Module):
            def forward(self, x): return x
            def extra_repr(self): return ""
            def load_helper(self): pass
        EntryClass = [Model]
        """}, kept={"pkg.models.m:EntryClass": "protect", "pkg.models.m:Model": "name",
                    "pkg.models.m:Model.forward": "protect", "pkg.models.m:Model.extra_repr": "base"},
        dead=["pkg.models.m:Model.load_helper"]),
    Case("rules: Engine's public methods keep Engine, private ones go", {"pkg.engine": """
        class Engine:
            def generate(self, prompt): pass
            def _unused_private(self): pass
        """}, kept={"pkg.engine:Engine.generate": "protect", "pkg.engine:Engine": "member"},
        dead=["pkg.engine:Engine._unused_private"]),
    Case("custom ops registered by a call, used through torch.ops", {"pkg.ops": """
        import torch
        def _impl(x): return x
        def _fake(x): return x
        def _unused_impl(x): return x
        direct_register_custom_op(op_name="my_op", op_func=_impl, fake_impl=_fake)
        def caller(x): return torch.ops.sglang.my_op(x)
        """}, kept={"pkg.ops:_impl": "name", "pkg.ops:_fake": "name"}, dead=["pkg.ops:_unused_impl", "pkg.ops:caller"]),
    Case("X.__subclasses__() keeps every subclass", {"pkg.io": """
        class BaseReq: pass
        class ReqA(BaseReq): pass
        class ReqB(ReqA): pass
        class Other: pass
        TYPES = tuple(BaseReq.__subclasses__())
        """}, kept={"pkg.io:ReqA": "subclasses", "pkg.io:ReqB": "subclasses"}, dead=["pkg.io:Other"]),
    Case("a subclass of a class with __init_subclass__ registers itself: must NOT be removed", {"pkg.reg": """
        REGISTRY = {}
        class Plugin:
            def __init_subclass__(cls, **kw):
                REGISTRY[cls.__name__] = cls
        class MyPlugin(Plugin):
            pass
        """}, kept={"pkg.reg:MyPlugin": "subclasses"}),
    Case("imports marked # noqa and names model_rebuild() resolves must NOT be removed", {
        "pkg.types": "class Plan: pass\nclass Other: pass\nclass Third: pass\n",
        "pkg.records": """
            from pkg.types import Plan  # noqa: F401
            from pkg.types import (  # noqa: F401 (re-exports)
                Other,
            )
            """,
        "pkg.comparator.__init__": """
            from pkg.types import Third
            from pkg.records import Record
            Record.model_rebuild()
            """}, kept={"pkg.records:Plan": "noqa", "pkg.records:Other": "noqa",
                        "pkg.comparator:Third": "dynamic"}),
    Case("a module reading globals() keeps all its names", {"pkg.dyn": """
        def a(): pass
        def b(): pass
        for _n in ["a"]:
            globals()[_n] = wrap(globals()[_n])
        """}, kept={"pkg.dyn:a": "string", "pkg.dyn:b": "dynamic"}),
    # 0.5.23's test_utils: `_get_default_models` reads the DEFAULT_*MODEL* names through the module's __dict__
    Case("a dead function's namespace read keeps nothing", {"pkg.testing": """
        import inspect
        DEFAULT_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
        def _get_default_models():
            module = inspect.getmodule(_get_default_models)
            return [v for k, v in module.__dict__.items() if "MODEL" in k]
        def used(): pass
        """, "pkg.user": "from pkg.testing import used\nused()\n"},
        kept={"pkg.testing:used": "import"}, dead=["pkg.testing:DEFAULT_MODEL", "pkg.testing:_get_default_models"]),
    Case("a kept function's namespace read keeps every module-level name", {"pkg.testing": """
        DEFAULT_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
        def get_default_models():
            return [v for k, v in globals().items() if "MODEL" in k]
        def other(): pass
        """, "pkg.user": "from pkg.testing import get_default_models\nget_default_models()\n"},
        kept={"pkg.testing:get_default_models": "import", "pkg.testing:DEFAULT_MODEL": "dynamic",
              "pkg.testing:other": "dynamic"}),
    # sgl_kernel/__init__.py's debug wrap: the loop reads only listed names, and only those still bound
    Case("a guarded globals() loop over a name list keeps nothing the list names", {
        "pkg.ops": """
            def rmsnorm(): pass
            def mamba_conv(): pass
            def rocm_gelu(): pass
            """,
        "pkg.kern": """
            from pkg.ops import rmsnorm, mamba_conv
            from pkg.ops import rocm_gelu
            _EXPORTS = ["rmsnorm", "mamba_conv"]
            if is_hip():
                _EXPORTS.append("rocm_gelu")
            for _n in _EXPORTS:
                if _n in globals():
                    globals()[_n] = wrap(globals()[_n], f"kern.{_n}")
            del _EXPORTS
            def unread(): pass
            """,
        "pkg.user": """
            from pkg.kern import rmsnorm
            rmsnorm()
            """}, kept={"pkg.kern:rmsnorm": "import", "pkg.ops:rmsnorm": "import"},
        dead=["pkg.kern:mamba_conv", "pkg.ops:mamba_conv", "pkg.kern:rocm_gelu", "pkg.ops:rocm_gelu",
              "pkg.kern:unread"]),
    Case("a name list also used otherwise keeps globals() a whole-namespace read", {"pkg.kern": """
        def a(): pass
        def b(): pass
        _EXPORTS = ["a"]
        for _n in _EXPORTS:
            if _n in globals():
                globals()[_n] = wrap(globals()[_n])
        report(_EXPORTS)
        """}, kept={"pkg.kern:a": "string|dynamic", "pkg.kern:b": "dynamic"}),
    Case("an unguarded subscript in the loop keeps globals() a whole-namespace read", {"pkg.kern": """
        def a(): pass
        def b(): pass
        _EXPORTS = ["a"]
        for _n in _EXPORTS:
            if _n in globals():
                globals()[_n] = wrap(globals()[_n], globals()["b"])
        """}, kept={"pkg.kern:a": "string|dynamic", "pkg.kern:b": "dynamic|string"}),
    Case("a subclass of an unknown external class keeps every member", {"pkg.cfg": """
        from transformers import PretrainedConfig
        class MyConfig(PretrainedConfig):
            def to_dict(self): pass
            def _private_hook(self): pass
        CONFIG = MyConfig()
        """}, kept={"pkg.cfg:MyConfig.to_dict": "base", "pkg.cfg:MyConfig._private_hook": "base"}),
    Case("side-effect-free assignments go; one with a call stays", {"pkg.consts": """
        import logging
        from typing import TypeVar
        UNUSED = 3
        ALSO_UNUSED = frozenset({1, 2})
        T = TypeVar("T")
        logger = logging.getLogger(__name__)
        _handle = open_thing()
        def open_thing(): pass
        USED = 4
        print(USED)
        """}, kept={"pkg.consts:USED": "name", "pkg.consts:open_thing": "name"},
        dead=["pkg.consts:UNUSED", "pkg.consts:ALSO_UNUSED", "pkg.consts:T", "pkg.consts:logger"]),
    Case("names inside string annotations", {
        "pkg.req": "class Req: pass\nclass Batch: pass\nclass Unused: pass\n",
        "pkg.sched": """
            from typing import Optional
            from pkg.req import Batch, Req
            def step(r: "Optional[Req]", b: "Batch | None") -> None: pass
            step(None, None)
            """}, kept={"pkg.sched:Req": "name", "pkg.req:Req": "string|import", "pkg.req:Batch": "string|import"},
        dead=["pkg.req:Unused"]),
    Case("class-body names resolve to members", {"pkg.a": """
        class A:
            def _get(self): return 1
            value = property(_get)
            def unused(self): pass
        A()
        """}, kept={"pkg.a:A._get": "name"}, dead=["pkg.a:A.unused"]),
    Case("an import inside a function keeps its target when the function is kept", {
        "pkg.lazy": "def heavy(): pass\ndef never(): pass\n",
        "pkg.main": """
            def run():
                from pkg.lazy import heavy
                return heavy()
            def unused():
                from pkg.lazy import never
                return never()
            run()
            """}, kept={"pkg.lazy:heavy": "import"}, dead=["pkg.lazy:never", "pkg.main:unused"]),
    Case("a file this Python cannot parse: every word in it counts", {
        "pkg.util": "def helper_name(): pass\ndef other_name(): pass\n",
        "pkg.broken": "def x(:\n    helper_name()\n"},
        kept={"pkg.util:helper_name": "unparsed"}, dead=["pkg.util:other_name"]),
    Case("`__all__` is no use unless a module star-imports its module", {
        "pkg.a": """
            def api(): pass
            def gone(): pass
            __all__ = ["api", "gone"]
            """,
        "pkg.b": "from pkg.a import api\napi()\n"},
        kept={"pkg.a:api": "import"}, dead=["pkg.a:gone"]),
    Case("`__all__` of a star-imported module names what the star binds (must NOT be removed)", {
        "pkg.impl": """
            def listed(): pass
            def unlisted(): pass
            __all__ = ["listed"]
            """,
        "pkg.__init__": "from pkg.impl import *\n"},
        kept={"pkg.impl:listed": "string"}, dead=["pkg.impl:unlisted"]),
    Case("a package's own binding shadows its submodule of the same name (must NOT be removed)", {
        "pkg.dsa.__init__": "from pkg.dsa.kernels import fused\n",
        "pkg.dsa.kernels": "def fused(): pass\ndef other(): pass\n",
        "pkg.dsa.fused": "def inner(): pass\n",
        "pkg.user": "from pkg.dsa import fused\nfused()\n"},
        kept={"pkg.dsa.kernels:fused": "import"}, dead=["pkg.dsa.kernels:other"]),
    Case("a registered op stays when named (also as torch.ops.sglang.<name>), goes when nothing names it", {
        "pkg.ops": """
            from pkg.custom_op import register_custom_op

            @register_custom_op(out_shape=0)
            def called_op(x): return x

            @register_custom_op(mutates_args=["x"])
            def traced_op(x): pass

            @register_custom_op(eager=False)
            def orphan_op(x): return x
            """,
        "pkg.custom_op": "def register_custom_op(fn=None, **kw): return fn\n",
        "pkg.user": """
            import torch
            from pkg.ops import called_op
            called_op(1)
            torch.ops.sglang.traced_op(2)
            """},
        kept={"pkg.ops:called_op": "import", "pkg.ops:traced_op": "attr"}, dead=["pkg.ops:orphan_op"]),
    Case("an attribute table loses the entries nothing names; other classes keep every attribute", {
        "pkg.environ": """
            class EnvBool:
                def __init__(self, default): self.default = default
                def get(self): return self.default
            class Envs:
                SGLANG_USED = EnvBool(False)
                SGLANG_BY_NAME = EnvBool(True)
                SGLANG_AITER_ONLY = EnvBool(False)
            class Config:
                unused_field: int = 0
            envs = Envs()
            Config()
            """,
        "pkg.user": """
            import os
            from pkg.environ import envs
            envs.SGLANG_USED.get()
            os.environ.get("SGLANG_BY_NAME")
            """},
        kept={"pkg.environ:Envs.SGLANG_USED": "attr", "pkg.environ:Envs.SGLANG_BY_NAME": "string",
              "pkg.environ:Config.unused_field": "member"},
        dead=["pkg.environ:Envs.SGLANG_AITER_ONLY"]),
    Case("a dead class takes its members; they are not listed apart", {"pkg.a": """
        class Gone:
            def method(self): pass
        """}, dead=["pkg.a:Gone"]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_reference_kinds(case: Case) -> None:
    g = graph(case.sources)
    for symbol, code in case.kept.items():
        assert symbol in g.symbols, f"{symbol} is not a symbol: {sorted(g.symbols)}"
        assert symbol in g.live, f"{symbol} should be kept ({code}); live: {sorted(g.live)}"
        assert g.live[symbol].code in code.split("|"), f"{symbol}: kept for {g.live[symbol]}, expected {code}"
    for symbol in case.dead:
        assert symbol in g.symbols, f"{symbol} is not a symbol: {sorted(g.symbols)}"
        assert g.is_dead(symbol), f"{symbol} should go, kept for {g.live.get(symbol)}"


def test_dead_lists_members_of_kept_classes_only() -> None:
    g = graph({"pkg.a": """
        class Kept:
            def used(self): pass
            def unused(self): pass
        class Gone:
            def method(self): pass
        Kept().used()
        """})
    dead = g.dead()["pkg.a"]
    assert dead.names == {"Gone"}
    assert dead.members == {"Kept.unused"}
    assert not g.is_dead("pkg.a:Gone.method")  # goes with its class, not on its own


def test_dead_import_aliases_name_their_target() -> None:
    g = graph({"pkg.util": "def a(): pass\ndef b(): pass\n",
               "pkg.main": "from .util import a, b as bee\na()\n"})
    assert g.dead()["pkg.main"].imports == {("pkg.util", "b", "bee")}
    assert g.dead()["pkg.util"].names == {"b"}


def test_third_party_import_aliases_are_not_symbols() -> None:
    g = graph({"pkg.a": "from torch import nn\nfrom pkg import sub\n", "pkg.sub": "X = 1\n"})
    assert "pkg.a:nn" not in g.symbols  # third party: remove_unused_names' business
    assert "pkg.a:sub" not in g.symbols  # a submodule: importing it may register things


def test_short_patterns_are_ignored() -> None:
    g = graph({"pkg.a": """
        class A:
            def go(self, m): return getattr(self, f"_{m}")
            def _x(self): pass
        A().go(1)
        """})
    assert g.is_dead("pkg.a:A._x")  # `_*` has no letters: it would keep every private name


def test_the_project_rules_load() -> None:
    real = load_symbol_rules("deepseek")
    assert real.protected("member", "__init__") is not None
    assert real.protected("symbol", "sglang.srt.entrypoints.engine:Engine.generate") is not None
    assert real.protected("symbol", "sglang.srt.entrypoints.engine:Engine._private") is None
    assert real.decorator_registers("triton.jit") == ""
    assert real.decorator_registers("register_attention_backend")
    assert real.decorator_registers("register_custom_op") == "" and real.decorator_names_op("register_custom_op")
    assert real.decorator_registers("never_seen_before")  # unknown decorators count as registrations
    assert all(rule.reason for rule in real.protect)


def test_rules_errors_name_the_field(tmp_path: Path) -> None:
    from shrinker.errors import ShrinkError

    bad = tmp_path / "x-symbols.toml"
    bad.write_text(RULES_FILE.read_text().replace('member = "forward"', 'member = "forward"\nname = "x"'))
    with pytest.raises(ShrinkError, match="protect"):
        load_symbol_rules(path=bad)


def test_overrides_of_a_kept_member_stay() -> None:
    # The base's validator is registered (kept though nothing names it): the subclass's override of
    # it must stay too, or the base version would run; an unrelated method still goes.
    g = graph({"pkg.m": """
        class Base:
            @register_validator
            def check(self): pass
        class Child(Base):
            def check(self): pass
            def other(self): pass
        Child()
        """})
    assert g.live["pkg.m:Child.check"].code == "override"
    assert g.is_dead("pkg.m:Child.other")


SERVER_ARGS = """
    from dataclasses import dataclass

    @dataclass
    class ServerArgs:
        # -------------------------------------------------
        # LMCache
        # -------------------------------------------------
        enable_lmcache: bool = False
        tp_size: int = 1
        upstream_noop: bool = False
        checked: int = 0

        def __post_init__(self):
            if self.checked < 0:
                raise ValueError
    """


def test_table_only_removed_readers(tmp_path: Path) -> None:
    """A field goes when upstream read it and no kept code does; a field upstream never reads either (an
    upstream no-op option) stays, and so does one a kept check reads, and a protected method."""
    upstream = tmp_path / "up" / "python" / "pkg"
    upstream.mkdir(parents=True)
    (upstream / "server_args.py").write_text(textwrap.dedent(SERVER_ARGS))
    (upstream / "lmcache.py").write_text("def build(a):\n    return a.enable_lmcache, a.tp_size\n")
    g = graph_from_sources({"pkg.server_args": textwrap.dedent(SERVER_ARGS),
                            "pkg.user": "def run(a):\n    return a.tp_size\nrun(None)\n"},
                           rules(), upstream=tmp_path / "up")
    assert "pkg.server_args:ServerArgs.enable_lmcache" not in g.live
    assert g.live["pkg.server_args:ServerArgs.tp_size"].code == "attr"
    assert g.live["pkg.server_args:ServerArgs.upstream_noop"].code == "table"
    assert g.live["pkg.server_args:ServerArgs.checked"].code == "attr"  # read by __post_init__ (protected)
    assert g.live["pkg.server_args:ServerArgs.__post_init__"].code == "protect"


def test_referrers_name_the_lazy_import_that_reads_a_symbol() -> None:
    """`shrink why` lists a LazyImport("pkg.a", "renorm") as a mention of pkg.a's renorm only."""
    g = graph({"pkg.a": "def renorm(): pass\n", "pkg.b": "def renorm(): pass\n",
               "pkg.main": "r = LazyImport(\"pkg.a\", \"renorm\")\nq = load_later(\"pkg.c\", \"renorm\")\n"})
    assert ("pkg.main:<module>", "string", 1) in g.referrers("pkg.a:renorm")
    assert ("pkg.main:<module>", "string", 1) not in g.referrers("pkg.b:renorm")
    assert ("pkg.main:<module>", "string", 2) in g.referrers("pkg.b:renorm")  # no rule: a string like any other
