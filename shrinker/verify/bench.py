"""Benchmark `verify_tree`: upstream vs a fresh clone of upstream, warm upstream caches.

    python -m shrinker.verify.bench [--full] [--work-tree] [--tree PATH] [--no-clone] [--out reports/bench/verify.json]

Runs (each a full verify_tree, all checks, 2 workers):
- warm: caches warm, pruned import results reused where what the import read is unchanged
  (what the gate after a batch costs when few files changed);
- full (--full): the same with reuse off, every module of the copy re-imported (the worst case:
  a batch that touches a file every import loads);
- work tree (--work-tree): build/deepseek-v<version>/ as `shrink apply` left it, when it exists
  (with --full also with reuse off); --tree PATH: any tree, e.g. a clone of the work tree at a batch.
A first run that fills the upstream caches is timed as `cold_upstream`. Writes reports/bench/verify.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

from shrinker import paths
from shrinker.upstream import load
from shrinker.verify.env import require_env, requirements_for
from shrinker.verify.imports import importable_modules, upstream_cache_file
from shrinker.verify.run import clean_commit, verify_tree
from shrinker.checks.tree import SourceTree

TARGET_S = 300.0


def _run(tree: Path, upstream_root: Path, **kwargs) -> dict:
    start, cpu, load = time.monotonic(), _children_cpu(), os.getloadavg()[0]
    result = verify_tree(tree, upstream_root, **kwargs)
    return {"seconds": round(time.monotonic() - start, 1), "cpu_seconds": round(_children_cpu() - cpu, 1),
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "load_avg": [round(load, 2), round(os.getloadavg()[0], 2)],
            "passed": result.passed, "regressions": result.regressions,
            "checks": {c.name: {"seconds": c.seconds, **c.counts} for c in result.checks}}


def _children_cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _upstream_cache_complete(up, env) -> bool:
    from shrinker.verify.run import load_surface

    path = upstream_cache_file(up.commit, env, 60.0, load_surface("deepseek").get("pretend"))
    if not path.exists():
        return False
    cached = json.loads(path.read_text())
    return all(m in cached for m in importable_modules(SourceTree.load(up.root)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also time a run with reuse off")
    parser.add_argument("--work-tree", action="store_true", help="also time the applied work tree")
    parser.add_argument("--tree", type=Path, default=None,
                        help="also time this tree (e.g. a clone of the work tree at a batch: apply must not be "
                             "changing a tree while it is timed)")
    parser.add_argument("--no-clone", action="store_true",
                        help="skip the upstream-vs-clone runs (they need upstream's import results for every "
                             "upstream module, ~18 min once under pretend CUDA); time only --work-tree / --tree")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    up = load()
    env = require_env(reqs=requirements_for(up.root))
    out = args.out or paths.reports_dir() / "bench" / "verify.json"
    if clean_commit(up.root) != up.commit:
        raise SystemExit(f"{up.root} is not the clean pinned commit: caches would not apply")
    report: dict = {"what": "verify_tree, all checks, upstream vs a git clone of upstream", "jobs": 2,
                    "target_seconds": TARGET_S, "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                            "load_avg_at_start": os.getloadavg()[0]},
                    "upstream": {"spec": up.spec, "commit": up.commit}, "runs": {}}
    if not args.no_clone:
        with tempfile.TemporaryDirectory(prefix="shrink-bench-") as tmp:
            clone = Path(tmp) / "clone"
            subprocess.run(["git", "clone", "-q", str(up.root), str(clone)], check=True)
            if not _upstream_cache_complete(up, env):
                report["runs"]["cold_upstream"] = _run(clone, up.root, env=env)
            report["runs"]["warm"] = _run(clone, up.root, env=env)
            if args.full:
                report["runs"]["full_no_reuse"] = _run(clone, up.root, env=env, reuse=False)
    work = paths.work_tree_dir("deepseek", up.version)
    if args.work_tree and work.is_dir():
        head = subprocess.run(["git", "-C", str(work), "log", "--oneline", "-1"], capture_output=True, text=True)
        report["work_tree_head"] = head.stdout.strip()
        report["runs"]["work_tree"] = _run(work, up.root, env=env)
        if args.full:
            report["runs"]["work_tree_no_reuse"] = _run(work, up.root, env=env, reuse=False)
    if args.tree:
        head = subprocess.run(["git", "-C", str(args.tree), "log", "--oneline", "-1"], capture_output=True, text=True)
        report["tree"] = {"path": str(args.tree), "head": head.stdout.strip()}
        report["runs"]["tree"] = _run(args.tree, up.root, env=env)
        if args.full:
            report["runs"]["tree_no_reuse"] = _run(args.tree, up.root, env=env, reuse=False)
    report["machine"]["load_avg_at_end"] = os.getloadavg()[0]
    if args.no_clone:  # the runs of other trees and modes in an earlier file would read as this one's
        report["what"] = "verify_tree, all checks, of the trees named (--no-clone: no upstream-vs-clone run)"
    elif out.exists():  # keep runs this invocation did not repeat (e.g. the one-off cold upstream run)
        try:
            earlier = json.loads(out.read_text()).get("runs", {})
        except ValueError:
            earlier = {}
        report["runs"] = {**{k: v for k, v in earlier.items() if k not in report["runs"]}, **report["runs"]}
    report["within_target"] = {name: run["seconds"] <= TARGET_S for name, run in report["runs"].items()
                               if name != "cold_upstream"}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    for name, run in report["runs"].items():
        print(f"{name}: {run['seconds']} s (cpu {run['cpu_seconds']} s), {run['regressions']} regressions")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
