"""The tool's own work tree: a git clone of the upstream cache on branch `deepseek-only`.

The upstream cache is only ever read (cloned); every write goes to this clone, one commit per batch.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import git

from shrinker.errors import ShrinkError
from shrinker.upstream.fetch import FIXED_DATE

BRANCH = "deepseek-only"
_BATCH_SUBJECT = re.compile(r"^shrink: batch (\d+) ")
_PASS = re.compile(r"\(pass (\d+)")
# The trailer a symbol batch's newest pass commit gets when a later pass fails its gate: the batch stopped
# before its fixpoint, and the next `apply --all` resumes it at the failed pass. (Marked on failure, so a run
# that passes makes the same commits, the same hashes, as ever.)
STOPPED = "Batch: stopped before its fixpoint"
# Fixed names and dates (as the upstream cache's commit has): the same batches give the same commit
# hashes on every machine, so reports that name a work-tree commit are the same bytes too.
AUTHOR = {"GIT_AUTHOR_NAME": "shrinker", "GIT_AUTHOR_EMAIL": "shrinker@localhost",
          "GIT_COMMITTER_NAME": "shrinker", "GIT_COMMITTER_EMAIL": "shrinker@localhost",
          "GIT_AUTHOR_DATE": FIXED_DATE, "GIT_COMMITTER_DATE": FIXED_DATE}


def open_worktree(path: Path, upstream_root: Path, upstream_commit: str, *, reset: bool = False) -> git.Repo:
    """Open the work tree, creating it (or re-creating it with reset=True) from the upstream commit."""
    if reset and path.exists():
        shutil.rmtree(path)
    if not (path / ".git").exists():
        if path.exists() and any(path.iterdir()):
            raise ShrinkError(f"{path} exists and is not a shrinker work tree: move it away or use --reset")
        path.parent.mkdir(parents=True, exist_ok=True)
        repo = git.Repo.clone_from(str(upstream_root), str(path), no_checkout=True)
        repo.git.checkout("-q", "-b", BRANCH, upstream_commit)
        return repo
    repo = git.Repo(path)
    first = repo.git.rev_list("--max-parents=0", "HEAD").split()[0]
    if first != upstream_commit:
        raise ShrinkError(f"{path} was made from another upstream ({first[:12]}, pin is {upstream_commit[:12]}): "
                          "use --reset")
    return repo


def applied_batches(repo: git.Repo) -> list[int]:
    """Batch numbers committed on the work tree, oldest first."""
    numbers = []
    for commit in repo.iter_commits("HEAD"):
        m = _BATCH_SUBJECT.match(commit.summary)
        if m:
            numbers.append(int(m.group(1)))
    return sorted(set(numbers))  # a symbol batch commits once per pass


def open_symbol_batch(repo: git.Repo) -> tuple[int, int] | None:
    """(batch, the pass to resume at) when the work tree's newest commit is a symbol batch's pass that a later
    pass's failure marked STOPPED; None otherwise."""
    head = repo.head.commit
    m, p = _BATCH_SUBJECT.match(head.summary), _PASS.search(head.summary)
    if m and p and STOPPED in head.message.splitlines():
        return int(m.group(1)), int(p.group(1)) + 1
    return None


def mark_stopped(repo: git.Repo) -> tuple[str, str]:
    """Add the STOPPED trailer to the newest commit (the tool's own work tree only); (old, new) commit."""
    old = repo.head.commit.hexsha
    message = repo.head.commit.message.rstrip("\n")
    if STOPPED not in message.splitlines():
        with repo.git.custom_environment(**AUTHOR):
            repo.git.commit("-q", "--amend", "--no-verify", "--no-gpg-sign", "--allow-empty",
                            "-m", f"{message}\n{STOPPED}")
    return old, repo.head.commit.hexsha


def commit_all(repo: git.Repo, message: str) -> str:
    with repo.git.custom_environment(**AUTHOR):
        repo.git.add("-A")
        repo.git.commit("-q", "--no-verify", "--no-gpg-sign", "--allow-empty", "-m", message)
    return repo.head.commit.hexsha


def roll_back(repo: git.Repo) -> None:
    """Back to the last commit: only ever run on the tool's own work tree."""
    repo.git.reset("-q", "--hard", "HEAD")
    repo.git.clean("-q", "-fd")


def keep_on_branch(repo: git.Repo, branch: str, message: str) -> str:
    """Commit the current (failed) state on `branch` without moving HEAD; returns the commit."""
    with repo.git.custom_environment(**AUTHOR):
        repo.git.add("-A")
        tree = repo.git.write_tree()
        commit = repo.git.commit_tree(tree, "-p", "HEAD", "-m", message)
    repo.git.branch("-f", branch, commit)
    return commit
