from __future__ import annotations

import json
from pathlib import Path

from shrinker.verify.report import render_markdown, write_report
from shrinker.verify.result import CheckResult, VerifyResult


def test_report_counts_regressions_and_notes(tmp_path):
    result = VerifyResult(tree=Path("/t"), upstream_root=Path("/u"), seconds=12.5, checks=[
        CheckResult("imports", passed=False, counts={"import_upstream": 10, "import_pruned": 9},
                    findings=["a.py:1 m imports in upstream but not pruned"], seconds=3.0),
        CheckResult("cli", passed=True, counts={"removed_explained": 1}, notes=["option --x removed (rule)"]),
    ])
    json_path, md_path = write_report(result, tmp_path)
    data = json.loads(json_path.read_text())
    assert data["passed"] is False and data["regressions"] == 1 and data["seconds"] == 12.5
    assert data["checks"][0]["counts"] == {"import_upstream": 10, "import_pruned": 9}
    md = md_path.read_text()
    assert "| imports | FAIL | import_upstream 10, import_pruned 9 | 3.0 |" in md
    assert "## cli: notes (1, not failures)" in md and "**FAILED**, 1 regressions" in render_markdown(result)
    assert "environment" not in data and "- environment:" not in md  # static checks only: none


def test_report_names_the_environment_and_the_release_pins(tmp_path):
    result = VerifyResult(tree=Path("/t"), upstream_root=Path("/u"), environment={
        "torch": "2.13.0+cpu", "release_pins": ["transformers==5.19.0"], "held_pins": ["torch==2.14.1"]})
    json_path, md_path = write_report(result, tmp_path)
    assert json.loads(json_path.read_text())["environment"]["held_pins"] == ["torch==2.14.1"]
    md = md_path.read_text()
    assert "- environment: torch 2.13.0+cpu (the release pins torch==2.14.1: not installed" in md
    assert "the release's own pins: transformers==5.19.0" in md
    same = VerifyResult(tree=Path("/t"), upstream_root=Path("/u"), environment={
        "torch": "2.13.0+cpu", "release_pins": [], "held_pins": []})
    assert "- environment: torch 2.13.0+cpu; the release's own pins: none beyond the base list" in render_markdown(same)


def test_needs_cuda_findings_become_notes() -> None:
    from shrinker.verify.run import split_needs_cuda

    findings = ["a.py:1 ServerArgs works upstream but fails pruned: No module named 'common_ops'",
                "b.py:1 ServerArgs works upstream but fails pruned: NameError: name 'x' is not defined"]
    real, notes = split_needs_cuda(findings, ["No module named 'common_ops'"])
    assert real == [findings[1]]
    assert notes == [f"needs CUDA, not comparable on this machine: {findings[0]}"]
