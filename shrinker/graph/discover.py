"""Find the files of an upstream tree and the module name of each .py under the import roots."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from shrinker.errors import ShrinkError

# Import roots of the GitHub layout, relative to the tree root.
IMPORT_ROOTS = ("python", "sgl-kernel/python")


@dataclass(frozen=True)
class SourceFile:
    path: str  # relative to the tree root, posix ("python/sglang/srt/server_args.py")
    import_root: str  # "python" | "sgl-kernel/python" | "" when outside the import roots
    module: str  # dotted module name for .py under an import root, else ""
    is_package: bool

    @property
    def is_python(self) -> bool:
        return self.path.endswith(".py") and bool(self.module)


def module_name(rel: str) -> tuple[str, bool]:
    """`sglang/srt/__init__.py` → ("sglang.srt", True); `sglang/a.py` → ("sglang.a", False)."""
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def module_of(path: str) -> str:
    """The dotted module of a tree path (`python/sglang/a.py` -> `sglang.a`), "" outside the import roots."""
    for root in sorted(IMPORT_ROOTS, key=len, reverse=True):
        if path.startswith(root + "/") and path.endswith(".py"):
            return module_name(path[len(root) + 1:])[0]
    return ""


def module_paths(module: str) -> list[str]:
    """The tree paths `module` may have, one per import root and form (`a/b.py`, `a/b/__init__.py`):
    the inverse of module_name, for looking a rule's `module:qualname` up without scanning the tree."""
    rel = module.replace(".", "/")
    return [f"{root}/{rel}{tail}" for root in IMPORT_ROOTS for tail in (".py", "/__init__.py")]


def discover(tree: Path) -> list[SourceFile]:
    """Every file of the tree except .git, sorted by path (the order every output uses)."""
    found: list[SourceFile] = []
    roots = [r for r in IMPORT_ROOTS if (tree / r).is_dir()]
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = sorted(d for d in dirnames if d not in (".git", "__pycache__"))
        rel_dir = Path(dirpath).relative_to(tree).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        for name in filenames:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            root = next((r for r in roots if rel.startswith(r + "/")), "")
            module, is_package = "", False
            if root and name.endswith(".py"):
                inner = rel[len(root) + 1:]
                if all(p.isidentifier() for p in inner[:-3].split("/")):
                    module, is_package = module_name(inner)
            found.append(SourceFile(rel, root, module, is_package))
    found.sort(key=lambda f: f.path)
    return found


def module_file(tree: Path, module: str) -> str:
    """The tree path of `module` under one of the import roots (ShrinkError: none holds it)."""
    for candidate in module_paths(module):
        if (tree / candidate).is_file():
            return candidate
    raise ShrinkError(f"{module} is in no import root of {tree}")


def path_candidates(path: str) -> list[str]:
    """A path as given (`python/sglang/x.py`) or relative to an import root (`sglang/x.py`): the tree
    paths it may name, the path itself first."""
    return [path, *(f"{root}/{path}" for root in IMPORT_ROOTS)]
