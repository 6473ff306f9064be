"""Apply the rules' registries to the graph: which modules a registry keeps, which import records die.

Unknown keys in the rules are errors (naming the closest real keys), so a typo never silently
removes a backend a user needed.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field

from shrinker.errors import ShrinkError
from shrinker.graph.build import ImportGraph
from shrinker.graph.key_lookups import key_asks
from shrinker.graph.reexports import import_origins
from shrinker.graph.records import FileFacts, StringRef
from shrinker.rules.schema import Registry, Rules


class RuleProblem(ShrinkError):
    """A rule that names something upstream does not have (raised, or collected when lenient)."""


class Problems:
    """Strict (plan): the first problem is a one-line error. Lenient (regen): collect them all.
    A warning (a removal rule whose target upstream dropped: nothing left to remove) never stops."""

    def __init__(self, strict: bool = True):
        self.strict = strict
        self.found: list[str] = []
        self.warnings: list[str] = []

    def __call__(self, message: str) -> None:
        if self.strict:
            raise RuleProblem(message)
        self.found.append(message)

    def warn(self, message: str) -> None:
        self.warnings.append(message)


@dataclass
class RegistryView:
    """What the registries decide, in the terms the reachability pass and the codemods need."""

    scan_edges: list[tuple[str, str, str]] = field(default_factory=list)  # (scanner, module, reason)
    removed_models: dict[str, str] = field(default_factory=dict)  # module → reason
    removed_keys: dict[str, set[str]] = field(default_factory=dict)  # registry → keys removed
    all_keys: dict[str, set[str]] = field(default_factory=dict)  # registry → every key upstream has
    dead_names: dict[str, dict[str, str]] = field(default_factory=dict)  # module → {name: registry}


def _closest(word: str, choices) -> str:
    near = difflib.get_close_matches(word, sorted(choices), n=3, cutoff=0.5)
    return ", ".join(near) if near else "none close"


def _require_module(g: ImportGraph, module: str, what: str, problems: Problems) -> FileFacts | None:
    facts = g.facts.get(module)
    if facts is None:
        problems(f"{what}: no module {module!r} upstream (closest: {_closest(module, g.facts)})")
    return facts


def _check_keys(reg: Registry, found: set[str], problems: Problems) -> None:
    """A kept key upstream does not register: a typo when a near twin is there unkept (an error), else
    a key upstream dropped (0.5.20's cutlass_mla): nothing is left to keep, so only a warning; a key that
    replaces it is a new key, judged as every new key is."""
    unkept = sorted(found - set(reg.keep))
    for key in reg.keep:
        if key in found:
            continue
        if difflib.get_close_matches(key, unkept, n=1, cutoff=0.8):
            problems(f"registry {reg.name}: unknown key {key!r} (closest: {_closest(key, found)})")
        else:
            problems.warn(f"registry {reg.name}: kept key {key!r} is not registered upstream (nothing to keep; "
                          f"closest: {_closest(key, found)})")


def _module_scan(g: ImportGraph, rules: Rules, reg: Registry, view: RegistryView, problems: Problems) -> None:
    if _require_module(g, reg.scanner, f"registry {reg.name} scanner", problems) is None:
        return
    prefix = reg.package + "."
    candidates = [m for m, f in g.facts.items()
                  if m.startswith(prefix) and "." not in m[len(prefix):] and not f.is_package]
    found = {name for m in candidates for name in g.facts[m].entry_class}
    for arch in rules.architectures.keep:
        if arch not in found:
            problems(f"architectures: unknown architecture {arch!r} (closest: {_closest(arch, found)})")
    kept = set(rules.architectures.keep)
    view.all_keys[reg.name] = found
    view.removed_keys[reg.name] = found - kept
    for module in sorted(candidates):
        entries = g.facts[module].entry_class
        if not entries:
            continue
        hit = sorted(set(entries) & kept)
        if hit:
            view.scan_edges.append((reg.scanner, module, f"registry {reg.name}: EntryClass {', '.join(hit)} kept"))
        else:
            view.removed_models[module] = (f"registry {reg.name}: EntryClass {', '.join(entries)} "
                                           f"is not a kept architecture")


def _decorator(g: ImportGraph, reg: Registry, view: RegistryView, problems: Problems) -> None:
    facts = _require_module(g, reg.module, f"registry {reg.name}", problems)
    if facts is None:
        return
    found = {key for deco, key, _ in facts.registry_defs if deco == reg.decorator}
    if not found:
        return problems(f"registry {reg.name}: no @{reg.decorator}(KEY) functions in {reg.module}")
    _check_keys(reg, found, problems)
    view.all_keys[reg.name] = found
    view.removed_keys[reg.name] = found - set(reg.keep)


def _dict(g: ImportGraph, reg: Registry, view: RegistryView, problems: Problems) -> None:
    facts = _require_module(g, reg.module, f"registry {reg.name}", problems)
    if facts is None:
        return
    literals = [d for d in facts.dicts if d.name == reg.variable or d.name.endswith("." + reg.variable.split(".")[-1])
                and reg.variable.split(".")[-1] == d.name.split(".")[-1]]
    if not literals:
        names = sorted({d.name for d in facts.dicts})
        return problems(f"registry {reg.name}: no dict {reg.variable!r} in {reg.module} "
                        f"(closest: {_closest(reg.variable, names)})")
    found = {e.key for d in literals for e in d.entries}
    _check_keys(reg, found, problems)
    keep = set(reg.keep)
    view.all_keys[reg.name] = found
    view.removed_keys[reg.name] = found - keep
    alive = {e.value for d in literals for e in d.entries if e.key in keep}
    dead = {e.value for d in literals for e in d.entries if e.key not in keep} - alive
    view.dead_names.setdefault(reg.module, {}).update({name: reg.name for name in dead})


def exported_submodules(package: str, target: str, names: list[str], submodules) -> list[str]:
    """The submodules of `package` an import of its __init__ names: `from package.sub import X` and
    `from package import sub` (a name among `submodules`, the package's own module names)."""
    prefix = package + "."
    if target.startswith(prefix):
        return [target[len(prefix):].split(".")[0]]
    if target == package:
        return [n for n in names if n in submodules]
    return []


def _package_exports(g: ImportGraph, rules: Rules, reg: Registry, view: RegistryView, problems: Problems) -> None:
    """A package __init__ that imports its submodules to re-export them: keys are submodule names. With
    `decorator`, importing a submodule registers its `@decorator("Arch", ...)` functions per architecture:
    it stays when one of them names a kept architecture (or it registers nothing), whatever `keep` says."""
    if reg.decorator and reg.module not in g.facts:  # a release before the package: nothing to remove
        return problems.warn(f"registry {reg.name}: no module {reg.module!r} upstream (nothing removed)")
    facts = _require_module(g, reg.module, f"registry {reg.name}", problems)
    if facts is None:
        return
    prefix = reg.module + "."
    own = {m[len(prefix):].split(".")[0] for m in g.facts if m.startswith(prefix)}
    found = {sub for imp in facts.imports if imp.where.scope == "module"
             for sub in exported_submodules(reg.module, imp.target, imp.names, own)}
    view.all_keys[reg.name] = found
    if not reg.decorator:
        _check_keys(reg, found, problems)
        view.removed_keys[reg.name] = found - set(reg.keep)
        return
    kept = set(rules.architectures.keep)
    registered = {sub: {key for deco, key, _ in getattr(g.facts.get(prefix + sub), "registry_defs", ())
                        if deco == reg.decorator} for sub in found}
    if not any(registered.values()):
        return problems(f"registry {reg.name}: no @{reg.decorator}(ARCH) functions in {reg.module}'s submodules")
    view.removed_keys[reg.name] = {sub for sub, archs in registered.items() if archs and not archs & kept}


def apply_registries(g: ImportGraph, rules: Rules, problems: Problems | None = None) -> RegistryView:
    problems = problems or Problems(strict=True)
    view = RegistryView()
    for reg in rules.registries:
        if getattr(reg, "follows", ""):
            continue  # its keys are another registry's: the codemods prune it, the plan has nothing to add
        if reg.kind == "module_scan":
            _module_scan(g, rules, reg, view, problems)
        elif reg.kind == "decorator":
            _decorator(g, reg, view, problems)
        elif reg.kind == "dict":
            _dict(g, reg, view, problems)
        elif reg.kind == "package_exports":
            _package_exports(g, rules, reg, view, problems)
        elif reg.kind == "records":
            _records(g, reg, view, problems)
    return view


def record_key(record: dict, reg: Registry) -> str | None:
    """The key of the `reg.record` call an import record's module string stands in (its `element_key`
    keyword, a literal), else None."""
    if record.get("call") != reg.record:
        return None
    source = record.get("call_keywords", {}).get(reg.element_key, "")
    try:
        value = ast.literal_eval(source)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def ref_key(ref: StringRef, reg: Registry) -> str | None:
    """record_key for a tracer's module string (graph/records.StringRef) rather than a graph edge's record."""
    return record_key({"call": ref.call, "call_keywords": ref.call_keywords}, reg)


def _records(g: ImportGraph, reg: Registry, view: RegistryView, problems: Problems) -> None:
    """An inventory of `record` calls: the keys no module asks `lookups` for with a literal are removed;
    one ask with a computed key keeps them all (a warning names it)."""
    found = {key for f in g.facts.values() for ref in f.strings
             if (key := ref_key(ref, reg)) is not None}
    if not found:
        return problems.warn(f"registry {reg.name}: no {reg.record}({reg.element_key}=...) records upstream "
                             f"(nothing removed)")
    asks = key_asks(g.tree, g.module_path, import_origins(g.facts.values()), reg.lookups)
    view.all_keys[reg.name] = found
    if asks.computed:
        problems.warn(f"registry {reg.name}: {', '.join(asks.computed)} asks with a computed key, so every "
                      f"key stays")
        view.removed_keys[reg.name] = set()
        return
    view.removed_keys[reg.name] = found - asks.asked
