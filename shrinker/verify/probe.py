"""Run a probe script (probes/*.py) in a tree with the verify environment, and cache upstream's answers.

A probe reads JSON and writes JSON; it imports the tree's code, never shrinker. Upstream answers are
cached per upstream commit and per everything else that could change them: the probe's source, its
input, and the environment's requirements.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable

from shrinker import paths
from shrinker.verify.env import VerifyEnv
from shrinker.verify.imports import worker_env
from shrinker.checks.tree import SourceTree

PROBES = Path(__file__).parent / "probes"


class ProbeFailed(Exception):
    """The probe process itself failed (not the code it exercised, which it reports as data)."""


def run_probe(script: str, tree: SourceTree, env: VerifyEnv, args: list[str], *,
              inputs: dict[str, Any] | None = None, timeout: float = 300.0) -> dict:
    """Run probes/SCRIPT with ARGS; {input:NAME} in args is replaced by a temp file holding inputs[NAME]
    and {out} by the output file, whose JSON is returned."""
    with tempfile.TemporaryDirectory(prefix="shrink-probe-") as tmp:
        out = Path(tmp) / "out.json"
        real_args = []
        for arg in args:
            if arg == "{out}":
                real_args.append(str(out))
            elif arg.startswith("{input:"):
                name = arg[len("{input:"):-1]
                path = Path(tmp) / f"{name}.json"
                path.write_text(json.dumps(inputs[name], ensure_ascii=False), encoding="utf-8")
                real_args.append(str(path))
            else:
                real_args.append(arg)
        try:
            proc = subprocess.run([str(env.python), str(PROBES / script), *real_args], capture_output=True,
                                  text=True, env=worker_env(tree), cwd=tmp, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ProbeFailed(f"{script} did not finish in {timeout:.0f} s") from None
        if not out.exists():
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            raise ProbeFailed(f"{script} exited {proc.returncode} without a result: {tail}")
        return json.loads(out.read_text(encoding="utf-8"))


def probe_key(script: str, env: VerifyEnv, payload: Any) -> str:
    h = hashlib.sha1()
    h.update((PROBES / script).read_bytes())
    h.update((PROBES / "pretend_cuda.py").read_bytes())  # the probes may install it
    h.update(env.requirements_hash.encode())
    h.update(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode())
    return h.hexdigest()[:16]


def cached(commit: str | None, name: str, key: str, compute: Callable[[], dict]) -> dict:
    """compute() once per (upstream commit, name, key); no caching without a commit."""
    if not commit:
        return compute()
    path = paths.cache_dir() / "verify" / f"probe-{commit[:12]}-{name}-{key}.json"
    if path.exists():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            pass
    data = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
    for stale in path.parent.glob(f"probe-{commit[:12]}-{name}-*.json"):  # older probes or inputs
        if stale != path:
            stale.unlink(missing_ok=True)
    return data
