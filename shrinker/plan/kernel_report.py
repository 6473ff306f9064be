"""reports/<profile>/v<version>/kernels.md and kernels.json: the kernel manifest's counts, and the bytes
of the kernel payload (binaries, wrapper packages, JIT sources) upstream, as planned and, once apply
has run, in the work tree.

`shrink plan` writes it from the manifest; `shrink apply --all` writes it again with the work tree
measured (the dead-symbol batch removes wrapper modules the plan keeps as files).
"""

from __future__ import annotations

import json
from pathlib import Path

from shrinker.graph.discover import IMPORT_ROOTS
from shrinker.plan.kernels import KINDS, KernelEntry

PAYLOAD = ("binaries", "wrapper packages", "JIT sources")


def kernel_package_files(root: Path, packages: list[str]) -> dict[str, int]:
    """tree path -> bytes of every file of the kernel packages (binaries included) under `root`."""
    out: dict[str, int] = {}
    for import_root in IMPORT_ROOTS:
        for package in packages:
            folder = root / import_root / package
            if folder.is_dir():
                for path in folder.rglob("*"):
                    if path.is_file() and "__pycache__" not in path.parts:
                        out[path.relative_to(root).as_posix()] = path.stat().st_size
    return out


def _payload(entries: list[KernelEntry], package_files: dict[str, int], present) -> dict[str, int]:
    """Bytes by payload kind of what `present(path)` says is there."""
    binaries = {e.name: e.bytes for e in entries if e.kind == "binary"}
    wrappers = {p: b for p, b in package_files.items() if p not in binaries}
    return {
        "binaries": sum(b for p, b in binaries.items() if present(p, binary=True)),
        "wrapper packages": sum(b for p, b in wrappers.items() if present(p)),
        "JIT sources": sum(e.bytes for e in entries if e.kind == "jit" and present(e.name)),
    }


def _gpu_builds(report_dir: Path) -> list[Path]:
    """The kernels-build.md the GPU machine wrote, one per release it runs (sorted: same bytes anywhere)."""
    return sorted(report_dir.parent.glob("v*/kernels-build.md"))


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e5 else f"{n / 1e3:,.1f} kB"


def write_kernel_report(report_dir: Path, spec: str, entries: list[KernelEntry], upstream_root: Path,
                        packages: list[str], kept_paths: set[str], tree: Path | None = None, note: str = "") -> Path:
    """`kept_paths`: the files the plan keeps (keep.txt); `tree`: the work tree after apply, if measured;
    `note`: a paragraph under the title (how this manifest was made, when not by the release's own plan)."""
    counts = {k: {"kept": 0, "removed": 0} for k in KINDS}
    for e in entries:
        counts[e.kind]["kept" if e.keep else "removed"] += 1
    files = kernel_package_files(upstream_root, packages)
    binary_keep = {e.name: e.keep for e in entries if e.kind == "binary"}
    jit_keep = {e.name: e.keep for e in entries if e.kind == "jit"}

    def upstream(path: str, binary: bool = False) -> bool:
        return True

    def planned(path: str, binary: bool = False) -> bool:
        if binary or path in binary_keep:
            return binary_keep.get(path, True)
        return jit_keep.get(path, path in kept_paths)

    columns = {"upstream": _payload(entries, files, upstream), "plan": _payload(entries, files, planned)}
    gone: dict[str, list[str]] = {}
    lingering: list[str] = []
    if tree is not None:
        large = {e.name for e in entries if e.kind == "binary" and "LARGE_FILES" in e.reason}

        def in_tree(path: str, binary: bool = False) -> bool:
            # a large binary is never in a git tree: it goes with the wheel when kept
            return binary_keep.get(path, True) if path in large else (tree / path).is_file()

        columns["work tree"] = _payload(entries, files, in_tree)
        gone = {"kernel package files": sorted(p for p in files if not in_tree(p)),
                "JIT sources": sorted(e.name for e in entries if e.kind == "jit" and not in_tree(e.name))}
        # the dead-symbol batch resolves attributes and string-built names conservatively: a module whose
        # wrappers the manifest all removes may stay (nothing kept calls it; its binary may be gone)
        by_file: dict[str, list[bool]] = {}
        for e in entries:
            if e.kind == "wrapper":
                by_file.setdefault(e.where, []).append(e.keep)
        lingering = sorted(p for p, keeps in by_file.items()
                           if not any(keeps) and (tree / p).is_file() and not p.endswith("/__init__.py"))
    data = {"upstream": spec, "counts": counts, "bytes": columns,
            "large_binaries": sorted(e.name for e in entries if e.kind == "binary" and "LARGE_FILES" in e.reason),
            "removed_from_work_tree": gone, "unused_wrapper_modules_in_work_tree": lingering}
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "kernels.json").write_text(json.dumps(data, indent=1) + "\n")
    lines = [f"# Kernels: {spec}", "",
             "The kernel manifest (`kernels.txt` beside keep.txt; mechanism: docs/architecture.md#kernels): every "
             "compiled op, wrapper, binary, JIT source, Triton kernel module and external entry point, kept or "
             "removed with the reason.", "", *([note, ""] if note else []),
             "| kind | kept | removed |", "|---|---:|---:|"]
    lines += [f"| {k} | {counts[k]['kept']} | {counts[k]['removed']} |" for k in KINDS]
    lines += ["", "Bytes of the kernel payload (binaries include those LARGE_FILES.json lists, FA3's "
                  "flash_ops: they ship in the wheel, outside the git trees):", "",
              "| payload | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for kind in PAYLOAD:
        lines.append(f"| {kind} | " + " | ".join(_mb(columns[c][kind]) for c in columns) + " |")
    lines.append("| **total** | " + " | ".join(f"**{_mb(sum(columns[c].values()))}**" for c in columns) + " |")
    built = _gpu_builds(report_dir)
    lines += ["", "Nothing is compiled on the CPU machine. What is rebuilt from source (our slim FA3 `flash_ops`) is "
                  "built and measured on the GPU machine, for the releases it runs: "
              + (", ".join(f"[{b.parent.name}/kernels-build.md](../{b.parent.name}/kernels-build.md)" for b in built)
                 or "none yet") + " (build time, translation units, bytes)."]
    removed_binaries = [e for e in entries if e.kind == "binary" and not e.keep]
    lines += ["", f"Binaries removed ({len(removed_binaries)}):", ""]
    lines += [f"- `{e.name}` ({_mb(e.bytes)}): {e.reason}" for e in removed_binaries] or ["- none"]
    for title, paths in gone.items():
        lines += ["", f"{title.capitalize()} not in the work tree ({len(paths)}):", ""]
        lines += [f"- `{p}`" for p in paths] or ["- none"]
    if tree is not None:
        lines += ["", f"Wrapper modules the work tree still holds though the manifest keeps none of their wrappers "
                      f"({len(lingering)}; the dead-symbol batch keeps a name any kept attribute, string or "
                      "string-built name may reach):", ""]
        lines += [f"- `{p}`" for p in lingering] or ["- none"]
    path = report_dir / "kernels.md"
    path.write_text("\n".join(lines) + "\n")
    return path
