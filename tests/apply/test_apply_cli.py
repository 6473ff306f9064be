"""`shrink apply --upstream SPEC`: the plan of the release a user runs, not only the pin's."""

from typer.testing import CliRunner

from shrinker.cli import app


def test_apply_passes_the_upstream_spec(monkeypatch) -> None:
    seen: dict = {}

    def fake_apply_batches(profile, **kwargs):
        seen.update(kwargs, profile=profile)
        return []

    monkeypatch.setattr("shrinker.apply.run.apply_batches", fake_apply_batches)
    result = CliRunner().invoke(app, ["apply", "--all", "--upstream", "pypi:sglang==0.5.17"])
    assert result.exit_code == 0, result.output
    assert seen["spec"] == "pypi:sglang==0.5.17" and seen["all_batches"] is True
    CliRunner().invoke(app, ["apply", "--all"])
    assert seen["spec"] is None  # the pin
