"""`shrink verify --gpu` without a GPU exits 2 with one line; the device runner's no-GPU path too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shrinker.gpu import verify

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(verify.shutil, "which", lambda name: None)


def test_gpu_missing_reason_without_nvidia_smi(no_gpu):
    reason = verify.gpu_missing_reason()
    assert reason and "nvidia-smi not found" in reason and "\n" not in reason


def test_run_gpu_verify_exits_2_with_one_line(no_gpu, capsys, tmp_path):
    assert verify.run_gpu_verify(tmp_path / "pruned", tmp_path / "upstream") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("no GPU here")


def test_module_entry_exits_2_on_this_machine(tmp_path):
    # CI and this machine have no GPU: the on-device command must say so in one line, exit 2
    if verify.gpu_missing_reason() is None:
        pytest.skip("a GPU is present")
    proc = subprocess.run([sys.executable, "-m", "shrinker.gpu.verify", "record", "--part", "1", "--out",
                           str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("no GPU here")
    assert not any(tmp_path.iterdir())


def test_fake_gpu_failing_torch(monkeypatch, tmp_path):
    # nvidia-smi lists a GPU but torch cannot use it: still one line, exit 2
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: Fake'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{monkeypatch.delenv('PATH', raising=False) or ''}/usr/bin:/bin")
    monkeypatch.setattr(verify.sys, "executable", "/bin/false")
    reason = verify.gpu_missing_reason()
    assert reason == "no GPU here: torch.cuda is not available"


def _fake_device(monkeypatch, tmp_path, answer_for, gpus=1):
    """run_part with the GPU, the install and the servers faked: launches answer via answer_for(name)."""
    from shrinker.gpu import install

    trees = {"pruned": tmp_path / "tree-pruned", "upstream": tmp_path / "tree-upstream"}
    inst = install.Installed(root=tmp_path, site=tmp_path / "site", trees=trees, models={},
                             manifest={"archives": [], "created": "now"})
    monkeypatch.setattr(verify, "gpu_missing_reason", lambda: None)
    monkeypatch.setattr(verify.install, "install_bundle", lambda ship, root: inst)
    monkeypatch.setattr(verify, "environment", lambda env: {"gpu": "fake", "gpu_count": gpus, "capability": "9.0"})
    all_models = {"tiny-seeded": {"load_format": "auto", "weights_sha256": "w1"}, "tiny-dummy": {"load_format": "dummy"},
                  "tiny-fp8-dummy": {"load_format": "dummy"},
                  "tiny-exact": {"load_format": "auto", "weights_sha256": "e1", "path": str(tmp_path)}}
    monkeypatch.setattr(verify, "prepare_models", lambda cases, inst, env, names=None: {
        k: v for k, v in all_models.items() if names is None or k in names})
    monkeypatch.setattr(verify, "run_launch", lambda launch, cases, model, env, logs, tag, startup_timeout=None: {
        "status": "ok", "model": launch.model, "weights_sha256": model.get("weights_sha256"),
        "requests": {"gen-batch-3": {"http_status": 200, "answer": answer_for(launch.name)}}})


def test_record_then_compare_on_a_fake_device(monkeypatch, tmp_path):
    ref_dir, run_ok, run_bad = tmp_path / "ref", tmp_path / "ok", tmp_path / "bad"
    _fake_device(monkeypatch, tmp_path, lambda name: [{"output_ids": [1, 2, 3]}])
    assert verify.run_part("record", 2, tmp_path, ref_dir) == 0
    recorded = json.loads((ref_dir / "results-part2-upstream.json").read_text())
    assert set(recorded["launches"]) == {"flashinfer-graph", "tools-flashinfer-graph", "dummy-triton-graph"}

    assert verify.run_part("compare", 2, tmp_path, run_ok, ref=ref_dir) == 0
    summary = json.loads((run_ok / "compare-part2.json").read_text())
    assert summary["passed"] and len(summary["cases"]) == 3

    _fake_device(monkeypatch, tmp_path,
                 lambda name: [{"output_ids": [1, 2, 4 if name == "tools-flashinfer-graph" else 3]}])
    assert verify.run_part("compare", 2, tmp_path, run_bad, ref=ref_dir) == 1
    summary = json.loads((run_bad / "compare-part2.json").read_text())
    failed = [c for c in summary["cases"] if c["status"] != "pass"]
    assert failed == [{"launch": "tools-flashinfer-graph", "request": "gen-batch-3", "status": "fail",
                       "detail": "[0].output_ids[2]: 3 != 4"}]


def test_deadline_skips_launches_and_compare_fails_them(monkeypatch, tmp_path):
    _fake_device(monkeypatch, tmp_path, lambda name: [{"output_ids": [1]}])
    verify.run_part("record", 2, tmp_path, tmp_path / "ref")
    # no time left at all: every launch is skipped, which a comparison must not count as a pass
    assert verify.run_part("compare", 2, tmp_path, tmp_path / "run", ref=tmp_path / "ref", deadline_s=1) == 1
    result = json.loads((tmp_path / "run" / "results-part2-pruned.json").read_text())
    assert all(v["status"].startswith("skipped") for v in result["launches"].values())


def test_two_gpu_part_is_not_run_on_one_gpu_and_never_passes(monkeypatch, tmp_path):
    ref_dir = tmp_path / "ref"
    _fake_device(monkeypatch, tmp_path, lambda name: [{"output_ids": [7]}], gpus=2)
    assert verify.run_part("record", 5, tmp_path, ref_dir) == 0
    recorded = json.loads((ref_dir / "results-part5-upstream.json").read_text())
    assert set(recorded["launches"]) == {"tp2-flashinfer-graph", "tp2-ep2-flashinfer-graph"}
    assert all(v["status"] == "ok" and v["gpus"] == 2 for v in recorded["launches"].values())
    assert set(recorded["models"]) == {"tiny-exact"}  # only the models the part serves are made

    _fake_device(monkeypatch, tmp_path, lambda name: [{"output_ids": [7]}], gpus=1)
    run = tmp_path / "one-gpu"
    assert verify.run_part("compare", 5, tmp_path, run, ref=ref_dir) == 0
    summary = json.loads((run / "compare-part5.json").read_text())
    assert {c["status"] for c in summary["cases"]} == {"not-run"}
    assert summary["not_run"] == ["tp2-ep2-flashinfer-graph", "tp2-flashinfer-graph"]

    from shrinker.gpu import report

    assert report.write_report(ref_dir, [run], tmp_path / "rep") == 1  # nothing compared: not a pass
    data = json.loads((tmp_path / "rep" / "gpu-verify.json").read_text())
    rows = {r["name"]: r["status"] for r in data["not_run"]}
    assert rows["tp2-flashinfer-graph"] == "not run on this hardware"
    assert data["counts"]["passed"] == 0 and data["counts"]["launches_not_run"] == 2


def test_two_gpu_part_compares_on_two_gpus(monkeypatch, tmp_path):
    _fake_device(monkeypatch, tmp_path, lambda name: [{"output_ids": [7]}], gpus=2)
    verify.run_part("record", 5, tmp_path, tmp_path / "ref")
    assert verify.run_part("compare", 5, tmp_path, tmp_path / "run", ref=tmp_path / "ref") == 0
    summary = json.loads((tmp_path / "run" / "compare-part5.json").read_text())
    assert [c["status"] for c in summary["cases"]] == ["pass", "pass"]


def test_compare_without_reference_for_a_launch_fails(monkeypatch, tmp_path):
    _fake_device(monkeypatch, tmp_path, lambda name: [{"output_ids": [1]}], gpus=2)
    verify.run_part("record", 2, tmp_path, tmp_path / "ref")
    # part 5 was never recorded upstream: the pruned launches have nothing to be compared with
    assert verify.run_part("compare", 5, tmp_path, tmp_path / "run", ref=tmp_path / "ref") == 1
    summary = json.loads((tmp_path / "run" / "compare-part5.json").read_text())
    assert all("no upstream reference" in c["detail"] for c in summary["cases"])


def test_device_command_is_recorded(monkeypatch, tmp_path):
    _fake_device(monkeypatch, tmp_path, lambda name: [{"output_ids": [1]}])
    code = verify.main(["record", "--part", "2", "--ship", str(tmp_path), "--out", str(tmp_path / "o")])
    assert code == 0
    data = json.loads((tmp_path / "o" / "results-part2-upstream.json").read_text())
    assert data["command"] == f"python3 -m shrinker.gpu.verify record --part 2 --ship {tmp_path} --out {tmp_path / 'o'}"


def test_tree_env_keeps_nvlink_multicast_off(monkeypatch, tmp_path):
    from shrinker.gpu import install

    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    inst = install.Installed(root=tmp_path, site=tmp_path / "site", trees={"pruned": tmp_path}, models={}, manifest={})
    env = verify.tree_env(inst, "pruned")
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert env["NVSHMEM_DISABLE_NVLS"] == "1"


def test_bench_command_repeats_batch_sizes(tmp_path):
    from shrinker.gpu.cases import load_cases

    cases = load_cases()
    cmd = verify.bench_command(cases, {"path": "/m"}, tmp_path / "r.jsonl", "pruned-r0")
    t = cases.timing
    sizes = cmd[cmd.index("--batch-size") + 1:cmd.index("--input-len")]
    assert sizes == [str(b) for b in t["bench_batch_sizes"]] * t["bench_repeats"]
    assert cmd[1:3] == ["-m", "sglang.bench_one_batch"] and "--result-filename" in cmd


def test_timing_alternates_trees_and_warms_up_once(monkeypatch, tmp_path):
    """Part 4: imports, start-ups and bench_one_batch go pruned, upstream, pruned, upstream ... on one machine."""
    from shrinker.gpu import install, report
    from shrinker.gpu.cases import load_cases

    cases = load_cases()
    trees = {"pruned": tmp_path / "tp", "upstream": tmp_path / "tu"}
    inst = install.Installed(root=tmp_path, site=tmp_path / "site", trees=trees, models={}, manifest={})
    logs = tmp_path / "logs" / "part4"
    logs.mkdir(parents=True)
    order = []
    which = lambda env: "pruned" if str(trees["pruned"]) in env["PYTHONPATH"] else "upstream"  # noqa: E731
    monkeypatch.setattr(verify, "prepare_models", lambda c, i, e, names=None: {
        "tiny-dummy": {"path": str(tmp_path), "load_format": "dummy"}})
    monkeypatch.setattr(verify, "_one_import", lambda env: (order.append(("import", which(env))) or
                                                           (10.0 if which(env) == "upstream" else 9.0, None)))
    monkeypatch.setattr(verify, "startup_once", lambda model, flags, env, logs_, tag, timeout: (
        order.append(("startup", which(env), "warmup" in tag)) or
        {"ready_s": 50.0 if which(env) == "upstream" else 48.0}))
    row = lambda lat: {"batch_size": 1, "input_len": 256, "output_len": 32, "prefill_latency": lat,  # noqa: E731
                       "median_decode_latency": lat / 10, "total_latency": lat * 2}
    monkeypatch.setattr(verify, "bench_one_batch", lambda c, m, env, l, tag, timeout=600: (
        order.append(("bench-warmup" if "warmup" in tag else "bench", which(env))) or
        {"rows": [row(0.1 if which(env) == "upstream" else 0.1)]}))
    out = verify.run_timing(cases, inst, "pruned", logs, t0=__import__("time").monotonic(), deadline_s=1e9,
                            main_env={"PYTHONPATH": str(trees["pruned"])})
    n = cases.timing["import_runs"] + 1
    assert [o for o in order if o[0] == "import"] == [("import", "pruned"), ("import", "upstream")] * n
    starts = [o for o in order if o[0] == "startup"]
    assert starts[0] == ("startup", "pruned", True)  # nothing launched on this machine yet: one uncounted warm-up
    assert starts[1:] == [("startup", "pruned", False), ("startup", "upstream", False)] * cases.timing["startup_rounds"]
    # one uncounted bench first (the first bs=8 prefill compiles kernels), then rounds alternating who goes first
    assert [o for o in order if o[0].startswith("bench")][0] == ("bench-warmup", "pruned")
    rounds = [[("bench", "pruned"), ("bench", "upstream")], [("bench", "upstream"), ("bench", "pruned")]]
    assert [o for o in order if o[0] == "bench"] == \
        [b for r in range(cases.timing["bench_rounds"]) for b in rounds[r % 2]]
    assert cases.timing["bench_rounds"] >= 2 and cases.timing["bench_warmup"]
    r = report.timing_ratios(out)
    assert r["import_ratio"] == 0.9 and r["startup_ratio"] == 0.96 and r["worst_bench_ratio"] == 1.0

    # a warm machine (something launched already) needs no warm-up
    order.clear()
    verify.mark_launched(logs)
    verify.run_timing(cases, inst, "pruned", logs, t0=__import__("time").monotonic(), deadline_s=1e9,
                      main_env={"PYTHONPATH": str(trees["pruned"])})
    assert not any(o[0] == "startup" and o[2] for o in order)

    # `--only bench`: bench_one_batch alone (no imports, no start-ups)
    order.clear()
    out = verify.run_timing(cases, inst, "pruned", logs, t0=__import__("time").monotonic(), deadline_s=1e9,
                            main_env={"PYTHONPATH": str(trees["pruned"])}, bench_only=True)
    assert {o[0] for o in order} == {"bench", "bench-warmup"} and out["import"]["pruned"]["runs_s"] == []


def test_only_runs_get_their_own_file_and_a_capped_start_up(monkeypatch, tmp_path):
    _fake_device(monkeypatch, tmp_path, lambda name: [{"output_ids": [7]}], gpus=2)
    limits = {}
    monkeypatch.setattr(verify, "run_launch", lambda launch, cases, model, env, logs, tag, startup_timeout=None: (
        limits.update({launch.name: startup_timeout}) or
        {"status": "ok", "model": launch.model, "requests": {"gen-batch-3": {"http_status": 200, "answer": [1]}}}))
    assert verify.run_part("record", 5, tmp_path, tmp_path / "ref", only=["tp2-flashinfer-graph"], deadline_s=590) == 0
    assert [p.name for p in (tmp_path / "ref").glob("results*.json")] == \
        ["results-part5-upstream-tp2-flashinfer-graph.json"]
    # the two-GPU launch may wait 570 s (cases.toml), but never past the call's deadline less 30 s
    assert 500 < limits["tp2-flashinfer-graph"] <= 560
    assert verify.run_part("compare", 5, tmp_path, tmp_path / "run", ref=tmp_path / "ref",
                           only=["tp2-flashinfer-graph"]) == 0
    assert (tmp_path / "run" / "compare-part5-tp2-flashinfer-graph.json").is_file()


def test_a_server_that_dies_before_ready_says_it_exited(monkeypatch, tmp_path):
    """Not "did not become ready in N s" (the limit) when the process died at once: its exit code and when."""
    import time

    from shrinker.gpu import cases as cases_mod
    from shrinker.gpu import server

    cases = cases_mod.load_cases()
    launch = next(launch for launch in cases.launches if launch.name == "v4-auto")
    log = tmp_path / "srv.log"

    def fake_start(model, flags, env, log_path, cwd):
        log.write_text("Traceback (most recent call last):\nRuntimeError: tilelang is not installed\n")
        proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
        proc.wait()
        return server.Server(proc=proc, port=1, log=log, started=time.monotonic())

    monkeypatch.setattr(verify.server, "start", fake_start)
    monkeypatch.setattr(verify.server, "wait_gpu_free", lambda timeout=30.0: None)
    rec = verify.run_launch(launch, cases, {"path": str(tmp_path), "load_format": "dummy"}, {}, tmp_path, "upstream",
                            startup_timeout=300)
    assert rec["status"].startswith("failed: server exited (code 3) ") and rec["status"].endswith("before it was ready")
    assert "RuntimeError: tilelang is not installed" in rec["log_tail"]


def test_a_launch_env_reaches_the_server_and_its_record(monkeypatch, tmp_path):
    import time

    from shrinker.gpu import cases as cases_mod
    from shrinker.gpu import server

    cases = cases_mod.load_cases()
    launch = cases.launch("v4-seeded")
    seen = {}

    def fake_start(model, flags, env, log_path, cwd):
        seen.update(env)
        log_path.write_text("")
        proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
        proc.wait()
        return server.Server(proc=proc, port=1, log=log_path, started=time.monotonic())

    monkeypatch.setattr(verify.server, "start", fake_start)
    rec = verify.run_launch(launch, cases, {"path": str(tmp_path), "load_format": "auto"}, {"PATH": "/bin"},
                            tmp_path, "upstream", startup_timeout=5)
    assert seen == {"PATH": "/bin", "SGLANG_JIT_DEEPGEMM_PRECOMPILE": "0"}
    assert rec["env"] == {"SGLANG_JIT_DEEPGEMM_PRECOMPILE": "0"}
