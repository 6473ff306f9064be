"""On the device: install the bundle from ship/ into /tmp (standard library only).

Third-party wheels and sgl_kernel go to <root>/site; each source tree to <root>/tree-<which>, so
upstream and pruned sit side by side over the same packages. A run puts
<root>/tree-<which>:<root>/site in front of the machine's own packages (PYTHONPATH), which is how
the pinned transformers 5.12.1 wins over the machine's 5.17. A marker holds each installed archive's sha256:
a later call on the same warm machine skips what is already installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from shrinker.filehash import sha256_file as _sha256

DEFAULT_ROOT = Path(os.environ.get("SHRINK_GPU_ROOT", "/tmp/shrinker-gpu"))


class InstallError(Exception):
    pass


@dataclass
class Installed:
    root: Path
    site: Path
    trees: dict[str, Path]
    models: dict[str, Path]
    manifest: dict
    seconds: float = 0.0
    reused: bool = False
    steps: dict[str, float] = field(default_factory=dict)

    def pythonpath(self, which: str) -> str:
        parts = [str(self.trees[which]), str(self.site)]
        if os.environ.get("PYTHONPATH"):
            parts.append(os.environ["PYTHONPATH"])
        return os.pathsep.join(parts)


def _pip_install(wheels: list[Path], target: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
           "--no-cache-dir", "--disable-pip-version-check", "--upgrade", "--target", str(target)]
    proc = subprocess.run(cmd + [str(w) for w in wheels], capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise InstallError(f"pip install into {target} failed: {tail}")


def install_bundle(ship: Path, root: Path = DEFAULT_ROOT, trees: list[str] | None = None) -> Installed:
    """Check, unpack and pip-install ship/ under `root`; only the trees named.

    Default: every tree whose archive this call carries, or that a call before it on this (warm)
    machine installed from an archive of the same sha256. The marker records each archive's sha256:
    a changed tree archive reinstalls that tree alone, a changed dependency or kernel archive the
    whole site. So a bundle too big for one call (64 MiB with the working tree) travels in two: the
    first carries the dependencies and one tree, the next a bundle.json that adds the other tree
    (`shrink gpu-bundle` again: unchanged archives keep their sha256) and that tree's archive alone.
    """
    t0 = time.monotonic()
    ship = Path(ship).resolve()  # servers run elsewhere: model paths must be absolute
    manifest_path = ship / "bundle.json"
    if not manifest_path.is_file():
        raise InstallError(f"no bundle manifest at {manifest_path}: run `shrink gpu-bundle` and carry .gpu-bundle/ship")
    manifest = json.loads(manifest_path.read_text())
    shipped = {a["which"]: a for a in manifest["archives"] if a["kind"] == "tree"}

    want = {a["file"]: a for a in manifest["archives"]}
    marker = root / "installed.json"
    done = json.loads(marker.read_text()) if marker.is_file() else {}
    installed: dict[str, str] = done.get("sha256", {}) if isinstance(done.get("sha256"), dict) else {}
    stale = [f for f, sha in installed.items() if f not in want or want[f]["sha256"] != sha]
    if any(f not in want or want[f]["kind"] != "tree" for f in stale) or not installed:
        installed = {}  # the site (deps + kernel) is one folder: anything in it changed, all of it goes again
        shutil.rmtree(root / "site", ignore_errors=True)
        for tree_dir in root.glob("tree-*"):
            shutil.rmtree(tree_dir, ignore_errors=True)
    else:
        for f in stale:
            shutil.rmtree(root / f"tree-{want[f]['which']}", ignore_errors=True)
            del installed[f]
    if done.get("models") != manifest.get("models"):  # other model folders: their seeded weights go too
        shutil.rmtree(root / "models", ignore_errors=True)
    done = {"sha256": installed, "models": manifest.get("models")}
    root.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(done))

    if not trees:
        trees = sorted(w for w, a in shipped.items() if (ship / a["file"]).is_file() or a["file"] in installed)
        if not trees and shipped:
            raise InstallError(f"no tree archive is carried in {ship} ({', '.join(a['file'] for a in shipped.values())}) "
                               "and none is installed here yet")
    missing = [w for w in trees if w not in shipped]
    if missing:
        raise InstallError(f"the bundle has no {', '.join(missing)} tree (it has {', '.join(sorted(shipped)) or 'none'})")
    models = {name: root / "models" / name for name in manifest.get("models", {})}
    inst = Installed(root=root, site=root / "site", trees={w: root / f"tree-{w}" for w in trees},
                     models=models, manifest=manifest)

    if models and not all((m / "config.json").is_file() for m in models.values()):
        with tarfile.open(ship / "models.tar.xz", "r:xz") as tar:
            tar.extractall(root / "models", filter="data")
    wanted = [a for a in manifest["archives"] if a["kind"] != "tree" or a["which"] in trees]
    todo = [a for a in wanted if a["file"] not in installed]
    if not todo:
        inst.reused = True
        inst.seconds = time.monotonic() - t0
        return inst
    for a in todo:
        path = ship / a["file"]
        if not path.is_file():
            raise InstallError(f"{path} is missing: carry .gpu-bundle/ship")
        s = time.monotonic()
        if _sha256(path) != a["sha256"]:
            raise InstallError(f"{path} does not match its sha256 in bundle.json: rebuild with `shrink gpu-bundle`")
        dest = root / "wheels" / a["file"].removesuffix(".tar.xz")
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(path, "r:xz") as tar:
            tar.extractall(dest, filter="data")
        inst.steps[f"unpack {a['file']}"] = round(time.monotonic() - s, 2)
        s = time.monotonic()
        target = inst.site if a["kind"] in ("deps", "kernel") else inst.trees[a["which"]]
        _pip_install(sorted(dest.glob("*.whl")), target)
        shutil.rmtree(dest, ignore_errors=True)
        inst.steps[f"install {a['file']}"] = round(time.monotonic() - s, 2)
        installed[a["file"]] = a["sha256"]
        marker.write_text(json.dumps(done))
    inst.seconds = time.monotonic() - t0
    return inst


def flash_ops(inst: Installed, so: Path | None = None) -> dict:
    """sgl_kernel's flash_ops in the installed site: `so` copied in first when given (our slim FA3,
    built on this machine by an earlier call), else what the bundle's kernel archive brought.
    Both trees import sgl_kernel from this one site, so they load the same file."""
    pkg = inst.site / "sgl_kernel"
    if so is not None:
        so = Path(so)
        if not so.is_file():
            raise InstallError(f"no flash_ops at {so}: build it first (python3 -m shrinker.gpu.fa3_build --keep ...)")
        if not pkg.is_dir():
            raise InstallError(f"no sgl_kernel in {inst.site}: the bundle's kernel archive is not installed")
        shutil.copyfile(so, pkg / "flash_ops.abi3.so")
    found = sorted(pkg.glob("flash_ops*.so"))
    if not found:
        return {"present": False}
    return {"present": True, "file": found[0].name, "sha256": _sha256(found[0]), "bytes": found[0].stat().st_size,
            "source": f"copied from {so}" if so is not None else "the bundle's kernel archive"}
