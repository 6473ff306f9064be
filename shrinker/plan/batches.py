"""Cut the removals into the ordered batches the rules define, and name the codemod targets of each."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from shrinker.errors import ShrinkError
from shrinker.graph.build import ImportGraph
from shrinker.graph.records import Decision
from shrinker.graph.reexports import defining_modules, import_origins
from shrinker.plan.reach import Reach
from shrinker.plan.registries import ref_key
from shrinker.rules.patterns import name_glob_regex
from shrinker.rules.predicates import (device_probe_patterns, held_words, model_type_words, quotes_one_of,
                                       served_words,
                                       removed_architectures, vocabulary_patterns)
from shrinker.rules.schema import Rules


@dataclass
class BatchPlan:
    number: int
    name: str
    risk: str
    description: str
    delete: list[str] = field(default_factory=list)  # tree paths
    codemods: dict[str, list[str]] = field(default_factory=dict)  # codemod → kept tree paths
    lines: int = 0
    symbols: dict | None = None  # a symbol batch: its rules file and that file's sha256
    features: bool = False  # its folding codemods fold the rules' feature decisions too

    def to_dict(self) -> dict:
        out = {"number": self.number, "name": self.name, "risk": self.risk, "description": self.description,
               "files": len(self.delete), "lines": self.lines, "delete": self.delete,
               "codemods": [{"name": k, "files": v} for k, v in self.codemods.items()]}
        if self.symbols is not None:
            out["symbols"] = self.symbols
        if self.features:
            out["features"] = True
        return out


# A batch running this codemod is a symbol batch: apply asks the symbol graph of the tree it has
# reached what goes, pass after pass, so its targets are not known at plan time.
SYMBOL_CODEMOD = "remove_dead_symbols"


def symbol_rules_file(rules: Rules) -> Path | None:
    """rules/<profile>-symbols.toml beside the rules file (None for rules not read from a file)."""
    if not rules.source:
        return None
    source = Path(rules.source)
    return source.with_name(f"{source.stem}-symbols.toml")


def _symbols_entry(rules: Rules) -> dict:
    """The symbol rules' name and hash: in batches.json, so editing them changes the plan digest."""
    path = symbol_rules_file(rules)
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if path and path.exists() else ""
    return {"rules": path.name if path else "", "sha256": digest}


def _matches(batch_categories: list[str], category: str) -> bool:
    return any(category == c or category.startswith(c + ":") for c in batch_categories)


def _platform_pattern(rules: Rules) -> re.Pattern:
    """A cheap text pre-filter: files that name a predicate, platform method or platform package, or the
    served model's model_type."""
    words = []
    for pred in rules.platform.predicates:
        words.append(re.escape(pred.name).replace(r"\*", r"\w*"))
    words += [re.escape(m).replace(r"\*", r"\w*") for m in [*rules.platform.methods, *rules.platform.classes]]
    words += [re.escape(p) for p in rules.platform.packages]
    words += model_type_words(rules.architectures)  # the served model_type folds too (`hf_config.model_type`)
    words += served_words(rules.architectures)  # and a local holding a served architecture (`"KimiK3" in arch`)
    words += held_words(rules)  # so does an option holding a removed key (`self.tool_call_parser == "kimi_k3"`)
    vocabulary = vocabulary_patterns(rules.platform.strings.strings, rules.platform.strings.families)
    probes = device_probe_patterns(rules.platform)  # `torch.version.hip`, `torch.xpu.is_available()`
    return re.compile("|".join([rf"\b(?:{'|'.join(words)})\b", *vocabulary, *probes]))


def _holds_removed_record(facts, rules: Rules, removed_keys) -> bool:
    """A module that registers a record (`KernelSpec(op=...)`) of a key the plan removes."""
    return facts is not None and any(
        ref_key(ref, reg) in removed_keys.get(reg.name, ())
        for reg in rules.registries if reg.kind == "records" for ref in facts.strings)


def _registers_removed_class(module: str, facts, rules: Rules, removed_keys) -> bool:
    """A kept module of a `module_scan` registry's package whose EntryClass names a class the plan removes
    (0.5.23's `llama`, kept for LlamaMLP, still lists LlamaForCausalLM)."""
    return facts is not None and any(
        module.startswith(reg.package + ".") and set(facts.entry_class) & set(removed_keys.get(reg.name, ()))
        for reg in rules.registries if reg.kind == "module_scan")


def _feature_pattern(rules: Rules) -> re.Pattern:
    """A cheap text pre-filter: files that name a feature predicate, value, set-up call or constant."""
    words = []
    for feature in rules.features:
        words += [re.escape(p.name).replace(r"\*", r"\w*") for p in feature.predicates]
        words += [re.escape(n) for n in (*(v.name for v in feature.values), *feature.calls,
                                         *(c.name for c in feature.constants))]
        words += [name_glob_regex(c) for c in feature.classes]
    return re.compile(rf"\b(?:{'|'.join(words)})\b" if words else r"(?!)")


def _pull_dependents_forward(g: ImportGraph, batches: list[BatchPlan], deleted_in: dict[str, int],
                             decisions: list[Decision]) -> None:
    """A module deleted late that imports one deleted earlier would break the trees in between:
    delete it in the earlier batch (to a fixpoint), so every intermediate tree still imports.
    A module kept code reaches only under a platform guard moves too: make_batches then folds the
    guard in its kept importers in that earlier batch. Only imports that run when the module is
    imported count: one inside a function runs when it is called (0.5.19's NPU utils import
    multimodal_gen in init_npu_backend, which pulled every NPU quantization module into the
    multimodal batch, ahead of the folds that free their kept importers)."""
    lines = {d.path: d.lines for d in decisions}
    runs_on_import = {m: [t for t, data in g.graph.adj[m].items()
                          if any(r.get("scope") != "function" for r in data["imports"])] for m in deleted_in}
    changed = True
    while changed:
        changed = False
        for module, index in sorted(deleted_in.items()):
            earliest = min((deleted_in[t] for t in runs_on_import[module] if t in deleted_in), default=index)
            if earliest < index:
                path = g.module_path[module]
                batches[index].delete.remove(path)
                batches[index].lines -= lines[path]
                batches[earliest].delete.append(path)
                batches[earliest].lines += lines[path]
                deleted_in[module] = earliest
                changed = True


def make_batches(g: ImportGraph, reach: Reach, rules: Rules, decisions: list[Decision]) -> list[BatchPlan]:
    for i, spec in enumerate(rules.batches):
        if SYMBOL_CODEMOD in spec.codemods and spec.categories:
            raise ShrinkError(f"batch {i + 1} ({spec.name}) runs {SYMBOL_CODEMOD}: it takes no categories")
    batches = [BatchPlan(i + 1, b.name, b.risk, b.description, features=b.features)
               for i, b in enumerate(rules.batches)]
    module_of = {p: m for m, p in g.module_path.items() if p}
    deleted_in: dict[str, int] = {}
    # a file no batch's categories name goes to the last batch that deletes files (not a symbol batch)
    fallback = max((i for i, b in enumerate(rules.batches) if b.categories), default=len(batches) - 1)
    for d in decisions:
        if d.keep:
            continue
        index = next((i for i, b in enumerate(rules.batches) if _matches(b.categories, d.rule)), fallback)
        batches[index].delete.append(d.path)
        batches[index].lines += d.lines
        if d.path in module_of:
            deleted_in[module_of[d.path]] = index
    _pull_dependents_forward(g, batches, deleted_in, decisions)
    kept_modules = [m for m in reach.kept if g.module_path.get(m)]
    platform_re, feature_re = _platform_pattern(rules), _feature_pattern(rules)
    # an inventory's records stand in many modules (prune_records finds them): its `module` is no target
    registry_modules = {r.module for r in rules.registries if r.module and r.kind != "records"}
    removed_archs = removed_architectures(rules, reach.registries.removed_keys)
    for i, spec in enumerate(rules.batches):
        if SYMBOL_CODEMOD in spec.codemods:
            batches[i].codemods = {name: [] for name in spec.codemods}
            batches[i].symbols = _symbols_entry(rules)
            continue
        targets: dict[str, list[str]] = {}
        for codemod in spec.codemods:
            if codemod == "remove_dead_imports":
                # Kept files that import a module this batch deletes.
                files = sorted({g.module_path[u] for m, idx in deleted_in.items() if idx == i
                                for u, _ in g.importers(m) if u in reach.kept and g.module_path.get(u)})
            elif codemod in ("fold_platform", "fold_features", "remove_platform_methods", "remove_platform_classes",
                             "remove_feature_classes"):
                # a features batch folds the feature decisions: the files that name one
                wanted = feature_re if spec.features else platform_re
                files = sorted(g.module_path[m] for m in kept_modules
                               if wanted.search((g.tree / g.module_path[m]).read_text(errors="replace")))
            elif codemod == "prune_registries":
                files = sorted(g.module_path[m] for m in registry_modules if m in reach.kept)
            elif codemod == "prune_entry_classes":
                files = sorted(g.module_path[m] for m in kept_modules
                               if _registers_removed_class(m, g.facts.get(m), rules, reach.registries.removed_keys))
            elif codemod == "prune_records":
                files = sorted(g.module_path[m] for m in kept_modules if _holds_removed_record(
                    g.facts.get(m), rules, reach.registries.removed_keys))
            elif codemod == "prune_record_tables":
                # the modules that build an inventory's records (`KernelSpec(`), wherever their values come from
                calls = tuple(f"{r.record}(" for r in rules.registries if r.kind == "records")
                files = sorted(g.module_path[m] for m in kept_modules if calls and any(
                    c in (g.tree / g.module_path[m]).read_text(errors="replace") for c in calls))
            elif codemod == "prune_cli_choices":
                files = sorted(g.module_path[m] for m in _choices_modules(g, rules, kept_modules, platform_re)
                               if m in reach.kept and g.module_path.get(m))
            elif codemod == "prune_architecture_literals":
                files = sorted(g.module_path[m] for m in kept_modules if quotes_one_of(
                    (g.tree / g.module_path[m]).read_text(errors="replace"), removed_archs))
            elif codemod == "remove_unused_names":
                continue  # set below: the files the batch's other codemods edit
            else:
                files = sorted(g.module_path[m] for m in kept_modules)
            targets[codemod] = files
        # Kept files that reach a module this batch deletes only under a platform guard: fold the guard
        # in this batch (first), so the import goes with its branch instead of being left dangling; an
        # import inside a per-platform method or class goes with it (0.5.19's AWQAscendMoEScheme,
        # whose NPU kernels an earlier batch deletes): that codemod runs on the file in this batch too.
        fold = "fold_features" if spec.features else "fold_platform"
        classes = "remove_feature_classes" if spec.features else "remove_platform_classes"
        early: dict[str, set[str]] = {}
        for (u, m), why in reach.dead_edges.items():
            if (why.code in ("platform_guard", "feature_guard", "architecture_guard") and deleted_in.get(m) == i
                    and u in reach.kept and g.module_path.get(u)):
                early.setdefault(fold, set()).add(g.module_path[u])
                if why.codemod:
                    early.setdefault(why.codemod, set()).add(g.module_path[u])
            elif why.code == "inventory" and deleted_in.get(m) == i and u in reach.kept and g.module_path.get(u):
                # a record naming a module this batch deletes (a removed model imports it too) goes now
                early.setdefault("prune_records", set()).add(g.module_path[u])
        for name in ("prune_records", "remove_platform_methods", fold, classes):  # prepended: classes first
            if early.get(name) and name not in targets:
                targets = {name: sorted(early[name]), **targets}
        if fold in spec.codemods and "remove_dead_imports" in targets:
            # an importer of a removed platform module may test it (`isinstance(cfg, ModelSlimConfig)`):
            # the folding that drops such tests runs on it too
            extra = set(targets["remove_dead_imports"])
            for name in (classes, fold, "remove_platform_methods"):
                if name in targets:
                    targets[name] = sorted(set(targets[name]) | extra)
        if "remove_unused_names" in spec.codemods:
            targets["remove_unused_names"] = sorted({p for files in targets.values() for p in files})
        batches[i].codemods = targets
    for b in batches:
        b.delete.sort()
    return batches


_INLINE_CHOICES = re.compile(r"\bchoices\s*=")


def _choices_modules(g: ImportGraph, rules: Rules, kept_modules: list[str], platform_re: re.Pattern) -> set[str]:
    """Where prune_cli_choices edits: each choices registry's module and the modules it re-exports the
    variable from (0.5.23 defines server_args' lists in arg_groups/choices), and kept modules whose
    options or choices lists (`[platform].choices_variables`) may name another platform
    (`choices=[..., "aiter"]`), or that declare an option a registry names."""
    origins = import_origins(g.facts.values())
    choices = [r for r in rules.registries if r.kind == "choices"]
    modules = {m for r in choices if r.module and not r.names_option
               for m in defining_modules(origins, r.module, r.variable)}
    options = [r.variable.lstrip("-").replace("-", "_") for r in choices if r.names_option]
    option_re = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, options))) if options else None
    globs = rules.platform.choices_variables
    variables_re = re.compile(r"^(?:%s)\s*[:=]" % "|".join(map(name_glob_regex, globs)), re.M) if globs else None
    for m in kept_modules:
        text = (g.tree / g.module_path[m]).read_text(errors="replace")
        choices = _INLINE_CHOICES.search(text) or (variables_re and variables_re.search(text))
        if choices and (platform_re.search(text) or (option_re and option_re.search(text.replace("-", "_")))):
            modules.add(m)
    return modules
