"""Compile every kept JIT CUDA source of a tree with nvcc, in parallel, within a time box.

SGLang's jit_kernel sources (jit_kernel/csrc/**/*.cu|.cuh) are compiled at run time by
`load_jit`, mostly as header-only templates instantiated from Python. Here each source is compiled
on its own as one CUDA translation unit for the local GPU, with the tree's own flags and include
paths (asked of the tree itself, in a subprocess with its PYTHONPATH): every function that is not a
template is compiled for sm_90a, every template is parsed. This catches a source that lost a header
or a definition in the prune. Results per file: built, failed (first error line) or timeout. The
kernels a server really instantiates are built by the server runs themselves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SUFFIXES = (".cu", ".cuh")

# Asked of the tree under test: its default include paths, target flags and header dependencies.
_PROBE = r"""
import json, sys
JIT = sys.argv[1] if len(sys.argv) > 1 else "sglang.jit_kernel"
out = {"include": [], "flags": [], "errors": []}
try:
    DEFAULT_INCLUDE = __import__(JIT + ".utils.compile", fromlist=["x"]).DEFAULT_INCLUDE
    out["include"] += list(DEFAULT_INCLUDE)
except Exception as e:
    out["errors"].append(f"DEFAULT_INCLUDE: {e!r}")
try:
    _arch = __import__(JIT + ".utils.arch", fromlist=["x"])
    get_default_target_flags, get_jit_cuda_arch = _arch.get_default_target_flags, _arch.get_jit_cuda_arch
    out["flags"] += list(get_default_target_flags())
    arch = get_jit_cuda_arch()
    code = f"{arch.major}{arch.minor}{arch.suffix}"
    out["flags"].append(f"-gencode=arch=compute_{code},code=sm_{code}")
except Exception as e:
    out["errors"].append(f"flags: {e!r}")
try:
    from tvm_ffi.libinfo import find_dlpack_include_path, find_include_path
    out["include"] += [find_include_path(), find_dlpack_include_path()]
except Exception as e:
    out["errors"].append(f"tvm_ffi: {e!r}")
try:
    REGISTERED_DEPENDENCIES = __import__(JIT + ".utils.deps", fromlist=["x"]).REGISTERED_DEPENDENCIES
    for name, fn in REGISTERED_DEPENDENCIES.items():
        try:
            out["include"] += list(fn())
        except Exception as e:
            out["errors"].append(f"dependency {name}: {type(e).__name__}")
except Exception as e:
    out["errors"].append(f"deps: {e!r}")
print(json.dumps(out))
"""

FALLBACK_FLAGS = ["-std=c++20", "-O3", "--expt-relaxed-constexpr",
                  "-gencode=arch=compute_90a,code=sm_90a", "-DSGL_CUDA_ARCH=900"]


# Where a release keeps its JIT kernel package, under sglang/: v0.5.16 `jit_kernel`, v0.5.17 `kernels/jit`.
JIT_PACKAGES = ("jit_kernel", "kernels/jit")


def jit_package(tree_pkg: Path) -> str | None:
    """The JIT kernel package's path under the sglang package folder (the first with a csrc/), or None."""
    return next((rel for rel in JIT_PACKAGES if (Path(tree_pkg) / rel / "csrc").is_dir()), None)


def sources(tree_pkg: Path) -> list[Path]:
    """The JIT CUDA sources of an installed sglang package folder, sorted."""
    rel = jit_package(tree_pkg)
    if rel is None:
        return []
    csrc = Path(tree_pkg) / rel / "csrc"
    return sorted(p for p in csrc.rglob("*") if p.is_file() and p.suffix in SUFFIXES)


def probe(env: dict[str, str], module: str = "sglang.jit_kernel") -> dict:
    proc = subprocess.run([sys.executable, "-c", _PROBE, module], capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0:
        return {"include": [], "flags": [], "errors": [(proc.stderr.strip().splitlines() or ["probe failed"])[-1]]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if "error" in line.lower():
            return line.strip()[:300]
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else "failed")[:300]


def compile_all(tree_pkg: Path, env: dict[str, str], budget_s: float = 180.0, jobs: int | None = None) -> dict:
    """{'files': {rel: {status, seconds, error?}}, 'built', 'failed', 'timeout', 'seconds', 'flags'}."""
    t0 = time.monotonic()
    srcs = sources(tree_pkg)
    info = probe(env, "sglang." + (jit_package(tree_pkg) or "jit_kernel").replace("/", "."))
    flags = info["flags"] or FALLBACK_FLAGS
    includes = [i for i in dict.fromkeys(info["include"]) if i]
    jobs = jobs or max(1, (os.cpu_count() or 2))
    deadline = t0 + budget_s
    results: dict[str, dict] = {}
    tmp = Path(tempfile.mkdtemp(prefix="jit-"))

    def build(src: Path) -> tuple[str, dict]:
        rel = src.relative_to(tree_pkg).as_posix()
        left = deadline - time.monotonic()
        if left <= 1:
            return rel, {"status": "timeout", "seconds": 0.0}
        obj = tmp / (rel.replace("/", "__") + ".o")
        cmd = ["nvcc", *flags, *(f"-I{i}" for i in includes), "-x", "cu", "-c", str(src), "-o", str(obj)]
        s = time.monotonic()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=left, env=env)
        except subprocess.TimeoutExpired:
            return rel, {"status": "timeout", "seconds": round(time.monotonic() - s, 1)}
        except FileNotFoundError:
            return rel, {"status": "failed", "seconds": 0.0, "error": "nvcc not found"}
        took = round(time.monotonic() - s, 1)
        if proc.returncode == 0:
            return rel, {"status": "built", "seconds": took}
        return rel, {"status": "failed", "seconds": took, "error": _first_error(proc.stderr + proc.stdout)}

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for rel, res in pool.map(build, srcs):
            results[rel] = res
    counts = {k: sum(1 for r in results.values() if r["status"] == k) for k in ("built", "failed", "timeout")}
    return {"files": results, **counts, "total": len(srcs), "seconds": round(time.monotonic() - t0, 1),
            "flags": flags, "include": includes, "probe_errors": info.get("errors", []), "jobs": jobs,
            "budget_s": budget_s}


def compare_jit(ref: dict, new: dict) -> dict:
    """A pruned tree's JIT results against upstream's: no kept source may fail where upstream built."""
    regressions, same_failures, unknown = [], [], []
    for rel, res in sorted(new.get("files", {}).items()):
        up = ref.get("files", {}).get(rel)
        if res["status"] == "built":
            continue
        if up is None or up["status"] == "timeout" or res["status"] == "timeout":
            unknown.append(rel)
        elif up["status"] == "built":
            regressions.append({"file": rel, "error": res.get("error", res["status"])})
        else:
            same_failures.append(rel)
    return {"regressions": regressions, "failed_upstream_too": same_failures, "undecided": unknown,
            "passed": not regressions and not unknown}
