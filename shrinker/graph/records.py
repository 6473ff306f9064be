"""Plain, serialisable records the tracer produces and later stages read."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

# Where an import stands.
MODULE, FUNCTION, CLASS = "module", "function", "class"
# Edge kinds.
IMPORT, FROM, FROM_SUBMODULE, IMPLICIT_PARENT, STRING, REGISTRY = (
    "import", "from", "from_submodule", "implicit_parent", "string", "registry")


@dataclass
class Where:
    """The context of a statement: what encloses it, as the tracer saw it."""

    scope: str = MODULE  # module | function | class
    type_checking: bool = False  # under `if TYPE_CHECKING:`
    try_import: bool = False  # in a `try:` whose handlers catch ImportError (or a parent)
    guards: list[str] = field(default_factory=list)  # enclosing `if` tests, innermost last; "not (...)" for else
    function: str = ""  # qualified name of the enclosing def, if any
    registry_keys: list[list[str]] = field(default_factory=list)  # [decorator, key] per leading str arg of enclosing defs


@dataclass
class ImportRecord:
    """One import statement's target, as written and resolved (relative imports made absolute)."""

    target: str  # absolute dotted module named by the statement
    names: list[str]  # names taken by `from X import a, b`; [] for `import X`; ["*"] for star
    line: int
    is_from: bool
    where: Where


@dataclass
class StringRef:
    """A string that names a module (import_module, "pkg.mod:attr", LazyImport, f-string over a tuple)."""

    target: str
    line: int
    kind: str  # import_module | fstring | mod_attr | lazy_import
    where: Where
    attr: str = ""
    # the other keyword arguments of the call the string is a keyword argument of, as source text
    # (`KernelSpec(target="m:f", capabilities=frozenset({CapabilityRequirement.HIP}))`)
    call_keywords: dict[str, str] = field(default_factory=dict)
    call: str = ""  # that call's dotted name (`KernelSpec`), "" when the string is no keyword argument


@dataclass
class DictEntry:
    key: str
    value: str  # source of the value expression (usually a Name)
    line: int


@dataclass
class DictLiteral:
    """A string-keyed dict (or `.update({...})`) at module or class level: a candidate registry."""

    name: str  # variable, or Class.attr
    entries: list[DictEntry]
    line: int
    guards: list[str] = field(default_factory=list)


@dataclass
class FileFacts:
    """Everything the tracer learns from one .py file. Cached by content hash; rules never enter here."""

    path: str  # relative to the import root, posix
    module: str
    is_package: bool
    lines: int  # non-blank
    parse_error: str = ""
    imports: list[ImportRecord] = field(default_factory=list)
    strings: list[StringRef] = field(default_factory=list)
    dicts: list[DictLiteral] = field(default_factory=list)
    entry_class: list[str] = field(default_factory=list)  # names assigned to module-level EntryClass
    defined: list[str] = field(default_factory=list)  # module-level names (defs, classes, assigns, imports)
    registry_defs: list[list[str]] = field(default_factory=list)  # [decorator, key, function or class] of @deco("key") defs

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(data: dict) -> "FileFacts":
        def where(w: dict) -> Where:
            return Where(**w)

        facts = FileFacts(**{k: v for k, v in data.items()
                             if k not in ("imports", "strings", "dicts")})
        facts.imports = [ImportRecord(**{**i, "where": where(i["where"])}) for i in data["imports"]]
        facts.strings = [StringRef(**{**s, "where": where(s["where"])}) for s in data["strings"]]
        facts.dicts = [DictLiteral(**{**d, "entries": [DictEntry(**e) for e in d["entries"]]})
                       for d in data["dicts"]]
        return facts


@dataclass
class Decision:
    """Keep or remove one file, with a reason a person can read."""

    path: str
    keep: bool
    code: str  # root | imported | registry | pinned | data | unreachable | rule | platform | parse_error
    reason: str
    rule: str = ""
    lines: int = 0
