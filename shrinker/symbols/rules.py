"""The symbol rules: `rules/<profile>-symbols.toml` (the protected API and the name lists), checked
by pydantic like the profile's own rules. Kept in a file of their own so the module-level rules
and these can change apart; the code knows mechanisms, the file knows SGLang's names."""

from __future__ import annotations

import re
from fnmatch import translate
from functools import cached_property
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shrinker import paths
from shrinker.errors import ShrinkError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NameList(_Strict):
    names: list[str] = Field(description="Dotted names or globs (`*`, `?`).")
    reason: str


class Protect(_Strict):
    """A symbol kept whatever references it; exactly one of symbol / name / member, with a reason.

    symbol: a glob over `module:qualname` (`sglang.srt.entrypoints.engine:Engine.[!_]*`);
    name:   a glob over module-level names, in every module (`EntryClass`);
    member: a glob over method / nested-class names, in every class that is kept (`forward`, `__*__`).
    """

    symbol: str = ""
    name: str = ""
    member: str = ""
    reason: str

    @model_validator(mode="after")
    def _one_target(self) -> "Protect":
        if sum(bool(x) for x in (self.symbol, self.name, self.member)) != 1:
            raise ValueError("give exactly one of symbol, name, member")
        return self


class KnownBase(_Strict):
    """A class outside the tree whose subclasses' methods it may call: only `hooks` are called by it.

    A kept class with an external base that no `known_bases` entry matches keeps all its members
    (that base's code is not analysed, so any override may be called from it).
    """

    base: str = Field(description="Dotted name or glob of the external class (`torch.nn.Module`).")
    hooks: list[str] = Field(default_factory=list, description="Member names (globs) the base calls.")
    reason: str


class AttributeTable(_Strict):
    """A class whose body assignments are entries of a table read by attribute or name
    (`envs.SGLANG_X.get()`): an entry no kept code names, as `.NAME` or "NAME", goes."""

    cls: str = Field(alias="class", description="`module:qualname` (glob) of the class.")
    only_removed_readers: bool = Field(
        False, description="An entry goes only when upstream read it somewhere (the code that read it was "
                           "removed); one upstream never reads either stays (for ServerArgs: an option that "
                           "is a no-op upstream too keeps its CLI flag).")
    reason: str


class SymbolRules(_Strict):
    profile: str
    description: str
    min_pattern_chars: int = Field(3, description="String-built names (f\"forward_{x}\") count when their "
                                                  "literal part has at least this many characters.")
    pure_calls: NameList
    inert_decorators: NameList
    registering_decorators: NameList
    op_decorators: Optional[NameList] = Field(
        None, description="Decorators that register the function under its own name in a namespace "
                          "read by attribute (`torch.ops.sglang.<name>`): the function stays when its "
                          "name is used by name, attribute or string, and goes when nothing names it.")
    attribute_calls: Optional[NameList] = Field(
        None, description="Calls `f(\"pkg.mod\", \"name\")` that import pkg.mod and read its attribute `name` "
                          "(sglang.utils.LazyImport): the string keeps that one symbol, not every symbol so named.")
    attribute_tables: list[AttributeTable] = Field(default_factory=list)
    protect: list[Protect] = Field(default_factory=list)
    known_bases: list[KnownBase] = Field(default_factory=list)
    entry_point_files: list[str] = Field(default_factory=list,
                                         description="TOML files whose [project.scripts] / entry-points "
                                                     "name `module:function` roots.")
    source: Optional[str] = None

    # -- matching -------------------------------------------------------------------------------------
    @cached_property
    def _inert(self) -> re.Pattern:
        return _union(self.inert_decorators.names)

    @cached_property
    def _registering(self) -> re.Pattern:
        return _union(self.registering_decorators.names)

    @cached_property
    def _op(self) -> re.Pattern:
        return _union(self.op_decorators.names if self.op_decorators else [])

    @cached_property
    def _attribute_calls(self) -> re.Pattern:
        return _union(self.attribute_calls.names if self.attribute_calls else [])

    def imports_attribute(self, callee: str) -> bool:
        """callee("pkg.mod", "name") reads pkg.mod's `name` (see `attribute_calls`)."""
        return bool(callee) and bool(self._attribute_calls.match(callee))

    def decorator_names_op(self, name: str) -> bool:
        """The decorator registers an op under the function's own name (see `op_decorators`)."""
        return bool(name) and bool(self._op.match(name))

    def decorator_registers(self, name: str) -> str:
        """"" when the decorator only wraps (or registers an op reached by its name); else why it
        counts as a registration (a use)."""
        if self.decorator_names_op(name):
            return ""
        if name and self._registering.match(name):
            return f"@{name} registers it (rule registering_decorators)"
        if name and self._inert.match(name):
            return ""
        return f"@{name or '<expression>'} is not a known wrapper: it may register the function"

    def attribute_table(self, class_id: str) -> Optional[AttributeTable]:
        return next((t for t in self.attribute_tables if _compiled(t.cls).match(class_id)), None)

    def protected(self, kind: str, subject: str) -> Optional[Protect]:
        """The first protect rule of `kind` (symbol | name | member) matching `subject`."""
        for rule in self.protect:
            pattern = getattr(rule, kind)
            if pattern and _compiled(pattern).match(subject):
                return rule
        return None

    def base_hooks(self, dotted: str) -> Optional[KnownBase]:
        for base in self.known_bases:
            if _compiled(base.base).match(dotted):
                return base
        return None

    @cached_property
    def pure_call_set(self) -> frozenset[str]:
        return frozenset(self.pure_calls.names)


_CACHE: dict[str, re.Pattern] = {}


def _compiled(glob: str) -> re.Pattern:
    rx = _CACHE.get(glob)
    if rx is None:
        rx = _CACHE[glob] = re.compile(translate(glob))
    return rx


def _union(globs: list[str]) -> re.Pattern:
    if not globs:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{translate(g)})" for g in globs))


def symbol_rules_path(profile: str) -> Path:
    return paths.rules_dir() / f"{profile}-symbols.toml"


def load_symbol_rules(profile: str = "deepseek", path: Path | None = None) -> SymbolRules:
    path = path or symbol_rules_path(profile)
    if not path.exists():
        raise ShrinkError(f"no symbol rules file {path}")
    from shrinker.rules.load import validate_toml

    return validate_toml(SymbolRules, path, lambda data: {**data.get("symbols", {}), "source": str(path)},
                         where_prefix="symbols.")
