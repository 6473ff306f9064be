"""`make bench`: speed and memory of the stages on the pinned upstream, into reports/bench/*.json.

Each measurement runs in a fresh process so its peak memory is its own. Figures are what this machine
measured (with its core count), not targets: the targets are in README and the issues.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from shrinker import paths

_PLAN_JOB = """
import json, resource, sys, time
from pathlib import Path
from shrinker.graph.cache import FactsCache
from shrinker.plan.run import analyse
from shrinker.rules.load import load_rules
from shrinker.upstream import load
import shrinker.graph.build as build
cache = FactsCache(Path(sys.argv[1]))
orig = build.build_graph
build.build_graph = lambda tree, jobs=2, cache=cache: orig(tree, jobs=jobs, cache=cache)
import shrinker.plan.run as run
run.build_graph = build.build_graph
t = time.perf_counter()
graph, reach, decisions, batches = analyse(load(), load_rules("deepseek"))
seconds = time.perf_counter() - t
rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"seconds": round(seconds, 2), "peak_rss_mb": round(rss / 1024, 1),
                  "files_parsed": graph.stats.parsed, "files_cached": graph.stats.cached}))
"""


def _machine() -> dict:
    return {"cores": os.cpu_count(), "load_avg_1min": round(os.getloadavg()[0], 2),
            "python": platform.python_version(), "machine": platform.machine(),
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def _run_job(code: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench job failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_plan() -> dict:
    with tempfile.TemporaryDirectory(prefix="shrink-bench-") as tmp:
        cache = str(Path(tmp) / "facts.pickle")
        cold = _run_job(_PLAN_JOB, cache)
        warm = _run_job(_PLAN_JOB, cache)
    return {"what": "plan (parse + graph + reachability + decisions + batches) on the pinned upstream",
            "cold": cold, "warm": warm, "targets": {"cold_seconds": 15, "warm_seconds": 3}, **_machine()}


def bench_apply() -> dict:
    """All batches from a fresh work tree (gate included, built-in checks only)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "shrinker.cli", "apply", "--reset", "--all", "--no-verify"],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    from shrinker.upstream import load

    report = paths.reports_dir("deepseek", load().version) / "apply.json"
    batches = json.loads(report.read_text())["batches"] if report.exists() else []
    return {"what": "shrink apply --reset --all --no-verify", "exit_code": proc.returncode,
            "seconds": round(seconds, 2), "batches": [{k: b[k] for k in ("number", "gate", "seconds")} for b in batches],
            **_machine()}


def _rules_before_pin(root: Path) -> str:
    """The commit before the pin last moved: its rules and pin are where the walk to the pin started."""
    log = subprocess.run(["git", "-C", str(paths.project_root()), "log", "-1", "--format=%H", "--",
                          "upstream/UPSTREAM.toml"], capture_output=True, text=True, check=True)
    commit = f"{log.stdout.strip()}~1"
    archive = subprocess.run(["git", "-C", str(paths.project_root()), "archive", commit, "rules", "upstream/UPSTREAM.toml"],
                             capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    return commit


def bench_regen(from_spec: str | None = None, to_spec: str | None = None) -> dict:
    """One whole regen step (plan both releases, diff, apply every batch, CPU verify), cold, then warm.

    The step is the pin to the next PyPI release; when the pin is the newest release, it is the first
    step of the walk that reached the pin, with the rules and pin of the commit before it moved. Cold:
    no parse cache, no work tree; warm: both kept. The verify environments are the project's own
    (their install is in the make-plan figure)."""
    import shutil

    from shrinker.regen.run import newest_on_pypi, pinned_spec
    from shrinker.regen.walk import releases_between
    from shrinker.upstream.pin import read_pin

    with tempfile.TemporaryDirectory(prefix="shrink-bench-regen-") as tmp:
        root = Path(tmp) / "proj"
        (root / "upstream").mkdir(parents=True)
        rules_from = "HEAD"
        following = releases_between(pinned_spec(), newest_on_pypi())
        if from_spec is None and following:
            shutil.copytree(paths.rules_dir(), root / "rules")
            shutil.copy(paths.project_root() / "upstream" / "UPSTREAM.toml", root / "upstream")
        else:
            rules_from = _rules_before_pin(root)
        for env_dir in paths.project_root().glob(".venv-verify*"):
            (root / env_dir.name).symlink_to(env_dir)
        env = {**os.environ, "SHRINK_ROOT": str(root), "SHRINK_CACHE": str(paths.cache_dir()),
               "SHRINK_PARSE_CACHE": str(Path(tmp) / "parse")}
        cmd = [sys.executable, "-m", "shrinker.cli"]
        start_spec = from_spec or read_pin(root / "upstream" / "UPSTREAM.toml").spec
        to_spec = to_spec or releases_between(start_spec, newest_on_pypi())[0]
        runs = {}
        for label in ("cold", "warm"):
            start = time.perf_counter()
            proc = subprocess.run([*cmd, "regen", "--to", to_spec], env=env, capture_output=True, text=True)
            runs[label] = {"seconds": round(time.perf_counter() - start, 2), "exit_code": proc.returncode}
            (Path(tempfile.gettempdir()) / f"shrink-bench-regen-{label}.log").write_text(proc.stdout + proc.stderr)
    runs["warm_over_cold"] = round(runs["warm"]["seconds"] / runs["cold"]["seconds"], 3)
    return {"what": f"shrink regen {start_spec} -> {to_spec}: one whole step (plan both, diff, apply every batch, "
                    f"CPU verify), rules of {rules_from}", **runs, "target": "warm < 0.5 x cold", **_machine()}


def output_hashes(root: Path, profile: str = "deepseek") -> dict:
    """What `make plan` must give byte for byte on every machine: the work tree's git tree object,
    the manifests and the requirements report (sha256 over each folder's files, by relative path)."""
    import hashlib

    from shrinker.upstream.pin import read_pin

    pin = read_pin(root / "upstream" / "UPSTREAM.toml")
    if pin is None:
        raise SystemExit(f"{root}: no upstream/UPSTREAM.toml")
    version = pin.version
    work = root / "build" / f"{profile}-v{version}"
    tree = subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD^{tree}"], capture_output=True, text=True)

    def digest(paths_: list[Path], base: Path) -> str:
        h = hashlib.sha256()
        for p in sorted(paths_):
            h.update(p.relative_to(base).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
        return h.hexdigest()

    manifests = root / "manifests" / profile / f"v{version}"
    reports = root / "reports" / profile / f"v{version}"
    return {"version": version, "work_tree_object": tree.stdout.strip(),
            "manifests_sha256": digest([p for p in manifests.rglob("*") if p.is_file()], manifests),
            "requirements_sha256": digest([reports / "requirements.json", reports / "requirements.md"], reports),
            "pyproject_sha256": digest([work / "python" / "pyproject.toml"], work)}


def bench_make_plan(keep: Path | None = None) -> dict:
    """`make plan` as a new user meets it: a fresh clone of HEAD, no .venv, no downloads, no caches."""
    import shutil

    tmp = Path(tempfile.mkdtemp(prefix="shrink-bench-make-plan-"))
    clone = keep or tmp / "clone"
    subprocess.run(["git", "clone", "-q", str(paths.project_root()), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "SHRINK_ROOT", "SHRINK_CACHE")}
    start = time.perf_counter()
    proc = subprocess.run(["make", "plan"], cwd=clone, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    (tmp / "make-plan.log").write_text(proc.stdout + proc.stderr)
    result = {"what": "make plan in a fresh clone (cold: new .venv, download, parse, apply, verify env, verify)",
              "exit_code": proc.returncode, "seconds": round(seconds, 1), "target_seconds": 720,
              "outputs": output_hashes(clone) if proc.returncode == 0 else {},
              **_machine()}
    print(f"make plan log: {tmp / 'make-plan.log'}", file=sys.stderr)
    if keep is None:
        shutil.rmtree(clone, ignore_errors=True)
    return result


def main() -> None:
    out_dir = paths.project_root() / "reports" / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    which = [w for w in sys.argv[1:] if w != "verify"] or ["plan", "apply", "regen", "make-plan"]
    for name in which:
        result = {"plan": bench_plan, "apply": bench_apply, "regen": bench_regen, "make-plan": bench_make_plan}[name]()
        (out_dir / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
        print(f"{name}: {json.dumps(result)}")
    try:  # the verify stage adds its own figure when present
        from shrinker.verify import bench as verify_bench  # type: ignore[attr-defined]
    except ImportError:
        verify_bench = None
    if verify_bench is not None and (not sys.argv[1:] or "verify" in sys.argv[1:]):
        verify_bench.main()


if __name__ == "__main__":
    main()
