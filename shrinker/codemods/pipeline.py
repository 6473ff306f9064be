"""Run codemods over files: one parse per file, each codemod in turn on the tree, one result per file.

`transform_source` is the unit (libcst's TransformSuccess / TransformFailure / TransformSkip, as a
FileResult): success = the code changed and compiles; skip = nothing changed; failure = a codemod
raised, or the result does not compile (its code is then the ORIGINAL source: broken code is never
handed back as a success). A success also lists `undefined`: uses of names the new code no longer
defines (pyflakes, compared with the original), for the apply gate and the batch report.
`transform_files` runs it over many files in worker processes (nothing is written).

Codemods are found by NAME in CODEMODS (the names rules/<profile>.toml [[batches]].codemods use).
`resolve_codemods` completes a batch's list with what the platform codemods need to leave no trace:
fold_platform -> remove_dead_branches (the folded tests decide branches) and, after any platform
codemod, remove_platform_imports (imports only the removed code used) and, after folding,
remove_platform_bound (functions left always raising NameError; remove_platform_methods runs once
more after it removed something, for a platform method whose callers it took), remove_platform_methods ->
remove_other_device_backends (a fused op's backend methods only other devices run); remove_dead_branches
runs before remove_dead_imports and prune_architecture_literals (the branches `isinstance(x, RemovedClass)`
and removed architectures decide), and wherever it runs outside the platform group remove_platform_bound runs
right after it (remove_platform_methods once more where that removed something); remove_platform_classes, when a batch
names it, runs first; the platform group runs in its canonical order at the place of its first member
(less what an earlier codemod already brought in), other codemods keep the order given.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal, Optional, Sequence

import libcst as cst
from libcst.codemod import SkipFile

from shrinker.codemods.base import ShrinkCodemod, new_context
from shrinker.codemods.dead_branches import RemoveDeadBranches
from shrinker.codemods.fold_platform import FoldFeatures, FoldPlatformPredicates
from shrinker.codemods.inputs import CodemodInputs
from shrinker.codemods.platform_imports import RemovePlatformPackageImports
from shrinker.codemods.platform_methods import RemovePlatformMethods
from shrinker.console import progress
from shrinker.errors import ShrinkError

CODEMODS: dict[str, type[ShrinkCodemod]] = {
    cls.NAME: cls
    for cls in (FoldPlatformPredicates, FoldFeatures, RemoveDeadBranches, RemovePlatformMethods,
                RemovePlatformPackageImports)
}

# Modules of codemods written alongside these; each may be absent while it is being written.
_OPTIONAL_MODULES = ("removed_imports", "registries", "cli_choices", "unused_names", "platform_bound",
                     "platform_classes", "dead_symbols", "device_backends", "architecture_literals", "records",
                     "entry_classes", "constant_parameters", "record_tables", "enum_members")


def _load_optional() -> None:
    for short in _OPTIONAL_MODULES:
        name = f"shrinker.codemods.{short}"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, ShrinkCodemod) and obj.__module__ == name
                    and obj.NAME):
                CODEMODS.setdefault(obj.NAME, obj)


_load_optional()

PLATFORM_GROUP = ("remove_platform_classes", "fold_platform", "remove_dead_branches", "remove_platform_methods",
                  "remove_other_device_backends", "remove_platform_bound", "remove_platform_imports")
_IMPLIES = {
    "fold_platform": ("remove_dead_branches", "remove_platform_imports", "remove_platform_bound"),
    "fold_features": ("remove_dead_branches",),
    "remove_dead_branches": ("remove_platform_imports",),
    "remove_platform_methods": ("remove_other_device_backends", "remove_platform_imports"),
}
# Codemods that run right before another (outside the platform group), unless already placed: the branches
# `isinstance(x, RemovedClass)` decides go before remove_dead_imports drops the class's import (after it,
# only a bare `False` would be left, which dead_branches' pre-filter does not look at).
# A test against a literal of removed architectures only (`model_arch in ("HYV4ForCausalLM", ...)`) is False:
# its branch goes where prune_architecture_literals edits too.
_BEFORE = {"remove_dead_imports": ("remove_dead_branches",),
           "prune_architecture_literals": ("remove_dead_branches",)}
# A dead-branch pass outside the platform group (brought by _BEFORE or fold_features) decides platform tests
# too (`if _is_npu: import torch_npu` goes), so remove_platform_bound must run with it: it sees a platform-only
# binding only in the run that removed it (it compares with the file before the run), and a later platform
# batch would find the method that used it no longer platform-bound (0.5.23's deepseek_v4:
# `_forward_prepare_multi_stream_npu`; then _AGAIN_AFTER takes the NPU rope cache only it called). Only bound:
# the other platform codemods report what fold_platform has not removed yet (0.5.23's features batch failed on
# remove_platform_imports' "import of torch_npu kept" and remove_platform_methods' "reference to platform method").
_BRANCH_FOLLOW_UPS = ("remove_platform_bound",)


# A codemod that removed code can leave a platform method with no caller left (0.5.18's deepseek_v4:
# `_get_npu_rope_position_cache`, called only from `_forward_prepare_multi_stream_npu`, which
# remove_platform_bound takes): the listed codemods run once more, right after it, on that file (also where the
# batch did not ask for them, when the file has what they look for: the early bound pass above).
_AGAIN_AFTER = {"remove_platform_bound": ("remove_platform_methods",)}


def resolve_codemods(names: Sequence[str]) -> list[str]:
    """The codemods to run, in order (see the module docstring); unknown names are a ShrinkError."""
    unknown = [n for n in names if n not in CODEMODS]
    if unknown:
        raise ShrinkError(f"unknown codemod(s): {', '.join(unknown)} (known: {', '.join(sorted(CODEMODS))})")
    wanted = set(names)
    for name in names:
        wanted.update(_IMPLIES.get(name, ()))
    order: list[str] = []
    group_placed = False
    for name in names:
        if name in PLATFORM_GROUP:
            if not group_placed:
                order.extend(n for n in PLATFORM_GROUP if n in wanted and n not in order)
                group_placed = True
        elif name not in order:
            _place(order, _BEFORE.get(name, ()))
            order.append(name)
            # outside the platform group (fold_features): what it implies runs right after it
            _place(order, _IMPLIES.get(name, ()))
    return order


def _place(order: list[str], names: Sequence[str]) -> None:
    """Append `names` not yet in `order`; a dead-branch pass brings its platform follow-ups."""
    for name in names:
        if name not in order:
            order.append(name)
            if name == "remove_dead_branches":
                _place(order, _BRANCH_FOLLOW_UPS)


@dataclass
class FileResult:
    """What happened to one file (libcst's TransformSuccess / TransformFailure / TransformSkip)."""

    path: str
    status: Literal["success", "failure", "skip"]
    code: str  # the new code on success, the original source otherwise
    changes: dict[str, int] = field(default_factory=dict)  # "<codemod>.<what>" -> count
    findings: list[str] = field(default_factory=list)  # "path:line: message"
    error: str = ""
    seconds: float = 0.0
    # "path:line: name" for names the new code uses but no longer defines (pyflakes, compared with
    # the original): code that would raise NameError where upstream did not (or a dead function
    # that still mentions a removed import). The apply gate decides; the report names them.
    undefined: list[str] = field(default_factory=list)

    def changed_by(self, name: str) -> int:
        return sum(n for key, n in self.changes.items() if key.split(".", 1)[0] == name)


def transform_source(source: str, *, path: str, module: str, inputs: CodemodInputs,
                     codemods: Sequence[str]) -> FileResult:
    """Run `codemods` (names, see resolve_codemods) over one file's source, parsed once."""
    start = time.perf_counter()
    names = resolve_codemods(codemods)
    active = [CODEMODS[n] for n in names if CODEMODS[n].wants(source, inputs)]
    result = FileResult(path=path, status="skip", code=source)
    if not active:
        return result
    try:
        tree = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        result.status, result.error = "failure", f"does not parse: {str(exc).splitlines()[0]}"
        return _timed(result, start)
    original = tree  # libcst trees are immutable: the parsed module stays the pre-edit version
    edited = False  # some codemod of this run counted a change
    queue = list(active)
    while queue:
        cls = queue.pop(0)
        if getattr(cls, "ONLY_AFTER_EDITS", False) and not edited and tree.code == source:
            continue  # it undoes only what this run's edits left behind: here there were none
        if getattr(cls, "NEEDS_ORIGINAL", False):  # compares with the file as it was before this run
            codemod = cls(new_context(path, module), inputs, original=original)
        else:
            codemod = cls(new_context(path, module), inputs)
        try:
            tree = codemod.transform_module(tree)
        except SkipFile:
            continue
        except Exception as exc:  # a codemod bug must not take the run down: the file fails
            result.findings.extend(codemod.findings)
            result.status, result.error = "failure", f"{cls.NAME}: {type(exc).__name__}: {exc}"
            return _timed(result, start)
        result.findings.extend(codemod.findings)
        for what, n in codemod.changes.items():
            result.changes[f"{cls.NAME}.{what}"] = result.changes.get(f"{cls.NAME}.{what}", 0) + n
        if any(codemod.changes.values()):
            edited = True
            queue[:0] = [CODEMODS[n] for n in _AGAIN_AFTER.get(cls.NAME, ())
                         if CODEMODS[n] in active or CODEMODS[n].wants(tree.code, inputs)]
    code = tree.code
    result.findings = _unsettled(result.findings, code)
    if code == source:
        return _timed(result, start)
    try:
        compile(code, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        result.status = "failure"
        result.error = f"does not compile after {'+'.join(c.NAME for c in active)}: line {exc.lineno}: {exc.msg}"
        if not _compiles(source, path):
            result.error += " (the original does not compile on this Python either)"
        return _timed(result, start)
    result.status, result.code = "success", code
    result.undefined = new_undefined_names(source, code, path)
    return _timed(result, start)


def _unsettled(findings: list[str], code: str) -> list[str]:
    """The findings without "NAME from removed module M is still used" where the final code no longer
    names NAME at all: a later codemod of the run took the use away (0.5.23's quantization
    CPU_QUANTIZATION_METHODS, read only on CPU, goes as an unused name once its branch folded)."""
    from shrinker.codemods.removed_imports import still_used_name

    kept = []
    for finding in findings:
        name = still_used_name(finding)
        if name is None or re.search(rf"\b{re.escape(name)}\b", code):
            kept.append(finding)
    return kept


def _undefined(code: str, path: str) -> list[tuple[str, int]]:
    from pyflakes import checker, messages

    try:
        tree = ast.parse(code, filename=path)
    except SyntaxError:
        return []
    found = checker.Checker(tree, filename=path).messages
    return [(m.message_args[0], m.lineno) for m in found if isinstance(m, messages.UndefinedName)]


def new_undefined_names(before: str, after: str, path: str) -> list[str]:
    """Uses of names `after` does not define that `before` had no more of (pyflakes UndefinedName)."""
    old = Counter(name for name, _ in _undefined(before, path))
    new = _undefined(after, path)
    counts = Counter(name for name, _ in new)
    return [f"{path}:{line}: `{name}` is used but no longer defined"
            for name, line in new if counts[name] > old.get(name, 0)]


def _compiles(source: str, path: str) -> bool:
    try:
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return True


def _timed(result: FileResult, start: float) -> FileResult:
    result.seconds = time.perf_counter() - start
    return result


# ---------------------------------------------------------------------------------------------
# Many files, in worker processes.

@dataclass(frozen=True)
class FileItem:
    """A file to transform: its path, dotted module name, and its source (read from path if None)."""

    path: str
    module: str
    source: Optional[str] = None


_WORKER: dict = {}


def _init_worker(inputs: CodemodInputs, codemods: Sequence[str]) -> None:
    _WORKER["inputs"], _WORKER["codemods"] = inputs, list(codemods)


def _run_chunk(chunk: list[tuple[int, FileItem]]) -> list[tuple[int, FileResult]]:
    inputs, codemods = _WORKER["inputs"], _WORKER["codemods"]
    out = []
    for index, item in chunk:
        source = item.source if item.source is not None else Path(item.path).read_text(encoding="utf-8")
        out.append((index, transform_source(source, path=item.path, module=item.module,
                                            inputs=inputs, codemods=codemods)))
    return out


def transform_files(items: Iterable[FileItem], inputs: CodemodInputs, codemods: Sequence[str],
                    jobs: int = 2, chunk_size: int = 8,
                    description: str = "codemods") -> list[FileResult]:
    """Transform many files (results in the order of `items`); nothing is written."""
    items = list(items)
    resolve_codemods(codemods)  # bad names fail here, once, before any worker starts
    indexed = list(enumerate(items))
    if jobs > 1:
        # the biggest files first, in chunks small enough that no worker waits long on the last
        # (server_args.py takes seconds where most files take tenths); results keep `items`' order
        indexed.sort(key=lambda pair: -_file_size(pair[1].path))
        chunk_size = max(1, min(chunk_size, len(indexed) // (jobs * 4)))
    chunks = [indexed[i:i + chunk_size] for i in range(0, len(indexed), chunk_size)]
    results: list[Optional[FileResult]] = [None] * len(items)
    with progress(description, total=len(items)) as advance:
        if jobs <= 1 or len(chunks) <= 1:
            _init_worker(inputs, codemods)
            for chunk in chunks:
                for index, res in _run_chunk(chunk):
                    results[index] = res
                advance(len(chunk))
        else:
            with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker,
                                     initargs=(inputs, list(codemods))) as pool:
                futures = [pool.submit(_run_chunk, chunk) for chunk in chunks]
                for future in as_completed(futures):
                    done = future.result()
                    for index, res in done:
                        results[index] = res
                    advance(len(done))
    return [r for r in results if r is not None]


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def summarize(results: Sequence[FileResult]) -> dict:
    """Counts for a report: files per status, changes per codemod, findings, failures."""
    changes: dict[str, int] = {}
    for res in results:
        for key, n in res.changes.items():
            changes[key] = changes.get(key, 0) + n
    return {
        "files": len(results),
        "success": sum(r.status == "success" for r in results),
        "skip": sum(r.status == "skip" for r in results),
        "failure": sum(r.status == "failure" for r in results),
        "changes": dict(sorted(changes.items())),
        "findings": sum(len(r.findings) for r in results),
        "undefined": sum(len(r.undefined) for r in results),
        "failures": [f"{r.path}: {r.error}" for r in results if r.status == "failure"],
        "seconds": round(sum(r.seconds for r in results), 2),
    }
