"""The JIT kernels' C++/CUDA sources: which files there are, what each includes, what a name resolves to.

A Python module names a source relative to a source root (`load_jit(..., cuda_files=["elementwise/add3.cuh"])`,
resolved against `csrc/`), a source includes others (`#include "utils.cuh"` beside it, `<sgl_kernel/utils.h>`
under `include/`, or `<kerutils/...>` under a folder a module passes as an include path). `SourceIndex`
resolves both kinds of name: relative to the including file's folder, then to each root, else as a path
suffix (an include path a module passes is a folder somewhere in the tree: every source the name may be
counts). System headers resolve to nothing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.MULTILINE)


def includes(text: str) -> list[str]:
    """The names a C/C++ source includes, in order (quoted and angle-bracketed alike)."""
    return _INCLUDE.findall(text)


class SourceIndex:
    """The sources under the JIT roots of a tree (tree paths), and name resolution over them."""

    def __init__(self, roots: list[str], sources: list[str]):
        self.roots = [r.rstrip("/") for r in roots]
        self.sources = sorted(sources)
        self._set = set(self.sources)
        self._by_base: dict[str, list[str]] = defaultdict(list)
        for path in self.sources:
            self._by_base[path.rsplit("/", 1)[-1]].append(path)

    def root_of(self, path: str) -> str:
        return next((r for r in self.roots if path.startswith(r + "/")), "")

    def resolve(self, name: str, beside: str = "") -> list[str]:
        """The sources `name` may be: beside `beside` (an including file), under a root, else every
        source whose path ends with it. A glob (`c*_v2.cuh`) matches root-relative paths."""
        name = name.strip()
        if "*" in name:
            return [p for p in self.sources if fnmatchcase(p, f"*/{name}")]  # `*` may span folders: more, never less
        if beside:
            near = str(PurePosixPath(beside).parent / name)
            near = _normalise(near)
            if near in self._set:
                return [near]
        for root in self.roots:
            candidate = _normalise(f"{root}/{name}")
            if candidate in self._set:
                return [candidate]
        base = name.rsplit("/", 1)[-1]
        return [p for p in self._by_base.get(base, []) if p.endswith("/" + name.lstrip("./"))]


def _normalise(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return "/".join(parts)


def read_includes(tree: Path, sources: list[str]) -> dict[str, list[str]]:
    """tree path -> the names it includes, for every source."""
    return {p: includes((tree / p).read_text(errors="replace")) for p in sources}
