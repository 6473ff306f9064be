"""What a verify run returns: one CheckResult per check, gathered in a VerifyResult."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from shrinker.paths import project_label


@dataclass
class CheckResult:
    """One check. `findings` are regressions ("path:line message"); `notes` are kept for the report
    but do not fail the check (e.g. guarded imports of removed modules, options a rule explains)."""

    name: str
    passed: bool
    counts: dict[str, int] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    skipped: str = ""  # why the check did not run (the profile's verify data asks for nothing)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class VerifyResult:
    tree: Path
    upstream_root: Path
    checks: list[CheckResult] = field(default_factory=list)
    seconds: float = 0.0
    # the dynamic checks' environment: {"torch": version, "release_pins": the lines the release's own
    # pins changed from the base list, "held_pins": its pins the environment does not take (torch)};
    # None when only static checks ran
    environment: dict | None = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def regressions(self) -> int:
        return sum(len(c.findings) for c in self.checks)

    def check(self, name: str) -> CheckResult:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_json(self) -> dict:
        return {
            "tree": project_label(self.tree),  # relative to the project: reports carry no machine paths
            "upstream_root": project_label(self.upstream_root),
            "passed": self.passed,
            "regressions": self.regressions,
            "seconds": round(self.seconds, 2),
            "checks": [c.to_json() for c in self.checks],
            **({"environment": self.environment} if self.environment is not None else {}),
        }
