"""`shrink gpu-bundle`: pack what the GPU machine lacks into .gpu-bundle/ship/ (git-ignored).

ship/ travels with each device call (`carry: [".gpu-bundle/ship"]`, 64 MiB a call together with
the working tree) and holds:
- deps.tar.xz    the py3.12 wheels of bundle.toml, downloaded by pip into .gpu-bundle/cache/;
- kernel.tar.xz  sgl_kernel slimmed to the ops bundle.toml keeps, with its dist-info;
- sglang-<which>.tar.xz  each source tree built as a wheel (the rebuild): `upstream` from the
  pinned upstream cache, `pruned` from the work tree made by `shrink apply`;
- models.tar.xz  the tiny DeepSeek-V3 model folders tiny/ and tiny-fp8/ (config + tokenizer);
- bundle.json    the manifest: archives with sha256 and sizes, wheels, dropped files, model digests.
Archives whose inputs did not change are reused, so rebuilding after a new prune repacks only the
pruned tree (seconds), not the 240 MB of dependencies (minutes).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from shrinker import paths
from shrinker.errors import ShrinkError
from shrinker.gpu import fa3, tiny_model
from shrinker.gpu.wheels import (build_tree_wheel, drop_patterns, foreign_extension, repack_wheel,
                                 slim_kernel_wheel, tree_version)
from shrinker.filehash import sha256_file

SPEC_FILE = Path(__file__).with_name("bundle.toml")
CALL_LIMIT = 64 * 1024 * 1024
# What the working tree (repository files, reports, the reference) may take of one call.
TREE_ALLOWANCE = 4 * 1024 * 1024


def bundle_dir() -> Path:
    return paths.project_root() / ".gpu-bundle"


def ship_dir() -> Path:
    return bundle_dir() / "ship"


def load_spec(path: Path = SPEC_FILE) -> dict:
    return tomllib.loads(path.read_text())


def _norm(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def pip_download(requirements: list[str], dest: Path, spec: dict) -> list[Path]:
    """One py3.12 manylinux wheel per requirement in `dest` (already there: reused; else pip)."""
    dest.mkdir(parents=True, exist_ok=True)

    def find(req: str) -> Path | None:
        name, version = req.split("==")
        hits = [p for p in dest.glob("*.whl")
                if _norm(p.name.split("-")[0]) == _norm(name) and p.name.split("-")[1] == version]
        return hits[0] if hits else None

    missing = [r for r in requirements if find(r) is None]
    if missing:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--python-version", spec["python_version"], "--implementation", "cp",
               "--disable-pip-version-check", "-q", "-d", str(dest)]
        for plat in spec["platforms"]:
            cmd += ["--platform", plat]
        proc = subprocess.run(cmd + missing, capture_output=True, text=True)
        if proc.returncode != 0:
            lines = [ln for ln in proc.stderr.strip().splitlines() if "neither a file nor a directory" not in ln]
            raise ShrinkError(f"pip could not download {', '.join(missing)}: {(lines or ['no network?'])[-1]}")
    wheels = []
    for r in requirements:
        found = find(r)
        if found is None:
            raise ShrinkError(f"pip reported success but no wheel for {r} is in {dest}")
        wheels.append(found)
    return wheels


def _tar_xz(members: list[Path], dst: Path, base: Path | None = None) -> None:
    """A reproducible tar (sorted, no owners or dates) of `members`, xz-compressed.

    Members are named by basename, or by their path under `base` when given.
    """
    import lzma

    def add_all(fileobj) -> None:
        with tarfile.open(fileobj=fileobj, mode="w|", format=tarfile.GNU_FORMAT) as tar:
            for path in sorted(members, key=lambda p: p.relative_to(base).as_posix() if base else p.name):
                info = tarfile.TarInfo(path.relative_to(base).as_posix() if base else path.name)
                info.size = path.stat().st_size
                info.mode = 0o644
                with path.open("rb") as f:
                    tar.addfile(info, f)

    xz = shutil.which("xz")
    with dst.open("wb") as out:
        if xz:  # the xz tool compresses on every core; Python's lzma on one
            proc = subprocess.Popen([xz, "-6", "-T0", "-c"], stdin=subprocess.PIPE, stdout=out)
            try:
                add_all(proc.stdin)
            finally:
                proc.stdin.close()
            if proc.wait() != 0:
                raise ShrinkError(f"xz failed while writing {dst}")
        else:
            with lzma.open(out, "wb", preset=6) as zf:
                add_all(zf)


@dataclass
class Archive:
    file: str
    kind: str  # deps | kernel | tree
    key: str  # hash of the inputs: same key, same archive
    wheels: list[str]
    which: str | None = None
    dropped: dict[str, list[str]] = field(default_factory=dict)
    sha256: str = ""
    bytes: int = 0


def _previous(ship: Path) -> dict[str, dict]:
    manifest = ship / "bundle.json"
    if not manifest.is_file():
        return {}
    try:
        return {a["file"]: a for a in json.loads(manifest.read_text()).get("archives", [])}
    except (ValueError, KeyError):
        return {}


def _reuse(prev: dict[str, dict], ship: Path, arch: Archive) -> bool:
    old = prev.get(arch.file)
    path = ship / arch.file
    if not old or old.get("key") != arch.key or not path.is_file() or sha256_file(path) != old.get("sha256"):
        return False
    arch.sha256, arch.bytes, arch.dropped, arch.wheels = old["sha256"], old["bytes"], old.get("dropped", {}), old["wheels"]
    return True


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def _dir_key(root: Path) -> str:
    """A content key for a source package: relative paths, sizes and mtimes (cheap; the wheel is exact)."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            st = p.stat()
            h.update(f"{p.relative_to(root).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:24]


def release_deps(deps: list[str], pyproject: Path) -> tuple[list[str], dict[str, str]]:
    """bundle.toml's `deps`, each at the version the release pins exactly (`==`) where it pins one.

    bundle.toml names what the machine lacks at the versions v0.5.16 pins; another release
    (`shrink gpu-bundle --upstream pypi:sglang==0.5.17`) pins some of them differently
    (flashinfer-python, sgl-deep-gemm), and the reference must run with the release's own pins.
    Returns the deps and {name: "old -> new"} for each version taken from the release.
    """
    from packaging.utils import canonicalize_name

    from shrinker.upstream.distributions import declared_requirements

    pins: dict[str, str] = {}
    if Path(pyproject).is_file():
        for req in declared_requirements(Path(pyproject)):
            specs = list(req.specifier)
            if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version:
                pins[canonicalize_name(req.name)] = specs[0].version
    out, changed = [], {}
    for dep in deps:
        name, version = dep.split("==")
        pinned = pins.get(canonicalize_name(name))
        if pinned and pinned != version:
            changed[name] = f"{version} -> {pinned}"
            dep = f"{name}=={pinned}"
        out.append(dep)
    return out, changed


def release_spec(up, spec: dict | None = None) -> dict:
    """bundle.toml for the release `up` (a shrinker.upstream Upstream): its pinned dependency versions,
    and the sglang-kernel wheel it was fetched with (`upstream` and `deps_from_release` say so)."""
    spec = dict(spec or load_spec())
    spec["deps"], changed = release_deps(list(spec["deps"]), up.python_dir / "pyproject.toml")
    kernel = next((a["file"] for a in getattr(up, "artifacts", []) or [] if a.get("name") == "sglang-kernel"), None)
    if kernel:
        spec["kernel"] = {**spec["kernel"], "wheel": kernel}
    spec["upstream"] = {"spec": up.spec, "version": up.version, "commit": getattr(up, "commit", None)}
    spec["deps_from_release"] = changed
    return spec


def tree_roots(which: list[str], profile: str = "deepseek", pruned_tree: Path | None = None,
               upstream: str | None = None) -> dict[str, Path]:
    """which -> the folder holding the `sglang` package (<root>/python) for each tree asked for.

    `pruned_tree`: the pruned tree's root (holding python/sglang) instead of the work tree, e.g. a
    read-only snapshot (`git -C build/deepseek-v0.5.16 archive <commit> | tar -x -C DIR`).
    `upstream`: the release (a spec, e.g. `pypi:sglang==0.5.17`; default: the pin), fetched already;
    its work tree is build/<profile>-v<version>/.
    """
    from shrinker.upstream import load

    up = load(upstream)
    roots: dict[str, Path] = {}
    for w in which:
        if w == "upstream":
            roots[w] = up.python_dir
        elif w == "pruned":
            work = Path(pruned_tree) if pruned_tree is not None else paths.work_tree_dir(profile, up.version)
            if not (work / "python" / "sglang").is_dir():
                hint = "pass a folder holding python/sglang" if pruned_tree is not None else "run `shrink apply` first"
                raise ShrinkError(f"no pruned tree at {work} (no python/sglang): {hint}")
            roots[w] = work / "python"
        else:
            raise ShrinkError(f"unknown tree {w!r}: use upstream or pruned")
    return roots


def build_bundle(trees: dict[str, Path], kernel_wheel: Path, blackwell: bool = False,
                 out: Path | None = None, cache: Path | None = None, spec: dict | None = None,
                 limit: int = CALL_LIMIT - TREE_ALLOWANCE, with_models: bool = True,
                 extras: list[str] | None = None) -> dict:
    """Write ship/ for `trees` ({which: python_dir}); returns the manifest written to bundle.json.

    `extras`: names of bundle.toml's [extras] groups (e.g. v4: tilelang), each wheel in an archive of
    its own (extra-<name>.tar.xz, installed with the dependencies), so that each fits a call.
    """
    spec = spec or load_spec()
    ship = out or ship_dir()
    cache = cache or bundle_dir() / "cache"
    ship.mkdir(parents=True, exist_ok=True)
    work = cache / "build"
    work.mkdir(parents=True, exist_ok=True)
    prev = _previous(ship)
    archives: list[Archive] = []

    # Third-party wheels, repacked stored (xz does the compression), with bundle.toml's drops.
    dep_wheels = pip_download(spec["deps"], cache / "wheels", spec)
    # the drops of these wheels only: a drop for an extra wheel leaves deps.tar.xz as it is
    names = {_norm(w.name.split("-")[0]) for w in dep_wheels}
    drops = spec.get("drop", {})
    arch = Archive("deps.tar.xz", "deps", _key(json.dumps({k: v for k, v in drops.items() if k in names}, sort_keys=True),
                                              *(w.name for w in dep_wheels)),
                   [w.name for w in dep_wheels])
    if not _reuse(prev, ship, arch):
        shutil.rmtree(work / "deps", ignore_errors=True)
        outs = []
        for w in dep_wheels:
            pats = drops.get(_norm(w.name.split("-")[0]), [])
            dst = work / "deps" / w.name
            dropped = repack_wheel(w, dst, keep=drop_patterns(pats) if pats else None)
            if dropped:
                arch.dropped[w.name] = dropped
            outs.append(dst)
        _tar_xz(outs, ship / arch.file)
    archives.append(arch)

    # Optional groups of wheels, one archive per wheel (tilelang alone is 50 MB zipped).
    for group in extras or []:
        if group not in spec.get("extras", {}):
            raise ShrinkError(f"bundle.toml has no [extras] group {group!r} (it has: {', '.join(spec.get('extras', {})) or 'none'})")
        for w in pip_download(list(spec["extras"][group]), cache / "wheels", spec):
            pats = drops.get(_norm(w.name.split("-")[0]), [])
            arch = Archive(f"extra-{_norm(w.name.split('-')[0])}.tar.xz", "deps",
                           _key(json.dumps(pats), w.name), [w.name])
            if not _reuse(prev, ship, arch):
                dst = work / "extras" / w.name
                shutil.rmtree(dst.parent, ignore_errors=True)
                dropped = repack_wheel(w, dst, keep=drop_patterns(pats) if pats else None)
                if dropped:
                    arch.dropped[w.name] = dropped
                _tar_xz([dst], ship / arch.file)
            archives.append(arch)

    # sgl_kernel with only the kept ops.
    if not kernel_wheel.is_file():
        raise ShrinkError(f"no sglang-kernel wheel at {kernel_wheel}: run `shrink upstream fetch` first")
    keep = list(spec["kernel"]["keep"]) + (list(spec["kernel"].get("blackwell", [])) if blackwell else [])
    st = kernel_wheel.stat()
    fa3_ops = fa3.bundle_entry(spec["kernel"].get("fa3"), kernel_wheel)  # our slim FA3 flash_ops, or why not
    extra = {fa3_ops["member"]: paths.project_root() / fa3_ops["path"]} if "member" in fa3_ops else {}
    arch = Archive("kernel.tar.xz", "kernel", _key(kernel_wheel.name, str(st.st_size), *sorted(keep),
                                                   *(f"{m}={fa3_ops['sha256']}" for m in extra)), [kernel_wheel.name])
    if not _reuse(prev, ship, arch):
        dst = work / "kernel" / kernel_wheel.name
        shutil.rmtree(dst.parent, ignore_errors=True)
        arch.dropped[kernel_wheel.name] = slim_kernel_wheel(kernel_wheel, dst, keep, extra=extra)
        _tar_xz([dst], ship / arch.file)
    archives.append(arch)

    # Each source tree as a wheel: what pip installs on the device is exactly the tree.
    package = spec["tree"]["package"]
    for which, python_dir in trees.items():
        version = tree_version(python_dir, package)
        arch = Archive(f"{package}-{which}.tar.xz", "tree",
                       _key(which, version, _dir_key(python_dir / package), "no-foreign-ext", spec["python_version"]),
                       [f"{package}-{version}-py3-none-any.whl"], which=which)
        if not _reuse(prev, ship, arch):
            dst_dir = work / f"tree-{which}"
            shutil.rmtree(dst_dir, ignore_errors=True)
            left: list[str] = []
            # extension modules built for another CPython (v0.5.17's cp311 wheel: the Rust server, 13 MB)
            # are never loaded by the device's Python: left out, listed as dropped
            wheel = build_tree_wheel(python_dir, package, version, dst_dir,
                                     summary=f"SGLang {which} tree, built by shrinker",
                                     skip=lambda n: foreign_extension(n, spec["python_version"]), dropped=left)
            if left:
                arch.dropped[wheel.name] = left
            _tar_xz([wheel], ship / arch.file)
        archives.append(arch)

    # Drop archives of trees not asked for this time.
    wanted = {a.file for a in archives} | {"models.tar.xz"}
    for stale in ship.glob("*.tar.xz"):
        if stale.name not in wanted:
            stale.unlink()

    # The model folders, in one archive (their tokenizers are the same 2.3 MB file: xz stores it once).
    models = {}
    shutil.rmtree(ship / "models", ignore_errors=True)
    (ship / "models.tar.xz").unlink(missing_ok=True)
    if with_models:
        mroot = work / "models"
        shutil.rmtree(mroot, ignore_errors=True)
        for name, fp8, arch in (("tiny", False, "v3"), ("tiny-fp8", True, "v3"), ("tiny-v32", False, "v32"),
                                ("tiny-v4", True, "v4")):
            tiny_model.write_tiny_model(mroot / name, fp8=fp8, arch=arch)
            models[name] = tiny_model.model_digest(mroot / name)
        _tar_xz(sorted(p for p in mroot.rglob("*") if p.is_file()), ship / "models.tar.xz", base=mroot)

    for a in archives:
        if not a.sha256:
            p = ship / a.file
            a.sha256, a.bytes = sha256_file(p), p.stat().st_size
    manifest = {
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "python_version": spec["python_version"],
        **({"upstream": spec["upstream"], "deps_from_release": spec.get("deps_from_release", {})}
           if spec.get("upstream") else {}),
        "kernel_ops": keep,
        "fa3": fa3_ops,
        "archives": [a.__dict__ for a in archives],
        "models": models,
    }
    (ship / "bundle.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    # extra-* archives travel in calls of their own (the device keeps what a call carried): each must
    # fit a call, and the rest of the bundle together
    total = sum(p.stat().st_size for p in ship.rglob("*") if p.is_file() and not p.name.startswith("extra-"))
    manifest["total_bytes"] = total
    big = [p.name for p in ship.glob("extra-*.tar.xz") if p.stat().st_size > limit]
    if big:
        raise ShrinkError(f"{', '.join(big)} is over the {limit / 2**20:.0f} MiB one device call carries")
    if total > limit:
        raise ShrinkError(
            f"the bundle is {total / 2**20:.1f} MiB, over the {limit / 2**20:.0f} MiB one device call carries "
            f"beside the working tree: bundle fewer trees (--which) or leave ops out")
    return manifest
