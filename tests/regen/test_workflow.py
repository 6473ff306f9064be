"""The scheduled workflow calls the command the tests cover, and adopts what regen writes."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_regen_workflow_runs_the_tested_command():
    text = (ROOT / ".github/workflows/regen.yml").read_text()
    assert "schedule:" in text and "workflow_dispatch:" in text
    assert ".venv/bin/shrink regen" in text and "--adopt" in text
    for path in ("upstream/UPSTREAM.toml", "manifests/", "reports/"):
        assert path in text
    assert "regen:" in (ROOT / "Makefile").read_text()
