"""Feature candidates for `shrink report cuts`: rules/<profile>-cuts.toml, validated with pydantic.

A feature is a set of kept modules (dotted patterns as in the rules, minus `keep` exceptions) that a
product decision could drop, with the rule it would become and the sites a codemod must rewrite.
The report measures each; nothing here changes the plan (rules/<profile>.toml decides that).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shrinker import paths
from shrinker.rules.load import validate_toml


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Feature(_Strict):
    name: str
    patterns: list[str] = Field(min_length=1, description="Dotted module patterns the cut removes.")
    keep: list[str] = Field(default_factory=list, description="Patterns spared inside `patterns`.")
    story: str = Field(description="Why a DeepSeek-on-NVIDIA user can live without it.")
    rule: str = Field(description="The rule it would become: [[remove]] pattern, registry key, CLI choice.")
    codemods: str = Field(description="What the importer sites are and how a codemod would rewrite them.")
    risk: Literal["low", "medium", "high"]
    recommend: bool = True


class CutFeatures(_Strict):
    feature: list[Feature] = Field(default_factory=list)


def features_path(profile: str) -> Path:
    return paths.project_root() / "rules" / f"{profile}-cuts.toml"


def load_features(profile: str = "deepseek", path: Path | None = None) -> list[Feature]:
    """The profile's feature candidates; none when it has no cuts file."""
    path = path or features_path(profile)
    if not path.exists():
        return []
    return validate_toml(CutFeatures, path).feature
