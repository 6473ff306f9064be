"""A sandbox project for apply tests: the mini tree as a git upstream, its rules as profile `mini`, a plan."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Callable

from tests.conftest import MINITREE


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


def mini_rules() -> str:
    """The mini tree's rules with the batches apply tests use.

    The platform fold removes the `if is_npu():` import of the deleted NPU module; the last batch
    prunes the registries (ascend backend, gguf) and the imports of what it deletes.
    """
    text = (MINITREE / "rules.toml").read_text()
    text = text.replace('codemods = ["fold_platform", "remove_dead_imports"]', 'codemods = ["fold_platform"]')
    return text.replace('codemods = ["remove_dead_imports"]', 'codemods = ["prune_registries", "remove_dead_imports"]')


def make_project(tmp_path: Path, monkeypatch, rules: str, symbol_rules: str | None = None,
                 edit_origin: Callable[[Path], None] | None = None) -> dict:
    """Write the rules, make the upstream git repo (edited by `edit_origin` first), fetch it and plan."""
    root = tmp_path / "proj"
    (root / "rules").mkdir(parents=True)
    (root / "rules" / "mini.toml").write_text(rules)
    if symbol_rules is not None:
        (root / "rules" / "mini-symbols.toml").write_text(symbol_rules)
    monkeypatch.setenv("SHRINK_ROOT", str(root))
    monkeypatch.setenv("SHRINK_CACHE", str(tmp_path / "cache"))
    origin = tmp_path / "origin"
    shutil.copytree(MINITREE, origin, ignore=shutil.ignore_patterns("rules.toml"))
    if edit_origin is not None:
        edit_origin(origin)
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "v1")
    from shrinker.plan.run import make_plan
    from shrinker.upstream import fetch

    up = fetch(f"git+file://{origin}@main")
    make_plan("mini", jobs=1)
    return {"root": root, "upstream": up}
