"""Turn a wheel's METADATA into the `pyproject.toml` the GitHub layout has, and find the kernel pin."""

from __future__ import annotations

from email.parser import Parser

import tomli_w
from packaging.requirements import Requirement

KERNEL_DISTRIBUTIONS = ("sglang-kernel", "sgl-kernel")


def _parse(metadata: str):
    return Parser().parsestr(metadata)


def pyproject_from_metadata(metadata: str) -> str:
    """A `[project]` table with name, version, requires-python, dependencies and extras."""
    msg = _parse(metadata)
    deps: list[str] = []
    extras: dict[str, list[str]] = {}
    for raw in msg.get_all("Requires-Dist") or []:
        req = Requirement(raw)
        marker = str(req.marker) if req.marker else ""
        if "extra ==" in marker:
            extra = marker.split("extra ==", 1)[1].strip().strip("'\"")
            req.marker = None
            extras.setdefault(extra, []).append(str(req))
        else:
            deps.append(raw.strip())
    project: dict = {"name": msg["Name"], "version": msg["Version"]}
    if msg.get("Requires-Python"):
        project["requires-python"] = msg["Requires-Python"]
    project["dependencies"] = deps
    if extras:
        project["optional-dependencies"] = extras
    header = "# Made by shrinker from the wheel's METADATA (the PyPI artifact has no pyproject.toml).\n"
    return header + tomli_w.dumps({"project": project})


def kernel_requirement(metadata: str) -> str | None:
    """`sglang-kernel==X` as upstream pins it, or None when it pins no exact kernel version."""
    for raw in _parse(metadata).get_all("Requires-Dist") or []:
        req = Requirement(raw)
        if req.name.lower() in KERNEL_DISTRIBUTIONS and req.marker is None:
            pins = [s.version for s in req.specifier if s.operator == "=="]
            if pins:
                return f"{req.name}=={pins[0]}"
    return None
