"""Where things live, relative to the project root (overridable for tests)."""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    """The shrinker checkout: SHRINK_ROOT, else the folder holding rules/ above this package."""
    env = os.environ.get("SHRINK_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve().parent.parent
    return here


def rules_dir() -> Path:
    return project_root() / "rules"


def upstream_dir() -> Path:
    return project_root() / "upstream"


def cache_dir() -> Path:
    """Git-ignored downloads, unpacked upstream trees and parse caches."""
    env = os.environ.get("SHRINK_CACHE")
    return Path(env).resolve() if env else upstream_dir() / "cache"


def manifests_dir(profile: str, version: str) -> Path:
    return project_root() / "manifests" / profile / f"v{version}"


def reports_dir(profile: str | None = None, version: str | None = None) -> Path:
    base = project_root() / "reports"
    if profile:
        base = base / profile
    if version:
        base = base / f"v{version}"
    return base


def work_tree_dir(profile: str, version: str) -> Path:
    return project_root() / "build" / f"{profile}-v{version}"


def project_label(path: Path) -> str:
    """A path as reports print it: relative to the project when inside it (reports carry no machine paths)."""
    path = Path(os.path.abspath(path))  # no resolve(): a venv's bin/python is a symlink
    try:
        return path.relative_to(project_root()).as_posix()
    except ValueError:
        return path.as_posix()
