"""Which work-tree commit removed a symbol (`shrink why MODULE:SYMBOL` for one that is gone).

Apply commits every batch to the work tree's git history, the upstream import first. A symbol that
upstream defines and the tree no longer does went in exactly one of those commits: the first whose
file (parsed with `ast`) lacks it, or deletes the whole file. The commit's subject names the batch
(`shrink: batch 7 — dead symbols (pass 1)`), which is the readable reason; the caller adds the rule
when the symbol was an entry of an attribute table.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import git


@dataclass
class Removal:
    path: str  # the file, relative to the tree
    line: int  # where the last commit that had it defined it
    commit: str
    subject: str
    file_deleted: bool


def defines(source: str, qualname: str) -> Optional[int]:
    """The line of `qualname` (`name`, `Class.member`) in module `source`: a def, class or assignment
    at module level, or one in the class body for a member; None when absent."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return None
    *classes, name = qualname.split(".")
    for part in classes:
        body = next((n.body for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if body is None:
            return None
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return node.lineno
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return node.lineno
    return None


def removed_in(tree: Path, paths: Iterable[str], qualname: str) -> Optional[Removal]:
    """The commit of the work tree at `tree` that removed `qualname` from the first of `paths` (the
    module's candidate files) that some commit held; None when no commit ever defined it there or
    the tree is no git repository."""
    try:
        repo = git.Repo(tree)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    commits = list(reversed(list(repo.iter_commits())))  # oldest (the upstream import) first
    for path in paths:
        last: Optional[tuple[git.Commit, int]] = None
        for commit in commits:
            try:
                blob = commit.tree / path
            except KeyError:
                if last:
                    return Removal(path, last[1], commit.hexsha, commit.summary, True)
                continue
            line = defines(blob.data_stream.read().decode("utf-8", "replace"), qualname)
            if line is None and last:
                return Removal(path, last[1], commit.hexsha, commit.summary, False)
            if line is not None:
                last = (commit, line)
    return None
