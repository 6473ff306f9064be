"""Behaviour check: recorded inputs through each tree's parsers and protocol models, compared."""

from __future__ import annotations

import json

from shrinker.verify import verify_tree
from shrinker.verify.behaviour import compare_cases, load_cases
from tests.verify.conftest import edit


def _run(pruned, upstream, env, surface):
    return verify_tree(pruned, upstream, checks=["behaviour"], env=env, surface=surface).check("behaviour")


def test_unmodified_tree_identical(trees, fake_env, surface):
    upstream, pruned = trees
    check = _run(pruned, upstream, fake_env, surface)
    assert check.passed, check.findings
    assert check.counts["cases"] == check.counts["identical"] == 5
    assert check.counts["raised_upstream"] == 0


def test_dropped_reasoning_parser_is_caught(trees, fake_env, surface):
    upstream, pruned = trees
    edit(pruned / "python/sglang/srt/parser/reasoning_parser.py", '{"deepseek-r1": DeepSeekR1Detector, ', "{")
    check = _run(pruned, upstream, fake_env, surface)
    assert check.findings == ["behaviour:1 case reason_r1: works upstream, pruned raises "
                              "ValueError: Unsupported model type: deepseek-r1"]


def test_a_server_that_cannot_start_is_caught(trees, fake_env, surface):
    # session 24: the rules removed the Whisper transcription adapter, the default every server's
    # /v1/audio/transcriptions handler resolves at start-up; no pruned server started on the GPU
    upstream, pruned = trees
    edit(pruned / "python/sglang/srt/entrypoints/openai/transcription_adapters/__init__.py",
         "from sglang.srt.entrypoints.openai.transcription_adapters.whisper import WhisperAdapter  # noqa: F401\n", "")
    check = _run(pruned, upstream, fake_env, surface)
    assert check.findings == ["behaviour:1 case startup_transcription_adapter: works upstream, pruned raises "
                              "RuntimeError: No transcription adapters registered."]


def test_changed_parser_output_is_caught(trees, fake_env, surface):
    upstream, pruned = trees
    edit(pruned / "python/sglang/srt/function_call/deepseekv3_detector.py",
         "return StreamingParseResult(normal_text=normal, calls=calls)",
         "return StreamingParseResult(normal_text=normal.strip('.'), calls=calls)")
    check = _run(pruned, upstream, fake_env, surface)
    assert len(check.findings) == 1
    assert "case tool_v3" in check.findings[0] and '"Checking."' in check.findings[0]


def test_compare_cases_points_at_first_difference():
    up = {"a": {"x": [1, {"y": "same"}]}, "b": {"z": 1}, "c": {"raised": "E", "message": "m"}}
    pr = {"a": {"x": [1, {"y": "other"}]}, "b": {"z": 1}}
    findings, counts = compare_cases(up, pr, "behaviour")
    assert findings == ['behaviour:1 case a: upstream and pruned differ at .x[1].y: "same" vs "other" (upstream vs pruned)',
                        "behaviour:1 case c: no result pruned"]
    assert counts == {"cases": 3, "identical": 1, "raised_upstream": 1}


def test_recorded_chunks_join_to_the_text():
    data = load_cases("behaviour_cases.json")
    kinds = {c["kind"] for c in data["cases"]}
    assert {"tool_call", "reasoning", "dsv32_encode", "dsv32_decode", "template", "protocol",
            "transcription_adapter"} <= kinds
    for case in data["cases"]:
        if "chunks" in case:
            assert "".join(case["chunks"]) == case["text"], case["id"]
    parsers = {c["parser"] for c in data["cases"] if c["kind"] in ("tool_call", "reasoning")}
    assert {"deepseekv3", "deepseekv31", "deepseekv32", "deepseekv4", "deepseek-r1", "deepseek-v3",
            "deepseek-v4"} <= parsers  # every DeepSeek text model's parsers (V4's since issue 16)
    v4 = [c for c in data["cases"] if c.get("parser") == "deepseekv4"]
    assert any("<｜DSML｜tool_calls>" in c["text"] for c in v4) and any("function_calls" in c["text"] for c in v4)
    texts = json.dumps(data, ensure_ascii=False)
    assert "<｜tool▁calls▁begin｜>" in texts and "<think>" in texts and "｜DSML｜" in texts

