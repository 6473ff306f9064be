"""On the device: install the bundle from ship/ into /tmp (standard library only).

Third-party wheels and sgl_kernel go to <root>/site; each source tree to <root>/tree-<which>, so
upstream and pruned sit side by side over the same packages. A run puts
<root>/tree-<which>:<root>/site in front of the machine's own packages (PYTHONPATH), which is how
the pinned transformers 5.12.1 wins over the machine's 5.17. A marker holds the manifest's hash:
a later call on the same warm machine skips what is already installed.
"""

from __future__ import annotations

import hashlib
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
    """Check, unpack and pip-install ship/ under `root`; only the trees named (default: all shipped)."""
    t0 = time.monotonic()
    ship = Path(ship).resolve()  # servers run elsewhere: model paths must be absolute
    manifest_path = ship / "bundle.json"
    if not manifest_path.is_file():
        raise InstallError(f"no bundle manifest at {manifest_path}: run `shrink gpu-bundle` and carry .gpu-bundle/ship")
    manifest = json.loads(manifest_path.read_text())
    shipped = {a["which"]: a for a in manifest["archives"] if a["kind"] == "tree"}
    trees = trees or sorted(shipped)
    missing = [w for w in trees if w not in shipped]
    if missing:
        raise InstallError(f"the bundle has no {', '.join(missing)} tree (it has {', '.join(sorted(shipped)) or 'none'})")
    models = {name: root / "models" / name for name in manifest.get("models", {})}
    inst = Installed(root=root, site=root / "site", trees={w: root / f"tree-{w}" for w in trees},
                     models=models, manifest=manifest)

    digest = hashlib.sha256(manifest_path.read_bytes()).hexdigest()
    marker = root / "installed.json"
    done = json.loads(marker.read_text()) if marker.is_file() else {}
    if done.get("manifest") != digest:
        done = {"manifest": digest, "archives": []}
        shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)

    if models and not all((m / "config.json").is_file() for m in models.values()):
        with tarfile.open(ship / "models.tar.xz", "r:xz") as tar:
            tar.extractall(root / "models", filter="data")
    wanted = [a for a in manifest["archives"] if a["kind"] != "tree" or a["which"] in trees]
    todo = [a for a in wanted if a["file"] not in done["archives"]]
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
        done["archives"].append(a["file"])
        marker.write_text(json.dumps(done))
    inst.seconds = time.monotonic() - t0
    return inst
