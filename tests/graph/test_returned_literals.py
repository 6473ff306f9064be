"""graph/returned_literals: the literals a function returns and an attribute holds, read from the tree's text,
through calls, methods and modules; every way a value could escape the table leaves the attribute out."""

from __future__ import annotations

import textwrap
from pathlib import Path

from shrinker.graph.returned_literals import returned_literals

ENCODING = '''
def resolve_spec(*, hf_config, tool_call_parser=None):
    if tool_call_parser == "deepseekv4":
        return "dsv4"
    arch = hf_config.architectures[0]
    if "DeepseekV3" in arch:
        return "dsv32"
    return None


def spec_label(spec):
    return spec or "none"
'''

SERVING = '''
from pkg import encoding


class Base:
    def __init__(self, manager):
        self.manager = manager


class Chat(Base):
    def __init__(self, manager):
        super().__init__(manager)
        self.spec = self._resolve_spec()
        self.mode = "plain"

    def _resolve_spec(self):
        """Override in a subclass to add a spec."""
        return encoding.resolve_spec(hf_config=self.manager.hf_config)

    def render(self, messages):
        if self.spec == "kimi_k3":
            return messages[:1]
        return messages


class Responses(Chat):
    def respond(self):
        return self.spec
'''

OTHER = '''
from pkg.base import Base


class Decisions(Base):
    def __init__(self, manager, chat):
        super().__init__(manager)
        self.spec = chat.spec
'''


def tree_of(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, code in files.items():
        path = tmp_path / "python" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))
    return tmp_path


def files(**extra: str) -> dict[str, str]:
    out = {"pkg/__init__.py": "", "pkg/encoding.py": ENCODING, "pkg/serving.py": SERVING, "pkg/decisions.py": OTHER}
    out.update({f"pkg/{name}.py": code for name, code in extra.items()})
    return out


def test_through_a_method_and_a_module_call_into_an_attribute(tmp_path: Path) -> None:
    tables = returned_literals(tree_of(tmp_path, files()))
    spec = frozenset({"dsv4", "dsv32", None})
    assert tables.functions["pkg.encoding"]["resolve_spec"] == spec
    assert "spec_label" not in tables.functions["pkg.encoding"]  # `spec or "none"` is no literal
    assert tables.functions["pkg.serving"]["Chat._resolve_spec"] == spec
    # Decisions' own `self.spec` shares no subclass with Chat: its store is another object's
    assert tables.attributes["pkg.serving"] == {"spec": spec, "mode": frozenset({"plain"})}
    assert tables.words() == ("mode", "spec")


def test_a_function_that_may_fall_off_its_end_may_return_none(tmp_path: Path) -> None:
    tables = returned_literals(tree_of(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": '''
        def pick(x):
            if x:
                return "a"
        '''}))
    assert tables.functions["pkg.a"]["pick"] == frozenset({"a", None})


def test_an_override_elsewhere_leaves_the_method_and_the_attribute_out(tmp_path: Path) -> None:
    tables = returned_literals(tree_of(tmp_path, files(inkling='''
        from pkg.serving import Chat


        class Inkling(Chat):
            def _resolve_spec(self):
                return "inkling"
        ''')))
    assert "Chat._resolve_spec" not in tables.functions.get("pkg.serving", {})
    assert "spec" not in tables.attributes.get("pkg.serving", {})


def test_a_store_that_can_reach_the_class_leaves_the_attribute_out(tmp_path: Path) -> None:
    # a subclass setting it, a base class method setting it, a store through another object, a computed name
    for extra in ('''
        from pkg.serving import Chat


        class Kimi(Chat):
            def enable(self):
                self.spec = "kimi_k3"
        ''', '''
        from pkg.serving import Chat


        def enable(chat: Chat):
            chat.spec = "kimi_k3"
        ''', '''
        def configure(obj, name, value):
            setattr(obj, name, value)  # spec
        ''', '''
        def configure(obj):
            setattr(obj, "spec", "kimi_k3")
        '''):
        tables = returned_literals(tree_of(tmp_path, files(extra=extra)))
        assert "spec" not in tables.attributes.get("pkg.serving", {}), extra


def test_a_base_class_store_reaches_the_subclass(tmp_path: Path) -> None:
    serving = SERVING.replace('''class Base:
    def __init__(self, manager):
        self.manager = manager
''', '''class Base:
    def __init__(self, manager):
        self.manager = manager

    def reset(self):
        self.spec = None
''')
    tables = returned_literals(tree_of(tmp_path, {**files(), "pkg/serving.py": serving}))
    assert "spec" not in tables.attributes.get("pkg.serving", {})


def test_a_read_before_the_store_or_in_a_nested_function_leaves_it_out(tmp_path: Path) -> None:
    early = SERVING.replace("        self.spec = self._resolve_spec()\n",
                            "        print(self.spec)\n        self.spec = self._resolve_spec()\n")
    nested = SERVING.replace("    def render(self, messages):\n",
                             "    def render(self, messages):\n        f = lambda self: self.spec\n")
    for serving in (early, nested):
        tables = returned_literals(tree_of(tmp_path, {**files(), "pkg/serving.py": serving}))
        assert "spec" not in tables.attributes.get("pkg.serving", {})


def test_a_property_of_that_name_in_a_subclass_leaves_it_out(tmp_path: Path) -> None:
    for body in ('''
            @property
            def spec(self):
                return "kimi_k3"
        ''', '''
            spec = property(lambda self: "kimi_k3")
        '''):
        extra = "from pkg.serving import Chat\n\n\nclass Kimi(Chat):\n" + textwrap.indent(textwrap.dedent(body), "    ")
        tables = returned_literals(tree_of(tmp_path, files(extra=extra)))
        assert "spec" not in tables.attributes.get("pkg.serving", {}), body


ATTENTION = '''
class AttentionBase:
    def __init__(self, fp8):
        self.fp8 = fp8
        self.use_npu_mxfp8 = False

    def quantize(self):
        return self.fp8 or self.use_npu_mxfp8


class Attention(AttentionBase):
    def forward(self, x):
        if self.use_npu_mxfp8:
            return npu(x)
        return x


def build(config):
    return Attention(**vars(config))
'''


def test_a_bool_store_holds_that_bool_for_subclasses_too(tmp_path: Path) -> None:
    tables = returned_literals(tree_of(tmp_path, {"pkg/__init__.py": "", "pkg/attention.py": ATTENTION}))
    # `**vars(config)` copies another object's attributes into a call: no write by name
    assert tables.attributes["pkg.attention"] == {"use_npu_mxfp8": frozenset({False})}


def test_a_second_bool_store_or_a_write_by_name_leaves_it_out(tmp_path: Path) -> None:
    for attention in (ATTENTION + '''
class NpuAttention(Attention):
    def enable(self):
        self.use_npu_mxfp8 = True
''', ATTENTION.replace("**vars(config)", "config") + '''
def patch(obj):
    vars(obj).update(use_npu_mxfp8=True)
'''):
        tables = returned_literals(tree_of(tmp_path, {"pkg/__init__.py": "", "pkg/attention.py": attention}))
        assert "use_npu_mxfp8" not in tables.attributes.get("pkg.attention", {})
