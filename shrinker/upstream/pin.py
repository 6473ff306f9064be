"""upstream/UPSTREAM.toml: the committed pin (spec, version, artifact hashes, cache commit)."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import tomli_w

from shrinker import paths


@dataclass
class Pin:
    spec: str
    version: str
    commit: str
    artifacts: list[dict] = field(default_factory=list)


def pin_file() -> Path:
    return paths.upstream_dir() / "UPSTREAM.toml"


def read_pin(path: Path | None = None) -> Pin | None:
    path = path or pin_file()
    if not path.exists():
        return None
    data = tomllib.loads(path.read_text())
    return Pin(spec=data["spec"], version=data["version"], commit=data["commit"],
               artifacts=list(data.get("artifacts", [])))


def write_pin(pin: Pin, path: Path | None = None) -> None:
    path = path or pin_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "# The upstream this checkout is pinned to. Written by `shrink upstream fetch`; do not edit.\n"
    path.write_text(header + tomli_w.dumps(asdict(pin)))
