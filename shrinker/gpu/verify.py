"""`shrink verify --gpu` and its on-device runner (`python -m shrinker.gpu.verify`).

On the GPU machine (standard library + the bundle only):
  python3 -m shrinker.gpu.verify record  --part N --out $OUT            # upstream -> reference
  python3 -m shrinker.gpu.verify compare --part N --ref REF --out $OUT  # pruned vs the reference
Here (no GPU needed):
  python -m shrinker.gpu.verify report --ref REF --run DIR [DIR ...] --out reports/deepseek/v0.5.16
A part is one device call's worth (cases.toml): 1-3 serve the launches and compare answers (part 1
also times the first import and compiles the JIT sources), 4 times import, start-up and
bench_one_batch, alternating upstream and pruned when both trees are installed, 5 serves the
two-GPU launches (--tp-size 2, --ep-size 2; on nvidia-h200-x2). A launch that needs more GPUs than
the machine has is recorded as not run, never as passed.
Exit codes: 0 all passed/recorded, 1 a case failed, 2 no GPU or bad input (one line).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from shrinker.gpu import cases as cases_mod
from shrinker.gpu import compare, install, jit, server

VERSION_PACKAGES = ("sglang", "sglang-kernel", "torch", "triton", "transformers", "tokenizers",
                    "flashinfer-python", "xgrammar", "apache-tvm-ffi", "pydantic", "fastapi", "openai")
DEFAULT_DEADLINE_S = 540.0
FIRST_LAUNCH_S = 200.0  # a first launch on a fresh machine compiles kernels (~130 s seen)
LATER_LAUNCH_S = 100.0
MULTI_GPU_FIRST_LAUNCH_S = 450.0  # a cold --tp-size 2 launch: > 420 s seen (all-reduce fusion JIT)


NVLINK_MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


class NoGPU(Exception):
    pass


def gpu_missing_reason() -> str | None:
    """None when a CUDA GPU is usable, else why not (one line)."""
    if shutil.which("nvidia-smi") is None:
        return "no GPU here: nvidia-smi not found (shrink verify --gpu runs on an NVIDIA machine)"
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no GPU here: nvidia-smi failed ({exc})"
    if proc.returncode != 0 or "GPU" not in proc.stdout:
        return "no GPU here: nvidia-smi lists no GPU"
    probe = "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)"
    try:
        code = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=120).returncode
    except (OSError, subprocess.TimeoutExpired):
        code = 1
    if code != 0:
        return "no GPU here: torch.cuda is not available"
    return None


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def tree_env(inst: install.Installed, which: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "PYTHONPATH": inst.pythonpath(which),
        "PYTHONUNBUFFERED": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    })
    # NVLink multicast stays off (the lent machines' rule: it can take a shared host's GPUs down)
    for key, value in NVLINK_MULTICAST_OFF.items():
        env.setdefault(key, value)
    return env


_VERSIONS = r"""
import json, sys, importlib.metadata as md
out = {"python": sys.version.split()[0]}
for name in sys.argv[1:]:
    try:
        out[name] = md.version(name)
    except Exception:
        out[name] = None
try:
    import torch
    out["torch.cuda"] = torch.version.cuda
    out["gpu"] = torch.cuda.get_device_name(0)
    out["gpu_count"] = torch.cuda.device_count()
    out["capability"] = ".".join(map(str, torch.cuda.get_device_capability(0)))
except Exception as e:
    out["gpu_error"] = repr(e)
print(json.dumps(out))
"""


def _env_line(env: dict) -> str:
    keys = ("gpu", "python", "torch", "sglang", "sglang-kernel", "transformers", "flashinfer-python")
    return ", ".join(f"{k} {env.get(k)}" for k in keys if env.get(k))


def environment(env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", _VERSIONS, *VERSION_PACKAGES], capture_output=True, text=True,
                          env=env, timeout=300)
    info = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {"error": proc.stderr[-500:]}
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                         capture_output=True, text=True)
    info["nvidia-smi"] = smi.stdout.strip()
    info["host"] = platform.node()
    info["cpus"] = os.cpu_count()
    try:  # the CPU decides torch's float32 RNG path, hence the seeded weights' bytes
        cpuinfo = Path("/proc/cpuinfo").read_text()
        info["cpu_model"] = next((ln.split(":", 1)[1].strip() for ln in cpuinfo.splitlines()
                                  if ln.startswith("model name")), None)
        flags = next((ln.split(":", 1)[1].split() for ln in cpuinfo.splitlines() if ln.startswith("flags")), [])
        info["cpu_simd"] = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    except OSError:
        pass
    return info


def import_times(env: dict[str, str], runs: int) -> dict:
    """Wall time of `python -c "import sglang.launch_server"`: the first run, then `runs` more."""
    times, error = [], None
    for _ in range(runs + 1):
        s = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", "import sglang.launch_server"], capture_output=True, text=True,
                              env=env, timeout=600)
        if proc.returncode != 0:
            error = (proc.stderr.strip().splitlines() or ["import failed"])[-1]
            break
        times.append(round(time.monotonic() - s, 3))
    out = {"first_s": times[0] if times else None, "runs_s": times[1:],
           "median_s": statistics.median(times[1:]) if len(times) > 1 else None}
    if error:
        out["error"] = error
    return out


def prepare_models(cases: cases_mod.Cases, inst: install.Installed, env: dict[str, str],
                   names: list[str] | None = None) -> dict[str, dict]:
    """Model name -> {path, load_format, digest} (only `names`, default all); seeded weights made once per machine."""
    from shrinker.gpu.tiny_model import model_digest

    out = {}
    for name, spec in cases.raw["models"].items():
        if names is not None and name not in names:
            continue
        src = inst.models.get(spec["dir"])
        if src is None:
            out[name] = {"error": f"the bundle has no model {spec['dir']}"}
            continue
        entry = {"path": str(src), "load_format": "dummy", "config_digest": model_digest(src)}
        if spec.get("seeded"):
            dst = inst.root / "models" / f"{name}-seed{spec.get('seed', 0)}"
            marker = dst / "weights.digests"  # "<file sha256> <content sha256>"
            if not marker.is_file():
                code = ("import sys; from pathlib import Path; from shrinker.gpu.weights import write_weights; "
                        "print(write_weights(Path(sys.argv[1]), Path(sys.argv[2]), seed=int(sys.argv[3]), "
                        "exact=sys.argv[4] == '1'))")
                wenv = dict(env)
                wenv["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env["PYTHONPATH"]])
                proc = subprocess.run([sys.executable, "-c", code, str(src), str(dst), str(spec.get("seed", 0)),
                                       "1" if spec.get("exact") else "0"],
                                      capture_output=True, text=True, env=wenv, timeout=600)
                if proc.returncode != 0:
                    out[name] = {"error": (proc.stderr.strip().splitlines() or ["weights failed"])[-1]}
                    continue
                marker.write_text(proc.stdout.strip().splitlines()[-1])
            file_sha, _, content_sha = marker.read_text().strip().partition(" ")
            entry.update(path=str(dst), load_format="auto", weights_sha256=file_sha,
                         weights_generator="exact-uniform" if spec.get("exact") else "normal")
            if content_sha:
                entry["weights_content_sha256"] = content_sha
            if spec.get("weights_content_sha256"):  # pinned in cases.toml: the same tensors as where it was pinned
                entry["weights_match_pinned"] = content_sha == spec["weights_content_sha256"]
        out[name] = entry
    return out


def run_launch(launch: cases_mod.Launch, cases: cases_mod.Cases, model: dict, env: dict[str, str],
               logs: Path, tag: str, startup_timeout: float | None = None) -> dict:
    """Start one server, send its request groups, stop it; the record of that launch."""
    flags = cases.server_flags + ["--load-format", model["load_format"]] + launch.flags
    rec: dict = {"model": launch.model, "flags": flags, "groups": launch.groups, "requests": {},
                 "weights_sha256": model.get("weights_sha256"),
                 "weights_content_sha256": model.get("weights_content_sha256"), "config_digest": model.get("config_digest")}
    if "error" in model:
        rec["status"] = f"failed: model: {model['error']}"
        return rec
    work = logs / "cwd"
    work.mkdir(parents=True, exist_ok=True)
    if launch.env:
        rec["env"] = dict(sorted(launch.env.items()))
        env = {**env, **launch.env}
    srv = server.start(Path(model["path"]), flags, env, logs / f"{tag}-{launch.name}.log", work)
    rec["command"] = " ".join(srv.proc.args if isinstance(srv.proc.args, list) else [str(srv.proc.args)])
    try:
        limit = startup_timeout or launch_timeout(launch, cases)
        rec["startup_timeout_s"] = round(limit, 1)
        if not server.wait_ready(srv, limit):
            code = srv.proc.poll()
            rec["status"] = (f"failed: server did not become ready in {limit:.0f} s" if code is None else
                             f"failed: server exited (code {code}) {time.monotonic() - srv.started:.0f} s after "
                             "launch, before it was ready")
            rec["log_tail"] = srv.log_tail(60)
            return rec
        rec["startup_s"] = round(srv.ready_s, 2)
        mark_launched(logs)
        timeout = cases.raw["server"]["request_timeout_s"]
        for group in launch.groups:
            reqs = cases.requests(group)
            rounds = [("", reqs)]
            if group == "generate" and cases.raw["generate"].get("repeat"):
                rounds.append((compare.REPEAT_SUFFIX, reqs))  # after /flush_cache: upstream against itself
            for suffix, batch in rounds:
                if suffix:
                    try:
                        rec["flush_cache"] = server.http_json(srv.url + "/flush_cache", {}, timeout=timeout)[0]
                    except OSError as exc:
                        rec["flush_cache"] = f"failed: {exc}"
                for req in batch:
                    rec["requests"][req.name + suffix] = send_request(srv.url, req, timeout)
        rec["status"] = "ok"
        if srv.proc.poll() is not None:
            rec["status"] = "failed: server died during the requests"
        rec["log_tail"] = srv.log_tail(12)
    finally:
        server.stop(srv)
    return rec


def send_request(url: str, req: cases_mod.Request, timeout: float) -> dict:
    s = time.monotonic()
    try:
        if req.stream:
            status, resp = server.http_stream(url + req.endpoint, req.body, timeout=timeout)
        else:
            status, resp = server.http_json(url + req.endpoint, req.body, timeout=timeout)
    except OSError as exc:
        status, resp = None, f"request failed: {exc}"
    return {
        "endpoint": req.endpoint,
        "http_status": status,
        "answer": compare.normalize(req.endpoint, resp, req.stream) if status == 200 else resp,
        "seconds": round(time.monotonic() - s, 3),
    }


def launch_timeout(launch: cases_mod.Launch, cases: cases_mod.Cases) -> float:
    return float(launch.startup_timeout_s or cases.raw["server"]["startup_timeout_s"])


def _launched_marker(logs: Path) -> Path:
    # <root>/logs/partN -> <root>/launched: kept while the machine stays warm, like the kernel caches
    return logs.parent.parent / "launched"


def mark_launched(logs: Path) -> None:
    try:
        _launched_marker(logs).touch()
    except OSError:
        pass


def bench_command(cases: cases_mod.Cases, model: dict, result_file: Path, tag: str) -> list[str]:
    """bench_one_batch over the batch sizes, `bench_repeats` times over in one process (medians per size)."""
    t = cases.timing
    sizes = [str(b) for _ in range(int(t.get("bench_repeats", 1))) for b in t["bench_batch_sizes"]]
    return [sys.executable, "-m", t["bench_module"], "--model-path", model["path"], "--load-format", "dummy",
            *t["bench_flags"], "--batch-size", *sizes,
            "--input-len", str(t["bench_input_len"]), "--output-len", str(t["bench_output_len"]),
            "--run-name", tag, "--result-filename", str(result_file)]


def bench_one_batch(cases: cases_mod.Cases, model: dict, env: dict[str, str], logs: Path, tag: str,
                    timeout: float = 600.0) -> dict:
    result_file = logs / f"{tag}-bench.jsonl"
    result_file.unlink(missing_ok=True)
    cmd = bench_command(cases, model, result_file, tag)
    s = time.monotonic()
    log = logs / f"{tag}-bench.log"
    with log.open("w") as fh:
        try:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=str(logs),
                                  timeout=max(1.0, timeout))
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    out = {"command": " ".join(cmd), "seconds": round(time.monotonic() - s, 2), "rows": []}
    if code != 0 or not result_file.is_file():
        why = f"timed out after {timeout:.0f} s" if code is None else f"exit {code}"
        out["error"] = why + "\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        return out
    for line in result_file.read_text().splitlines():
        row = json.loads(line)
        out["rows"].append({k: row.get(k) for k in ("batch_size", "input_len", "output_len", "prefill_latency",
                                                     "median_decode_latency", "total_latency")})
    return out


def _write(out: Path, name: str, data: dict) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def _gather_logs(logs: Path, dst: Path, failed: set[str]) -> None:
    """One text file with each server/bench log: whole for failures, the tail otherwise."""
    parts = []
    for f in sorted(logs.glob("*.log")):
        lines = f.read_text(errors="replace").splitlines()
        keep = 400 if any(name in f.name for name in failed) else 40
        parts.append(f"===== {f.name} ({len(lines)} lines, last {min(keep, len(lines))})\n" + "\n".join(lines[-keep:]))
    dst.write_text("\n\n".join(parts) + "\n")


def device_command(argv: list[str]) -> str:
    """The device call's command line as typed there (for the report)."""
    return " ".join(["python3", "-m", "shrinker.gpu.verify", *argv])


def selected_launches(cases: cases_mod.Cases, part: int, only: list[str] | None) -> list[cases_mod.Launch]:
    """The launches a part serves (0: all of them; `only`: those names, whatever their part)."""
    if only:  # `jit` and `bench` name steps, not launches
        return [launch for launch in cases.launches if launch.name in only]
    return [launch for launch in cases.launches if part == 0 or launch.part == part]


def run_part(mode: str, part: int, ship: Path, out: Path, ref: Path | None = None,
             deadline_s: float = DEFAULT_DEADLINE_S, root: Path = install.DEFAULT_ROOT,
             cases_file: Path = cases_mod.CASES_FILE, only: list[str] | None = None,
             started: float | None = None, command: str | None = None,
             jit_budget_s: float = 240.0, jit_jobs: int | None = None, fa3_so: Path | None = None) -> int:
    """Run one part on this machine; write results-part<N>-<tree>.json (and compare-part<N>.json).

    `deadline_s` counts from `started` (default: now), so several parts can share one device call.
    `only` runs just those launches, whatever their part, without the import and JIT steps; the
    name `jit` in it adds the JIT compile of part 1 (without the import timing), `bench` alone runs
    the timing part's bench_one_batch.
    A launch that needs more GPUs than this machine has is recorded as `not run: ...`.
    `fa3_so`: our slim FA3 flash_ops built on this machine, copied into the site both trees share.
    """
    t0 = started if started is not None else time.monotonic()
    reason = gpu_missing_reason()
    if reason:
        raise NoGPU(reason)
    cases = cases_mod.load_cases(cases_file)
    main_tree = "upstream" if mode == "record" else "pruned"
    inst = install.install_bundle(ship, root=root)
    if main_tree not in inst.trees:
        raise install.InstallError(f"the bundle has no {main_tree} tree: run `shrink gpu-bundle --which {main_tree}`")
    fa3_ops = install.flash_ops(inst, fa3_so)
    env = tree_env(inst, main_tree)
    logs = inst.root / "logs" / f"part{part}"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    result: dict = {
        "schema": 1, "mode": mode, "tree": main_tree, "part": part, "date": _now(),
        "command": command,
        "install": {"seconds": round(inst.seconds, 1), "reused": inst.reused, "steps": inst.steps,
                    "bundle_created": inst.manifest.get("created"), "kernel_ops": inst.manifest.get("kernel_ops"),
                    "archives": {a["file"]: {"sha256": a["sha256"], "bytes": a["bytes"]}
                                 for a in inst.manifest["archives"]},
                    "dropped": {k: v for a in inst.manifest["archives"] for k, v in a.get("dropped", {}).items()},
                    "flash_ops": fa3_ops, "fa3": inst.manifest.get("fa3")},
        "environment": environment(env),
        "not_run": cases.raw.get("not_run", []),
        "launches": {},
    }
    gpus = int(result["environment"].get("gpu_count") or 1)
    failed: set[str] = set()
    # a run of chosen launches gets its own name, so it never overwrites (or passes for) a whole part
    name = f"results-part{part}-{main_tree}" + (f"-{'-'.join(sorted(only))}" if only else "") + ".json"
    say = lambda msg: print(f"[{time.monotonic() - t0:6.1f}s] {msg}", flush=True)  # noqa: E731
    say(f"installed in {inst.seconds:.1f} s (reused: {inst.reused}); {_env_line(result['environment'])}, "
        f"{gpus} GPU(s); flash_ops: " + (f"{fa3_ops['sha256'][:12]} ({fa3_ops['source']})" if fa3_ops.get("present")
                                         else "none"))

    with_jit = part in (1, 0) and (not only or "jit" in only)
    if with_jit:
        if not only:
            result["import"] = import_times(env, runs=1)
            say(f"import sglang.launch_server: {result['import']}")
        pkg = inst.trees[main_tree] / "sglang"
        jit_box: dict = {}
        jit_thread = threading.Thread(
            target=lambda: jit_box.update(jit.compile_all(pkg, env, budget_s=jit_budget_s,
                                                         jobs=jit_jobs or max(1, (os.cpu_count() or 2) // 2))),
            daemon=True)
        jit_thread.start()
    else:
        jit_thread = None

    launches = selected_launches(cases, part, only)
    if launches:
        runnable = [launch for launch in launches if launch.gpus <= gpus]
        models = prepare_models(cases, inst, env, names=sorted({launch.model for launch in runnable}))
        result["models"] = models
        summary = ", ".join(f"{k}: {v.get('load_format', v.get('error'))}" for k, v in models.items())
        say(f"models: {summary or 'none needed'}")
        first = not _launched_marker(logs).exists()
        for launch in launches:
            if launch.gpus > gpus:
                result["launches"][launch.name] = {
                    "status": f"not run: needs {launch.gpus} GPUs, this machine has {gpus}",
                    "model": launch.model, "gpus": launch.gpus, "requests": {}}
                say(f"{launch.name}: {result['launches'][launch.name]['status']}")
                continue
            need = (MULTI_GPU_FIRST_LAUNCH_S if launch.gpus > 1 else FIRST_LAUNCH_S) if first else LATER_LAUNCH_S
            if time.monotonic() - t0 + need > deadline_s:
                result["launches"][launch.name] = {"status": "skipped: no time left in this call", "requests": {}}
                continue
            # the requests and the write-back need ~30 s: the start-up wait ends before the deadline
            limit = min(launch_timeout(launch, cases), deadline_s - (time.monotonic() - t0) - 30)
            rec = run_launch(launch, cases, models[launch.model], env, logs, main_tree, startup_timeout=limit)
            rec["first_launch_of_call"] = first
            rec["gpus"] = launch.gpus
            first = first and rec.get("startup_s") is None
            result["launches"][launch.name] = rec
            if rec["status"] != "ok":
                failed.add(launch.name)
            ready = f" (ready in {rec['startup_s']} s)" if "startup_s" in rec else ""
            ok = sum(1 for r in rec["requests"].values() if r.get("http_status") == 200)
            say(f"{launch.name}: {rec['status']}{ready}, {ok}/{len(rec['requests'])} requests HTTP 200")
            _write(out, name, result)  # what is done survives a call cut off at its limit

    if jit_thread is not None:
        jit_thread.join(timeout=max(1.0, deadline_s - (time.monotonic() - t0) - 20))
        result["jit"] = {k: v for k, v in jit_box.items()} if jit_box else {"error": "did not finish in this call"}
        counts = ", ".join(f"{k} {result['jit'].get(k)}" for k in ("built", "failed", "timeout", "total"))
        say(f"jit: {counts}")

    bench_only = only == ["bench"]  # `--only bench`: the timing part's bench_one_batch alone
    if (part == cases.timing["part"] or part == 0) and (not only or bench_only):
        result["timing"] = run_timing(cases, inst, main_tree, logs, t0, deadline_s, env, bench_only=bench_only)

    result["seconds"] = round(time.monotonic() - t0, 1)
    _write(out, name, result)
    _gather_logs(logs, out / f"logs-part{part}.txt", failed)

    code = 0
    if mode == "compare":
        summary = compare_part(ref, result)
        _write(out, name.replace("results-", "compare-").replace(f"-{main_tree}", "", 1), summary)
        for row in summary["cases"]:
            print(f"  {row['status']:7} {row['launch']} / {row['request']}  {row['detail']}")
        code = 0 if summary["passed"] else 1
    else:
        code = 0 if not failed else 1
    print(f"part {part} ({mode}, {main_tree}) done in {result['seconds']} s -> {out / name}", flush=True)
    return code


def _one_import(env: dict[str, str]) -> tuple[float | None, str | None]:
    s = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", "import sglang.launch_server"], capture_output=True, text=True,
                          env=env, timeout=600)
    if proc.returncode != 0:
        return None, (proc.stderr.strip().splitlines() or ["import failed"])[-1]
    return round(time.monotonic() - s, 3), None


def startup_once(model: dict, flags: list[str], env: dict[str, str], logs: Path, tag: str, timeout: float) -> dict:
    """Launch a server, time launch -> /health 200, stop it."""
    work = logs / "cwd"
    work.mkdir(parents=True, exist_ok=True)
    srv = server.start(Path(model["path"]), flags, env, logs / f"{tag}.log", work)
    try:
        if not server.wait_ready(srv, timeout):
            return {"error": "server did not become ready", "log_tail": srv.log_tail(30)}
        mark_launched(logs)
        return {"ready_s": round(srv.ready_s, 2)}
    finally:
        server.stop(srv)


def run_timing(cases: cases_mod.Cases, inst: install.Installed, main_tree: str, logs: Path, t0: float,
               deadline_s: float, main_env: dict[str, str], bench_only: bool = False) -> dict:
    """Import time, server start-up and bench_one_batch, tree by tree, alternating, when both trees are installed.

    Alternating (pruned, upstream, pruned, upstream ...) on one machine keeps drifts of the machine
    (clocks, caches, other tenants) out of the ratio. The machine's first server launch compiles
    kernels: when nothing was launched yet, one uncounted launch warms the caches first. Likewise
    bench_one_batch: its first bs=8 prefill compiles Triton kernels, so with `bench_warmup` one
    uncounted bench of the main tree runs first, and the rounds alternate which tree goes first
    (round 0 main tree first, round 1 the other ...): a tree that always ran first paid the compile
    and the warm-up drift alone. `bench_only`: skip the import and start-up figures.
    """
    t = cases.timing
    trees = [main_tree] + [w for w in sorted(inst.trees) if w != main_tree]
    envs = {w: tree_env(inst, w) for w in trees}
    model = prepare_models(cases, inst, main_env, names=[t["bench_model"]])[t["bench_model"]]
    out: dict = {"trees": trees, "import": {w: {"first_s": None, "runs_s": []} for w in trees},
                 "startup": {w: [] for w in trees}, "bench": {w: [] for w in trees}}
    left = lambda: deadline_s - (time.monotonic() - t0)  # noqa: E731
    say = lambda msg: print(f"[{time.monotonic() - t0:6.1f}s] {msg}", flush=True)  # noqa: E731

    for r in range(0 if bench_only else int(t["import_runs"]) + 1):  # first imports, then runs alternating
        for w in trees:
            if "error" in out["import"][w]:
                continue
            secs, err = _one_import(envs[w])
            if err:
                out["import"][w]["error"] = err
            elif r == 0:
                out["import"][w]["first_s"] = secs
            else:
                out["import"][w]["runs_s"].append(secs)
    for w in trees:
        runs = out["import"][w]["runs_s"]
        out["import"][w]["median_s"] = statistics.median(runs) if runs else None
        say(f"import ({w}): {out['import'][w]}")

    if "error" in model:
        out["startup"] = out["bench"] = {"error": f"model: {model['error']}"}
        return out
    flags = cases.server_flags + ["--load-format", model["load_format"]] + list(t.get("startup_flags", []))
    out["startup_flags"] = flags
    timeout = float(cases.raw["server"]["startup_timeout_s"])
    if not bench_only and not _launched_marker(logs).exists() and left() > FIRST_LAUNCH_S + 200:
        warm = startup_once(model, flags, envs[main_tree], logs, f"{main_tree}-startup-warmup", timeout)
        out["startup_warmup"] = {main_tree: warm}
        say(f"start-up warm-up ({main_tree}, uncounted): {warm}")
    for r in range(0 if bench_only else int(t.get("startup_rounds", 1))):
        for w in trees:
            if left() < LATER_LAUNCH_S + 100:
                out["startup"][w].append({"error": "skipped: no time left in this call"})
                continue
            res = startup_once(model, flags, envs[w], logs, f"{w}-startup-r{r}", min(timeout, left() - 60))
            out["startup"][w].append(res)
            say(f"start-up ({w}, round {r}): {res.get('ready_s') or res.get('error')}")

    if t.get("bench_warmup") and left() > 200:
        warm = bench_one_batch(cases, model, envs[main_tree], logs, f"{main_tree}-bench-warmup",
                               timeout=min(600.0, left() - 20))
        out["bench_warmup"] = {main_tree: {"rows": len(warm.get("rows", [])), "error": warm.get("error", "")}}
        say(f"bench warm-up ({main_tree}, uncounted): {len(warm.get('rows', []))} rows {warm.get('error', '')}")
    for r in range(t["bench_rounds"]):
        for w in (trees if r % 2 == 0 else list(reversed(trees))):
            if left() < 90:
                out["bench"][w].append({"error": "skipped: no time left in this call"})
                continue
            res = bench_one_batch(cases, model, envs[w], logs, f"{w}-r{r}", timeout=min(600.0, left() - 20))
            out["bench"][w].append(res)
            say(f"bench ({w}, round {r}): {len(res.get('rows', []))} rows {res.get('error', '')}")
    return out


def compare_part(ref_dir: Path, result: dict) -> dict:
    ref = compare.load_record(ref_dir)
    launches_ref = {k: v for k, v in ref["launches"].items() if k in result["launches"]}
    rows = compare.compare_launches(launches_ref, result["launches"])
    for name in sorted(set(result["launches"]) - set(ref["launches"])):
        rows.append(compare.CaseResult(name, "*", "error", "no upstream reference recorded for this launch"))
    summary = {"part": result["part"], "cases": compare.results_table(rows),
               "passed": all(r.passed or r.status in compare.NOT_COUNTED for r in rows),
               "not_run": sorted({r.launch for r in rows if r.status == compare.NOT_RUN}),
               "not_run_upstream": sorted({r.launch for r in rows if r.status == compare.UPSTREAM_FAILED}),
               "not_compared": sorted({r.launch for r in rows if r.status == compare.NOT_COMPARED})}
    if "jit" in result and ref.get("jit"):
        summary["jit"] = jit.compare_jit(ref["jit"], result["jit"])
        summary["passed"] = summary["passed"] and summary["jit"]["passed"]
    return summary


def run_gpu_verify(tree: Path, upstream_root: Path) -> int:
    """`shrink verify --gpu` on this machine: 2 without a GPU; else bundle, run all parts, report.

    `tree` and `upstream_root` are repository roots (each holding python/sglang).
    """
    reason = gpu_missing_reason()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    from shrinker import paths
    from shrinker.gpu import bundle

    spec = bundle.load_spec()
    kernel = paths.cache_dir() / "downloads" / spec["kernel"]["wheel"]
    bundle.build_bundle({"pruned": Path(tree) / "python", "upstream": Path(upstream_root) / "python"}, kernel,
                        limit=1 << 40)
    ref = reference_dir()
    run_dir = bundle.bundle_dir() / "local-run"
    shutil.rmtree(run_dir, ignore_errors=True)
    code = run_part("compare", 0, bundle.ship_dir(), run_dir, ref=ref, deadline_s=float("inf"),
                    command=f"shrink verify --gpu --tree {tree}")
    from shrinker.gpu import report

    report.write_report(ref, [run_dir], reference_dir().parent)
    return code


def release_version(spec_text: str | None = None) -> str:
    """The version of an upstream spec (`pypi:sglang==0.5.17`; default: the pin's), without fetching it."""
    from shrinker.errors import ShrinkError
    from shrinker.upstream.pin import read_pin
    from shrinker.upstream.spec import parse_spec

    pin = read_pin() if spec_text is None else None
    if pin is not None:
        return pin.version
    try:
        spec = parse_spec(spec_text)
    except ValueError as exc:
        raise ShrinkError(str(exc)) from None
    if getattr(spec, "version", None):
        return spec.version
    from shrinker.upstream import load

    return load(spec.text).version


def reference_dir(version: str = "0.5.16") -> Path:
    from shrinker import paths

    return paths.reports_dir("deepseek", version) / "gpu-reference"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m shrinker.gpu.verify", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("record", "compare"):
        p = sub.add_parser(name)
        p.add_argument("--part", type=int, nargs="+", required=True,
                       help="parts to run in this call, in order (cases.toml: 1-3 serve, 4 times, 5 serves on "
                            "2 GPUs); 0 runs everything")
        p.add_argument("--ship", type=Path, default=Path(".gpu-bundle/ship"))
        p.add_argument("--out", type=Path, required=True)
        p.add_argument("--deadline", type=float, default=DEFAULT_DEADLINE_S, help="seconds this call may use")
        p.add_argument("--only", nargs="*", help="launch names to run (default: the part's); `jit` adds part 1's "
                                                 "JIT compile, `bench` alone runs part 4's bench_one_batch")
        p.add_argument("--jit-budget", type=float, default=240.0, help="seconds the JIT compile may take (part 1)")
        p.add_argument("--jit-jobs", type=int, default=None, help="parallel nvcc jobs (default: half the cores)")
        p.add_argument("--fa3-so", type=Path, default=None,
                       help="our slim FA3 flash_ops.abi3.so built on this machine (shrinker.gpu.fa3_build --keep): "
                            "copied into sgl_kernel for both trees")
        if name == "compare":
            p.add_argument("--ref", type=Path, required=True)
    p = sub.add_parser("report")
    p.add_argument("--ref", type=Path, required=True)
    p.add_argument("--run", type=Path, nargs="*", default=[], help="device run folders (none yet: the reference alone)")
    p.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "report":
            from shrinker.gpu import report

            return report.write_report(args.ref, args.run, args.out)
        started, code = time.monotonic(), 0
        command = device_command(list(argv) if argv is not None else sys.argv[1:])
        for part in args.part:
            code = max(code, run_part(args.cmd, part, args.ship, args.out, ref=getattr(args, "ref", None),
                                      deadline_s=args.deadline, only=args.only, started=started,
                                      command=command, jit_budget_s=args.jit_budget, jit_jobs=args.jit_jobs,
                                      fa3_so=args.fa3_so))
        return code
    except NoGPU as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except (install.InstallError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
