"""gpu-verify.json/.md: pending before a pruned run; cases, JIT regressions and ratios after."""

from __future__ import annotations

import json
from pathlib import Path

from shrinker.gpu import report

OK = {"status": "ok", "startup_s": 55.0, "flags": ["--attention-backend", "triton"],
      "requests": {"gen-batch-3": {"http_status": 200, "answer": [{"output_ids": [1, 2]}]}}}
JIT = {"files": {"csrc/a.cuh": {"status": "built"}, "csrc/b.cuh": {"status": "failed", "error": "e"}},
       "built": 1, "failed": 1, "timeout": 0, "total": 2, "seconds": 3.0, "jobs": 8, "budget_s": 240}


def _ref(tmp_path: Path) -> Path:
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "results-part1-upstream.json").write_text(json.dumps({
        "part": 1, "date": "2026-11-22T00:00:00Z", "environment": {"gpu": "NVIDIA H100 80GB HBM3"},
        "not_run": [{"name": "fa3", "why": "not shipped"}], "jit": JIT, "launches": {"triton-graph": OK}}))
    return ref


def test_pending_before_pruned_runs(tmp_path: Path):
    code = report.write_report(_ref(tmp_path), [], tmp_path / "out")
    md = (tmp_path / "out" / "gpu-verify.md").read_text()
    assert code == 0 and "**pending**" in md and "triton-graph" in md
    assert "| fa3 with an FP8 KV cache (--kv-cache-dtype fp8_e4m3) | not run |" in md
    data = json.loads((tmp_path / "out" / "gpu-verify.json").read_text())
    assert data["pruned"] == "pending" and data["date"]
    blackwell = {r["name"]: r["status"] for r in data["not_run"] if r["hardware"] == "blackwell"}
    assert len(blackwell) == 4 and set(blackwell.values()) == {"not run on this hardware"}
    for path in ("NVFP4", "modelopt_fp4", "trtllm_mla", "cutlass_mla", "sm100"):
        assert any(path in name for name in blackwell) and path in md


def _run(tmp_path: Path, answer, jit_b="failed", timing=None) -> Path:
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    launches = {"triton-graph": {**OK, "requests": {"gen-batch-3": {"http_status": 200, "answer": answer}}}}
    jit = {**JIT, "files": {"csrc/a.cuh": {"status": "built"}, "csrc/b.cuh": {"status": jit_b, "error": "x"}}}
    (run / "results-part1-pruned.json").write_text(json.dumps(
        {"part": 1, "launches": launches, "jit": jit, "timing": timing}))
    from shrinker.gpu import compare

    rows = compare.compare_launches({"triton-graph": OK}, launches)
    (run / "compare-part1.json").write_text(json.dumps({"part": 1, "cases": compare.results_table(rows),
                                                         "passed": all(r.passed for r in rows)}))
    return run


def test_pass_and_fail(tmp_path: Path):
    ref = _ref(tmp_path)
    assert report.write_report(ref, [_run(tmp_path, [{"output_ids": [1, 2]}])], tmp_path / "o1") == 0
    assert "1/1 compared requests identical" in (tmp_path / "o1" / "gpu-verify.md").read_text()
    assert report.write_report(ref, [_run(tmp_path, [{"output_ids": [1, 9]}])], tmp_path / "o2") == 1
    md = (tmp_path / "o2" / "gpu-verify.md").read_text()
    assert "0/1 passed" in md and "[0].output_ids[1]: 2 != 9" in md


def test_jit_regression_fails(tmp_path: Path):
    # a.cuh built upstream; failing in the pruned tree is a regression even when every answer matches
    run = tmp_path / "run"
    run.mkdir()
    jit = {**JIT, "files": {"csrc/a.cuh": {"status": "failed", "error": "missing header"}}}
    (run / "results-part1-pruned.json").write_text(json.dumps({"part": 1, "launches": {}, "jit": jit}))
    (run / "compare-part1.json").write_text(json.dumps({"part": 1, "cases": [
        {"launch": "triton-graph", "request": "gen-batch-3", "status": "pass", "detail": "identical"}]}))
    assert report.write_report(_ref(tmp_path), [run], tmp_path / "o") == 1
    data = json.loads((tmp_path / "o" / "gpu-verify.json").read_text())
    assert data["jit"]["regressions"] == [{"file": "csrc/a.cuh", "error": "missing header"}]


def test_timing_ratios():
    bench = lambda lat: [{"rows": [{"batch_size": 1, "input_len": 256, "output_len": 32, "prefill_latency": lat,
                                    "median_decode_latency": lat / 10, "total_latency": lat * 2}]}]
    timing = {"trees": ["pruned", "upstream"],
              "import": {"pruned": {"median_s": 9.0}, "upstream": {"median_s": 10.0}},
              "bench": {"pruned": bench(0.11), "upstream": bench(0.10)}}
    r = report.timing_ratios(timing)
    assert r["import_ratio"] == 0.9
    assert r["bench"]["bs1-in256-out32"]["prefill_latency"]["ratio"] == 1.1
    assert r["over_limit"] == ["bs1-in256-out32 prefill_latency", "bs1-in256-out32 median_decode_latency",
                               "bs1-in256-out32 total_latency"]
    assert report.timing_ratios({"trees": ["pruned"]}) == {}


def test_startup_ratios_skip_cold_launches():
    ref = {"a": {"startup_s": 50.0}, "b": {"startup_s": 170.0, "first_launch_of_call": True}, "c": {"startup_s": 60.0}}
    new = {"a": {"startup_s": 45.0}, "b": {"startup_s": 150.0}, "c": {"startup_s": 70.0, "first_launch_of_call": True}}
    assert report.startup_ratios(ref, new) == {"a": {"pruned": 45.0, "upstream": 50.0, "ratio": 0.9}}


def test_report_has_date_device_versions_commands(tmp_path: Path):
    ref = _ref(tmp_path)
    run = _run(tmp_path, [{"output_ids": [1, 2]}])
    data = json.loads((run / "results-part1-pruned.json").read_text())
    data.update(date="2026-11-23T00:00:00Z", seconds=100.0,
                command="python3 -m shrinker.gpu.verify compare --part 1 --ref REF --out /o",
                environment={"gpu": "NVIDIA H200", "gpu_count": 1, "capability": "9.0", "torch": "2.11.0",
                             "sglang": "0.5.16", "nvidia-smi": "NVIDIA H200, 580.159.04, 143771 MiB"})
    data["install"] = {"archives": {"sglang-pruned.tar.xz": {"sha256": "ab" * 32, "bytes": 1}}}
    data["launches"]["triton-graph"]["command"] = "python3 -m sglang.launch_server --model-path m"
    (run / "results-part1-pruned.json").write_text(json.dumps(data))
    assert report.write_report(ref, [run], tmp_path / "o") == 0
    out = json.loads((tmp_path / "o" / "gpu-verify.json").read_text())
    assert out["date"] and out["device"]["gpu"] == "NVIDIA H200" and out["versions"]["torch"] == "2.11.0"
    assert out["commands"]["device_calls"] == [data["command"]]
    assert out["commands"]["launches"]["triton-graph"].startswith("python3 -m sglang.launch_server")
    assert out["cases"][0]["status"] == "pass" and out["passed"] is True
    assert out["runs"][0]["date"] == "2026-11-23T00:00:00Z"
    md = (tmp_path / "o" / "gpu-verify.md").read_text()
    assert "`python3 -m shrinker.gpu.verify compare --part 1 --ref REF --out /o`" in md
    # runs of several trees can be merged into one report: each run names the pruned tree it served
    assert out["runs"][0]["pruned_tree_sha256"] == "ab" * 32 and "on pruned tree abababababab" in md
    assert "| trtllm_mla attention backend | not run on this hardware |" in md


def test_a_later_call_supersedes_a_skipped_launch_only():
    skipped = {"launch": "mtp", "request": "*", "status": "error", "detail": "launch skipped: no time left in this call"}
    failed = {"launch": "fp8", "request": "*", "status": "error", "detail": "launch failed: exit 1"}
    later = [{"launch": n, "request": "gen-single-0", "status": "pass", "detail": "identical"} for n in ("mtp", "fp8")]
    kept = report.superseded_dropped([skipped, failed, *later])
    assert skipped not in kept and failed in kept and len(kept) == 3
    assert report.superseded_dropped([skipped]) == [skipped]  # never run at all: stays an error


def test_a_bench_only_call_keeps_the_earlier_import_and_startup_figures():
    from shrinker.gpu.report import _merge_timing

    earlier = {"trees": ["pruned", "upstream"],
               "import": {"pruned": {"first_s": 18.4, "runs_s": [18.1]}, "upstream": {"first_s": 17.3, "runs_s": [20.2]}},
               "startup": {"pruned": [{"ready_s": 54.0}], "upstream": [{"ready_s": 53.9}]},
               "startup_flags": ["--attention-backend", "flashinfer"],
               "bench": {"pruned": [{"rows": [1]}], "upstream": [{"rows": [2]}]}}
    later = {"trees": ["pruned", "upstream"],
             "import": {"pruned": {"first_s": None, "runs_s": []}, "upstream": {"first_s": None, "runs_s": []}},
             "startup": {"pruned": [], "upstream": []},
             "bench": {"pruned": [{"rows": [3]}], "upstream": [{"rows": [4]}]}}
    merged = _merge_timing(earlier, later)
    assert merged["bench"] == later["bench"]
    assert merged["import"] == earlier["import"] and merged["startup"] == earlier["startup"]
    assert merged["startup_flags"] == earlier["startup_flags"]
    # a complete later call supersedes everything
    assert _merge_timing(later, earlier) == earlier


def test_a_case_compared_in_two_calls_counts_once():
    a = {"launch": "triton-eager", "request": "chat-plain", "status": "pass", "detail": "identical"}
    b = dict(a)
    other = {"launch": "triton-eager", "request": "gen-single-0", "status": "pass", "detail": "identical"}
    rows = report.one_per_case([a, other, b])
    assert len(rows) == 2 and rows[0]["detail"] == "identical (in 2 calls)" and rows[1] == other
    failed = {**a, "status": "fail", "detail": "token 3 differs"}
    assert report.one_per_case([a, failed]) == [failed]  # a failure in any call is the row kept


DIED = """  File "/tmp/shrinker-gpu/site/sgl_kernel/flash_attn.py", line 10, in <module>
    raise ImportError(
ImportError: Can not import FA3 in sgl_kernel. Please check your installation.

[2026-11-26 08:12:16] Received sigquit from a child process. It usually means the child failed."""


def _ref_with(tmp_path: Path, **launches) -> Path:
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "results-part1-upstream.json").write_text(json.dumps({
        "part": 1, "date": "2026-11-22T00:00:00Z", "environment": {"gpu": "NVIDIA H200"}, "launches": launches}))
    return ref


def _compared(tmp_path: Path, ref: Path, pruned: dict) -> Path:
    from shrinker.gpu import compare

    run = tmp_path / "run"
    run.mkdir()
    (run / "results-part1-pruned.json").write_text(json.dumps({"part": 1, "launches": pruned}))
    rows = compare.compare_launches({k: v for k, v in compare.load_record(ref)["launches"].items() if k in pruned},
                                    pruned)
    (run / "compare-part1.json").write_text(json.dumps({"part": 1, "cases": compare.results_table(rows)}))
    return run


def test_an_upstream_start_failure_is_not_run_on_this_hardware_not_a_failure(tmp_path: Path):
    died = {"status": "failed: server did not become ready in 320 s", "requests": {}, "log_tail": DIED,
            "command": "python3 -m sglang.launch_server --model-path /m/tiny-v32 --port 1"}
    ref = _ref_with(tmp_path, **{"triton-graph": OK, "v32-auto": died,
                                 "mtp-flashinfer-graph": {"status": "skipped: no time left in this call"}})
    # an older compare (before these statuses) called the skipped reference an "error": the report reclassifies it
    run = _compared(tmp_path, ref, {"triton-graph": OK})
    table = json.loads((run / "compare-part1.json").read_text())
    table["cases"].append({"launch": "mtp-flashinfer-graph", "request": "*", "status": "error",
                           "detail": "no upstream reference: the upstream launch skipped: no time left in this call"})
    (run / "compare-part1.json").write_text(json.dumps(table))
    assert report.write_report(ref, [run], tmp_path / "o", version="0.5.17") == 0
    md = (tmp_path / "o" / "gpu-verify.md").read_text()
    data = json.loads((tmp_path / "o" / "gpu-verify.json").read_text())
    assert ("Cases: **1/1 compared requests identical**; 1 launch not run on this hardware: upstream could not "
            "serve it (reasons below); 1 launch not compared: no upstream record in this run") in md
    assert "FAILURES" not in md and data["passed"] is True
    assert data["counts"] == {"cases": 1, "passed": 1, "failed": 0, "launches_not_run": 0,
                              "not_recorded": data["counts"]["not_recorded"], "not_run_upstream_failed": 1,
                              "not_compared": 1}
    rows = {c["launch"]: c for c in data["cases"]}
    assert rows["v32-auto"]["status"] == "not-run-upstream"
    assert "ImportError: Can not import FA3 in sgl_kernel" in rows["v32-auto"]["detail"]
    assert rows["mtp-flashinfer-graph"]["status"] == "not-compared"
    assert rows["mtp-flashinfer-graph"]["detail"].startswith("not compared: no upstream record in this run")
    assert data["not_run_upstream_failed"]["v32-auto"] == {
        "error": "ImportError: Can not import FA3 in sgl_kernel. Please check your installation.",
        "status": died["status"], "command": died["command"], "part": 1}
    assert ("| v32-auto | * | not run on this hardware | not run on this hardware: upstream could not serve it: "
            "ImportError: Can not import FA3") in md
    assert "| mtp-flashinfer-graph | * | not compared | not compared: no upstream record in this run" in md
    assert "| v32-auto | 1 | `ImportError: Can not import FA3 in sgl_kernel. Please check your installation.` |" in md
    assert "`python3 -m sglang.launch_server --model-path /m/tiny-v32 --port 1`" in md
    assert "| v32-auto | 1 | 1 | not run on this hardware: failed: server did not become ready in 320 s" in md
    not_run = {r["name"]: r["status"] for r in data["not_run"]}
    assert not_run["v32-auto"] == "not run on this hardware" and not_run["mtp-flashinfer-graph"] == "not compared"


def test_a_pruned_only_failure_is_still_a_failure(tmp_path: Path):
    died = {"status": "failed: server did not become ready in 320 s", "requests": {}, "log_tail": DIED}
    ref = _ref_with(tmp_path, **{"triton-graph": OK, "triton-eager": OK, "v32-auto": died})
    # upstream served triton-eager; the pruned server died on the same error: that is the pruned tree's failure
    run = _compared(tmp_path, ref, {"triton-graph": OK, "triton-eager": died})
    assert report.write_report(ref, [run], tmp_path / "o", version="0.5.17") == 1
    md = (tmp_path / "o" / "gpu-verify.md").read_text()
    data = json.loads((tmp_path / "o" / "gpu-verify.json").read_text())
    assert "Cases: **1/2 passed** — FAILURES below" in md and data["passed"] is False
    rows = {c["launch"]: c for c in data["cases"]}
    assert rows["triton-eager"]["status"] == "error"
    assert rows["triton-eager"]["detail"] == "launch failed: server did not become ready in 320 s"
    assert "| triton-eager | * | error | launch failed" in md
    assert data["counts"]["failed"] == 1 and data["counts"]["not_run_upstream_failed"] == 1
