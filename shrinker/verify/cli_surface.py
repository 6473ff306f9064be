"""CLI surface: `--help` options and choices, and ServerArgs defaults, upstream vs pruned.

Pruned options must be a subset of upstream's. Every option or choice that disappeared must be named
by a rule (RuleIndex below): a registry key the profile does not keep, a platform name, a removed
module pattern, or a module the plan removed. Unexplained ones are failures; explained ones are
listed in the report with the rule that names them.
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from shrinker.errors import ShrinkError
from shrinker.rules.schema import Rules
from shrinker.symbols.rules import AttributeTable
from shrinker.checks.tree import SourceTree

_SPLIT = re.compile(r"[^a-z0-9]+")


def tokens(text: str) -> list[str]:
    return [t for t in _SPLIT.split(text.lower()) if t]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def registry_keys(rules: Rules, tree: SourceTree) -> dict[str, set[str]]:
    """Each registry's keys as upstream spells them: dict literal keys, `@decorator("key")` arguments,
    or a choices list's strings. A registry whose keys are not literals gets none (then only its
    keep list is known)."""
    out: dict[str, set[str]] = {}
    for reg in rules.registries:
        if not reg.module or not tree.has(reg.module) or tree.modules[reg.module].kind not in ("source", "package"):
            continue
        try:
            module = ast.parse(tree.modules[reg.module].path.read_bytes())
        except SyntaxError:
            continue
        keys: set[str] = set()
        if reg.kind == "decorator" and reg.decorator:
            for node in ast.walk(module):
                if (isinstance(node, ast.Call) and _name(node.func) == reg.decorator and node.args
                        and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                    keys.add(node.args[0].value)
        elif reg.variable:
            value = _assigned(module, reg.variable)
            if isinstance(value, ast.Dict):
                keys = {k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            elif isinstance(value, (ast.List, ast.Tuple, ast.Set)):
                keys = {e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        if keys:
            out[reg.name] = keys
    return out


def _name(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _assigned(module: ast.Module, variable: str) -> ast.AST | None:
    """The value assigned to NAME or Class.NAME at module/class level."""
    *owner, name = variable.split(".")
    body = module.body
    if owner:
        cls = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == owner[-1]), None)
        if cls is None:
            return None
        body = cls.body
    for node in body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return node.value
    return None


class RuleIndex:
    """Which rule names a removed option or choice."""

    def __init__(self, rules: Rules, removed_modules: Iterable[str] = (),
                 keys: dict[str, set[str]] | None = None) -> None:
        self.rules = rules
        self.keys = keys or {}
        by_name = {r.name: r for r in rules.registries}
        # (registry, the keep list that applies: its own, or the one it follows)
        self.registries = []
        for reg in rules.registries:
            keep = reg.keep or (by_name[reg.follows].keep if reg.follows in by_name else [])
            if keep:
                self.registries.append((reg, keep))
        self.platform_words = [(tokens(w), f"platform string {w!r}") for w in rules.platform.strings.strings]
        self.platform_words += [(tokens(p), f"platform package {p!r}") for p in rules.platform.packages]
        self.platform_globs = [p.name for p in rules.platform.predicates if "*" in p.name]
        self.removed = []
        for rule in rules.remove:
            literal = [part for part in rule.pattern.split(".") if "*" not in part]
            if len(literal) > 1:  # the last literal part names the thing (npu, multimodal_gen, rocm ...)
                self.removed.append((tokens(literal[-1]), f"remove rule {rule.pattern!r}"))
        # modules the plan removed: a choice or option names one when it holds its whole last part
        # (`mooncake` for ...disaggregation.mooncake); no prefix guesses: `auto` is not `auto_round`
        self.removed_modules = [(tokens(m.rpartition(".")[2]), f"removed module {m}") for m in removed_modules]

    def explain_choice(self, option: str, choice: str, upstream_choices: Iterable[str]) -> str | None:
        """A registry explains a dropped choice when the choice is one of its keys it does not keep,
        and the option's choices are mostly its keys (so `triton` in --moe-runner-backend is not
        taken for the attention backend of that name)."""
        upstream_choices = set(upstream_choices)
        # registries whose keys are known first: one whose keys are unknown (model_configs) must not
        # take a choice another registry holds (`--reasoning-parser glm45` is reasoning_parsers')
        for reg, keep in self.registries:
            keys = self.keys.get(reg.name)
            if (keys is not None and choice not in keep and choice in keys
                    and 2 * len(upstream_choices & keys) >= len(upstream_choices)):
                return f"registry {reg.name!r} keeps only {', '.join(keep)}"
        for reg, keep in self.registries:
            if reg.name not in self.keys and choice not in keep and upstream_choices & set(keep):
                return f"registry {reg.name!r} keeps only {', '.join(keep)}"  # the option offers a kept key
        return self._by_name(choice)

    def explain_option(self, option: str) -> str | None:
        return self._by_name(option.lstrip("-"))

    def _by_name(self, name: str) -> str | None:
        words = tokens(name)
        for needle, why in self.platform_words:
            if _contains(words, needle):
                return why
        for glob in self.platform_globs:
            if fnmatch.fnmatch(name.lower(), glob):
                return f"platform predicate {glob!r}"
        for needle, why in self.removed:
            if _contains(words, needle):
                return why
        for module_words, why in self.removed_modules:
            if _contains(words, module_words):
                return why
        return None


# ---------------------------------------------------------------------------------------------


@dataclass
class SurfaceDiff:
    options_upstream: int = 0
    options_pruned: int = 0
    choices_upstream: int = 0
    choices_pruned: int = 0
    findings: list[str] = field(default_factory=list)
    explained: list[str] = field(default_factory=list)


def options_of(probe_result: dict) -> dict[str, list[str] | None]:
    """option string -> choices (None when free-form), over the parsers that printed help."""
    out: dict[str, list[str] | None] = {}
    for parser in probe_result.get("parsers", []):
        for action in parser["actions"]:
            for opt in action["options"]:
                out[opt] = action["choices"]
    return out


def dests_of(probe_result: dict) -> dict[str, str]:
    """option string -> the attribute argparse stores it in."""
    return {opt: action["dest"] for parser in probe_result.get("parsers", [])
            for action in parser["actions"] for opt in action["options"]}


def compare_help(module: str, upstream: dict, pruned: dict, index: RuleIndex, where: str,
                 removed: dict[str, str] | None = None) -> SurfaceDiff:
    """`removed`: ServerArgs fields gone by the attribute-table rule (removed_fields); an option
    storing into one went with it."""
    diff = SurfaceDiff()
    if upstream.get("exit") != 0 or not upstream.get("parsers"):
        diff.findings.append(f"{where}:1 upstream `python -m {module} --help` failed: {upstream.get('error') or 'exit ' + str(upstream.get('exit'))}")
        return diff
    if pruned.get("exit") != 0 or not pruned.get("parsers"):
        diff.findings.append(f"{where}:1 `python -m {module} --help` works upstream but fails pruned: {pruned.get('error') or 'exit ' + str(pruned.get('exit'))}")
        return diff
    up, pr = options_of(upstream), options_of(pruned)
    diff.options_upstream, diff.options_pruned = len(up), len(pr)
    diff.choices_upstream = sum(len(c or []) for c in up.values())
    diff.choices_pruned = sum(len(c or []) for c in pr.values())
    for opt in sorted(set(pr) - set(up)):
        diff.findings.append(f"{where}:1 {module}: option {opt} is not in upstream")
    dests = dests_of(upstream)
    for opt in sorted(set(up) - set(pr)):
        field_why = (removed or {}).get(dests.get(opt, ""))
        why = f"ServerArgs.{dests[opt]}: {field_why}" if field_why else index.explain_option(opt)
        if why:
            diff.explained.append(f"{module}: option {opt} removed ({why})")
        else:
            diff.findings.append(f"{where}:1 {module}: option {opt} disappeared and no rule names it")
    for opt in sorted(set(up) & set(pr)):
        u, p = up[opt], pr[opt]
        if u is None and p is None:
            continue
        if u is None or p is None:
            diff.findings.append(f"{where}:1 {module}: option {opt} changed between free-form and choices")
            continue
        for extra in sorted(set(p) - set(u)):
            diff.findings.append(f"{where}:1 {module}: {opt} choice {extra!r} is not in upstream")
        for gone in sorted(set(u) - set(p)):
            why = index.explain_choice(opt, gone, u)
            if why:
                diff.explained.append(f"{module}: {opt} choice {gone!r} removed ({why})")
            else:
                diff.findings.append(f"{where}:1 {module}: {opt} choice {gone!r} disappeared and no rule names it")
    return diff


def removed_fields(upstream: Path, pruned: Path, target: str, table: AttributeTable | None
                   ) -> tuple[dict[str, str], list[str]]:
    """Fields of `target` (`module:Class`) upstream declares and the pruned tree does not: ({field:
    why} for those the symbol rules' attribute table explains, findings for the rest). The table
    explains a field when the trees agree with its rule: upstream reads it somewhere (`.name` or
    "name"), the pruned tree nowhere. Re-checked here by a text scan of both trees, independently of
    the symbol graph that removed them."""
    from shrinker.graph.discover import module_file
    from shrinker.symbols.name_reads import dataclass_fields, name_readers

    module, _, class_name = target.partition(":")
    declared = {}
    for tree in (upstream, pruned):
        try:
            rel = module_file(tree, module)
        except ShrinkError:
            return {}, []
        declared[tree] = {n for n, _ in dataclass_fields((tree / rel).read_text(), class_name)}
    gone = sorted(declared[upstream] - declared[pruned])
    if not gone:
        return {}, []
    if table is None:
        return {}, [f"{target}.{n} removed and no attribute-table rule names {target}" for n in gone]
    up, kept = name_readers(upstream, gone), name_readers(pruned, gone)
    why, findings = {}, []
    for name in gone:
        if kept[name]:
            findings.append(f"{target}.{name} removed but {kept[name][0]} still reads it")
        elif table.only_removed_readers and not up[name]:
            findings.append(f"{target}.{name} removed though upstream never reads it (rule only_removed_readers)")
        else:
            why[name] = (f"only removed code read it, e.g. upstream {up[name][0]} (rule attribute_tables "
                         f"{table.cls})" if up[name] else f"nothing reads it (rule attribute_tables {table.cls})")
    return why, findings


def compare_server_args(upstream: dict, pruned: dict, where: str,
                        differ: dict[str, str] | None = None,
                        removed: dict[str, str] | None = None) -> tuple[list[str], list[str], int, int]:
    """(findings, notes, fields compared, fields equal). `differ`: field -> the rule decision that
    makes it differ on purpose (verify data), a note instead of a finding; `removed`: field -> why
    it may be gone (removed_fields); any other missing field is a finding."""
    if upstream.get("error"):
        return [f"{where}:1 ServerArgs fails upstream: {upstream['error'].splitlines()[-1]}"], [], 0, 0
    if pruned.get("error"):
        tail = " | ".join(pruned["error"].splitlines()[-3:])
        return [f"{where}:1 ServerArgs works upstream but fails pruned: {tail}"], [], 0, 0
    up, pr = upstream["fields"], pruned["fields"]
    findings, notes = [], []
    both = sorted(set(up) & set(pr))
    for name in both:
        if up[name] == pr[name]:
            continue
        text = f"ServerArgs.{name}: upstream {up[name]!r}, pruned {pr[name]!r}"
        if name in (differ or {}):
            notes.append(f"{text} ({differ[name]})")
        else:
            findings.append(f"{where}:1 {text}")
    for name in sorted(set(up) - set(pr)):
        if removed is not None and name not in removed:
            findings.append(f"{where}:1 ServerArgs.{name} disappeared and no rule names it")
        else:
            notes.append(f"ServerArgs.{name} removed (upstream default {up[name]!r}"
                         + (f"; {removed[name]})" if removed else ")"))
    for name in sorted(set(pr) - set(up)):
        findings.append(f"{where}:1 ServerArgs.{name} is not in upstream")
    equal = sum(up[name] == pr[name] for name in both)
    return findings, notes, len(both), equal


def model_dir_for(config: Path, base: Path) -> Path:
    """A folder holding CONFIG as config.json, at a path that depends only on its content: both
    trees get the same model_path, so ServerArgs fields derived from it compare equal."""
    data = config.read_bytes()
    folder = base / f"model-{hashlib.sha1(data).hexdigest()[:12]}"
    if not (folder / "config.json").exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / "config.json.tmp"
        tmp.write_bytes(data)
        tmp.replace(folder / "config.json")
    return folder
