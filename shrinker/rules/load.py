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
    return validate_toml(Rules, path, lambda data: {**data, "source": str(path)})


def validate_toml(model, path: Path, shape=lambda data: data, where_prefix: str = ""):
    """Read TOML at `path` and validate it as pydantic `model`: any error is one line naming the field."""
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ShrinkError(f"{path}: not valid TOML: {exc}") from None
    try:
        return model.model_validate(shape(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ShrinkError(f"{path}: {where_prefix}{where}: {first['msg']}{more}") from None
