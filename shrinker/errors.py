"""Errors the CLI turns into one line and an exit code (never a traceback)."""

from __future__ import annotations


class ShrinkError(Exception):
    """A user-facing failure: bad input, missing upstream, no network ... (exit 2)."""

    exit_code = 2


class CheckFailed(ShrinkError):
    """A verification found problems (exit 1): the report says which."""

    exit_code = 1
