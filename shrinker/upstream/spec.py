"""Upstream specs: `pypi:sglang==0.5.23` or `git+URL@REF` (the default, when nothing is pinned: the release the project pins)."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_SPEC = "pypi:sglang==0.5.23"

_PYPI = re.compile(r"^pypi:(?P<name>[A-Za-z0-9_.\-]+)==(?P<version>[A-Za-z0-9_.+\-]+)$")
_GIT = re.compile(r"^git\+(?P<url>.+?)@(?P<ref>[^@/]+)$")


@dataclass(frozen=True)
class Spec:
    text: str
    source: str  # "pypi" | "git"
    name: str = ""
    version: str = ""
    url: str = ""
    ref: str = ""

    @property
    def slug(self) -> str:
        """A folder name for this spec in the cache."""
        if self.source == "pypi":
            return f"pypi-{self.name}-{self.version}"
        tail = re.sub(r"[^A-Za-z0-9]+", "-", self.url.rstrip("/").rsplit("/", 1)[-1]).strip("-")
        return f"git-{tail}-{re.sub(r'[^A-Za-z0-9.]+', '-', self.ref)}"


def parse_spec(text: str | None) -> Spec:
    """Parse SPEC; a bad one is a one-line ValueError saying what forms are accepted."""
    text = (text or DEFAULT_SPEC).strip()
    if m := _PYPI.match(text):
        return Spec(text=text, source="pypi", name=m["name"], version=m["version"])
    if m := _GIT.match(text):
        return Spec(text=text, source="git", url=m["url"], ref=m["ref"])
    raise ValueError(
        f"bad upstream spec {text!r}: use 'pypi:sglang==VERSION' or 'git+URL@REF'"
    )
