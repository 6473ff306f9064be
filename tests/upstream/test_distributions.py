"""The distribution index: PyPI read as of a release's day, for the target machine, the same bytes anywhere."""

from __future__ import annotations

import io
import json
import urllib.error
import zipfile
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

import shrinker.upstream.distributions as dist
from shrinker.errors import ShrinkError
from shrinker.upstream.distributions import (RangeReader, choose_wheel, load_index, provided_by, read_wheel,
                                             target_tags)

TARGET = {"python_version": "3.12", "python_full_version": "3.12.0", "implementation_name": "cpython",
          "implementation_version": "3.12.0", "platform_python_implementation": "CPython", "sys_platform": "linux",
          "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix", "platform_release": "",
          "platform_version": ""}
RANKS = {t: i for i, t in enumerate(target_tags(TARGET))}
REAL_BUILD = dist.build_index  # taken before tests/conftest.py swaps in the offline index


def _wheel(files: dict[str, str], requires: list[str] = (), top_level: list[str] | None = None,
           info: str = "x-1.0.dist-info") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in files.items():
            zf.writestr(name, text)
        meta = "Metadata-Version: 2.1\nName: x\nVersion: 1.0\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
        zf.writestr(f"{info}/METADATA", meta)
        if top_level is not None:
            zf.writestr(f"{info}/top_level.txt", "\n".join(top_level) + "\n")
        zf.writestr(f"{info}/RECORD", "")
    return buf.getvalue()


class FakePyPI:
    """The simple index (PEP 691) and files, answering range requests as files.pythonhosted.org does."""

    def __init__(self) -> None:
        self.projects: dict[str, list[dict]] = {}
        self.blobs: dict[str, bytes] = {}
        self.requests = 0

    def add(self, project: str, filename: str, uploaded: str, data: bytes = b"") -> None:
        url = f"https://files.example/{filename}"
        self.blobs[url] = data
        self.projects.setdefault(project, []).append(
            {"filename": filename, "url": url, "upload-time": uploaded, "size": len(data)})

    def get(self, url: str, headers: dict | None = None) -> bytes:
        self.requests += 1
        if url.startswith(dist.SIMPLE):
            name = url[len(dist.SIMPLE):].strip("/")
            if name not in self.projects:
                raise urllib.error.HTTPError(url, 404, "not found", {}, None)
            return json.dumps({"files": self.projects[name]}).encode()
        data = self.blobs[url]
        start, _, end = (headers or {})["Range"].removeprefix("bytes=").partition("-")
        return data[int(start):int(end) + 1]


@pytest.fixture
def pypi(monkeypatch, tmp_path):
    fake = FakePyPI()
    monkeypatch.setattr(dist, "_get", fake.get)
    monkeypatch.setattr(dist, "build_index", REAL_BUILD)
    monkeypatch.setenv("SHRINK_CACHE", str(tmp_path / "cache"))
    return fake


def test_choose_wheel_takes_the_newest_uploaded_by_the_cutoff_for_the_target():
    files = [
        {"filename": "a-1.0-py3-none-any.whl", "upload-time": "2026-01-01T00:00:00Z"},
        {"filename": "a-1.1-cp312-cp312-manylinux_2_17_x86_64.whl", "upload-time": "2026-02-01T00:00:00Z"},
        {"filename": "a-1.1-py3-none-any.whl", "upload-time": "2026-02-01T00:00:00Z"},
        {"filename": "a-1.2-cp312-cp312-win_amd64.whl", "upload-time": "2026-02-02T00:00:00Z"},  # not the target
        {"filename": "a-1.3-cp311-cp311-manylinux_2_17_x86_64.whl", "upload-time": "2026-02-02T00:00:00Z"},
        {"filename": "a-2.0-py3-none-any.whl", "upload-time": "2026-06-01T00:00:00Z"},  # after the release
        {"filename": "a-1.5rc1-py3-none-any.whl", "upload-time": "2026-02-03T00:00:00Z"},  # a pre-release
        {"filename": "a-1.4.tar.gz", "upload-time": "2026-02-03T00:00:00Z"},  # no wheel
    ]
    f, version = choose_wheel(files, [SpecifierSet()], "2026-03-01T00:00:00Z", RANKS)
    assert str(version) == "1.1" and f["filename"] == "a-1.1-cp312-cp312-manylinux_2_17_x86_64.whl"  # most specific
    assert str(choose_wheel(files, [SpecifierSet("<1.1")], "2026-03-01T00:00:00Z", RANKS)[1]) == "1.0"
    assert str(choose_wheel(files, [SpecifierSet(">=1.5rc1")], "2026-03-01T00:00:00Z", RANKS)[1]) == "1.5rc1"
    # requirers that disagree: the newest version that satisfies the most of them
    assert str(choose_wheel(files, [SpecifierSet("<1.1"), SpecifierSet(">=1.1"), SpecifierSet("<=1.1")],
                            "2026-03-01T00:00:00Z", RANKS)[1]) == "1.1"
    assert choose_wheel(files, [SpecifierSet(">=3")], "2026-03-01T00:00:00Z", RANKS) is None


def test_read_wheel_through_range_requests(pypi):
    big = _wheel({"zmq/__init__.py": "", "zmq/backend/cython/_zmq.so": "x" * 300_000, "pyzmq.libs/libzmq.so": "y"},
                 ["packaging"], info="pyzmq-27.0.dist-info")
    pypi.add("pyzmq", "pyzmq-27.0-cp312-abi3-manylinux_2_28_x86_64.whl", "2026-01-01T00:00:00Z", big)
    url = "https://files.example/pyzmq-27.0-cp312-abi3-manylinux_2_28_x86_64.whl"
    top, requires, size = read_wheel(url, len(big))
    assert top == ["zmq"]  # inferred from the file list as importlib does: pyzmq.libs holds no module
    assert requires == ["packaging"] and size == sum(i.file_size for i in zipfile.ZipFile(io.BytesIO(big)).infolist())
    assert pypi.requests <= 4  # the directory and METADATA, not the 300 KB member
    yaml = _wheel({"yaml/__init__.py": "", "_yaml/__init__.py": ""}, top_level=["_yaml", "yaml"])
    pypi.add("pyyaml", "PyYAML-6.0-cp312-cp312-manylinux_2_17_x86_64.whl", "2026-01-01T00:00:00Z", yaml)
    assert read_wheel("https://files.example/PyYAML-6.0-cp312-cp312-manylinux_2_17_x86_64.whl", len(yaml))[0] == [
        "_yaml", "yaml"]


def test_range_reader_seeks_like_a_file(pypi):
    pypi.add("blob", "blob-1.0-py3-none-any.whl", "2026-01-01T00:00:00Z", bytes(range(256)) * 1000)
    r = RangeReader("https://files.example/blob-1.0-py3-none-any.whl", 256_000)
    r.seek(-10, 2)
    assert r.read() == bytes(range(246, 256)) and r.tell() == 256_000
    r.seek(5)
    assert r.read(3) == bytes([5, 6, 7])


def _release(pypi: FakePyPI, root: Path, deps: list[str]) -> Path:
    pypi.add("app", "app-1.0-py3-none-any.whl", "2026-03-01T00:00:00Z", _wheel({"app/__init__.py": ""}))
    (root / "python").mkdir(parents=True)
    body = ",\n".join(f"    {json.dumps(d)}" for d in deps)
    (root / "python" / "pyproject.toml").write_text(f'[project]\nname = "app"\nversion = "1.0"\n'
                                                    f'dependencies = [\n{body}\n]\n')
    return root


def test_index_walks_the_closure_for_the_target_and_is_the_same_bytes_twice(pypi, tmp_path):
    pypi.add("pillow", "pillow-11.0-cp312-cp312-manylinux_2_28_x86_64.whl", "2026-01-01T00:00:00Z",
             _wheel({"PIL/__init__.py": "", "PIL/Image.py": ""}, ["olefile; extra == 'fpx'"]))
    pypi.add("pillow", "pillow-12.0-cp312-cp312-manylinux_2_28_x86_64.whl", "2026-05-01T00:00:00Z",
             _wheel({"PIL/__init__.py": ""}))  # newer than the release: never chosen
    pypi.add("pyzmq", "pyzmq-27.0-cp312-abi3-manylinux_2_28_x86_64.whl", "2026-01-01T00:00:00Z",
             _wheel({"zmq/__init__.py": ""}, ["winlib; sys_platform == 'win32'", "packaging>=20"]))
    pypi.add("packaging", "packaging-25.0-py3-none-any.whl", "2026-01-01T00:00:00Z", _wheel({"packaging/__init__.py": ""}))
    root = _release(pypi, tmp_path / "up", ["pyzmq>=25", "pillow", "armonly; platform_machine == 'aarch64'"])
    index = load_index(root, TARGET)
    assert sorted(index.dists) == ["packaging", "pillow", "pyzmq"]  # win32- and aarch64-only ones are not walked
    assert index.dists["pillow"].version == "11.0" and index.cutoff == "2026-03-01T00:00:00Z"
    assert index.import_map == {"PIL": ["pillow"], "packaging": ["packaging"], "zmq": ["pyzmq"]}
    assert provided_by("zmq", {"pyzmq", "pillow"}, index.import_map) == "pyzmq"
    cached = next((tmp_path / "cache" / "distributions").glob("app-1.0-*.json"))
    first = cached.read_bytes()
    cached.unlink()
    load_index(root, TARGET)  # built again from PyPI: the same bytes
    assert cached.read_bytes() == first
    before = pypi.requests
    load_index(root, TARGET)  # the cache answers
    assert pypi.requests == before


def test_index_needs_a_target_and_reports_an_unknown_release(pypi, tmp_path):
    root = _release(pypi, tmp_path / "up", ["pyzmq"])
    with pytest.raises(ShrinkError, match="target is empty"):
        load_index(root, {})
    (root / "python" / "pyproject.toml").write_text('[project]\nname = "ghost"\nversion = "9"\ndependencies = ["a"]\n')
    with pytest.raises(ShrinkError, match="PyPI lists no file of ghost==9"):
        load_index(root, TARGET)
    (root / "python" / "pyproject.toml").write_text('[project]\nname = "none"\nversion = "1"\ndependencies = []\n')
    assert load_index(root, {}).dists == {}  # nothing declared: nothing to read, no network


def test_a_prefetch_and_a_caller_build_the_index_once(pypi, tmp_path, monkeypatch):
    # apply starts the build in a thread (network) and its first gate asks for the index while it runs:
    # the gate waits for that build instead of starting a second one.
    import threading
    import time

    pypi.add("packaging", "packaging-25.0-py3-none-any.whl", "2026-01-01T00:00:00Z", _wheel({"packaging/__init__.py": ""}))
    root = _release(pypi, tmp_path / "up", ["packaging"])
    builds = []
    started = threading.Event()

    def slow_build(*args, **kwargs):
        builds.append(1)
        started.set()
        time.sleep(0.3)
        return REAL_BUILD(*args, **kwargs)

    monkeypatch.setattr(dist, "build_index", slow_build)
    thread = dist.prefetch_index(root, TARGET)
    assert started.wait(5)
    assert load_index(root, TARGET).import_map == {"packaging": ["packaging"]}
    thread.join(5)
    assert builds == [1]
    # a prefetch that fails leaves the error to the caller's own load_index
    failing = dist.prefetch_index(root, {})  # no target: load_index raises, in the thread, silently
    failing.join(5)
    assert not failing.is_alive()
    with pytest.raises(ShrinkError, match="target is empty"):
        load_index(root, {})
