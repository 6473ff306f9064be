"""Load rules/<profile>.toml into the schema; errors are one line naming the file and the field."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import ValidationError

from shrinker import paths
from shrinker.errors import ShrinkError
from shrinker.rules.schema import Rules


def rules_path(profile: str) -> Path:
    return paths.rules_dir() / f"{profile}.toml"


def load_rules(profile: str = "deepseek", path: Path | None = None) -> Rules:
    path = path or rules_path(profile)
    if not path.exists():
        known = sorted(p.stem for p in path.parent.glob("*.toml")) if path.parent.exists() else []
        raise ShrinkError(f"no rules file {path} (profiles here: {', '.join(known) or 'none'})")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ShrinkError(f"{path}: not valid TOML: {exc}") from None
    try:
        return Rules.model_validate({**data, "source": str(path)})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ShrinkError(f"{path}: {where}: {first['msg']}{more}") from None
