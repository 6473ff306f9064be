"""Reachability from the roots under the rules: which modules stay, and why each one does or doesn't.

An import record keeps nothing when it stands under `if TYPE_CHECKING`, under a guard that folds to
False on CUDA, inside a registry factory whose key is removed, or takes only names that serve removed
registry keys. Modules a `remove` rule or a registry names are cut whatever imports them: the kept
importers are rewritten by the codemods (they are listed as `cuts`).
"""

from __future__ import annotations

import difflib
import re
from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from packaging.version import InvalidVersion, Version

from shrinker.graph.build import ImportGraph
from shrinker.graph.definitions_only import bases_watch, runs_only_definitions, scanned_bases
from shrinker.graph.isinstance_uses import isinstance_only_names
from shrinker.graph.reexports import plain_reexports
from shrinker.graph.sources import tree_source_reader
from shrinker.graph.records import FROM, FROM_SUBMODULE, IMPORT, MODULE
from shrinker.plan.registries import Problems, RegistryView, apply_registries, exported_submodules, record_key
from shrinker.plan.moves import RuleMove
from shrinker.plan.roots import Move
from shrinker.rules.parameters import fixed_values
from shrinker.rules.patterns import pattern_matches
from shrinker.rules.predicates import (MethodNames, PredicateTable, evaluate_source, feature_class_globs,
                                       other_devices_only, profile_table)
from shrinker.rules.schema import ModuleRule, Rules


# Removal category of modules nothing kept reaches (batches select on categories; decide.py); a module cut
# for isinstance-only uses outside a registry goes with them, as `unreachable:isinstance`.
UNREACHABLE = "unreachable"


def first_rule(rules_list: list[ModuleRule], module: str) -> tuple[int, ModuleRule] | None:
    for i, rule in enumerate(rules_list):
        if pattern_matches(rule.pattern, module):
            return i, rule
    return None


@dataclass
class DeadReason:
    # type_checking | platform_guard | feature_guard | architecture_guard | registry | inventory (a record no
    # code looks up: its module goes with the unreachable ones, after the features batch, whose code may
    # import it; the registries batch removes the record itself)
    code: str
    text: str
    registry: str = ""
    # the codemod that removes the code holding the import, where not a guard's fold
    # (remove_platform_methods, remove_platform_classes, remove_feature_classes)
    codemod: str = ""


class Judges(NamedTuple):
    """What record_dead judges an import record with (its arguments after the importer)."""

    view: RegistryView
    table: PredicateTable
    rules: Rules
    features: PredicateTable | None
    archs: PredicateTable | None


@dataclass
class Reach:
    """The outcome of the pass, by module."""

    kept: dict[str, str] = field(default_factory=dict)  # module → reason text
    kept_code: dict[str, str] = field(default_factory=dict)  # root | imported | registry | pinned
    parent: dict[str, tuple[str, int]] = field(default_factory=dict)  # module → (importer, line)
    cut_by_rule: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # module → (code, reason, category)
    cuts: list[tuple[str, str, int, str]] = field(default_factory=list)  # (kept importer, removed, line, why)
    # removed module -> {name it re-exports to a kept importer: the module that defines it} (the importer's
    # `from removed import name` is rewritten to import from there: remove_dead_imports)
    reexports: dict[str, dict[str, str]] = field(default_factory=dict)
    dead_edges: dict[tuple[str, str], DeadReason] = field(default_factory=dict)
    registries: RegistryView = field(default_factory=RegistryView)
    rule_problems: list[str] = field(default_factory=list)  # lenient runs only (regen)
    rule_warnings: list[str] = field(default_factory=list)  # removal rules and kept keys with nothing left
    moves: dict[str, Move] = field(default_factory=dict)  # roots gone, followed to their successors
    rule_moves: list[RuleMove] = field(default_factory=list)  # other rule names that followed a move
    rules: Rules | None = None  # the rules the plan used (with rule_moves followed), set by plan.run.analyse
    kernels: object = None  # the kernel manifest (plan.kernels.KernelManifest), set by plan.run.analyse


def _reexported(g: ImportGraph, module: str, target: str, records: list[dict], reach: Reach, judged: Judges
                ) -> dict[str, str] | None:
    """{name: defining module} when every live record of `module`'s imports of the removed `target` is a
    `from target import names` of names `target` only re-exports (bound once at its top level, by an
    unguarded `from X import name`: 0.5.23's models/dbrx re-exporting ReplicatedLinear to deepseek_v4) from
    modules no rule removes; else None (the import is cut)."""
    facts = g.facts.get(target)
    origins = plain_reexports(facts) if facts else {}
    found: dict[str, str] = {}
    for record in records:
        if record_dead(record, module, *judged) is not None:
            continue
        if record["kind"] != FROM or record.get("target") != target or not record["names"]:
            return None
        for name in record["names"]:
            origin = origins.get(name)
            if origin is None or origin not in g.module_path or origin in reach.cut_by_rule \
                    or _cut_package(origin, reach) is not None:
                return None
            found[name] = origin
    return found or None


def _cached_names(rules: Rules, field: str) -> MethodNames:
    """rules.platform.<field> (exact names and globs) as a MethodNames, built once per Rules object."""
    key = f"_{field}_names"
    cached = getattr(rules, key, None)
    if cached is None:
        cached = MethodNames(list(getattr(rules.platform, field)))
        object.__setattr__(rules, key, cached)
    return cached


def _feature_class_names(rules: Rules) -> MethodNames:
    cached = getattr(rules, "_feature_classes_names", None)
    if cached is None:
        cached = MethodNames(feature_class_globs(rules))
        object.__setattr__(rules, "_feature_classes_names", cached)
    return cached


def _feature_parameters(rules: Rules) -> dict[str, dict[str, bool]]:
    """rules.features' fixed parameters by function (fixed_values), built once per Rules."""
    cached = getattr(rules, "_feature_parameter_values", None)
    if cached is None:
        cached = fixed_values(p for f in rules.features for p in f.parameters)
        object.__setattr__(rules, "_feature_parameter_values", cached)
    return cached


def platform_method_names(rules: Rules) -> MethodNames:
    return _cached_names(rules, "methods")


def platform_class_names(rules: Rules) -> MethodNames:
    return _cached_names(rules, "classes")


# Removal category of modules cut by a [[features]] decision (rules' [[remove]] entries use it too).
FEATURE = "feature"


def arch_table(rules: Rules, view: RegistryView) -> PredicateTable | None:
    """The platform table that also knows what the registries' removed keys decide (architectures, options
    holding a key), or None if they decide nothing."""
    table = profile_table(rules, view.removed_keys)
    return table if table.architectures or table.options else None


def feature_table(rules: Rules) -> PredicateTable | None:
    """The predicate table with the rules' feature decisions, or None when there are none."""
    return PredicateTable(rules.platform, rules.features) if rules.features else None


def record_dead(record: dict, importer: str, view: RegistryView, table: PredicateTable,
                rules: Rules, features: PredicateTable | None = None,
                architectures: PredicateTable | None = None) -> DeadReason | None:
    """Why one import record runs no code on CUDA for this profile, or None if it is live.
    `architectures`: the table that also knows the removed architectures (arch_table)."""
    if record.get("type_checking"):
        return DeadReason("type_checking", "only under `if TYPE_CHECKING`")
    function = record.get("function", "")
    methods = platform_method_names(rules)
    classes = platform_class_names(rules)
    for part in function.split("."):
        if part in methods:
            return DeadReason("platform_guard", f"only inside {part}, a per-platform method removed on CUDA",
                              codemod="remove_platform_methods")
        if part in classes:
            return DeadReason("platform_guard", f"only inside class {part}, which serves another platform",
                              codemod="remove_platform_classes")
    for guard in record.get("guards", []):
        if evaluate_source(guard, table) is False:
            return DeadReason("platform_guard", f"only under `if {guard}` (False on CUDA)")
    for keyword, source in record.get("call_keywords", {}).items():
        devices = other_devices_only(source, table.strings) if keyword in rules.platform.capability_keywords else None
        if devices:
            return DeadReason("platform_guard", f"named by a record for {', '.join(devices)} only "
                                                f"(`{keyword}={source}`), never dispatched on CUDA")
    if features is not None:
        classes = _feature_class_names(rules)
        for part in function.split("."):
            if part in classes:
                return DeadReason("feature_guard", f"only inside class {part}, which serves a feature rules.features cut",
                                  codemod="remove_feature_classes")
    fixed = _feature_parameters(rules).get(f"{importer}:{function}") if features is not None else None
    for guard in record.get("guards", []) if features is not None else ():
        if evaluate_source(guard, features, importer, fixed) is False:
            return DeadReason("feature_guard", f"only under `if {guard}` (False without the features rules.features cut)")
    for guard in record.get("guards", []) if architectures is not None else ():
        if evaluate_source(guard, architectures, importer) is False:
            return DeadReason("architecture_guard",
                              f"only under `if {guard}` (true only while serving an architecture the profile removes)")
    keys_of: dict[str, list[str]] = {}  # a factory registered under several keys dies when all of them go
    for deco, key in record.get("registry_keys", []):
        keys_of.setdefault(deco, []).append(key)
    for deco, keys in keys_of.items():
        for reg in rules.registries:
            if (reg.kind == "decorator" and reg.decorator == deco
                    and all(k in view.removed_keys.get(reg.name, ()) for k in keys)):
                return DeadReason("registry", f"inside the factory of removed {reg.name} key "
                                              f"{', '.join(map(repr, keys))}", reg.name)
    for reg in rules.registries:
        key = record_key(record, reg) if reg.kind == "records" else None
        if key is not None and key in view.removed_keys.get(reg.name, ()):
            return DeadReason("inventory", f"named by a {reg.record} record of {reg.name} key {key!r}, which no "
                                           f"code looks up", reg.name)
        if reg.kind == "package_exports" and importer == reg.module and record.get("scope") == "module":
            subs = exported_submodules(reg.module, record.get("target", ""), record.get("names", []),
                                       view.all_keys.get(reg.name, ()))
            if subs and all(sub in view.removed_keys.get(reg.name, ()) for sub in subs):
                return DeadReason("registry", f"re-exported by {reg.module} for removed {reg.name} key "
                                              f"{', '.join(map(repr, subs))}", reg.name)
    dead_names = view.dead_names.get(importer, {})
    names = record.get("names", [])
    if dead_names and names and record.get("scope") == "module" and all(n in dead_names for n in names):
        reg = dead_names[names[0]]
        return DeadReason("registry", f"takes only {', '.join(names)}, used by removed {reg} keys", reg)
    return None


def _check_roots(g: ImportGraph, rules: Rules, problems: Problems, moves: dict[str, Move]) -> None:
    for root in rules.roots:
        if root.module not in g.module_path and root.module not in moves:
            near = difflib.get_close_matches(root.module, sorted(g.module_path), n=3, cutoff=0.6)
            problems(f"unknown root {root.module!r} (closest: {', '.join(near) or 'none close'})")
    for kind, rule_list in (("remove", rules.remove), ("keep", rules.keep)):
        for i, rule in enumerate(rule_list):
            if not any(pattern_matches(rule.pattern, m) for m in g.module_path):
                # a removal rule with nothing left to remove is harmless; a keep rule may hide a move
                (problems.warn if kind == "remove" else problems)(
                    f"rule {kind}[{i}] {rule.pattern} matches no module upstream")


def _keep_plumbing_imports(g: ImportGraph, rules: Rules, reach: Reach, view: RegistryView,
                           table: PredicateTable, features: PredicateTable | None) -> None:
    """Plumbing's own dependencies are plumbing: a module a keep rule pins inside a removed folder
    (shared plumbing) that imports, at module level and live, a module the same remove rule cuts
    could not import without it; so that cut is lifted, and the reachability pass keeps it as that
    import (0.5.17: base_processor's new sibling processors.executor)."""
    todo = sorted(m for m in g.module_path if first_rule(rules.keep, m) and first_rule(rules.remove, m))
    while todo:
        module = todo.pop()
        folder = first_rule(rules.remove, module)
        for target, data in sorted(g.graph.adj[module].items()):
            cut = reach.cut_by_rule.get(target)
            if cut is None or cut[0] != "rule" or first_rule(rules.remove, target) != folder:
                continue
            if any(r["kind"] in (IMPORT, FROM, FROM_SUBMODULE) and r.get("scope") == MODULE
                   and not r.get("try_import") and record_dead(r, module, view, table, rules, features) is None
                   for r in data["imports"]):
                del reach.cut_by_rule[target]
                todo.append(target)


def _cut_package(module: str, reach: Reach) -> str | None:
    """The nearest package above `module` that a rule cuts, if any (0.5.17: the kept NPU hooks import
    disaggregation.ascend.conn, below the rule-cut disaggregation.ascend)."""
    parts = module.split(".")
    for i in range(len(parts) - 1, 0, -1):
        above = ".".join(parts[:i])
        if reach.cut_by_rule.get(above, ("",))[0] == "rule":
            return above
    return None


def active_rules(rules: Rules, version: str) -> Rules:
    """The rules as they stand for upstream `version`: a keep rule `since` a later release is left out
    (its target may exist already, unused: keeping it there would change that release's tree), and so
    is a fixed parameter `since` a later release (its function has no such parameter yet)."""
    try:
        current = Version(version)
    except InvalidVersion:  # no version (a local tree) or not PEP 440: every rule applies
        return rules
    active = lambda items: [r for r in items if not r.since or current >= Version(r.since)]  # noqa: E731
    keep = active(rules.keep)
    platform = rules.platform.model_copy(update={"parameters": active(rules.platform.parameters)})
    features = [f.model_copy(update={"parameters": active(f.parameters)}) for f in rules.features]
    if (keep == rules.keep and platform.parameters == rules.platform.parameters
            and all(f.parameters == g.parameters for f, g in zip(features, rules.features))):
        return rules
    return rules.model_copy(update={"keep": keep, "platform": platform, "features": features})


def compute_reach(g: ImportGraph, rules: Rules, *, strict: bool = True,
                  moves: dict[str, Move] | None = None, version: str = "") -> Reach:
    """strict: a rule naming what upstream lacks is an error; else it is listed in rule_problems.
    `moves`: roots gone from this release with their successors (roots.py), followed and warned;
    `version`: upstream's, for the rules' `since` (active_rules)."""
    rules = active_rules(rules, version)
    moves = moves or {}
    problems = Problems(strict)
    _check_roots(g, rules, problems, moves)
    table, features = PredicateTable(rules.platform), feature_table(rules)
    view = apply_registries(g, rules, problems)
    archs = arch_table(rules, view)
    judged = Judges(view, table, rules, features, archs)
    by_use: dict[str, tuple[str, str, str]] = {}
    while True:  # a module cut for its isinstance-only users can leave others unreached: walk again
        reach = _walk(g, moves, problems, judged, by_use)
        more = _kept_only_by_isinstance(g, reach, judged)
        if not more:
            return reach
        by_use.update(more)


def _walk(g: ImportGraph, moves: dict[str, Move], problems: Problems, judged: Judges,
          by_use: dict[str, tuple[str, str, str]]) -> Reach:
    """One reachability pass; `by_use`: modules cut because kept code only tests isinstance against them."""
    view, table, rules, features, archs = judged
    reach = Reach(registries=view, rule_problems=problems.found, rule_warnings=problems.warnings, moves=moves)

    # `keep` rules are the exceptions to `remove` rules (shared plumbing inside a removed folder);
    # the packages above a kept module stay too, since importing it runs them.
    pinned = {m for m in g.module_path if first_rule(rules.keep, m)}
    pinned |= {".".join(m.split(".")[:i]) for m in pinned for i in range(1, m.count(".") + 1)}
    for module in g.module_path:
        hit = first_rule(rules.remove, module)
        if hit and module not in pinned:
            i, rule = hit
            reach.cut_by_rule[module] = ("rule", f"rule remove[{i}] {rule.pattern}: {rule.reason}",
                                         rule.category or "rule")
    for module, reason in view.removed_models.items():
        # A keep rule overrides the model registry (a kept module needs this model's code).
        if first_rule(rules.keep, module) is None:
            reach.cut_by_rule.setdefault(module, ("registry", reason, "registry:models"))

    reach.cut_by_rule.update(by_use)

    _keep_plumbing_imports(g, rules, reach, view, table, features)
    queue: deque[str] = deque()

    def keep(module: str, code: str, reason: str, parent: tuple[str, int] | None = None) -> None:
        if module in reach.kept or module in reach.cut_by_rule:
            return
        reach.kept[module] = reason
        reach.kept_code[module] = code
        if parent:
            reach.parent[module] = parent
        queue.append(module)

    for root in rules.roots:
        if root.module in g.module_path:
            keep(root.module, "root", f"root: {root.reason}")
        elif root.module in moves:
            keep(moves[root.module].successor, "root", f"root: {root.reason} ({moves[root.module].note()})")
    for module in sorted(g.module_path):
        hit = first_rule(rules.keep, module)
        if hit:
            keep(module, "pinned", f"rule keep[{hit[0]}] {hit[1].pattern}: {hit[1].reason}")
    scan = {}
    for scanner, module, reason in view.scan_edges:
        scan.setdefault(scanner, []).append((module, reason))

    while queue:
        module = queue.popleft()
        for target, data in sorted(g.graph.adj[module].items()):
            live = None
            for record in data["imports"]:
                dead = record_dead(record, module, view, table, rules, features, archs)
                if dead is None:
                    live = record
                    break
                reach.dead_edges.setdefault((module, target), dead)
            if live is None:
                continue
            reach.dead_edges.pop((module, target), None)
            inside = _cut_package(target, reach) if target not in reach.cut_by_rule and target not in pinned else None
            if inside is not None:  # apply removes a removed package's whole subtree (Removed.module_removed)
                kind, why, category = reach.cut_by_rule[inside]
                reach.cut_by_rule[target] = (kind, f"inside {inside}, which {why}", category)
            if target in reach.cut_by_rule:
                origins = _reexported(g, module, target, data["imports"], reach, judged)
                if origins is None:
                    reach.cuts.append((module, target, live["line"], reach.cut_by_rule[target][1]))
                    continue
                for name, origin in sorted(origins.items()):
                    reach.reexports.setdefault(target, {})[name] = origin
                    keep(origin, "imported", f"imported by {module}:{live['line']} through the re-export of removed "
                                             f"{target} (the import is redirected)", (module, live["line"]))
                continue
            if live["kind"] == "implicit_parent":
                keep(target, "imported", f"parent package of {module}", (module, 0))
            else:
                keep(target, "imported", f"imported by {module}:{live['line']}", (module, live["line"]))
        for target, reason in scan.get(module, []):
            keep(target, "registry", reason, (module, 0))
    return reach


def _kept_only_by_isinstance(g: ImportGraph, reach: Reach, judged: Judges) -> dict[str, tuple[str, str, str]]:
    """Modules that kept code imports only to test `isinstance(x, C)` (graph/isinstance_uses.py): with the
    module gone no instance of C can exist, so each test is False and remove_dead_imports folds it; the
    module is cut and its importers are rewritten. One kept importer that uses a name otherwise keeps it.
    A module of a removed package_exports key (0.5.23's configs/qwen4_exp: `model_configs`) goes like a
    removed model; any other kept module only when importing it defines and registers nothing
    (graph/definitions_only.py: 0.5.23's layers/n_gram_embedding), with the unreachable ones."""
    view = judged.view
    found: dict[str, tuple[str, str, str]] = {}
    for reg in judged.rules.registries:
        if reg.kind != "package_exports":
            continue
        for key in sorted(view.removed_keys.get(reg.name, ())):
            module = f"{reg.module}.{key}"
            if reach.kept_code.get(module) != "imported":
                continue
            uses = _isinstance_uses(g, reach, module, judged)
            if uses:
                found[module] = ("registry", f"module of removed {reg.name} key {key!r}, which kept code imports only "
                                             f"to test isinstance against ({_where(uses)}): False once it is gone",
                                 f"registry:{reg.name}")
    source_of = tree_source_reader(g.tree, g.module_path)
    scanned: frozenset[str] | None = None
    registered = {target for _, target, _ in view.scan_edges}
    tops = {m.partition(".")[0] for m in g.module_path}
    for module in sorted(reach.kept):
        path = g.module_path.get(module) or ""
        if (module in found or module in registered or reach.kept_code.get(module) != "imported" or not path
                or path.endswith("__init__.py")):
            continue
        uses = _isinstance_uses(g, reach, module, judged)
        if not uses or not runs_only_definitions(source_of(module) or ""):
            continue
        if scanned is None:
            scanned = scanned_bases(source_of(m) or "" for m in g.module_path)
        if bases_watch(source_of(module) or "", module, False, source_of, scanned,
                       lambda m: (g.module_path.get(m) or "").endswith("__init__.py"),
                       lambda m: m.partition(".")[0] in tops):
            continue
        found[module] = ("isinstance", f"kept code imports it only to test isinstance against ({_where(uses)}), and "
                                       "importing it only defines: False once it is gone", f"{UNREACHABLE}:isinstance")
    return found


def _where(uses: list[tuple[str, int, str]]) -> str:
    return ", ".join(f"{u}:{line} {name}" for u, line, name in uses)


def _isinstance_uses(g: ImportGraph, reach: Reach, module: str, judged: Judges) -> list[tuple[str, int, str]]:
    """(kept importer, line, names) of every live import of `module` when each one is a `from module import
    names` whose names the importer reads only as isinstance classes; [] when one is anything else."""
    uses: list[tuple[str, int, str]] = []
    for importer, _, data in sorted(g.graph.in_edges(module, data=True), key=lambda e: e[0]):
        if importer not in reach.kept:
            continue
        live = [r for r in data["imports"] if record_dead(r, importer, *judged) is None]
        if not live:
            continue
        names = {n for r in live for n in r["names"]}
        if any(r["kind"] != FROM or not r["names"] for r in live):
            return []
        text = tree_source_reader(g.tree, g.module_path)(importer) or ""
        if any(re.search(rf"\b{re.escape(n)}\s*[(.\[]", text) for n in names):
            return []  # called, subscripted or an attribute read: no need to parse
        is_package = g.module_path[importer].endswith("__init__.py")
        if isinstance_only_names(text, importer, is_package, module, names) != names:
            return []
        uses.append((importer, live[0]["line"], ", ".join(sorted(names))))
    return uses
