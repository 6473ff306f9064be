"""Wheel surgery for the device bundle: repack, slim sgl_kernel, build a wheel from a source tree.

Every wheel written here is stored uncompressed (ZIP_STORED): the bundle compresses the whole
archive with xz, which packs the compiled ops several times smaller than zip's deflate does
(flashmla_ops: 15 MB deflated, 1.1 MB in xz). RECORD is rewritten to match what is kept, so pip
installs the result like any wheel; the `.dist-info` always stays (SGLang checks at launch that the
`sglang-kernel` distribution is installed, by version).
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import re
import zipfile
from pathlib import Path
from typing import Callable, Iterable

from shrinker.errors import ShrinkError

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _dist_info(names: Iterable[str]) -> str:
    infos = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
    if len(infos) != 1:
        raise ShrinkError(f"a wheel must hold exactly one .dist-info folder, found {sorted(infos) or 'none'}")
    return infos.pop()


def _write_entry(zout: zipfile.ZipFile, name: str, data: bytes, date_time=ZIP_EPOCH, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, date_time=date_time)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = (0o100000 | mode) << 16
    zout.writestr(info, data)


def repack_wheel(src: Path, dst: Path, keep: Callable[[str], bool] | None = None,
                 extra: dict[str, Path] | None = None) -> list[str]:
    """Copy wheel `src` to `dst` stored (not deflated), leaving out members where keep() is False.

    `extra` adds members ({path in the wheel: file}), replacing a member of the same path.
    Returns the dropped member names; RECORD lists exactly the members written.
    """
    extra = dict(extra or {})
    if Path(src).resolve() == Path(dst).resolve():
        raise ShrinkError(f"cannot repack {src} over its source")
    dropped: list[str] = []
    with zipfile.ZipFile(src) as zin:
        names = [i.filename for i in zin.infolist() if not i.is_dir()]
        dist = _dist_info(names)
        record_name = f"{dist}/RECORD"
        kept_lines: list[str] = []
        dst.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
            for info in zin.infolist():
                name = info.filename
                if info.is_dir() or name == record_name or name in extra:
                    continue
                if keep is not None and not name.startswith(dist + "/") and not keep(name):
                    dropped.append(name)
                    continue
                data = zin.read(info)
                mode = (info.external_attr >> 16) & 0o777 or 0o644
                _write_entry(zout, name, data, info.date_time, mode)
                kept_lines.append(f"{name},{record_hash(data)},{len(data)}")
            for name, path in sorted(extra.items()):
                data = Path(path).read_bytes()
                _write_entry(zout, name, data, mode=0o755)
                kept_lines.append(f"{name},{record_hash(data)},{len(data)}")
            kept_lines.append(f"{record_name},,")
            _write_entry(zout, record_name, ("\n".join(kept_lines) + "\n").encode())
    return dropped


def drop_patterns(patterns: Iterable[str]) -> Callable[[str], bool]:
    """keep() for repack_wheel: False for members matching any glob."""
    pats = list(patterns)
    return lambda name: not any(fnmatch.fnmatch(name, p) for p in pats)


_SO = re.compile(r"\.(abi3\.so|cpython-[^/]*\.so|so)$")


def op_key(member: str) -> str | None:
    """'sgl_kernel/sm90/common_ops.abi3.so' -> 'sgl_kernel/sm90/common_ops'; None for non-.so files."""
    if not _SO.search(member):
        return None
    head, _, base = member.rpartition("/")
    stem = base.split(".", 1)[0]
    return f"{head}/{stem}" if head else stem


def slim_kernel_wheel(src: Path, dst: Path, keep_ops: Iterable[str], extra: dict[str, Path] | None = None) -> list[str]:
    """sgl_kernel with only the compiled ops in `keep_ops` (Python files and dist-info all kept),
    plus `extra` ops built elsewhere ({path in the wheel: .so}; our slim FA3 flash_ops)."""
    keep_set = set(keep_ops)
    with zipfile.ZipFile(src) as z:
        present = {op_key(n) for n in z.namelist()} - {None}
    missing = sorted(keep_set - present)
    if missing:
        raise ShrinkError(f"{src.name} has no compiled op {', '.join(missing)} (it has: {', '.join(sorted(present))})")
    return repack_wheel(src, dst, keep=lambda name: op_key(name) is None or op_key(name) in keep_set, extra=extra)


def _metadata(name: str, version: str, summary: str) -> str:
    return f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {summary}\n"


def foreign_extension(name: str, python_version: str) -> bool:
    """An extension module built for another CPython (`_core.cpython-311-x86_64-linux-gnu.so` where
    Python 3.12 runs): that interpreter's import system never looks for it (its suffixes are
    `.cpython-312-*.so`, `.abi3.so` and `.so`), so leaving it out changes nothing that runs there."""
    m = re.search(r"\.cpython-(\d+)[^/]*\.so$", name)
    return bool(m) and m.group(1) != python_version.replace(".", "")


def build_tree_wheel(python_dir: Path, package: str, version: str, dst_dir: Path,
                     summary: str = "built from a source tree by shrinker",
                     skip: Callable[[str], bool] | None = None, dropped: list[str] | None = None) -> Path:
    """A py3-none-any wheel of `python_dir/package` (every file but caches): the tree as pip installs it.

    Deterministic: sorted members, fixed dates. Compiled files in the tree travel as they are, except
    those `skip` (given the path inside the wheel) leaves out; their paths are appended to `dropped`.
    """
    pkg = Path(python_dir) / package
    if not (pkg / "__init__.py").is_file():
        raise ShrinkError(f"{pkg} is not a Python package (no __init__.py)")
    dist = f"{package}-{version}.dist-info"
    wheel_path = Path(dst_dir) / f"{package}-{version}-py3-none-any.whl"
    wheel_path.parent.mkdir(parents=True, exist_ok=True)
    files = sorted(p for p in pkg.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")
    if skip is not None:
        left = [p for p in files if skip(p.relative_to(python_dir).as_posix())]
        if dropped is not None:
            dropped += [p.relative_to(python_dir).as_posix() for p in left]
        files = [p for p in files if p not in set(left)]
    lines: list[str] = []
    with zipfile.ZipFile(wheel_path, "w", zipfile.ZIP_STORED) as z:
        for path in files:
            name = path.relative_to(python_dir).as_posix()
            data = path.read_bytes()
            _write_entry(z, name, data)
            lines.append(f"{name},{record_hash(data)},{len(data)}")
        meta = {
            "METADATA": _metadata(package, version, summary),
            "WHEEL": "Wheel-Version: 1.0\nGenerator: shrinker\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
            "top_level.txt": package + "\n",
        }
        for fname, text in meta.items():
            data = text.encode()
            _write_entry(z, f"{dist}/{fname}", data)
            lines.append(f"{dist}/{fname},{record_hash(data)},{len(data)}")
        lines.append(f"{dist}/RECORD,,")
        _write_entry(z, f"{dist}/RECORD", ("\n".join(lines) + "\n").encode())
    return wheel_path


def tree_version(python_dir: Path, package: str) -> str:
    """The version a tree declares: <package>/_version.py, else pyproject.toml's [project] version."""
    vfile = Path(python_dir) / package / "_version.py"
    if vfile.is_file():
        m = re.search(r"""^__version__\s*=\s*(?:\w+\s*=\s*)*['"]([^'"]+)['"]""", vfile.read_text(), re.M)
        if m:
            return m.group(1)
    pyproject = Path(python_dir) / "pyproject.toml"
    if pyproject.is_file():
        import tomllib

        version = tomllib.loads(pyproject.read_text()).get("project", {}).get("version")
        if version:
            return str(version)
    raise ShrinkError(f"cannot tell the version of {Path(python_dir) / package} (no _version.py or pyproject version)")
