"""The verify environment `.venv-verify`: CPU torch + what sglang needs to import, made once.

Each release is verified under its own pins: data/requirements-verify.txt lists what sglang imports,
and every exact pin the release declares (python/pyproject.toml: transformers==5.19.0) takes the
place of that line (`requirements_for`), torch excepted: it is always the base list's CPU build. The base list's environment is `.venv-verify`;
a release that pins otherwise gets `.venv-verify-<hash>` beside it, so a walk over releases that
share pins makes each environment once.

Idempotent: a marker file inside the venv records the hash of the requirements it was made from;
a second call with the same requirements does nothing. Packages that cannot be installed are
reported (and kept in the marker) instead of failing the whole environment: the differential
import check compares upstream and pruned in the same environment, so a missing package costs
coverage, not correctness.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from shrinker import paths
from shrinker.errors import ShrinkError
from shrinker.upstream.distributions import declared_requirements

REQUIREMENTS_FILE = Path(__file__).parent / "data" / "requirements-verify.txt"
MARKER = "shrinker-verify-env.json"
# The CPU build is wanted where there is one (pip's find-links on this machine holds torch 2.13's):
# it is a fifth of the CUDA build's download.
CPU_LOCAL_LABEL = "+cpu"
# Distributions the environment takes at the base list's version whatever a release pins (requirements_for).
HELD = frozenset({"torch"})


@dataclass
class VerifyEnv:
    root: Path
    python: Path
    requirements_hash: str
    installed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # requirement -> last line of pip's error
    torch_version: str = ""

    def to_json(self) -> dict:
        data = asdict(self)
        data["root"], data["python"] = str(self.root), str(self.python)
        return data


def env_dir(reqs: list[str] | None = None) -> Path:
    """Where the environment of `reqs` (default: the base list) lives."""
    if os.environ.get("SHRINK_VERIFY_VENV"):
        return Path(os.environ["SHRINK_VERIFY_VENV"])
    base = paths.project_root() / ".venv-verify"
    if reqs is None or reqs == read_requirements():
        return base
    return base.with_name(f".venv-verify-{requirements_hash(reqs)}")


def read_requirements(path: Path = REQUIREMENTS_FILE) -> list[str]:
    reqs = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            reqs.append(line)
    return reqs


def release_pins(upstream_root: Path) -> dict[str, str]:
    """canonical name -> version of every exact, marker-free pin in the release's python/pyproject.toml."""
    pins = {}
    for req in declared_requirements(Path(upstream_root) / "python" / "pyproject.toml"):
        exact = [s.version for s in req.specifier if s.operator == "=="]
        if req.marker is None and len(exact) == 1 and len(req.specifier) == 1:
            pins[canonicalize_name(req.name)] = exact[0]
    return pins


def requirements_for(upstream_root: Path | None, base: list[str] | None = None) -> list[str]:
    """The base list with the release's own exact pins in place of the lines that name the same
    distribution (a line the release does not pin stays as written; nothing is added). torch stays
    the base's (`HELD`), whatever the release pins: verify imports on a CPU machine, and the only CPU
    build offline is the base's (torch 2.13.0 on pip's find-links). 0.5.22+'s torch 2.14.1 exists
    only as the CUDA build, 5.5 GB installed (session 25's CI ran out of disk installing it), and
    0.5.16/0.5.17's torch 2.11 is the GPU machines' build, with no CPU wheel at all. The report
    names the pin not taken (`held_pins`)."""
    base = read_requirements() if base is None else base
    pins = release_pins(upstream_root) if upstream_root is not None else {}
    out = []
    for line in base:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        pin = None if name in HELD else pins.get(name)
        ours = [s.version for s in req.specifier if s.operator == "=="]
        newer_here = bool(pin and ours and Version(ours[0]) > Version(pin))  # measured to import sglang: kept
        out.append(f"{req.name}=={pin}" if pin and not newer_here else line)
    return out


def held_pins(upstream_root: Path | None, base: list[str] | None = None) -> list[str]:
    """The release's exact pins of distributions the environment holds at the base's version
    (`HELD`: torch), as `name==version`, where they differ from the base's line."""
    base = read_requirements() if base is None else base
    pins = release_pins(upstream_root) if upstream_root is not None else {}
    ours = {canonicalize_name(Requirement(line).name): line for line in base}
    return [f"{name}=={pins[name]}" for name in sorted(HELD) if name in pins
            and ours.get(name) != f"{name}=={pins[name]}"]


def requirements_hash(reqs: list[str]) -> str:
    text = "\n".join(reqs) + f"\npython={sys.version_info.major}.{sys.version_info.minor}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _python(root: Path) -> Path:
    return root / "bin" / "python"


def load_env(root: Path | None = None, reqs: list[str] | None = None) -> VerifyEnv | None:
    """The environment made from `reqs` (default: the base list), or None when there is none (or the
    one at `root` was made from other requirements)."""
    reqs = read_requirements() if reqs is None else reqs
    root = root or env_dir(reqs)
    marker = root / MARKER
    if not marker.exists() or not _python(root).exists():
        return None
    data = json.loads(marker.read_text())
    env = VerifyEnv(**{**data, "root": Path(data["root"]), "python": Path(data["python"])})
    if env.requirements_hash != requirements_hash(reqs):
        return None
    return env


def require_env(root: Path | None = None, reqs: list[str] | None = None) -> VerifyEnv:
    env = load_env(root, reqs)
    if env is None:
        raise ShrinkError(f"no verify environment at {root or env_dir(reqs)}: run `shrink verify env` (make verify-env)")
    return env


def _pip(python: Path, args: list[str], log) -> subprocess.CompletedProcess:
    cmd = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", *args]
    log(" ".join(cmd[3:]))
    return subprocess.run(cmd, capture_output=True, text=True)


def _last_error(proc: subprocess.CompletedProcess) -> str:
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    return (errors or lines or ["pip failed"])[-1][:300]


def make_env(root: Path | None = None, *, reqs: list[str] | None = None, force: bool = False,
             log=lambda msg: None) -> VerifyEnv:
    """Create (or reuse) the verify venv of `reqs` (default: the base list); returns what is
    installed and what could not be."""
    reqs = read_requirements() if reqs is None else reqs
    root = root or env_dir(reqs)
    digest = requirements_hash(reqs)
    if not force:
        existing = load_env(root, reqs)
        if existing is not None:
            return existing
    if root.exists():
        shutil.rmtree(root)
    log(f"creating {root}")
    proc = subprocess.run([sys.executable, "-m", "venv", str(root)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise ShrinkError(f"python -m venv {root} failed: {_last_error(proc)}")
    python = _python(root)
    torch_reqs = [r for r in reqs if r.split("==")[0].strip().lower() == "torch"]
    others = [r for r in reqs if r not in torch_reqs]
    failed: dict[str, str] = {}

    # torch first and alone, binary only: the CPU build where one of that version is on the local
    # find-links (requirements_for asks for the base's, which has one); a list that asks for another
    # takes the CUDA build, which imports on a CPU machine too, and the marker records which.
    for req in torch_reqs:
        proc = _pip(python, ["--only-binary=:all:", cpu_build(req)], log)
        if proc.returncode != 0:
            proc = _pip(python, ["--only-binary=:all:", req], log)
        if proc.returncode != 0:
            raise ShrinkError(f"could not install {req} into {root}: {_last_error(proc)}")
    torch_version = _probe(python, "import torch; print(torch.__version__)")
    if torch_reqs and not torch_version:
        raise ShrinkError(f"{root}: torch was installed but does not import")

    # The rest in one resolve, torch held where it is; on failure one by one, to name the culprits.
    constraints = root / "constraints-verify.txt"
    # torch by its public version: the installed build satisfies it, and a local label (+cu130) would
    # sort above a cap such as this machine's own `torch<=2.14.1` constraint and make nothing resolve
    pins = [r for r in others if "==" in r] + ([f"torch=={Version(torch_version).public}"] if torch_version else [])
    constraints.write_text("".join(f"{pin}\n" for pin in pins))
    proc = _pip(python, ["-c", str(constraints), *others], log)
    if proc.returncode != 0:
        for req in others:
            one = _pip(python, ["-c", str(constraints), req], log)
            if one.returncode != 0:
                failed[req] = _last_error(one)
    installed = [r for r in others if r not in failed]
    fix_torchvision(python)
    env = VerifyEnv(root=root, python=python, requirements_hash=digest, installed=torch_reqs + installed,
                    failed=failed, torch_version=torch_version)
    (root / MARKER).write_text(json.dumps(env.to_json(), indent=2) + "\n")
    return env


def cpu_build(req: str) -> str:
    """`torch==2.13.0` -> `torch==2.13.0+cpu` (the local CPU wheel); anything else as it is."""
    parsed = Requirement(req)
    exact = [s.version for s in parsed.specifier if s.operator == "=="]
    if len(exact) != 1 or "+" in exact[0]:
        return req
    return f"{parsed.name}=={exact[0]}{CPU_LOCAL_LABEL}"


def ensure_env(upstream_root: Path | None, *, force: bool = False, log=lambda msg: None) -> VerifyEnv:
    """The environment under the release's own pins (`requirements_for`), made when missing."""
    reqs = requirements_for(upstream_root)
    env = None if force else load_env(reqs=reqs)
    return env or make_env(reqs=reqs, force=force, log=log)


TORCHVISION_FIX = "# shrinker verify-env: register fakes only when the C++ ops loaded\n"


def fix_torchvision(python: Path) -> bool:
    """Let `import torchvision` work on CPU torch, as torchvision means it to.

    The PyPI torchvision wheel links CUDA torch, so on the CPU build its C++ ops do not load;
    torchvision allows for that everywhere except two unconditional `register_fake` decorators,
    which then raise "operator torchvision::nms does not exist". Guard those two like the rest
    (only inside .venv-verify; the ops still fail when called, as they would on CPU torch).
    """
    site = _probe(python, "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    target = Path(site) / "torchvision" / "_meta_registrations.py" if site else None
    if target is None or not target.exists():
        return False
    text = target.read_text()
    if TORCHVISION_FIX in text:
        return True
    guard = (TORCHVISION_FIX + "def _register_fake(name):\n"
             "    if torchvision.extension._has_ops():\n"
             "        return torch.library.register_fake(name)\n"
             "    return lambda fn: fn\n\n\n")
    text = text.replace("@torch.library.register_fake(", "@_register_fake(")
    text = text.replace("\n\n@functools.lru_cache(None)\ndef get_meta_lib", "\n\n" + guard + "@functools.lru_cache(None)\ndef get_meta_lib", 1)
    if TORCHVISION_FIX not in text:
        return False
    target.write_text(text)
    return True


def _probe(python: Path, code: str) -> str:
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def freeze(env: VerifyEnv) -> dict[str, str]:
    """name -> version of every distribution in the env (for the report and reproducibility)."""
    out = _probe(env.python, "import json, importlib.metadata as m; "
                             "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    return json.loads(out) if out else {}
