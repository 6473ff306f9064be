"""Evidence that a new upstream registry key needs a person: kept code that serves the kept
architectures names it.

A registry's `keep` list is an allowlist, so a new key it does not name is removed by the rules
already; regen reports that as decided. Only where a kept file matching the rules' `[regen]
signal_paths` names the key as a string literal (`attention_backend = "newattn"` in ServerArgs'
auto-selection, a parser name in a kept DeepSeek model) may the removal break a kept deployment:
then a person is asked, with the lines that named it.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from pathlib import Path


def key_evidence(tree: Path, kept_paths: set[str], signal_paths: list[str],
                 keys: dict[str, list[str]]) -> dict[tuple[str, str], list[str]]:
    """(registry, key) -> up to three "path:line" places where a kept signal file names the key."""
    files = sorted(p for p in kept_paths if any(fnmatchcase(p, g) for g in signal_paths))
    wanted = {key for ks in keys.values() for key in ks}
    if not files or not wanted:
        return {}
    literal = re.compile(r"""(["'])(""" + "|".join(map(re.escape, sorted(wanted, key=len, reverse=True))) + r")\1")
    places: dict[str, list[str]] = {}
    for path in files:
        for n, line in enumerate((tree / path).read_text(errors="replace").splitlines(), 1):
            for m in literal.finditer(line):
                found = places.setdefault(m.group(2), [])
                if len(found) < 3:
                    found.append(f"{path}:{n}")
    return {(reg, key): places[key] for reg, ks in keys.items() for key in ks if key in places}
