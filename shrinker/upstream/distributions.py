"""The distributions an upstream release declares, as PyPI published them when the release came out.

For every distribution in the requirement closure of the release's python/pyproject.toml (markers
evaluated for the profile's target machine, rules `[requirements].target`, never for this machine)
the index records the version chosen, its wheel, the top-level import names the wheel provides,
its requirements and its unpacked size. Everything is read from PyPI itself: the simple index
(PEP 691 JSON, with upload times) and each wheel's own zip directory, top_level.txt and METADATA,
fetched with HTTP range requests (a few KB even of a 900 MB torch wheel). Nothing installed here
is consulted, and every choice is "the newest matching file uploaded no later than the release's
own sglang wheel", so the same release gives the same index, byte for byte, on every machine and
on every later day. It is built once per release and cached beside the upstream download.

`provided_by` answers "which declared distribution provides this import name" from the index;
a distribution without a wheel (sdist only) falls back to matching the import name against its name.
"""

from __future__ import annotations

import inspect
import io
import json
import os
import threading
import tomllib
import urllib.error
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from email.parser import Parser
from functools import cached_property
from hashlib import sha1
from pathlib import Path

from packaging.markers import UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from shrinker import paths
from shrinker.errors import ShrinkError

SIMPLE = os.environ.get("SHRINK_PYPI_SIMPLE", "https://pypi.org/simple")
INDEX_FORMAT = 1  # bump when what an index records changes meaning (keys the cache)
FETCH_THREADS = 16
READ_AHEAD = 64 * 1024  # one range request fetches at least this much (zip directories are read in bits)


@dataclass
class DistInfo:
    name: str  # canonical
    version: str = ""
    wheel: str = ""  # the file read; "" when the release had no wheel for the target
    top_level: list[str] = field(default_factory=list)  # import names the wheel provides
    requires: list[str] = field(default_factory=list)  # Requires-Dist lines, markers unevaluated
    size: int | None = None  # unpacked bytes of the wheel (None: no wheel read)
    note: str = ""  # why nothing was read, when nothing was


@dataclass
class DistIndex:
    release: str  # "sglang==0.5.16"
    cutoff: str  # upload time of the release's own wheel (ISO 8601, UTC)
    target: dict[str, str]  # the marker environment requirements were evaluated in
    dists: dict[str, DistInfo]

    def to_json(self) -> dict:
        return {"format": INDEX_FORMAT, "release": self.release, "cutoff": self.cutoff, "target": self.target,
                "dists": {k: asdict(v) for k, v in sorted(self.dists.items())}}

    @classmethod
    def from_json(cls, data: dict) -> "DistIndex":
        return cls(data["release"], data["cutoff"], data["target"],
                   {k: DistInfo(**v) for k, v in data["dists"].items()})

    @cached_property
    def import_map(self) -> dict[str, list[str]]:
        """top-level import name -> the distributions (canonical names) whose wheel provides it."""
        out: dict[str, set[str]] = {}
        for d in self.dists.values():
            for top in d.top_level:
                out.setdefault(top, set()).add(d.name)
        return {k: sorted(v) for k, v in sorted(out.items())}

    def requires(self, name: str, extras: frozenset[str] = frozenset()) -> set[tuple[str, frozenset[str]]]:
        """(canonical name, extras) of what `name` with `extras` needs on the target."""
        info = self.dists.get(name)
        return requirements_on(info.requires, self.target, extras) if info else set()


# ------------------------------------------------------------------------------------------------
# Requirements on the target machine


def requirement_applies(req: Requirement, target: dict[str, str], extras: frozenset[str] = frozenset()) -> bool:
    if req.marker is None:
        return True
    try:
        return any(req.marker.evaluate({**target, "extra": e}) for e in (extras or {""}))
    except UndefinedEnvironmentName:
        return False


def requirements_on(lines: list[str], target: dict[str, str],
                    extras: frozenset[str] = frozenset()) -> set[tuple[str, frozenset[str]]]:
    out = set()
    for text in lines:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement_applies(req, target, extras):
            out.add((canonicalize_name(req.name), frozenset(req.extras)))
    return out


def declared_requirements(pyproject: Path) -> list[Requirement]:
    """[project].dependencies of a pyproject, parsed (unparsable lines skipped)."""
    if not pyproject.exists():
        return []
    out = []
    for text in tomllib.loads(pyproject.read_text()).get("project", {}).get("dependencies", []):
        try:
            out.append(Requirement(text))
        except InvalidRequirement:
            continue
    return out


def declared_distributions(pyproject: Path) -> set[str]:
    """Canonical names in [project] dependencies (markers ignored: declared on some platform)."""
    return {canonicalize_name(r.name) for r in declared_requirements(pyproject)}


# ------------------------------------------------------------------------------------------------
# Which declared distribution provides an import name


def _words_match(import_name: str, dist: str) -> bool:
    words, target = dist.split("-"), canonicalize_name(import_name).split("-")
    n = len(target)
    return any(words[i:i + n] == target for i in range(len(words) - n + 1))


def provided_by(import_name: str, declared: set[str], dist_map: dict[str, list[str]]) -> str | None:
    """The declared distribution providing `import_name` (dist_map: an index's import_map), or None.

    A name no indexed wheel provides is matched against the declared names: its canonical form
    equals one, or is a run of its dash-separated words (`flashinfer` in `flashinfer-python`)."""
    for dist in dist_map.get(import_name, []):
        if dist in declared:
            return dist
    if import_name in dist_map:  # provided, but by a distribution the tree does not declare
        return None
    if canonicalize_name(import_name) in declared:  # an exact name wins over a run of words
        return canonicalize_name(import_name)  # (`kernels` is kernels, not humming-kernels)
    for dist in sorted(declared):
        if _words_match(import_name, dist):
            return dist
    return None


# ------------------------------------------------------------------------------------------------
# Reading PyPI


def _get(url: str, headers: dict[str, str] | None = None) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": "shrinker", **(headers or {})})
    for attempt in range(3):
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise
            last = exc
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            last = exc
    raise ShrinkError(f"PyPI unreachable ({url}): {last}")


def simple_files(name: str) -> list[dict]:
    """PyPI's files of a project (PEP 691 JSON: filename, url, upload-time, size)."""
    try:
        data = _get(f"{SIMPLE}/{canonicalize_name(name)}/", {"Accept": "application/vnd.pypi.simple.v1+json"})
    except urllib.error.HTTPError:
        return []
    return json.loads(data).get("files", [])


class RangeReader(io.RawIOBase):
    """A remote file read with HTTP range requests, as zipfile needs it (seek, tell, read)."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.pos = url, size, 0
        self._blocks: dict[int, bytes] = {}  # start -> bytes

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def _cached(self, start: int, end: int) -> bytes | None:
        for s, data in self._blocks.items():
            if s <= start and end <= s + len(data):
                return data[start - s:end - s]
        return None

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        data = self._cached(self.pos, end)
        if data is None:
            start = max(0, min(self.pos, end - READ_AHEAD))  # read-ahead backwards too: zip reads from the end
            stop = max(end, min(self.size, start + READ_AHEAD))
            block = _get(self.url, {"Range": f"bytes={start}-{stop - 1}"})
            if len(block) != stop - start:
                raise ShrinkError(f"{self.url}: range request gave {len(block)} bytes, not {stop - start}")
            self._blocks[start] = block
            data = block[self.pos - start:end - start]
        self.pos = end
        return data


def target_tags(target: dict[str, str]) -> list[Tag]:
    """Wheel tags the target interpreter accepts, most specific first."""
    major, minor = (int(x) for x in target["python_version"].split(".")[:2])
    machine = target["platform_machine"]
    plats = [f"manylinux_2_{n}_{machine}" for n in range(40, 4, -1)]
    plats += [f"manylinux2014_{machine}", f"manylinux2010_{machine}", f"manylinux1_{machine}", f"linux_{machine}"]
    interp = f"cp{major}{minor}"
    return [*cpython_tags((major, minor), abis=[interp, "abi3", "none"], platforms=plats),
            *compatible_tags((major, minor), interpreter=interp, platforms=plats)]


def _wheel_rank(filename: str, ranks: dict[Tag, int]) -> tuple[Version, int] | None:
    try:
        _, version, _, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    best = min((ranks[t] for t in tags if t in ranks), default=None)
    return None if best is None else (version, best)


def choose_wheel(files: list[dict], specs: list[SpecifierSet], cutoff: str,
                 ranks: dict[Tag, int]) -> tuple[dict, Version] | None:
    """The newest version every requirer's specifier allows, with a target wheel uploaded by `cutoff`,
    and its most specific wheel. Requirers that disagree (pip would backtrack into older versions of
    them): the newest version that satisfies the most of them. Pre-releases only where a specifier
    names one or nothing else matches (as pip). Yanked files count: a later yank must not change an
    earlier release's index."""
    found: list[tuple[tuple, dict, Version]] = []
    for f in files:
        if not f["filename"].endswith(".whl") or (f.get("upload-time") or "9999") > cutoff:
            continue
        rank = _wheel_rank(f["filename"], ranks)
        if rank is not None:
            found.append(((rank[0], -rank[1], f["filename"]), f, rank[0]))

    def score(x, pre: bool) -> int:
        return sum(_allows(s, x[2], pre) for s in specs)

    for pre in (False, True):
        top = max(((score(x, pre), x) for x in found), key=lambda t: (t[0], t[1][0]), default=None)
        if top and top[0] > 0:
            return top[1][1], top[1][2]
    return None


def _allows(spec: SpecifierSet, version: Version, pre: bool) -> bool:
    """PEP 440's rule, spelled out (packaging's own default for pre-releases changed between releases):
    a pre-release only when `pre` or when one of the specifiers itself names a pre-release."""
    if not spec.contains(version, prereleases=True):
        return False
    if pre or not version.is_prerelease:
        return True
    for s in spec:
        try:
            if Version(s.version.removesuffix(".*")).is_prerelease:
                return True
        except InvalidVersion:
            continue
    return False


def read_wheel(url: str, size: int) -> tuple[list[str], list[str], int]:
    """(top-level import names, Requires-Dist lines, unpacked bytes) of a remote wheel."""
    with zipfile.ZipFile(RangeReader(url, size)) as zf:
        infos = zf.infolist()
        meta = next((i for i in infos if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/METADATA")), None)
        top = next((i for i in infos if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/top_level.txt")), None)
        requires = (Parser().parsestr(zf.read(meta).decode("utf-8", "replace")).get_all("Requires-Dist") or []) if meta else []
        if top is not None:
            names = {ln.strip().split("/")[0] for ln in zf.read(top).decode().splitlines() if ln.strip()}
        else:
            names = set(_inferred_top_level(i.filename for i in infos))
        unpacked = sum(i.file_size for i in infos)
    return sorted(n for n in names if n), [r.strip() for r in requires], unpacked


def _inferred_top_level(files) -> list[str]:
    """As importlib.metadata infers them without top_level.txt: each file's first folder, or a top-level
    file's module name, less the names with a dot (`pyzmq.libs`, `x-1.0.dist-info`: not importable)."""
    out = set()
    for name in files:
        first, _, rest = name.partition("/")
        top = first if rest else (inspect.getmodulename(first) or first)
        if top and "." not in top:
            out.add(top)
    return sorted(out)


# ------------------------------------------------------------------------------------------------
# Building and caching an index


def release_cutoff(name: str, version: str) -> str:
    """When PyPI received the release's first file (ISO 8601, UTC)."""
    times = [f["upload-time"] for f in simple_files(name) if f.get("upload-time")
             and _file_version(f["filename"]) == version]
    if not times:
        raise ShrinkError(f"PyPI lists no file of {name}=={version}")
    return min(times)


def _file_version(filename: str) -> str | None:
    try:
        return str(parse_wheel_filename(filename)[1]) if filename.endswith(".whl") else None
    except (InvalidWheelFilename, InvalidVersion):
        return None


def build_index(name: str, version: str, declared: list[Requirement], target: dict[str, str],
                *, log=lambda msg: None) -> DistIndex:
    """Walk the requirement closure breadth first; each distribution is chosen once, under the
    specifiers of every requirement of it met in the layers before (deterministic order)."""
    cutoff = release_cutoff(name, version)
    ranks = {t: i for i, t in enumerate(target_tags(target))}
    dists: dict[str, DistInfo] = {}

    def resolve(item: tuple[str, list[SpecifierSet]]) -> DistInfo:
        dist, specs = item
        chosen = choose_wheel(simple_files(dist), specs, cutoff, ranks)
        if chosen is None:
            wanted = " or ".join(f"'{s}'" for s in specs)
            return DistInfo(dist, note=f"no wheel for the target matching {wanted} uploaded by {cutoff}")
        f, ver = chosen
        top, requires, unpacked = read_wheel(f["url"], int(f["size"]))
        return DistInfo(dist, str(ver), f["filename"], top, requires, unpacked)

    layer: dict[str, tuple[list[SpecifierSet], set[str]]] = {}
    for req in declared:
        if requirement_applies(req, target):
            specs, extras = layer.setdefault(canonicalize_name(req.name), ([], set()))
            specs.append(req.specifier)
            extras.update(req.extras)
    extras_of: dict[str, set[str]] = {}
    with ThreadPoolExecutor(FETCH_THREADS) as pool:
        depth = 0
        while layer:
            todo = sorted(((n, sorted(s, key=str)) for n, (s, _) in layer.items() if n not in dists),
                          key=lambda t: t[0])
            log(f"distribution index, layer {depth}: {len(todo)} distributions")
            for info in pool.map(resolve, todo):  # results come back here, in order: no lock needed
                dists[info.name] = info
            for n, (_, extras) in layer.items():
                extras_of.setdefault(n, set()).update(extras)
            nxt: dict[str, tuple[list[SpecifierSet], set[str]]] = {}
            for n in sorted(layer):
                for text in dists[n].requires:
                    try:
                        req = Requirement(text)
                    except InvalidRequirement:
                        continue
                    if not requirement_applies(req, target, frozenset(extras_of[n])):
                        continue
                    dep = canonicalize_name(req.name)
                    if dep in dists and not (set(req.extras) - extras_of.get(dep, set())):
                        continue
                    specs, extras = nxt.setdefault(dep, ([], set()))
                    specs.append(req.specifier)
                    extras.update(req.extras)
            # a distribution met again with new extras is walked again for what those extras need
            layer = {n: v for n, v in nxt.items() if n not in dists or set(v[1]) - extras_of.get(n, set())}
            depth += 1
    return DistIndex(f"{canonicalize_name(name)}=={version}", cutoff, dict(target), dists)


_BUILDING = threading.Lock()


def _cache_path(name: str, version: str, declared: list[Requirement], target: dict[str, str]) -> Path:
    key = sha1(json.dumps([INDEX_FORMAT, [str(r) for r in declared], target], sort_keys=True).encode()).hexdigest()[:12]
    return paths.cache_dir() / "distributions" / f"{canonicalize_name(name)}-{version}-{key}.json"


def load_index(upstream_root: Path, target: dict[str, str], *, log=lambda msg: None) -> DistIndex:
    """The index of the release whose tree is `upstream_root` (its python/pyproject.toml names it),
    from the cache or built from PyPI once. A pyproject that declares nothing gives an empty index."""
    pyproject = Path(upstream_root) / "python" / "pyproject.toml"
    project = tomllib.loads(pyproject.read_text()).get("project", {}) if pyproject.exists() else {}
    declared = declared_requirements(pyproject)
    if not declared:
        return DistIndex("", "", dict(target), {})
    if not target:
        raise ShrinkError("rules [requirements].target is empty: the marker environment of the target machine "
                          "is needed to read the declared distributions")
    name, version = project.get("name", ""), project.get("version", "")
    cache = _cache_path(name, version, declared, target)
    with _BUILDING:  # a prefetch thread may be building it: wait for that build, never start a second
        if cache.exists():
            return DistIndex.from_json(json.loads(cache.read_text()))
        index = build_index(name, version, declared, target, log=log)
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        tmp.write_text(json.dumps(index.to_json(), indent=1, sort_keys=True) + "\n")
        os.replace(tmp, cache)
    return index


def prefetch_index(upstream_root: Path, target: dict[str, str]) -> threading.Thread:
    """Build the release's index in a background thread (network: ~1 min cold) while the caller parses
    and transforms (CPU). A failure is left to the caller's own load_index, which reports it."""

    def build() -> None:
        try:
            load_index(upstream_root, target)
        except Exception:  # noqa: BLE001 - reported by the caller's load_index
            pass

    thread = threading.Thread(target=build, name="distribution-index", daemon=True)
    thread.start()
    return thread
