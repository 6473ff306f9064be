"""A source tree laid out like SGLang's GitHub repo, seen as importable modules.

Import roots: <root>/python (the `sglang` package, or any packages there) and
<root>/sgl-kernel/python (the `sgl_kernel` package) when present. Modules are .py files, compiled
extensions (.so) and folders that Python can import (regular or namespace packages).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from shrinker.errors import ShrinkError
from shrinker.graph.discover import IMPORT_ROOTS

SKIP_DIRS = {"__pycache__", ".git"}


@dataclass(frozen=True)
class ModuleFile:
    name: str  # dotted
    path: Path  # absolute; a folder for a namespace package
    rel: str  # path relative to the tree root, as findings name it
    kind: str  # "source" | "package" | "namespace" | "extension"

    @property
    def is_package(self) -> bool:
        return self.kind in ("package", "namespace")


@dataclass
class SourceTree:
    root: Path
    modules: dict[str, ModuleFile] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path, packages: tuple[str, ...] | None = None) -> "SourceTree":
        """Index every top-level package under the import roots (or only `packages`)."""
        root = Path(root).resolve()
        if not (root / "python").is_dir():
            raise ShrinkError(f"{root} is not a source tree: no python/ folder")
        tree = cls(root=root)
        for rel_root in IMPORT_ROOTS:
            base = root / rel_root
            if not base.is_dir():
                continue
            for top in sorted(base.iterdir()):
                if not top.is_dir() or top.name in SKIP_DIRS or not top.name.isidentifier():
                    continue
                if packages is not None and top.name not in packages:
                    continue
                if not any(top.rglob("*.py")):
                    continue
                tree._index_package(base, top)
        if not tree.modules:
            raise ShrinkError(f"{root}: no Python packages under {', '.join(IMPORT_ROOTS)}")
        return tree

    def _index_package(self, base: Path, top: Path) -> None:
        # A folder that holds no file is no module: git keeps no empty folders, so whether a deletion's
        # folder is still there would depend on the work tree's history (a rollback's `git clean` removes it).
        holding = _folders_holding_files(top)
        stack = [top]
        while stack:
            folder = stack.pop()
            parts = folder.relative_to(base).parts
            init = folder / "__init__.py"
            dotted = ".".join(parts)
            if init.exists():
                self._add(dotted, init, "package")
            else:
                self._add(dotted, folder, "namespace")
            for entry in sorted(folder.iterdir()):
                if entry.is_dir():
                    if entry.name not in SKIP_DIRS and entry.name.isidentifier() and entry in holding:
                        stack.append(entry)
                elif entry.suffix == ".py" and entry.name != "__init__.py" and entry.stem.isidentifier():
                    self._add(f"{dotted}.{entry.stem}", entry, "source")
                elif entry.suffix == ".so" and entry.name.split(".")[0].isidentifier():
                    name = f"{dotted}.{entry.name.split('.')[0]}"
                    if name not in self.modules:
                        self._add(name, entry, "extension")

    def _add(self, name: str, path: Path, kind: str) -> None:
        self.modules[name] = ModuleFile(name, path, path.relative_to(self.root).as_posix(), kind)

    @cached_property
    def top_packages(self) -> set[str]:
        return {name.split(".")[0] for name in self.modules}

    @property
    def sources(self) -> list[ModuleFile]:
        """Modules with Python source (packages' __init__.py included), sorted by name."""
        return sorted((m for m in self.modules.values() if m.kind in ("source", "package")),
                      key=lambda m: m.name)

    def import_root(self, module: str) -> Path:
        m = self.modules[module.split(".")[0]]
        return m.path.parent.parent if m.kind == "package" else m.path.parent

    def has(self, module: str) -> bool:
        return module in self.modules

    def rel(self, name: str) -> str:
        return self.modules[name].rel


def content_hash(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def _folders_holding_files(top: Path) -> set[Path]:
    """The folders under `top` (itself included) with at least one file somewhere beneath them."""
    holding: set[Path] = set()
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        if files:
            path = Path(folder)
            while path not in holding:
                holding.add(path)
                if path == top:
                    break
                path = path.parent
    return holding
