"""Which distribution provides an import name, and which distributions a tree declares.

The map comes from importlib.metadata.packages_distributions() in the verify environment (where
sglang's import-time packages are installed). A declared distribution that is not installed there
(GPU-only packages: flashinfer-python, sgl-deep-gemm ...) is matched by name: the import name's
canonical form equals the distribution's, or is a run of its dash-separated words
(`flashinfer` in `flashinfer-python`, `deep-gemm` in `sgl-deep-gemm`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from functools import lru_cache
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

_PROBE = ("import json, importlib.metadata as m; "
          "print(json.dumps({k: sorted(set(v)) for k, v in m.packages_distributions().items()}))")


@lru_cache(maxsize=4)
def packages_distributions(python: str | None = None) -> dict[str, list[str]]:
    """top-level import name -> canonical distribution names, as seen by `python`."""
    proc = subprocess.run([python or sys.executable, "-c", _PROBE], capture_output=True, text=True)
    if proc.returncode != 0:
        return {}
    raw = json.loads(proc.stdout)
    return {k: sorted({canonicalize_name(d) for d in v}) for k, v in raw.items()}


def declared_distributions(pyproject: Path) -> set[str]:
    """Canonical names in [project] dependencies (markers ignored: declared on some platform)."""
    if not pyproject.exists():
        return set()
    data = tomllib.loads(pyproject.read_text())
    names = set()
    for text in data.get("project", {}).get("dependencies", []):
        try:
            names.add(canonicalize_name(Requirement(text).name))
        except InvalidRequirement:
            continue
    return names


def _words_match(import_name: str, dist: str) -> bool:
    words, target = dist.split("-"), canonicalize_name(import_name).split("-")
    n = len(target)
    return any(words[i:i + n] == target for i in range(len(words) - n + 1))


def provided_by(import_name: str, declared: set[str], dist_map: dict[str, list[str]]) -> str | None:
    """The declared distribution providing `import_name`, or None."""
    for dist in dist_map.get(import_name, []):
        if dist in declared:
            return dist
    if import_name in dist_map:  # installed, and from a distribution the tree does not declare
        return None
    if canonicalize_name(import_name) in declared:  # an exact name wins over a run of words
        return canonicalize_name(import_name)  # (`kernels` is kernels, not humming-kernels)
    for dist in sorted(declared):
        if _words_match(import_name, dist):
            return dist
    return None
