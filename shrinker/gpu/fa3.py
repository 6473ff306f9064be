"""`shrink gpu-fa3`: our slim FA3 `flash_ops` for the device bundle (here: pack the sources, take the result).

Upstream's sgl_kernel ships FA3 as a 1.1 GB prebuilt `flash_ops`, which no device call can carry.
  shrink gpu-fa3 pack --fa-git DIR   FlashAttention's hopper sources at fa3.toml's commit (DIR: a git
                                     clone or mirror of Dao-AILab/flash-attention), the CUTLASS headers
                                     of the flashinfer-python wheel, and the kernel wheel's flash_attn.py,
                                     into .gpu-bundle/fa3-src/ (carry it); checks our binding's schemas
                                     against the wheel's calls and its prebuilt flash_ops first.
  (device) python3 -m shrinker.gpu.fa3_build ... && python3 -m shrinker.gpu.fa3_check ...
  shrink gpu-fa3 take RUN_DIR        the .so the device returned (xz parts) -> .gpu-bundle/fa3/, sha256 checked;
                                     `shrink gpu-bundle` then ships it inside the slim sgl_kernel.
Nothing from FlashAttention, CUTLASS or SGLang is committed: the pack lives under .gpu-bundle/.
"""

from __future__ import annotations

import ast
import io
import json
import lzma
import re
import shutil
import subprocess
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from shrinker.errors import ShrinkError
from shrinker.gpu import fa3_build

OP_NAMESPACE = "sgl_kernel"
SO_MEMBER = "sgl_kernel/flash_ops.abi3.so"
PY_MEMBERS = ("sgl_kernel/flash_attn.py", "sgl_kernel/debug_utils.py")
HEADER_SUFFIXES = (".h", ".hpp", ".cuh")


def fa3_dir() -> Path:
    from shrinker.gpu.bundle import bundle_dir

    return bundle_dir() / "fa3"


def src_dir() -> Path:
    from shrinker.gpu.bundle import bundle_dir

    return bundle_dir() / "fa3-src"


# --- schemas: our binding's m.def strings, the prebuilt flash_ops', and the wheel's call sites ---

@dataclass(frozen=True)
class Arg:
    name: str
    type: str
    default: str | None = None


def _normalize(schema: str) -> str:
    return re.sub(r"\s+", " ", schema).replace("( ", "(").strip()


def binding_schemas(cpp_text: str) -> dict[str, str]:
    """op name -> schema string of every m.def between the binding's BEGIN/END SCHEMAS markers."""
    m = re.search(r"// BEGIN SCHEMAS(.*?)// END SCHEMAS", cpp_text, re.S)
    if not m:
        raise ShrinkError("the binding has no // BEGIN SCHEMAS ... // END SCHEMAS block")
    out = {}
    for block in re.findall(r"m\.def\((.*?)\);", m.group(1), re.S):
        schema = _normalize("".join(re.findall(r'"((?:[^"\\]|\\.)*)"', block)))
        out[schema.split("(", 1)[0]] = schema
    return out


def parse_args(schema: str) -> list[Arg]:
    """The arguments of a TorchScript schema string `name(Type name[ = default], ...) -> ...`."""
    inner = schema[schema.index("(") + 1: schema.rindex(") ->")]
    args = []
    for part in [p.strip() for p in inner.split(",") if p.strip()]:
        decl, _, default = part.partition("=")
        typ, name = decl.strip().rsplit(None, 1)
        args.append(Arg(name=name, type=typ, default=default.strip() or None))
    return args


def upstream_schemas(kernel_wheel: Path, member: str = SO_MEMBER) -> dict[str, str]:
    """The fwd/get_scheduler_metadata schemas compiled into the wheel's prebuilt flash_ops (its strings)."""
    pattern = re.compile(rb"(?:fwd|get_scheduler_metadata)\((?:Tensor|\s)[\x20-\x7e]*\) -> [\x20-\x7e]+")
    found: dict[str, str] = {}
    tail = b""
    with zipfile.ZipFile(kernel_wheel) as z:
        if member not in z.namelist():
            raise ShrinkError(f"{kernel_wheel.name} has no {member}")
        with z.open(member) as f:
            for chunk in iter(lambda: f.read(64 << 20), b""):
                buf = tail + chunk
                for m in pattern.finditer(buf):
                    text = _normalize(m.group(0).decode())
                    found.setdefault(text.split("(", 1)[0], text)
                tail = buf[-16384:]
    return found


@dataclass
class Call:
    op: str
    positional: int
    keywords: list[str]
    line: int


def call_sites(py_text: str) -> list[Call]:
    """Every torch.ops.sgl_kernel.<op>[.default](...) call in a Python source."""
    calls = []
    for node in ast.walk(ast.parse(py_text)):
        if not isinstance(node, ast.Call):
            continue
        chain, f = [], node.func
        while isinstance(f, ast.Attribute):
            chain.append(f.attr)
            f = f.value
        if isinstance(f, ast.Name):
            chain.append(f.id)
        chain.reverse()
        if chain[:3] == ["torch", "ops", OP_NAMESPACE] and len(chain) in (4, 5):
            calls.append(Call(chain[3], len(node.args), [k.arg for k in node.keywords if k.arg], node.lineno))
    return calls


def check_calls(schemas: dict[str, str], calls: list[Call]) -> list[str]:
    """Problems binding these calls to these schemas (empty: each call names an op we define, every
    keyword is an argument, and every argument without a default is given)."""
    problems = []
    for c in calls:
        if c.op not in schemas:
            problems.append(f"line {c.line}: torch.ops.{OP_NAMESPACE}.{c.op} is not defined by the binding")
            continue
        args = parse_args(schemas[c.op])
        names = [a.name for a in args]
        if c.positional > len(args):
            problems.append(f"line {c.line}: {c.op} gets {c.positional} positional arguments, the schema has {len(args)}")
            continue
        given = set(names[:c.positional])
        for kw in c.keywords:
            if kw not in names:
                problems.append(f"line {c.line}: {c.op} has no argument {kw!r}")
            elif kw in given:
                problems.append(f"line {c.line}: {c.op} gets {kw!r} twice")
            given.add(kw)
        missing = [a.name for a in args if a.default is None and a.name not in given]
        if missing:
            problems.append(f"line {c.line}: {c.op} is not given {', '.join(missing)}")
    return problems


def check_kernel_wheel(kernel_wheel: Path, binding: Path = fa3_build.BINDING) -> list[str]:
    """Problems calling our binding from this kernel wheel's flash_attn.py (empty: it fits)."""
    with zipfile.ZipFile(kernel_wheel) as z:
        if PY_MEMBERS[0] not in z.namelist():
            return [f"{kernel_wheel.name} has no {PY_MEMBERS[0]}"]
        text = z.read(PY_MEMBERS[0]).decode()
    calls = call_sites(text)
    if not calls:
        return [f"{PY_MEMBERS[0]} of {kernel_wheel.name} calls no torch.ops.{OP_NAMESPACE} op"]
    return check_calls(binding_schemas(binding.read_text()), calls)


# --- pack: the build folder that travels to the device ---

def _git(fa_git: Path, *args: str) -> bytes:
    proc = subprocess.run(["git", "-C", str(fa_git), *args], capture_output=True)
    if proc.returncode != 0:
        raise ShrinkError(f"git {' '.join(args[:2])} in {fa_git} failed: "
                          f"{(proc.stderr.decode(errors='replace').strip().splitlines() or ['?'])[-1]}")
    return proc.stdout


def fa_sources(fa_git: Path, commit: str, cfg: dict) -> tuple[dict[str, bytes], dict]:
    """{path in the pack: bytes} of the hopper files the build needs, and counts of what the commit has."""
    _git(fa_git, "cat-file", "-e", f"{commit}^{{commit}}")
    tar = tarfile.open(fileobj=io.BytesIO(_git(fa_git, "archive", "--format=tar", commit, "hopper", "LICENSE")))
    wanted = set(fa3_build.kernel_sources(cfg)) | {f"hopper/{s}" for s in cfg["source"]["support"]} \
        | {f"hopper/{cfg['source']['api']}", "LICENSE"}
    files: dict[str, bytes] = {}
    inst = []
    for member in tar.getmembers():
        if not member.isfile():
            continue
        name = member.name
        top_header = name.startswith("hopper/") and name.count("/") == 1 and name.endswith(HEADER_SUFFIXES)
        if name.startswith("hopper/instantiations/") and name.endswith(".cu"):
            inst.append(name.rsplit("/", 1)[1])
        if top_header or name in wanted:
            files[name] = tar.extractfile(member).read()
    missing = sorted(wanted - set(files))
    if missing:
        raise ShrinkError(f"FlashAttention {commit[:12]} lacks {', '.join(missing)}")
    counts = {"instantiations": len(inst), "instantiations_sm90": sum(n.endswith("_sm90.cu") for n in inst),
              "instantiations_sm90_fwd": sum(n.endswith("_sm90.cu") and n.startswith("flash_fwd") for n in inst),
              "instantiations_sm80": sum(n.endswith("_sm80.cu") for n in inst)}
    return files, counts


def cutlass_headers(wheel: Path, prefix: str) -> tuple[dict[str, bytes], str]:
    """CUTLASS's include/ from a wheel (path in pack: cutlass/include/...) and its version."""
    files = {}
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith(prefix + "/") and not name.endswith("/"):
                files["cutlass/include/" + name[len(prefix) + 1:]] = z.read(name)
    version_h = files.get("cutlass/include/cutlass/version.h", b"").decode()
    parts = [re.search(rf"#define CUTLASS_{k} (\d+)", version_h) for k in ("MAJOR", "MINOR", "PATCH")]
    if not files or not all(parts):
        raise ShrinkError(f"{wheel.name} has no CUTLASS headers under {prefix}")
    return files, ".".join(p.group(1) for p in parts)


def _write_pack(files: dict[str, bytes], dst: Path) -> None:
    """A reproducible tar.xz of `files` (sorted, no owners or dates)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(files[name]))
    dst.write_bytes(lzma.compress(buf.getvalue(), preset=6))


def pack(fa_git: Path, kernel_wheel: Path, flashinfer_wheel: Path, dest: Path | None = None,
         cfg: dict | None = None, check_prebuilt: bool = True) -> dict:
    """Write dest/fa3-src.tar.xz and dest/manifest.json; returns the manifest."""
    from shrinker.filehash import sha256_file

    cfg = cfg or fa3_build.load_config()
    dest = dest or src_dir()
    problems = check_kernel_wheel(kernel_wheel)
    if problems:
        raise ShrinkError(f"the binding does not fit {kernel_wheel.name}'s flash_attn.py: {problems[0]}")
    ours = binding_schemas(fa3_build.BINDING.read_text())
    prebuilt = upstream_schemas(kernel_wheel) if check_prebuilt else {}
    for op, schema in prebuilt.items():
        if ours.get(op) != schema:
            raise ShrinkError(f"the binding's {op} schema differs from the prebuilt flash_ops of {kernel_wheel.name}")
    commit = cfg["source"]["commit"]
    files, counts = fa_sources(fa_git, commit, cfg)
    cutlass, cutlass_version = cutlass_headers(flashinfer_wheel, cfg["source"]["cutlass_include"])
    files.update(cutlass)
    with zipfile.ZipFile(kernel_wheel) as z:
        for member in PY_MEMBERS:
            files[member] = z.read(member)
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / fa3_build.PACK
    _write_pack(files, out)
    manifest = {
        "repo": cfg["source"]["repo"], "commit": commit, "pack": out.name, "pack_sha256": sha256_file(out),
        "pack_bytes": out.stat().st_size, "files": len(files),
        "cutlass_wheel": flashinfer_wheel.name, "cutlass_version": cutlass_version,
        "kernel_wheel": kernel_wheel.name, "kernels": fa3_build.kernel_sources(cfg),
        "kernels_stubbed": [f"{h}{v}" for h, v in fa3_build.unbuilt_kernels(cfg)],
        "fa_counts": counts, "schemas_checked_against_prebuilt": sorted(prebuilt),
    }
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


# --- take: the device's .so back into .gpu-bundle/fa3/ ---

def take(run_dir: Path, dest: Path | None = None) -> dict:
    """Reassemble the .so from a device run's build.json and xz parts; check its sha256."""
    import hashlib

    dest = dest or fa3_dir()
    found = sorted(Path(run_dir).rglob("build.json"))
    if not found:
        raise ShrinkError(f"no build.json under {run_dir}: pass the folder the device's $OUT came back to")
    info = json.loads(found[0].read_text())
    if info.get("error") or not info.get("parts"):
        raise ShrinkError(f"the device build failed: {(info.get('error') or 'no .so').splitlines()[-1]}")
    base = found[0].parent
    data = b""
    for part in info["parts"]:
        chunk = (base / part["file"]).read_bytes()
        if hashlib.sha256(chunk).hexdigest() != part["sha256"]:
            raise ShrinkError(f"{part['file']} does not match its sha256 in build.json")
        data += chunk
    so = lzma.decompress(data)
    if hashlib.sha256(so).hexdigest() != info["so_sha256"]:
        raise ShrinkError("the reassembled .so does not match so_sha256 in build.json")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / info["so"]).write_bytes(so)
    shutil.copyfile(found[0], dest / "build.json")
    for name in ("check.json", "console.txt"):
        if (base / name).is_file():
            shutil.copyfile(base / name, dest / name)
    return info


# --- the bundle: ship our flash_ops inside the slim sgl_kernel ---

def bundle_entry(conf: dict | None, kernel_wheel: Path) -> dict:
    """bundle.toml's [kernel].fa3 for this kernel wheel: what to ship, or why it is not shipped.

    Shipped: {"member", "path", "sha256", "bytes", "build": build.json's commit/figures}.
    Not shipped: {"not_shipped": reason} (no .so built yet, or its binding does not fit the wheel).
    """
    from shrinker import paths
    from shrinker.filehash import sha256_file

    if not conf:
        return {"not_shipped": "bundle.toml names no [kernel].fa3"}
    so = paths.project_root() / conf["so"]
    if not so.is_file():
        return {"not_shipped": f"no {conf['so']}: run `shrink gpu-fa3 pack`, build on the device, `shrink gpu-fa3 take`"}
    problems = check_kernel_wheel(kernel_wheel)
    if problems:
        return {"not_shipped": f"the binding does not fit {kernel_wheel.name}: {problems[0]}"}
    entry = {"member": conf["member"], "path": conf["so"], "sha256": sha256_file(so), "bytes": so.stat().st_size,
             "what": "shrinker's slim FA3 build from FlashAttention's public hopper sources (shrink gpu-fa3), "
                     "not upstream's prebuilt flash_ops"}
    info = so.parent / "build.json"
    if info.is_file():
        b = json.loads(info.read_text())
        if b.get("so_sha256") and b["so_sha256"] != entry["sha256"]:
            raise ShrinkError(f"{conf['so']} is not the .so its build.json describes (sha256 differs)")
        entry["build"] = {k: b.get(k) for k in ("commit", "cutlass_version", "translation_units", "ninja_wall_s",
                                                  "jobs", "nvcc", "torch", "kernels_built", "kernels_stubbed")}
    return entry


# --- kernels-build.{json,md}: what the slim build costs against upstream's prebuilt flash_ops ---

SYMBOLS = {"run_mha_fwd_": re.compile(rb"_Z12run_mha_fwd_I[A-Za-z0-9_]+"),
           "run_flash_fwd": re.compile(rb"_Z13run_flash_fwdI[A-Za-z0-9_]+")}


def symbol_counts(chunks) -> dict[str, int]:
    """Distinct mangled run_mha_fwd_<...> (one per head-dim/variant) and run_flash_fwd<...> (one per kernel
    configuration) names in a binary, given as an iterable of byte chunks."""
    seen: dict[str, set] = {k: set() for k in SYMBOLS}

    def scan(buf: bytes, last: bool) -> None:
        for k, rx in SYMBOLS.items():  # a name running into a chunk's end is read whole from the next
            seen[k].update(m.group(0) for m in rx.finditer(buf) if last or m.end() < len(buf))

    tail = b""
    for chunk in chunks:
        buf = tail + chunk
        scan(buf, last=False)
        tail = buf[-4096:]
    scan(tail, last=True)
    return {k: len(v) for k, v in seen.items()}


def _wheel_member_chunks(wheel: Path, member: str):
    with zipfile.ZipFile(wheel) as z, z.open(member) as f:
        yield from iter(lambda: f.read(64 << 20), b"")


def kernels_report(build: dict, check: dict | None, manifest: dict, kernel_wheel: Path | None, ours: Path,
                   out_dir: Path, host_cxx: str | None = None) -> dict:
    """Write kernels-build.json/.md: build wall time, translation units, .so bytes, kernel counts."""
    import datetime as _dt

    upstream: dict = {"wheel": kernel_wheel.name if kernel_wheel else None}
    if kernel_wheel is not None and kernel_wheel.is_file():
        with zipfile.ZipFile(kernel_wheel) as z:
            upstream["bytes"] = z.getinfo(SO_MEMBER).file_size
        upstream["symbols"] = symbol_counts(_wheel_member_chunks(kernel_wheel, SO_MEMBER))
    data = ours.read_bytes()
    ours_info = {"bytes": len(data), "sha256": build.get("so_sha256"),
                 "xz_bytes": sum(p["bytes"] for p in build.get("parts", [])), "symbols": symbol_counts([data])}
    counts = manifest.get("fa_counts", {})
    cuda_tus = len(build.get("cuda_sources", []))
    report = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "what": "sgl_kernel's flash_ops (FA3) rebuilt from FlashAttention's public hopper sources with only the "
                "kernels DeepSeek's MLA calls, and shrinker's binding of sgl_kernel's op schemas (shrink gpu-fa3)",
        "source": {"repo": manifest.get("repo"), "commit": manifest.get("commit"),
                   "cutlass": f"{manifest.get('cutlass_version')} ({manifest.get('cutlass_wheel')})",
                   "pack_sha256": manifest.get("pack_sha256"), "pack_bytes": manifest.get("pack_bytes")},
        "build": {k: build.get(k) for k in ("jobs", "cpus", "ninja_wall_s", "translation_units", "nvcc", "cxx",
                                             "torch", "torch_cuda", "disable", "kernels_built", "kernels_stubbed",
                                             "seconds_per_output", "nvcc_flags")},
        "check": {"passed": check.get("passed"), "device": check.get("device"), "tolerance": check.get("tolerance"),
                  "cases": [{k: c.get(k) for k in ("case", "ok", "rel_err", "lse_rel_err")} for c in check["cases"]],
                  "refusals": check.get("refusals")} if check else None,
        "flashattention_instantiations": counts,
        "ours": ours_info, "upstream_prebuilt": upstream,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "kernels-build.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    b = report["build"]
    # builds before fa3_build read gcc's first line recorded its last (the licence text)
    cxx = b["cxx"] if b.get("cxx") and ("++" in b["cxx"] or "gcc" in b["cxx"]) else (host_cxx or "c++ (version not recorded)")
    up_bytes = upstream.get("bytes")
    ratio = f" ({len(data) / up_bytes * 100:.2f} % of it)" if up_bytes else ""
    md = [
        "# Kernels build: our slim FA3 `flash_ops` — DeepSeek v0.5.17", "",
        f"Report written {report['date']}. {report['what']}. Upstream's prebuilt flash_ops (built from "
        "sgl-project/sgl-attn, not public) cannot travel to the GPU machine, so both trees in the GPU comparison "
        "load this one file: \"identical\" there means the two trees compute the same with the same kernels.", "",
        f"- Sources: {report['source']['repo']} `hopper/` at {report['source']['commit']}, CUTLASS "
        f"{report['source']['cutlass']} headers; source pack {report['source']['pack_bytes']} bytes "
        f"(sha256 {str(report['source']['pack_sha256'])[:16]}…), reproducible from `shrink gpu-fa3 pack`.",
        f"- Build: `python3 -m shrinker.gpu.fa3_build` (ninja, {b['jobs']} jobs on {b['cpus']} cores, nvcc "
        f"`{b['nvcc']}`, `{cxx}`, torch {b['torch']}): **{b['ninja_wall_s']} s wall**, **{b['translation_units']} translation units** "
        f"({cuda_tus} CUDA: {len(b['kernels_built'] or [])} forward kernels + split-KV combine + scheduler; "
        f"{b['translation_units'] - cuda_tus} host: FlashAttention's flash_api.cpp, our binding, our stubs).",
        f"- Compiled out (FLASHATTENTION_DISABLE_*): {', '.join(b['disable'] or [])}. The dispatch names "
        f"{len(b['kernels_stubbed'] or [])} more head-dim/variant kernels ({', '.join(b['kernels_stubbed'] or [])}); "
        "each is a stub that raises if called.",
        f"- FlashAttention's `hopper/instantiations/` at that commit: {counts.get('instantiations')} files "
        f"({counts.get('instantiations_sm90')} sm90, of which {counts.get('instantiations_sm90_fwd')} forward; "
        f"{counts.get('instantiations_sm80')} sm80); we compile {len(b['kernels_built'] or [])} of them.",
        f"- `.so`: **{len(data):,} bytes**{ratio}, xz {ours_info['xz_bytes']:,} bytes; upstream's prebuilt "
        f"flash_ops ({upstream.get('wheel')}): **{up_bytes:,} bytes**." if up_bytes else
        f"- `.so`: **{len(data):,} bytes**, xz {ours_info['xz_bytes']:,} bytes.",
    ]
    if upstream.get("symbols"):
        us, os_ = upstream["symbols"], ours_info["symbols"]
        md.append(f"- Kernel instantiations in the binaries (distinct mangled names): `run_mha_fwd_<…>` (one per "
                  f"head dims × split × paged × softcap × PackGQA × dtype) {os_['run_mha_fwd_']} ours (incl. the stubs) vs "
                  f"{us['run_mha_fwd_']} upstream; `run_flash_fwd<…>` (one per kernel configuration) "
                  f"{os_['run_flash_fwd']} vs {us['run_flash_fwd']}.")
    md += ["", "| translation unit | seconds |", "| --- | --- |"]
    md += [f"| `{k}` | {v} |" for k, v in sorted((b["seconds_per_output"] or {}).items(), key=lambda kv: -kv[1])]
    if report["check"]:
        c = report["check"]
        md += ["", f"## Check on the GPU ({c['device']}): {'passed' if c['passed'] else 'FAILED'}", "",
               "`python3 -m shrinker.gpu.fa3_check`: the ops called through the wheel's own `sgl_kernel/flash_attn.py` "
               f"in the fa3/dsa backends' shapes, against float32 PyTorch attention (relative L2 error < {c['tolerance']}), "
               "then the calls the build must refuse.", "", "| case | ok | rel. error |", "| --- | --- | --- |"]
        for row in c["cases"]:
            err = f"{row['rel_err']:.2e}" if isinstance(row.get("rel_err"), float) else "—"
            if isinstance(row.get("lse_rel_err"), float):
                err += f" (LSE {row['lse_rel_err']:.1e})"
            md.append(f"| {row['case']} | {'yes' if row['ok'] else 'NO'} | {err} |")
        md += ["", "| refused call | result |", "| --- | --- |"]
        md += [f"| {r['call']} | {'raised' if r['ok'] else 'DID NOT RAISE'}: `{r['result']}` |" for r in c["refusals"] or []]
    (out_dir / "kernels-build.md").write_text("\n".join(md) + "\n")
    return report
