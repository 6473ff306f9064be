"""Comparison logic: identical vs differing token ids; JSON equal apart from ids, timestamps, latencies."""

from __future__ import annotations

import json
from pathlib import Path

from shrinker.gpu import compare


def _gen(ids, logprobs=None, latency=0.1):
    meta = {"id": "abc", "finish_reason": {"type": "length", "length": len(ids)}, "prompt_tokens": 5,
            "completion_tokens": len(ids), "e2e_latency": latency}
    if logprobs is not None:
        meta["output_token_logprobs"] = [[lp, i, None] for lp, i in zip(logprobs, ids)]
    return {"text": "t", "output_ids": ids, "meta_info": meta}


def test_identical_token_ids_pass_despite_latency_and_ids():
    a = compare.normalize("/generate", [_gen([1, 2, 3], latency=0.1), _gen([4, 5])])
    b = compare.normalize("/generate", [_gen([1, 2, 3], latency=9.0), _gen([4, 5])])
    assert compare.compare_answers(a, b) == ("pass", "identical")


def test_differing_token_ids_fail_with_the_place():
    a = compare.normalize("/generate", [_gen([1, 2, 3]), _gen([4, 5])])
    b = compare.normalize("/generate", [_gen([1, 2, 3]), _gen([4, 6])])
    status, detail = compare.compare_answers(a, b)
    assert status == "fail" and detail == "[1].output_ids[1]: 5 != 6"


def test_length_difference_fails():
    status, detail = compare.compare_answers(compare.normalize("/generate", _gen([1, 2])),
                                             compare.normalize("/generate", _gen([1, 2, 3])))
    assert status == "fail" and "output_ids" in detail


def test_logprobs_compared_exactly():
    a = compare.normalize("/generate", _gen([1, 2], logprobs=[-1.0, -2.0]))
    near = compare.normalize("/generate", _gen([1, 2], logprobs=[-1.0, -2.004]))
    assert compare.compare_answers(a, a) == ("pass", "identical (tokens and 2 logprobs, bit for bit)")
    status, detail = compare.compare_answers(a, near)
    assert status == "fail" and "logprobs differ by up to 0.004" in detail


def _chat(content, tool_args='{"city": "Paris"}', call_id="call_1", created=1, fp="fp1"):
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": created, "model": "tiny",
            "system_fingerprint": fp,
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": content, "reasoning_content": None,
                "tool_calls": [{"id": call_id, "type": "function", "index": 0,
                                "function": {"name": "get_weather", "arguments": tool_args}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17}}


def test_chat_json_ignores_ids_and_timestamps_only():
    a = compare.normalize("/v1/chat/completions", _chat(None))
    b = compare.normalize("/v1/chat/completions", _chat(None, call_id="call_zz", created=99, fp="fp2"))
    assert compare.compare_answers(a, b) == ("pass", "identical")
    c = compare.normalize("/v1/chat/completions", _chat(None, tool_args='{"city": "Tokyo"}'))
    status, detail = compare.compare_answers(a, c)
    assert status == "fail" and detail.startswith(".choices[0].message.tool_calls[0].function.arguments")
    d = compare.normalize("/v1/chat/completions", {**_chat(None), "extra": 1})
    assert compare.compare_answers(a, d) == ("fail", ".extra: only in this run")


def test_stream_folding_ignores_chunking():
    def chunk(**delta):
        return {"id": "x", "created": 1, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}

    end = {"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
    one = [chunk(reasoning_content="ab"), chunk(reasoning_content="c"), chunk(content="d"), end]
    two = [chunk(reasoning_content="a"), chunk(reasoning_content="bc"), chunk(content="d"), end]
    a, b = compare.fold_stream(one), compare.fold_stream(two)
    assert a == b == {"content": "d", "reasoning_content": "abc", "tool_calls": [], "finish_reason": "length",
                      "usage": None}


def test_compare_launches_and_load_record(tmp_path: Path):
    ok = {"status": "ok", "requests": {"gen": {"http_status": 200, "answer": {"output_ids": [1, 2]}}}}
    bad = {"status": "ok", "requests": {"gen": {"http_status": 200, "answer": {"output_ids": [1, 3]}}}}
    (tmp_path / "results-part1-upstream.json").write_text(json.dumps({"part": 1, "launches": {"a": ok}}))
    (tmp_path / "results-part2-upstream.json").write_text(json.dumps(
        {"part": 2, "launches": {"b": ok, "c": {"status": "failed: x", "requests": {}}}}))
    ref = compare.load_record(tmp_path)
    assert sorted(ref["launches"]) == ["a", "b", "c"] and len(ref["parts"]) == 2
    rows = compare.compare_launches(ref["launches"], {"a": ok, "b": bad})
    assert [(r.launch, r.status) for r in rows] == [("a", "pass"), ("b", "fail")]  # c failed upstream: skipped
    rows = compare.compare_launches(ref["launches"], {"a": {"status": "failed: boom"}})
    assert [(r.launch, r.status) for r in rows] == [("a", "error"), ("b", "missing")]


def test_weights_difference_is_noted_per_case(tmp_path: Path):
    launch = {"status": "ok", "model": "tiny-seeded",
              "requests": {"gen": {"http_status": 200, "answer": {"output_ids": [1]}}}}
    (tmp_path / "results-part1-upstream.json").write_text(json.dumps(
        {"part": 1, "models": {"tiny-seeded": {"weights_sha256": "aaa"}}, "launches": {"a": launch}}))
    ref = compare.load_record(tmp_path)
    assert ref["launches"]["a"]["weights_sha256"] == "aaa"
    same = compare.compare_launches(ref["launches"], {"a": {**launch, "weights_sha256": "aaa"}})
    other = compare.compare_launches(ref["launches"], {"a": {**launch, "weights_sha256": "bbb"}})
    assert same[0].detail == "identical"
    assert other[0].status == "pass" and other[0].detail == "identical [seeded weights differ from the reference's]"
    model = compare.compare_launches({"a": {**launch, "config_digest": "c1"}}, {"a": {**launch, "config_digest": "c2"}})
    assert "model folder differs" in model[0].detail


TRACEBACK = """[2026-11-26 08:12:10] Scheduler hit an exception: Traceback (most recent call last):
  File "/tmp/shrinker-gpu/site/sgl_kernel/flash_attn.py", line 8, in <module>
    from sgl_kernel import flash_ops
ImportError: cannot import name 'flash_ops' from 'sgl_kernel'

During handling of the above exception, another exception occurred:

  File "/tmp/shrinker-gpu/site/sgl_kernel/flash_attn.py", line 10, in <module>
    raise ImportError(
ImportError: Can not import FA3 in sgl_kernel. Please check your installation.

[2026-11-26 08:12:16] Received sigquit from a child process. It usually means the child failed."""


def test_a_launch_that_failed_upstream_cannot_pass():
    ok = {"status": "ok", "requests": {"gen": {"http_status": 200, "answer": {"output_ids": [1]}}}}
    # upstream timed out with no error in its log: nothing to compare with, and no pass
    rows = compare.compare_launches({"c": {"status": "failed: server did not become ready", "requests": {}}}, {"c": ok})
    assert [(r.launch, r.status) for r in rows] == [("c", compare.NOT_COMPARED)] and not rows[0].passed
    assert rows[0].detail.startswith("not compared: no upstream record in this run")
    assert "no error in its log" in rows[0].detail


def test_an_upstream_start_failure_is_not_run_on_this_hardware_with_upstreams_error():
    ok = {"status": "ok", "requests": {"gen": {"http_status": 200, "answer": {"output_ids": [1]}}}}
    died = {"status": "failed: server did not become ready in 320 s", "requests": {}, "log_tail": TRACEBACK,
            "command": "python3 -m sglang.launch_server --model-path /m/tiny-v32 --port 1"}
    assert compare.upstream_error(died) == "ImportError: Can not import FA3 in sgl_kernel. Please check your installation."
    rows = compare.compare_launches({"v32-auto": died}, {"v32-auto": ok})
    assert [(r.launch, r.request, r.status) for r in rows] == [("v32-auto", "*", compare.UPSTREAM_FAILED)]
    assert not rows[0].passed
    assert rows[0].detail.startswith("not run on this hardware: upstream could not serve it: ImportError: Can not import FA3")
    assert "`python3 -m sglang.launch_server --model-path /m/tiny-v32 --port 1`" in rows[0].detail
    # upstream 0.5.17's V4 decode-graph capture (H100): the last traceback line is a bare Exception
    v4 = {"status": "failed: server exited (code -9) 89 s after launch, before it was ready", "log_tail": (
        "RuntimeError: tilelang is not installed; this kernel cannot run on the current platform\n\n"
        "During handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n"
        "Exception: Capture cuda graph failed: tilelang is not installed; this kernel cannot run on the current "
        "platform\nPossible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
        "[rank0]:[W1126 08:13:55.764675428 ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group()\n"
        "[2026-11-26 09:00:16] Received sigquit from a child process. It usually means the child failed.")}
    assert compare.upstream_error(v4) == ("Exception: Capture cuda graph failed: tilelang is not installed; "
                                          "this kernel cannot run on the current platform")
    assert compare.reference_gap("v4-auto", v4).status == compare.UPSTREAM_FAILED
    assert compare.upstream_error({"log_tail": "Possible solutions:\nAll done."}) is None
    # a launch skipped for time upstream is "not compared", never a failure
    skipped = compare.compare_launches({"mtp": {"status": "skipped: no time left in this call"}}, {"mtp": ok})
    assert skipped[0].status == compare.NOT_COMPARED
    assert skipped[0].detail == ("not compared: no upstream record in this run "
                                 "(upstream launch skipped: no time left in this call)")
    # a failure of our own model preparation is no error of upstream's
    model = compare.reference_gap("x", {"status": "failed: model: weights failed", "log_tail": TRACEBACK})
    assert model.status == compare.NOT_COMPARED


def test_a_retried_launch_keeps_the_newest_record_but_never_loses_an_answer(tmp_path: Path):
    ok = {"status": "ok", "requests": {"gen": {"http_status": 200, "answer": {"output_ids": [1]}}}}
    (tmp_path / "results-part6-upstream-v32-fp8kv-v4-auto.json").write_text(json.dumps(
        {"part": 6, "date": "2026-11-26T08:27:20Z", "launches": {"v4-auto": {"status": "failed: a"}}}))
    (tmp_path / "results-part6-upstream-v4-auto.json").write_text(json.dumps(
        {"part": 6, "date": "2026-11-26T09:10:00Z", "launches": {"v4-auto": {"status": "failed: b"}}}))
    assert compare.load_record(tmp_path)["launches"]["v4-auto"]["status"] == "failed: b"
    (tmp_path / "results-part6-upstream-v4-auto.json").write_text(json.dumps(
        {"part": 6, "date": "2026-11-26T07:00:00Z", "launches": {"v4-auto": ok}}))
    (tmp_path / "results-part7-upstream.json").write_text(json.dumps(
        {"part": 6, "date": "2026-11-26T10:00:00Z", "launches": {"v4-auto": {"status": "skipped: no time"}}}))
    assert compare.load_record(tmp_path)["launches"]["v4-auto"]["status"] == "ok"


def _gen_top(ids, logprobs, top, input_lp=None):
    """A /generate answer with output logprobs, top-k per position ([(logprob, id), ...]) and prompt logprobs."""
    ans = _gen(ids, logprobs=logprobs)
    ans["meta_info"]["output_top_logprobs"] = [[[v, i, None] for v, i in pos] for pos in top]
    if input_lp is not None:
        ans["meta_info"]["input_token_logprobs"] = [[v, i, None] for v, i in input_lp]
    return ans


TOP = [[(-0.5, 1), (-1.25, 7), (-2.0, 9), (-3.0, 4), (-3.5, 11)],
       [(-0.75, 2), (-1.0, 5), (-2.25, 8), (-3.25, 3), (-4.0, 12)]]


def test_top5_logprobs_identical_pass_bit_for_bit():
    a = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.75], TOP, input_lp=[(None, 3), (-6.5, 4)]))
    b = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.75], TOP, input_lp=[(None, 3), (-6.5, 4)]))
    assert a["top_logprobs"][1][2] == [8, -2.25] and a["input_logprobs"] == [[3, None], [4, -6.5]]
    status, detail = compare.compare_answers(a, b)
    # 2 output + 10 top-k + 2 prompt logprobs
    assert status == "pass" and detail == "identical (tokens and 14 logprobs, bit for bit)"


def test_one_top5_value_differing_fails():
    top = [list(pos) for pos in TOP]
    top[1][3] = (-3.2500002, 3)  # the 4th alternative at the 2nd position, one float apart
    a = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.75], TOP))
    b = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.75], top))
    status, detail = compare.compare_answers(a, b)
    assert status == "fail" and "logprobs differ" in detail and ".top_logprobs[1][3].value" in detail


def test_one_top5_id_differing_fails():
    top = [list(pos) for pos in TOP]
    top[0][4] = (-3.5, 13)
    a = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.75], TOP))
    b = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.75], top))
    status, detail = compare.compare_answers(a, b)
    assert status == "fail" and "top-k ids differ" in detail and "11 != 13" in detail


def test_missing_top5_fails():
    a = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.75], TOP))
    b = compare.normalize("/generate", _gen([1, 2], logprobs=[-0.5, -0.75]))
    status, detail = compare.compare_answers(a, b)
    assert status == "fail" and "layout" in detail


def test_within_upstreams_own_spread_passes_and_says_so():
    ref = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.75], TOP))
    top2 = [list(pos) for pos in TOP]
    top2[1][0] = (-0.7501, 2)
    ref2 = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.7501], top2))  # upstream again
    near = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.75005], TOP))
    far = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.76], TOP))
    assert compare.logprob_spread(ref, ref2)[0] == abs(-0.75 - -0.7501)
    status, detail = compare.compare_answers(ref, near, ref_repeat=ref2)
    assert status == "pass" and "upstream's own spread" in detail
    status, detail = compare.compare_answers(ref, near)  # without upstream's repeat: exact, so it fails
    assert status == "fail"
    status, detail = compare.compare_answers(ref, far, ref_repeat=ref2)
    assert status == "fail" and "upstream against itself" in detail


def test_compare_launches_uses_the_references_repeat():
    def launch(answers):
        return {"status": "ok", "requests": {k: {"http_status": 200, "answer": v} for k, v in answers.items()}}
    ref = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.75], TOP))
    ref2 = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.7502], TOP))
    new = compare.normalize("/generate", _gen_top([1, 2], [-0.5, -0.7501], TOP))
    rows = compare.compare_launches({"l": launch({"g": ref, "g@2": ref2})}, {"l": launch({"g": new, "g@2": new})})
    assert [(r.request, r.status) for r in rows] == [("g", "pass"), ("g@2", "pass")]
    assert all("spread" in r.detail for r in rows)
    rows = compare.compare_launches({"l": launch({"g": ref})}, {"l": launch({"g": new})})
    assert [(r.request, r.status) for r in rows] == [("g", "fail")]


def test_a_launch_environment_difference_is_noted():
    launch = {"status": "ok", "env": {"SGLANG_JIT_DEEPGEMM_PRECOMPILE": "0"},
              "requests": {"gen": {"http_status": 200, "answer": {"output_ids": [1]}}}}
    same = compare.compare_launches({"a": launch}, {"a": dict(launch)})
    other = compare.compare_launches({"a": launch}, {"a": {**launch, "env": {}}})
    assert same[0].detail == "identical"
    assert other[0].detail == ("identical [launch environment differs: upstream "
                               "{'SGLANG_JIT_DEEPGEMM_PRECOMPILE': '0'}, here {}]")
