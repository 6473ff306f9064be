"""Fetch an upstream into the cache as a git repo with one commit, and pin it in upstream/UPSTREAM.toml.

PyPI artifacts are unpacked into the GitHub layout (`python/sglang/...`, `python/pyproject.toml`,
`sgl-kernel/python/sgl_kernel/...`) so every later stage sees one shape whatever the source.
The commit is made with fixed author and dates, so the same artifacts give the same commit hash on
every machine: the pin is reproducible.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import git

from shrinker import paths
from shrinker.errors import ShrinkError
from shrinker.upstream.metadata import kernel_requirement, pyproject_from_metadata
from shrinker.upstream.pin import Pin, read_pin, write_pin
from shrinker.upstream.spec import Spec, parse_spec
from shrinker.filehash import sha256_file as _sha256

# Files bigger than this stay in the downloaded wheel instead of the git cache (FA3's flash_ops
# is 1.1 GB); they are listed, with their hashes, in LARGE_FILES.json beside the package.
LARGE_FILE_BYTES = 100 * 1024 * 1024
FIXED_DATE = "2000-01-01T00:00:00+0000"
PLATFORMS = ("manylinux_2_34_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


@dataclass
class Upstream:
    """A fetched upstream tree (read-only: later stages clone it, never write it)."""

    spec: str
    version: str
    root: Path
    commit: str
    artifacts: list[dict] = field(default_factory=list)

    @property
    def python_dir(self) -> Path:
        """The folder that holds the `sglang` package (the import root)."""
        return self.root / "python"

    @property
    def kernel_python_dir(self) -> Path:
        return self.root / "sgl-kernel" / "python"


def _download(requirement: str, dest: Path) -> Path:
    """Download one wheel with pip (no deps); reuse it when already there."""
    name = requirement.split("==")[0].replace("-", "_").lower()
    version = requirement.split("==")[1]
    dest.mkdir(parents=True, exist_ok=True)
    existing = [p for p in dest.glob("*.whl") if p.name.lower().startswith(f"{name}-{version}-")]
    if existing:
        return existing[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--python-version", "3.11", "--implementation", "cp", "--disable-pip-version-check",
           "-q", "-d", str(dest), requirement]
    for plat in PLATFORMS:
        cmd += ["--platform", plat]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise ShrinkError(f"could not download {requirement} from PyPI (no network?): {last}")
    found = [p for p in dest.glob("*.whl") if p.name.lower().startswith(f"{name}-{version}-")]
    if not found:
        raise ShrinkError(f"pip reported success but no wheel for {requirement} is in {dest}")
    return found[0]


def _unpack_wheel(wheel: Path, target: Path, large: list[dict]) -> zipfile.ZipFile:
    """Unpack the wheel's import packages into `target`; large binaries are only listed."""
    zf = zipfile.ZipFile(wheel)
    for info in zf.infolist():
        if info.is_dir() or ".dist-info/" in info.filename:
            continue
        if info.file_size > LARGE_FILE_BYTES:
            large.append({"path": info.filename, "bytes": info.file_size, "wheel": wheel.name,
                          "sha256": hashlib.sha256(zf.read(info)).hexdigest()})
            continue
        out = target / info.filename
        out.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(info) as src, out.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    return zf


def _dist_metadata(zf: zipfile.ZipFile) -> str:
    name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    return zf.read(name).decode("utf-8")


def _commit_tree(tree: Path, message: str) -> str:
    repo = git.Repo.init(tree, initial_branch="upstream")
    with repo.git.custom_environment(
        GIT_AUTHOR_NAME="shrinker", GIT_AUTHOR_EMAIL="shrinker@localhost",
        GIT_COMMITTER_NAME="shrinker", GIT_COMMITTER_EMAIL="shrinker@localhost",
        GIT_AUTHOR_DATE=FIXED_DATE, GIT_COMMITTER_DATE=FIXED_DATE,
    ):
        repo.git.add("-A", "--force")
        repo.git.commit("-q", "--no-verify", "--no-gpg-sign", "-m", message)
    return repo.head.commit.hexsha


def _build_pypi(spec: Spec, tree: Path, with_kernel: bool) -> list[dict]:
    downloads = paths.cache_dir() / "downloads"
    wheel = _download(f"{spec.name}=={spec.version}", downloads)
    artifacts = [{"name": spec.name, "file": wheel.name, "sha256": _sha256(wheel)}]
    large: list[dict] = []
    zf = _unpack_wheel(wheel, tree / "python", large)
    metadata = _dist_metadata(zf)
    (tree / "python" / "pyproject.toml").write_text(pyproject_from_metadata(metadata))
    kernel = kernel_requirement(metadata) if with_kernel else None
    if kernel:
        kwheel = _download(kernel, downloads)
        artifacts.append({"name": kernel.split("==")[0], "file": kwheel.name, "sha256": _sha256(kwheel)})
        kzf = _unpack_wheel(kwheel, tree / "sgl-kernel" / "python", large)
        (tree / "sgl-kernel" / "pyproject.toml").write_text(pyproject_from_metadata(_dist_metadata(kzf)))
    if large:
        (tree / "LARGE_FILES.json").write_text(json.dumps(large, indent=2) + "\n")
    return artifacts


def _build_git(spec: Spec, tree: Path) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="shrink-clone-") as tmp:
        try:
            repo = git.Repo.clone_from(spec.url, tmp, no_checkout=True)
            repo.git.checkout(spec.ref)
        except git.GitCommandError as exc:
            last = (str(exc.stderr).strip().splitlines() or [str(exc)])[-1]
            raise ShrinkError(f"could not clone {spec.url} at {spec.ref}: {last.strip()}") from None
        sha = repo.head.commit.hexsha
        shutil.copytree(tmp, tree, ignore=shutil.ignore_patterns(".git"), dirs_exist_ok=True)
    return [{"name": "git", "file": spec.url, "sha256": "", "ref": spec.ref, "source_commit": sha}]


def _read_version(tree: Path, spec: Spec) -> str:
    if spec.source == "pypi":
        return spec.version
    for candidate in (tree / "python" / "sglang" / "version.py", tree / "python" / "sglang" / "_version.py"):
        if candidate.exists():
            for line in candidate.read_text().splitlines():
                if "version" in line and "=" in line and ("'" in line or '"' in line):
                    return line.split("=", 1)[1].strip().strip("'\"")
    return spec.ref


def tree_dir(spec: Spec, with_kernel: bool = True) -> Path:
    """A tree fetched without the kernel wheel is kept apart: its manifests would differ."""
    suffix = "" if with_kernel or spec.source != "pypi" else "-nokernel"
    return paths.cache_dir() / "trees" / f"{spec.slug}{suffix}"


def fetch(spec_text: str | None = None, *, with_kernel: bool = True, pin: bool = True) -> Upstream:
    """Fetch SPEC (default: the pin, else DEFAULT_SPEC); a second call downloads nothing."""
    if spec_text is None:
        current = read_pin()
        spec_text = current.spec if current else None
    try:
        spec = parse_spec(spec_text)
    except ValueError as exc:
        raise ShrinkError(str(exc)) from None
    tree = tree_dir(spec, with_kernel)
    meta_file = tree.parent / f"{tree.name}.json"
    if (tree / ".git").exists() and meta_file.exists():
        up = Upstream(**{**json.loads(meta_file.read_text()), "root": tree})
    else:
        if tree.exists():  # a half-made tree from an interrupted fetch
            shutil.rmtree(tree)
        tree.mkdir(parents=True)
        try:
            artifacts = _build_pypi(spec, tree, with_kernel) if spec.source == "pypi" else _build_git(spec, tree)
            version = _read_version(tree, spec)
            commit = _commit_tree(tree, f"upstream {spec.text}")
        except BaseException:
            shutil.rmtree(tree, ignore_errors=True)
            raise
        up = Upstream(spec=spec.text, version=version, root=tree, commit=commit, artifacts=artifacts)
        meta = {"spec": up.spec, "version": up.version, "commit": up.commit, "artifacts": up.artifacts}
        meta_file.write_text(json.dumps(meta, indent=2) + "\n")
    if pin:
        write_pin(Pin(spec=up.spec, version=up.version, commit=up.commit, artifacts=up.artifacts))
    return up


def load(spec_text: str | None = None) -> Upstream:
    """The fetched upstream for SPEC (default: the pin); a clear error when it is not there yet."""
    if spec_text is None:
        current = read_pin()
        spec_text = current.spec if current else None
    try:
        spec = parse_spec(spec_text)
    except ValueError as exc:
        raise ShrinkError(str(exc)) from None
    # The full tree when there is one, else one fetched with --no-kernel.
    tree = next((t for t in (tree_dir(spec), tree_dir(spec, with_kernel=False))
                 if (t / ".git").exists() and (t.parent / f"{t.name}.json").exists()), tree_dir(spec))
    meta_file = tree.parent / f"{tree.name}.json"
    if not meta_file.exists() or not (tree / ".git").exists():
        raise ShrinkError(f"upstream {spec.text} is not fetched yet: run `shrink upstream fetch {spec.text}`")
    return Upstream(**{**json.loads(meta_file.read_text()), "root": tree})
