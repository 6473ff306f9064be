"""What the planner tells the codemods about one kept file (the codemods' only view of the plan)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from shrinker.graph.constant_functions import ConstantReturn
from shrinker.graph.constant_parameters import ConstantParameters
from shrinker.graph.returned_literals import LiteralTables
from shrinker.rules.predicates import PredicateTable, profile_table
from shrinker.rules.schema import Rules


@dataclass
class Removed:
    """What the plan removes: modules (exact dotted names) and registry keys per registry name."""

    modules: frozenset[str] = frozenset()
    registry_keys: dict[str, frozenset[str]] = field(default_factory=dict)
    # Cross-file facts some codemods read (filled by apply from the tracer's facts). None = not known:
    # then remove_unused_names keeps every public name, since another module may import it.
    names: dict[str, frozenset[str]] | None = None  # kept module → names it no longer provides
    imported: dict[str, frozenset[str]] | None = None  # module → names kept modules take ("*": all)
    # module → {name: module its top-level `from X import name` takes it from} (graph/reexports.py)
    origins: dict[str, dict[str, str]] | None = None
    # removed module → {name it re-exports: the module defining it}: the plan's reexports_of_removed, for
    # which a kept `from <removed> import name` is redirected instead of dropped
    reexports: dict[str, dict[str, str]] = field(default_factory=dict)

    def redirect(self, base: str, names: list[str]) -> str | None:
        """The module a `from base import names` of a removed `base` is redirected to: the one module that
        defines all of `names` (the plan's reexports_of_removed), else None."""
        origins = {self.reexports.get(base, {}).get(n) for n in names}
        return origins.pop() if len(origins) == 1 and None not in origins and names else None

    def module_removed(self, dotted: str) -> bool:
        """True when `dotted` or a package above it is removed (`a.b` removed => `a.b.c` removed)."""
        parts = dotted.split(".")
        return any(".".join(parts[:i]) in self.modules for i in range(1, len(parts) + 1))

    def key_removed(self, registry: str, key: str) -> bool:
        return key in self.registry_keys.get(registry, frozenset())


@dataclass
class CodemodInputs:
    """Shared, read-only inputs for every codemod of a run (built once, passed to each transform)."""

    rules: Rules
    removed: Removed
    table: PredicateTable = None  # type: ignore[assignment]
    # Method names defined in two or more classes of the kept tree (None = not known: no method is
    # removed by remove_platform_bound, since removing one could unmask a base-class method).
    shared_methods: frozenset[str] | None = None
    # Method names defined anywhere in the kept tree (None = not known): a string naming a platform
    # method no class defines is a label, not a lookup, so remove_platform_methods does not report it.
    defined_methods: frozenset[str] | None = None
    # Identifiers that occur in one file of the kept tree only (None = not known): an attribute whose name
    # is one is read and written nowhere else (fold_platform's attribute constants).
    single_file_words: frozenset[str] | None = None
    # Kernel backend (enum member name) -> the method that runs it, from [platform].backend_methods (None =
    # not known: remove_other_device_backends removes nothing).
    backend_methods: Mapping[str, str] | None = None
    # module -> {function or `Class.method`: the bool it always returns} (graph/constant_functions; None =
    # not known: no call folds as a constant)
    constant_functions: Mapping[str, Mapping[str, ConstantReturn]] | None = None
    # The literals functions return and attributes hold (graph/returned_literals; None = not known: read in
    # the second round of a folding batch, on the folded tree).
    returned_literals: LiteralTables | None = None
    # Constant methods named for another platform or model family that any object's call folds to
    # (graph/constant_functions.called_methods: one def in the tree, every other use a call; None = not known)
    called_methods: Mapping[str, ConstantReturn] | None = None
    # Private attributes nothing in the kept tree sets, read as `getattr(self, "_x", default)` (graph/
    # unset_attributes; None = not known).
    unset_attributes: frozenset[str] | None = None
    # Parameters named for another platform or model family that every call passes one bool (graph/
    # constant_parameters; None = not known): folded inside their function, dropped once nothing reads them.
    constant_parameters: ConstantParameters | None = None
    # Classes the kept tree never instantiates and only tests against (graph/tested_classes; None = not
    # known): `isinstance(x, C)` is False, as for a class whose module went.
    tested_only_classes: frozenset[str] | None = None
    # The kept tree's modules (None = not known: remove_unread_predicate_imports drops nothing, since
    # `from pkg import name` may import a submodule, which runs it).
    kept_modules: frozenset[str] | None = None
    # Enum class -> its members of another platform no kept code names (graph/enum_members; None = not known:
    # remove_platform_enum_members removes nothing)
    platform_enum_members: Mapping[str, frozenset[str]] | None = None
    # Enum class -> its members no code produces (graph/enum_members.never_produced; None = not known:
    # fold_never_produced_members folds nothing)
    never_produced_members: Mapping[str, frozenset[str]] | None = None
    # Module -> names of it that every importer reads only as `x in NAME` (graph/key_reads; None = not known:
    # prune_platform_collections leaves every imported collection whole)
    key_read_imports: Mapping[str, frozenset[str]] | None = None

    def __post_init__(self) -> None:
        if self.table is None:
            self.table = profile_table(self.rules, self.removed.registry_keys)
