"""The kernel manifest: every compiled op, wrapper, binary, JIT source and Triton kernel module,
kept or removed with its reason (manifests/<profile>/v<version>/kernels.txt).

What the kept code reaches, from the plan's kept modules (the file-level reach; the dead-symbol batch
may remove more wrappers later, never fewer):
  - a *wrapper* is a top-level function of a kernel package (`rules.kernels.packages`: sgl_kernel). It
    is kept when kept code outside the package reads it live (`from sgl_kernel import rmsnorm`,
    `sgl_kernel.rmsnorm`, through re-exports and `import *`), or a kept wrapper calls it. The package's
    own module-level code runs when kept code imports the package, so what it calls is kept too; its
    re-exports (`from .mamba import causal_conv1d_fwd` in __init__) are no use by themselves.
  - an *op* (`torch.ops.sgl_kernel.<op>`) is kept when a kept wrapper or kept code reads it live.
  - a *binary* (.so) is kept when a kept op is registered in it or kept code imports it as an
    extension module (`from sgl_kernel import flash_ops`). Which binary registers which op is read from
    the binary's schema strings (shrinker/graph/binaries.py); an op bound without a schema is found by
    its name string. A binary holding kept and removed ops stays whole: it cannot be relinked here.
  - a *JIT source* (.cu/.cuh/... under `rules.kernels.jit_roots`) is kept when a kept module names it
    (a string, or an f-string as a glob: `load_jit(..., cuda_files=[...])`, a `_CUDA_FILE` constant) or a
    kept source includes it (transitively). One no Python file of the release names and no source
    includes is kept too: how it is loaded cannot be read.
  - a *Triton kernel module* (a module defining a `@triton.jit` function) and an *external* entry point
    (`from deep_gemm import ...`) follow the plan's decision on their module.
"Live" is judged as the import graph judges an import record (reach.record_dead: TYPE_CHECKING,
platform and feature guards, removed registry keys).
"""

from __future__ import annotations

import os
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path

from shrinker import paths
from shrinker.graph.binaries import BinaryFacts, large_files, tree_binaries
from shrinker.graph.build import ImportGraph
from shrinker.graph.cache import FactsCache, content_key
from shrinker.graph.jit_sources import SourceIndex, read_includes
from shrinker.graph.kernel_refs import KERNEL_REFS_VERSION, Fact, KernelFacts, kernel_facts
from shrinker.graph.records import Decision
from shrinker.plan.reach import Reach, active_rules, arch_table, feature_table, record_dead
from shrinker.rules.predicates import PredicateTable
from shrinker.rules.schema import Rules

KINDS = ("binary", "op", "wrapper", "jit", "triton", "external")
KERNEL_CODE = "kernel"  # Decision.code of a file the kernel manifest removes


@dataclass
class KernelEntry:
    kind: str  # one of KINDS
    name: str
    keep: bool
    reason: str
    where: str = ""  # op: the binaries it lives in; wrapper/jit/binary: its tree path
    bytes: int = 0  # binary / jit source / wrapper module: the file's size


@dataclass
class KernelManifest:
    entries: list[KernelEntry] = field(default_factory=list)
    removed_files: dict[str, str] = field(default_factory=dict)  # tree path -> reason (binaries, JIT sources)
    large: list[str] = field(default_factory=list)  # binaries kept out of the tree (LARGE_FILES.json)
    unscanned: list[str] = field(default_factory=list)  # large binaries whose wheel is not here

    def counts(self) -> dict[str, dict[str, int]]:
        out = {k: {"kept": 0, "removed": 0} for k in KINDS}
        for e in self.entries:
            out[e.kind]["kept" if e.keep else "removed"] += 1
        return out

    def text(self) -> str:
        order = {k: i for i, k in enumerate(KINDS)}
        lines = [HEADER]
        for e in sorted(self.entries, key=lambda e: (order[e.kind], e.name)):
            lines.append(f"{e.kind}\t{e.name}\t{'kept' if e.keep else 'removed'}\t{e.bytes or ''}\t{e.where}\t{e.reason}")
        return "\n".join(lines) + "\n"


HEADER = "# kind\tname\tdecision\tbytes\twhere\treason"


def read_manifest(text: str) -> list[KernelEntry]:
    """kernels.txt back into entries (apply's report reads the committed manifest)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        kind, name, decision, size, where, reason = line.split("\t", 5)
        out.append(KernelEntry(kind, name, decision == "kept", reason, where, int(size or 0)))
    return out


# ---------------------------------------------------------------------------------------------
# Facts

def _facts(g: ImportGraph, rules: Rules) -> dict[str, KernelFacts]:
    """KernelFacts of every module that may say something about kernels (a cheap text filter first),
    cached by content hash and the recorded packages."""
    k = rules.kernels
    packages = frozenset([*k.packages, *k.external])
    words = [*k.packages, *k.external, "torch.ops", "load_jit", "triton", *k.jit_suffixes]
    folder = Path(os.environ["SHRINK_PARSE_CACHE"]) if os.environ.get("SHRINK_PARSE_CACHE") else paths.cache_dir() / "parse"
    cache = FactsCache(folder / f"kernels-v{KERNEL_REFS_VERSION}.pickle")
    salt = "\0".join(sorted(packages))
    out: dict[str, KernelFacts] = {}
    for module, path in g.module_path.items():
        if not path:
            continue
        source = (g.tree / path).read_bytes()
        text = source.decode("utf-8", errors="replace")
        if not _in_packages(module, k.packages) and not any(w in text for w in words):
            continue  # every module of a kernel package counts (`from .gguf import ...` names none of the words)
        facts = g.facts[module]
        key = content_key(source + salt.encode(), module, facts.is_package)
        hit = cache.get(key)
        if hit is None:
            hit = kernel_facts(text, path, module, facts.is_package, packages)
            cache.put(key, hit)  # type: ignore[arg-type]
        out[module] = hit  # type: ignore[assignment]
    cache.save()
    return out


class _Live:
    """Whether one fact of a module runs on CUDA under the profile (as reach judges import records)."""

    def __init__(self, reach: Reach, rules: Rules):
        self.reach, self.rules = reach, rules
        self.table = PredicateTable(rules.platform)
        self.features = feature_table(rules)
        self.archs = arch_table(rules, reach.registries)

    def dead(self, module: str, fact: Fact) -> str | None:
        """None when live in a kept module, else why not."""
        if module not in self.reach.kept:
            return "removed"
        why = record_dead(fact.record(), module, self.reach.registries, self.table, self.rules, self.features,
                          self.archs)
        return why.text if why is not None else None


# ---------------------------------------------------------------------------------------------
# Wrappers and ops: a small reachability inside the kernel packages

def _in_packages(module: str, packages: list[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


class _WrapperReach:
    def __init__(self, facts: dict[str, KernelFacts], g: ImportGraph, binaries: dict[str, str], live: _Live):
        self.facts, self.g, self.binaries, self.live = facts, g, binaries, live
        self.kept_defs: dict[str, str] = {}  # "module:name" -> reason
        self.used_modules: dict[str, str] = {}  # kernel module whose module-level code runs -> reason
        self.kept_ops: dict[str, str] = {}
        self.kept_binaries: dict[str, str] = {}  # extension module -> reason
        self.queue: deque[tuple[str, str]] = deque()  # ("def"|"module", id)

    # -- marking ---------------------------------------------------------------------------------
    def use_module(self, module: str, reason: str) -> None:
        parts = module.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a, a.b and a.b.c
            name = ".".join(parts[:i])
            if name in self.g.module_path and name not in self.used_modules:
                self.used_modules[name] = reason if i == len(parts) else f"parent package of {module}"
                self.queue.append(("module", name))

    def keep_def(self, sid: str, reason: str) -> None:
        if sid not in self.kept_defs:
            self.kept_defs[sid] = reason
            self.queue.append(("def", sid))
            self.use_module(sid.split(":")[0], f"holds kept {sid}")

    def resolve(self, module: str, name: str, reason: str, seen: set[str] | None = None) -> None:
        """What `module.name` is, kept: a def, a re-export followed to its def, a submodule (its code
        runs), an extension module (its binary), or a name a star import brings."""
        seen = seen or set()
        if f"{module}:{name}" in seen:
            return
        seen.add(f"{module}:{name}")
        facts = self.facts.get(module)
        sub = f"{module}.{name}"
        if facts is not None and name in facts.defs:
            self.keep_def(f"{module}:{name}", reason)
        elif facts is not None and name in facts.aliases:
            target, _, real = facts.aliases[name].partition(":")
            self.resolve(target, real, reason, seen)
        elif facts is not None and name in facts.assigned:
            # bound by module code (`top_k_renorm_prob = top_k_renorm_probs`): that code runs
            self.use_module(module, f"binds `{name}`, {reason}")
        elif sub in self.g.module_path:
            self.use_module(sub, reason)
        elif sub in self.binaries:
            self.kept_binaries.setdefault(sub, reason)
        elif facts is not None:
            for star in facts.stars:
                self.resolve(star, name, reason, seen)

    def read(self, module: str, fact: Fact, via: str, packages: list[str], namespaces: list[str]) -> None:
        """One live fact of kept code (`via` says where, for reasons)."""
        reason = f"read by kept {via}:{fact.line}"
        if fact.kind == "op" and fact.target in namespaces:
            self.kept_ops.setdefault(fact.name, reason)
        elif fact.kind == "import" and _in_packages(fact.target, packages):
            if fact.name:
                self.use_module(fact.target, f"imported by kept {via}:{fact.line}")
                self.resolve(fact.target, fact.name, reason)
            elif fact.target in self.binaries:
                self.kept_binaries.setdefault(fact.target, reason)
            else:
                self.use_module(fact.target, f"imported by kept {via}:{fact.line}")
        elif fact.kind == "attr" and _in_packages(fact.target, packages):
            self.resolve(fact.target, fact.name, reason)

    def run(self, packages: list[str], namespaces: list[str]) -> None:
        while self.queue:
            kind, ident = self.queue.popleft()
            if kind == "def":
                module, _, name = ident.partition(":")
                entry = self.facts[module].defs[name]
                facts_list, names, via = entry.facts, entry.names, ident
            else:
                module = ident
                facts = self.facts.get(module)
                if facts is None:
                    continue
                # module-level imports are re-exports: only what module code reads counts
                facts_list = [f for f in facts.module_code if f.kind != "import" or f.name == ""
                              or f"{f.target}.{f.name}" in self.binaries or f.bound in facts.module_names]
                names, via = facts.module_names, module
            for fact in facts_list:
                if self.live.dead(module, fact) is None:
                    self.read(module, fact, via, packages, namespaces)
            for name in names:
                self.resolve(module, name, f"called by kept {via}")


# ---------------------------------------------------------------------------------------------

def _binary_module(path: str, import_root: str) -> str:
    inner = path[len(import_root) + 1:]
    folder, _, base = inner.rpartition("/")
    stem = base.split(".", 1)[0]
    return ".".join([*(folder.split("/") if folder else []), stem])


def _first(items: list[str], limit: int = 3) -> str:
    items = sorted(set(items))
    more = f" (+{len(items) - limit})" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def kernel_manifest(g: ImportGraph, reach: Reach, rules: Rules, version: str = "") -> KernelManifest:
    """The manifest of one plan (rules: as the plan used them)."""
    rules = active_rules(rules, version)
    k = rules.kernels
    manifest = KernelManifest()
    if not k.packages and not k.jit_roots:
        return manifest
    facts = _facts(g, rules)
    live = _Live(reach, rules)
    pkg_paths = {p: g.module_path.get(p, "") for p in k.packages}
    roots = {p: path.rsplit("/", 2 if path.endswith("__init__.py") else 1)[0] for p, path in pkg_paths.items() if path}
    import_roots = {p: next((f.import_root for f in g.files if f.path == pkg_paths[p]), "") for p in roots}

    # binaries of the kernel packages, in the tree and listed as large
    files = [f.path for f in g.files]
    binaries: list[BinaryFacts] = []
    for pkg, folder in roots.items():
        binaries += tree_binaries(g.tree, [f for f in files if f.startswith(folder + "/")])
        binaries += [b for b in large_files(g.tree, import_roots[pkg]) if b.path.startswith(folder + "/")]
    by_module = {_binary_module(b.path, import_roots[next(p for p, r in roots.items() if b.path.startswith(r + "/"))]): b
                 for b in binaries}
    manifest.large = sorted(b.path for b in binaries if not b.in_tree)
    manifest.unscanned = sorted(b.path for b in binaries if not b.scanned)

    # reach through the wrappers
    wr = _WrapperReach(facts, g, {m: b.path for m, b in by_module.items()}, live)
    readers: dict[str, list[tuple[str, Fact]]] = defaultdict(list)  # op -> (module or def, fact), all of upstream
    for module, kf in sorted(facts.items()):
        inside = _in_packages(module, k.packages)
        for fact in kf.module_code:
            if fact.kind == "op" and fact.target in k.op_namespaces:
                readers[fact.name].append((module, fact))
        for name, d in kf.defs.items():
            for fact in d.facts:
                if fact.kind == "op" and fact.target in k.op_namespaces:
                    readers[fact.name].append((f"{module}:{name}" if inside else module, fact))
        if inside:
            continue
        for fact in kf.all_facts():
            if live.dead(module, fact) is None:
                wr.read(module, fact, module, k.packages, k.op_namespaces)
    wr.run(k.packages, k.op_namespaces)

    _wrappers(manifest, facts, g, reach, wr, k.packages)
    _ops(manifest, binaries, by_module, readers, wr, live, k.packages)
    _binaries(manifest, binaries, by_module, wr)
    _jit(manifest, g, facts, live, k.jit_roots, k.jit_suffixes)
    _triton_and_external(manifest, facts, g, reach, live, k.external)
    return manifest


def _wrappers(manifest: KernelManifest, facts: dict[str, KernelFacts], g: ImportGraph, reach: Reach,
              wr: _WrapperReach, packages: list[str]) -> None:
    for module, kf in sorted(facts.items()):
        if not _in_packages(module, packages):
            continue
        path = g.module_path[module]
        for name in sorted(kf.defs):
            sid = f"{module}:{name}"
            if sid in wr.kept_defs:
                manifest.entries.append(KernelEntry("wrapper", sid, True, wr.kept_defs[sid], path))
            elif module not in reach.kept:
                manifest.entries.append(KernelEntry("wrapper", sid, False, "its module is removed by the plan", path))
            else:
                manifest.entries.append(KernelEntry("wrapper", sid, False,
                                                    "no kept code reads it (the dead-symbol batch removes it)", path))


def _ops(manifest: KernelManifest, binaries: list[BinaryFacts], by_module: dict[str, BinaryFacts],
         readers: dict[str, list[tuple[str, Fact]]], wr: _WrapperReach, live: _Live, packages: list[str]) -> None:
    ops = set(readers) | {op for b in binaries for op in b.schemas}
    for op in sorted(ops):
        schema = [b.path for b in binaries if b.holds(op) == "schema"]
        named = [b.path for b in binaries if b.holds(op) == "name"]
        where = ", ".join(schema) if schema else (", ".join(named) + " (name string only)" if named else "no binary of the wheel")
        if op in wr.kept_ops:
            manifest.entries.append(KernelEntry("op", op, True, wr.kept_ops[op], where))
            continue
        readers_of = readers.get(op, [])
        wrappers = [r for r, _ in readers_of if ":" in r]
        kept_guarded = [(r, f) for r, f in readers_of if ":" not in r and r in live.reach.kept]
        if kept_guarded:
            r, f = kept_guarded[0]
            reason = f"read by kept {r}:{f.line} only {live.dead(r, f)}"
        elif wrappers:
            reason = f"called only by wrappers no kept code reads: {_first(wrappers)}"
        elif readers_of:
            reason = f"read only by removed {_first([r for r, _ in readers_of])}"
        else:
            reason = "registered, but no Python of this release calls it"
        manifest.entries.append(KernelEntry("op", op, False, reason, where))


def _binaries(manifest: KernelManifest, binaries: list[BinaryFacts], by_module: dict[str, BinaryFacts],
              wr: _WrapperReach) -> None:
    kept_ops = set(wr.kept_ops)
    for module, b in sorted(by_module.items(), key=lambda kv: kv[1].path):
        source = "schema strings" if b.scanned else "not scanned (its wheel is not downloaded)"
        held = sorted(op for op in kept_ops if b.holds(op) == "schema")
        named = sorted(op for op in kept_ops if b.holds(op) == "name" and not any(
            o.holds(op) == "schema" for o in binaries))
        suffix = "" if b.in_tree else " (kept out of the tree: LARGE_FILES.json)"
        if held or named:
            total = len(b.schemas)
            reason = (f"{len(held) + len(named)} kept ops live in it ({_first(held + named, 4)}; of {total} "
                      f"registered, by its {source}){suffix}")
            manifest.entries.append(KernelEntry("binary", b.path, True, reason, module, b.bytes))
        elif module in wr.kept_binaries:
            manifest.entries.append(KernelEntry("binary", b.path, True,
                                                f"extension module {module} {wr.kept_binaries[module]}{suffix}",
                                                module, b.bytes))
        elif not b.scanned:
            manifest.entries.append(KernelEntry("binary", b.path, True, f"ops {source}: kept{suffix}", module, b.bytes))
        else:
            ops = ", ".join(sorted(b.schemas)[:4]) or "no torch op"
            reason = (f"no kept op lives in it ({len(b.schemas)} registered: {ops}{' ...' if len(b.schemas) > 4 else ''}; "
                      f"by its {source}) and no kept code imports {module}{suffix}")
            manifest.entries.append(KernelEntry("binary", b.path, False, reason, module, b.bytes))
            if b.in_tree:
                manifest.removed_files[b.path] = f"kernel binary: {reason}"


def _jit(manifest: KernelManifest, g: ImportGraph, facts: dict[str, KernelFacts], live: _Live,
         jit_roots: list[str], suffixes: list[str]) -> None:
    import_roots = sorted({f.import_root for f in g.files if f.import_root})
    roots = [f"{ir}/{r}" for ir in import_roots for r in jit_roots if (g.tree / ir / r).is_dir()]
    if not roots:
        return
    sources = [f.path for f in g.files if any(f.path.startswith(r + "/") for r in roots)
               and f.path.endswith(tuple(suffixes))]
    index = SourceIndex(roots, sources)
    named_live: dict[str, str] = {}
    named_any: dict[str, list[str]] = defaultdict(list)
    for module, kf in sorted(facts.items()):
        for fact in kf.all_facts():
            if fact.kind != "string" or not fact.target.endswith(tuple(suffixes)) and "*" not in fact.target:
                continue
            for path in index.resolve(fact.target):
                named_any[path].append(module)
                if path not in named_live and live.dead(module, fact) is None:
                    label = f" (load_jit {fact.name!r})" if fact.name else ""
                    named_live[path] = f"named by kept {module}:{fact.line}{label}"
    incl = read_includes(g.tree, sources)
    included_by: dict[str, list[str]] = defaultdict(list)
    for src, names in incl.items():
        for name in names:
            for path in index.resolve(name, beside=src):
                if path != src:
                    included_by[path].append(src)
    kept: dict[str, str] = dict(named_live)
    for path in sources:
        if path not in named_any and path not in included_by:
            kept[path] = "named by no Python file and included by no source of the release: how it is loaded cannot be read"
    queue = deque(sorted(kept))
    while queue:
        src = queue.popleft()
        for name in incl.get(src, []):
            for path in index.resolve(name, beside=src):
                if path not in kept:
                    kept[path] = f"included by kept {src}"
                    queue.append(path)
    for path in sources:
        size = (g.tree / path).stat().st_size
        if path in kept:
            manifest.entries.append(KernelEntry("jit", path, True, kept[path], index.root_of(path), size))
            continue
        if named_any.get(path):
            reason = f"named only by removed {_first(named_any[path])}"
        else:
            reason = f"included only by removed sources: {_first(included_by[path])}"
        manifest.entries.append(KernelEntry("jit", path, False, reason, index.root_of(path), size))
        manifest.removed_files[path] = f"JIT source {reason}"


def _triton_and_external(manifest: KernelManifest, facts: dict[str, KernelFacts], g: ImportGraph, reach: Reach,
                         live: _Live, external: list[str]) -> None:
    entry_points: dict[str, tuple[bool, str]] = {}
    for module, kf in sorted(facts.items()):
        if kf.triton:
            path = g.module_path[module]
            if module in reach.kept:
                manifest.entries.append(KernelEntry("triton", module, True, reach.kept[module], path))
            else:
                why = reach.cut_by_rule.get(module, ("", "unreachable from the roots", ""))[1]
                manifest.entries.append(KernelEntry("triton", module, False, why, path))
        for fact in kf.all_facts():
            if fact.kind != "import" or fact.target.split(".")[0] not in external:
                continue
            name = f"{fact.target}:{fact.name}" if fact.name else fact.target
            if live.dead(module, fact) is None:
                if not entry_points.get(name, (False, ""))[0]:
                    entry_points[name] = (True, f"imported by kept {module}:{fact.line}")
            elif name not in entry_points:
                entry_points[name] = (False, f"imported only by removed {module}" if module not in reach.kept
                                      else f"imported by kept {module}:{fact.line} only {live.dead(module, fact)}")
    for name, (keep, reason) in sorted(entry_points.items()):
        manifest.entries.append(KernelEntry("external", name, keep, reason))


def apply_to_decisions(decisions: list[Decision], manifest: KernelManifest) -> int:
    """Mark the binaries and JIT sources the manifest removes as removed files (batch category
    `unreachable`); returns how many decisions changed."""
    changed = 0
    for d in decisions:
        reason = manifest.removed_files.get(d.path)
        if reason is not None and d.keep:
            d.keep, d.code, d.reason, d.rule = False, KERNEL_CODE, reason, "unreachable"
            changed += 1
    return changed
