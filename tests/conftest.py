"""Shared fixtures: the hand-written mini tree, and the real pinned upstream (integration tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shrinker.graph.cache import FactsCache

FIXTURES = Path(__file__).parent / "fixtures"
MINITREE = FIXTURES / "minitree"


@pytest.fixture(autouse=True)
def _offline_distribution_index(request, monkeypatch):
    """Unit tests read no PyPI: a fixture release's distribution index maps each declared distribution
    to its own name (tests/upstream/test_distributions.py covers the real reader with a fake PyPI)."""
    if request.node.get_closest_marker("upstream") is None:
        import shrinker.upstream.distributions as distributions

        monkeypatch.setattr(distributions, "build_index", _offline_index)


def _offline_index(name, version, declared, target, **_):
    from packaging.utils import canonicalize_name

    from shrinker.upstream.distributions import DistIndex, DistInfo

    names = sorted({canonicalize_name(r.name) for r in declared})
    return DistIndex(f"{name}=={version}", "2026-01-01T00:00:00Z", dict(target),
                     {n: DistInfo(n, "1.0", "fixture.whl", [n.replace("-", "_")], [], 1) for n in names})


class FakeUpstream:
    """What the plan stage reads of an Upstream: a tree root, a spec and a version."""

    def __init__(self, root: Path, spec: str = "fixture", version: str = "0"):
        self.root, self.spec, self.version, self.commit = root, spec, version, "0" * 40


@pytest.fixture
def mini_rules():
    from shrinker.rules.load import load_rules

    return load_rules(path=MINITREE / "rules.toml")


@pytest.fixture
def mini_plan(mini_rules, tmp_path):
    from shrinker.graph.build import build_graph
    from shrinker.plan.batches import make_batches
    from shrinker.plan.decide import decide
    from shrinker.plan.reach import compute_reach

    graph = build_graph(MINITREE, jobs=1, cache=FactsCache(tmp_path / "facts.pickle"))
    reach = compute_reach(graph, mini_rules)
    decisions, category = decide(graph, reach, mini_rules)
    batches = make_batches(graph, reach, mini_rules, decisions)
    return {"graph": graph, "reach": reach, "decisions": {d.path: d for d in decisions},
            "category": category, "batches": batches, "rules": mini_rules}


@pytest.fixture(scope="session")
def real_upstream():
    """The pinned release as `make plan` fetches it (sglang + sglang-kernel wheels, once, cached)."""
    from shrinker.errors import ShrinkError
    from shrinker.upstream import fetch, load
    from shrinker.upstream.pin import read_pin

    pin = read_pin()
    try:
        return load()
    except ShrinkError:
        pass
    try:
        return fetch(pin.spec if pin else None, pin=False)
    except ShrinkError as exc:
        pytest.skip(f"upstream not available: {exc}")
