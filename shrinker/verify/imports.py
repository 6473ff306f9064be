"""Differential import check: every module of the pruned tree, imported in isolation, in the verify
environment; each one that fails is imported in upstream too. Imports upstream but not pruned =
regression. A module that imports in the pruned tree cannot regress, so upstream runs only where
pruned fails (on a cold machine that halves the work: upstream's ~1,400 passing imports are never
needed).

Workers (probes/import_worker.py) run in parallel, each a fork server; upstream results are cached
per upstream commit (and per environment, worker version and mode) under cache_dir()/verify/.

Bases: most of a module's import time is the tree's own closure, shared by hundreds of modules. The
pruned run (run_on_certain_bases) picks base modules from the closures the tree's source makes certain
(import_bases.py): the bases import first, each in a fresh process (a broken base is reported like
any module and never used), then each module's child forks from a server that imported the largest
base the module's own first lines import anyway. Every import that fails on a base is re-run fresh,
and upstream's side always runs fresh, so what a finding rests on is a fresh import on both sides.
`bases=False`: the slow path.

Mode: with a `pretend` spec (verify data [pretend]) both trees import as on that NVIDIA GPU
(probes/pretend_cuda.py): the pruned tree is CUDA-only, so on a CPU machine it could only be compared
with upstream's CPU branches; pretending for both keeps the comparison differential. Without one
both import on the real (CPU) machine.

Reuse between runs: a worker reports what each import touched in the tree: the modules it loaded, the
files it opened and the folders it listed (an audit hook). A pruned outcome is kept
(cache_dir()/verify/pruned-<mode>-*.json) with a fingerprint of everything its import read, and reused
while the tree has the same modules and that fingerprint is unchanged (a re-verify after a small
change re-runs only what the change reaches). (os.path.exists-style probes are not audited;
`reuse=False` re-runs everything.)
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from shrinker import paths
from shrinker.console import console, progress
from shrinker.verify.env import VerifyEnv
from shrinker.checks.factcache import tree_facts
from shrinker.verify.import_bases import assign_certain, certain_closures, choose_bases
from shrinker.checks.tree import IMPORT_ROOTS, SourceTree, content_hash

WORKER = Path(__file__).parent / "probes" / "import_worker.py"
# Third-party packages the fork server imports once (not tree code: isolation is unchanged).
PRELOAD = ["torch", "torch._dynamo", "torch._inductor.compile_fx", "triton", "triton.language", "numpy",
           "scipy", "scipy.optimize", "transformers", "transformers.modeling_utils",
           "transformers.processing_utils", "transformers.models.llama.modeling_llama", "tokenizers",
           "safetensors", "huggingface_hub", "torchvision", "pydantic", "fastapi", "starlette", "uvicorn",
           "openai", "zmq", "aiohttp", "requests", "IPython", "PIL.Image", "einops", "xgrammar",
           "compressed_tensors", "gguf", "jsonschema", "tiktoken", "sentencepiece", "msgspec", "orjson",
           "psutil", "prometheus_client", "setproctitle", "uvloop", "dill", "partial_json_parser",
           "pybase64", "soundfile", "tvm_ffi", "loguru", "tqdm"]
SKIP_LAST_PARTS = {"__main__"}  # importing these runs a program
HEARTBEAT_S = 60.0
TASK_SIZE = 24
BASE_TASK_SIZE = 48  # one base import serves about this many modules (the base's import costs seconds)
RETRY_FACTOR = 5
# Bump when the worker's (or pretend_cuda's) results change meaning (not for scheduling changes):
# keys the upstream cache.
HARNESS_VERSION = 6  # 5: upstream outcomes are fresh imports (never based); 6: CUDA-only torch._C bindings named


@dataclass
class ImportOutcome:
    module: str
    status: str  # ok | error | timeout | crash | missing (not in this tree)
    seconds: float = 0.0
    error: str = ""
    loaded: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # tree-relative files the import opened
    dirs: list[str] = field(default_factory=list)  # tree-relative folders it listed
    reused: bool = False
    base: str = ""  # the base its child forked from ('' = a fresh process)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def worker_env(tree: SourceTree) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "SGLANG_"))}
    roots = [str(tree.root / r) for r in IMPORT_ROOTS if (tree.root / r).is_dir()]
    env.update({
        "PYTHONPATH": os.pathsep.join(roots),
        # bytecode next to the cache, never into the (read-only) upstream tree or the work tree
        "PYTHONPYCACHEPREFIX": str(paths.cache_dir() / "verify" / "pycache"),
        "PYTHONHASHSEED": "0",
        "CUDA_VISIBLE_DEVICES": "",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONWARNINGS": "ignore",
        # modules that build C++ at import (torch cpp_extension) build into our cache, not ~/.cache;
        # one folder per tree, as ninja rebuilds whenever the sources' paths change
        "TORCH_EXTENSIONS_DIR": str(torch_extensions_dir(tree.root)),
        "MAX_JOBS": "1",
    })
    return env


def torch_extensions_dir(root: Path | None = None) -> Path:
    base = paths.cache_dir() / "verify" / "torch_extensions"
    return base / hashlib.sha1(str(root).encode()).hexdigest()[:12] if root is not None else base


def clear_stale_build_locks() -> int:
    """A build killed at its import's timeout leaves torch's `lock` file, and every later import of
    that extension would wait on it forever. Runs do not overlap, so a lock found here is stale;
    the objects already built stay, so the next run's build goes on from there."""
    removed = 0
    base = torch_extensions_dir()
    for lock in [*base.glob("*/lock"), *base.glob("*/*/lock"), *base.glob("*/*/*/lock")]:
        lock.unlink(missing_ok=True)
        removed += 1
    return removed


def importable_modules(tree: SourceTree, only: Sequence[str] | None = None) -> list[str]:
    """Every module of the tree (or those under the `only` prefixes), less programs' __main__."""
    mods = (m for m in tree.modules if m.rpartition(".")[2] not in SKIP_LAST_PARTS)
    if only:
        mods = (m for m in mods if any(m == p or m.startswith(p + ".") for p in only))
    return sorted(mods)


def make_tasks(modules: list[str], cost: dict[str, float] | None = None,
               bases: dict[str, str] | None = None) -> list[dict]:
    """Sibling modules share a task (one sub-server imports their parent once); big families are cut
    into chunks so the two workers stay busy to the end. Modules on the same base (`bases`: module ->
    base, import_bases.py) share tasks of whole parent groups until BASE_TASK_SIZE modules are reached
    (a bigger group is cut), one base import each.
    Costliest first (longest-processing-time order), by upstream's seconds where known."""
    def weight(ms: list[str]) -> float:
        return sum((cost or {}).get(m, 1.0) for m in ms)

    by_base: dict[str, dict[str, list[str]]] = {}
    for m in modules:
        base = (bases or {}).get(m, "")
        by_base.setdefault(base, {}).setdefault(m.rpartition(".")[0], []).append(m)
    tasks = []
    for parent, members in by_base.pop("", {}).items():
        for i in range(0, len(members), TASK_SIZE):
            chunk = members[i:i + TASK_SIZE]
            tasks.append({"parent": parent, "modules": chunk, "cost": weight(chunk)})
    for base, groups in sorted(by_base.items()):
        chunk: list = []
        for parent, members in sorted(groups.items()):
            for i in range(0, len(members), BASE_TASK_SIZE):
                chunk.append([parent, members[i:i + BASE_TASK_SIZE]])
                if sum(len(g[1]) for g in chunk) >= BASE_TASK_SIZE:
                    tasks.append(_based_task(base, chunk, weight))
                    chunk = []
        if chunk:
            tasks.append(_based_task(base, chunk, weight))
    tasks.sort(key=lambda t: (-t["cost"], t.get("base", ""), t["parent"], t["modules"][0]))
    return tasks


def _based_task(base: str, groups: list, weight) -> dict:
    mods = [m for _, ms in groups for m in ms]
    return {"base": base, "groups": groups, "parent": groups[0][0], "modules": mods, "cost": weight(mods)}


def run_imports(tree: SourceTree, env: VerifyEnv, modules: list[str], *, jobs: int = 2,
                timeout: float = 60.0, label: str = "importing", cost: dict[str, float] | None = None,
                pretend: dict | None = None, bases: dict[str, str] | None = None) -> dict[str, ImportOutcome]:
    """Import each module in isolation in `tree`; one outcome per module. Workers take the next
    task when they finish one (`cost`: expected seconds per module, for the order; `pretend`:
    pretend_cuda's spec, or None for the real machine; `bases`: module -> the base its child
    forks from, see import_bases.py)."""
    results: dict[str, ImportOutcome] = {}
    if not modules:
        return results
    clear_stale_build_locks()
    pending = make_tasks(modules, cost, bases)
    with tempfile.TemporaryDirectory(prefix="shrink-imports-") as tmp, progress(label, len(modules)) as advance:
        cfg = Path(tmp) / "worker.json"
        cfg.write_text(json.dumps({"timeout": timeout, "preload": PRELOAD, "tops": sorted(tree.top_packages),
                                   "root": str(tree.root), "pretend": pretend}))
        lines: queue.Queue = queue.Queue()

        def pump(index: int, stream) -> None:  # one reader thread per worker keeps every pipe drained
            for line in stream:
                lines.put((index, line))
            lines.put((index, None))

        procs = []
        for i in range(max(1, min(jobs, len(pending)))):
            err = open(Path(tmp) / f"worker-{i}.err", "w")
            proc = subprocess.Popen([str(env.python), str(WORKER), str(cfg)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=err, env=worker_env(tree), cwd=tmp, text=True)
            procs.append((proc, err))
            threading.Thread(target=pump, args=(i, proc.stdout), daemon=True).start()

        def feed(index: int) -> None:
            stdin = procs[index][0].stdin
            if pending:
                task = pending.pop(0)
                keys = ("base", "groups") if task.get("base") else ("parent", "modules")
                stdin.write(json.dumps({k: task[k] for k in keys}) + "\n")
                stdin.flush()
            elif not stdin.closed:
                stdin.close()

        for i in range(len(procs)):
            feed(i)
        seen: set[str] = set()
        open_pipes = len(procs)
        last_note = time.monotonic()
        while open_pipes:
            if not console.is_terminal and time.monotonic() - last_note > HEARTBEAT_S:
                console.print(f"{label}: {len(seen)}/{len(modules)} modules")  # CI logs get no bar
                last_note = time.monotonic()
            index, line = lines.get()
            if line is None:
                open_pipes -= 1
                continue
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if data.get("task_done"):
                try:
                    feed(index)
                except (BrokenPipeError, OSError):
                    pass  # the worker died; its modules are reported as crashed below
                continue
            outcome = ImportOutcome(module=data["module"], status=data["status"],
                                    seconds=data.get("seconds", 0.0), error=data.get("error", ""),
                                    loaded=data.get("loaded", []), files=data.get("files", []),
                                    dirs=data.get("dirs", []), base=(bases or {}).get(data["module"], ""))
            results[outcome.module] = outcome  # a re-run (parent package failed) replaces the first
            if outcome.module not in seen:
                seen.add(outcome.module)
                advance()
        tails = []
        for proc, err in procs:
            if proc.stdin and not proc.stdin.closed:
                proc.stdin.close()
            proc.wait()
            err.close()
            tails.append(f"exit {proc.returncode}: " + (Path(err.name).read_text().strip().splitlines() or ["no output"])[-1])
        for m in modules:
            if m not in results:  # a worker died before reporting it
                results[m] = ImportOutcome(m, "crash", error="worker died: " + "; ".join(tails))
    return results


# ---------------------------------------------------------------------------------------------
# Upstream cache


def mode_name(pretend: dict | None) -> str:
    return "pretend" if pretend else "cpu"


def _harness_key(env: VerifyEnv, timeout: float, pretend: dict | None) -> str:
    text = f"{env.requirements_hash}:{HARNESS_VERSION}:{','.join(PRELOAD)}:{timeout}"
    if pretend:  # what is pretended changes the results
        text += json.dumps(pretend, sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def upstream_cache_file(commit: str, env: VerifyEnv, timeout: float, pretend: dict | None = None) -> Path:
    name = f"imports-{commit[:12]}-{mode_name(pretend)}-{_harness_key(env, timeout, pretend)}.json"
    return paths.cache_dir() / "verify" / name


class _UpstreamCache:
    """Upstream outcomes per module, one file per upstream commit, mode and harness."""

    def __init__(self, commit: str | None, env: VerifyEnv, timeout: float, pretend: dict | None) -> None:
        self.commit, self.pretend = commit, pretend
        self.path = upstream_cache_file(commit, env, timeout, pretend) if commit else None
        self.entries: dict[str, dict] = {}
        if self.path and self.path.exists():
            try:
                self.entries = json.loads(self.path.read_text())
            except ValueError:
                self.entries = {}

    def update(self, fresh: dict[str, ImportOutcome]) -> None:
        for m, outcome in fresh.items():
            self.entries[m] = asdict(outcome)
        if not self.path or not fresh:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.entries, separators=(",", ":")))
        os.replace(tmp, self.path)
        for stale in self.path.parent.glob(f"imports-{self.commit[:12]}-{mode_name(self.pretend)}-*.json"):
            if stale != self.path:  # other environments'
                stale.unlink(missing_ok=True)


def run_on_certain_bases(tree: SourceTree, env: VerifyEnv, modules: list[str], *, label: str,
                         **run) -> dict[str, ImportOutcome]:
    """run_imports with shared bases picked from the closures the tree's source makes certain
    (import_bases.certain_closures); every import that fails on a base is re-run fresh, so a failure
    is always what a fresh process gives."""
    certain = certain_closures(tree_facts(tree), list(tree.modules), modules)
    picks = choose_bases(certain, modules, modules)
    if not picks:
        return run_imports(tree, env, modules, label=label, **run)
    out = run_imports(tree, env, picks, label=f"{label} (bases)", **run)
    base_closures = {b: frozenset(out[b].loaded) for b in picks if out[b].ok}
    rest = [m for m in modules if m not in out]
    assigned = assign_certain(rest, certain, base_closures)
    out.update(run_imports(tree, env, rest, label=label, bases=assigned, **run))
    again = [m for m in rest if out[m].base and not out[m].ok]
    if again:
        out.update(run_imports(tree, env, again, label=f"{label} (failures, fresh)", **run))
    return out


def upstream_results(upstream: SourceTree, commit: str | None, env: VerifyEnv, modules: list[str], *,
                     jobs: int = 2, timeout: float = 60.0,
                     pretend: dict | None = None) -> tuple[dict[str, ImportOutcome], int]:
    """Fresh upstream outcomes for `modules` (cached per commit and mode when `commit` is given);
    (results, newly run)."""
    cache = _UpstreamCache(commit, env, timeout, pretend)
    wanted = [m for m in modules if upstream.has(m)]
    todo = [m for m in wanted if m not in cache.entries]
    if todo:
        cache.update(run_imports(upstream, env, todo, label="importing upstream (where pruned fails)",
                                 jobs=jobs, timeout=timeout, pretend=pretend))
    results = {m: ImportOutcome(**cache.entries[m]) for m in wanted}
    for m in modules:
        if m not in results:
            results[m] = ImportOutcome(m, "missing", error="not in upstream")
    return results, len(todo)


# ---------------------------------------------------------------------------------------------
# Comparison


def module_hashes(tree: SourceTree) -> dict[str, str]:
    out = {}
    for name, m in tree.modules.items():
        out[name] = "namespace" if m.kind == "namespace" else content_hash(m.path.read_bytes())
    return out


class _PrunedCache:
    """Pruned outcomes of earlier runs, each with the fingerprint of what its import read."""

    def __init__(self, tree: SourceTree, hashes: dict[str, str], env: VerifyEnv, timeout: float,
                 pretend: dict | None) -> None:
        self.tree, self.hashes = tree, hashes
        key = _harness_key(env, timeout, pretend)
        self.path = paths.cache_dir() / "verify" / f"pruned-{mode_name(pretend)}-{key}.json"
        # a module added or gone can change any import's outcome: the module set keys the entries
        self.names = hashlib.sha1("\n".join(sorted(hashes)).encode()).hexdigest()
        self._files: dict[str, str] = {}
        data: dict = {}
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text())
            except ValueError:
                data = {}
        self.entries: dict = data.get("entries", {}) if data.get("names") == self.names else {}

    def fingerprint(self, o: ImportOutcome) -> str | None:
        h = hashlib.sha1()
        for m in o.loaded:
            if m not in self.hashes:
                return None
            h.update(f"{m}={self.hashes[m]}\n".encode())
        for rel in o.files:
            if rel not in self._files:
                p = self.tree.root / rel
                self._files[rel] = content_hash(p.read_bytes()) if p.is_file() else "-"
            h.update(f"{rel}={self._files[rel]}\n".encode())
        for rel in o.dirs:
            p = self.tree.root / rel
            h.update(f"{rel}/={sorted(os.listdir(p)) if p.is_dir() else '-'}\n".encode())
        return h.hexdigest()

    def get(self, module: str) -> ImportOutcome | None:
        entry = self.entries.get(module)
        if not entry:
            return None
        o = ImportOutcome(**{**entry["outcome"], "reused": True})
        return o if self.fingerprint(o) == entry["fingerprint"] else None

    def save(self, fresh: dict[str, ImportOutcome]) -> None:
        for m, o in fresh.items():
            if o.status in ("ok", "error") and o.loaded:
                self.entries[m] = {"fingerprint": self.fingerprint(o), "outcome": asdict(o)}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"names": self.names, "entries": self.entries}, separators=(",", ":")))
        os.replace(tmp, self.path)


@dataclass
class ImportComparison:
    modules: int = 0
    pruned_ok: int = 0
    compared: int = 0  # pruned failures, imported upstream too
    upstream_ok: int = 0  # of the compared: regressions and needs_cuda notes
    cached: int = 0  # pruned outcomes reused from an earlier run
    upstream_run: int = 0
    regressions: list[str] = field(default_factory=list)  # findings
    needs_cuda: list[str] = field(default_factory=list)  # pruned fails for want of a GPU (notes)
    pruned: dict[str, ImportOutcome] = field(default_factory=dict)
    upstream: dict[str, ImportOutcome] = field(default_factory=dict)


def compare_imports(pruned: SourceTree, upstream: SourceTree, env: VerifyEnv, *, commit: str | None,
                    jobs: int = 2, timeout: float = 60.0, reuse: bool = True,
                    only: Sequence[str] | None = None, needs_cuda: Sequence[str] = (),
                    pretend: dict | None = None, bases: bool = True) -> ImportComparison:
    """Every pruned module, then upstream where pruned fails; `bases`: the pruned run forks from
    shared bases (run_on_certain_bases); what a finding rests on is fresh on both sides."""
    modules = importable_modules(pruned, only)
    pruned_out: dict[str, ImportOutcome] = {}
    cache = _PrunedCache(pruned, module_hashes(pruned), env, timeout, pretend) if reuse else None
    if cache:
        pruned_out.update({m: o for m in modules if (o := cache.get(m)) is not None})
    todo = [m for m in modules if m not in pruned_out]
    run = dict(jobs=jobs, timeout=timeout, pretend=pretend)
    fresh = run_on_certain_bases(pruned, env, todo, label="importing pruned", **run) if bases else run_imports(
        pruned, env, todo, label="importing pruned", **run)
    pruned_out.update(fresh)
    # A timeout on a busy machine is weak evidence (a C++ build at import can pass the limit): before
    # calling it a failure, give it one more go, alone, with a much longer limit.
    slow = [m for m in todo if pruned_out[m].status == "timeout"]
    if slow:
        fresh.update(run_imports(pruned, env, slow, jobs=1, timeout=timeout * RETRY_FACTOR,
                                 label="importing pruned (timeouts, again)", pretend=pretend))
        pruned_out.update(fresh)
    if cache and fresh:
        cache.save(fresh)
    failing = [m for m in modules if not pruned_out[m].ok]
    up, n_run = upstream_results(upstream, commit, env, failing, **run)
    cmp = ImportComparison(modules=len(modules), compared=len(failing), upstream_run=n_run, pruned=pruned_out,
                           upstream=up, cached=len(modules) - len(todo))
    cmp.pruned_ok = len(modules) - len(failing)
    for m in failing:
        u, p = up[m], pruned_out[m]
        if not u.ok:
            continue
        cmp.upstream_ok += 1
        tail = " | ".join(line.strip() for line in p.error.splitlines()[-3:])
        text = f"{pruned.rel(m)}:1 {m} imports in upstream but not pruned ({p.status}): {tail}"
        if p.status == "error" and any(sig in p.error for sig in needs_cuda):
            cmp.needs_cuda.append(text)
        else:
            cmp.regressions.append(text)
    return cmp


def timed_compare(*args, **kwargs) -> tuple[ImportComparison, float]:
    start = time.monotonic()
    cmp = compare_imports(*args, **kwargs)
    return cmp, time.monotonic() - start
