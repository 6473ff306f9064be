"""Fetching: spec parsing, the git source (from a local fixture repo), the pin, no re-download."""

import subprocess

import pytest

from shrinker.errors import ShrinkError
from shrinker.upstream.spec import parse_spec


def test_spec_forms():
    assert parse_spec(None).text == "pypi:sglang==0.5.23"
    s = parse_spec("pypi:sglang==0.5.14")
    assert (s.source, s.name, s.version, s.slug) == ("pypi", "sglang", "0.5.14", "pypi-sglang-0.5.14")
    g = parse_spec("git+https://github.com/sgl-project/sglang@v0.5.16")
    assert (g.source, g.url, g.ref) == ("git", "https://github.com/sgl-project/sglang", "v0.5.16")
    with pytest.raises(ValueError, match="use 'pypi:sglang==VERSION' or 'git\\+URL@REF'"):
        parse_spec("sglang")


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    monkeypatch.setenv("SHRINK_ROOT", str(tmp_path / "proj"))
    monkeypatch.setenv("SHRINK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "proj").mkdir()
    return tmp_path


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(cwd)})


def test_git_source_from_local_repo(sandbox):
    from shrinker.upstream import fetch, load
    from shrinker.upstream.pin import read_pin

    repo = sandbox / "origin"
    (repo / "python/sglang").mkdir(parents=True)
    (repo / "python/sglang/__init__.py").write_text("")
    (repo / "python/sglang/version.py").write_text('__version__ = "9.9.9"\n')
    (repo / "benchmark").mkdir()
    (repo / "benchmark/run.sh").write_text("echo\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "c1")
    _git(repo, "tag", "v9.9.9")
    spec = f"git+file://{repo}@v9.9.9"
    up = fetch(spec)
    assert up.version == "9.9.9"
    assert (up.root / "python/sglang/version.py").exists() and (up.root / "benchmark/run.sh").exists()
    assert not (up.root / "python/.git").exists()
    pin = read_pin()
    assert pin.spec == spec and pin.commit == up.commit
    # The cache is one commit, reproducible: fetching again changes nothing.
    again = fetch(spec)
    assert again.commit == up.commit
    assert load(spec).root == up.root


def test_bad_git_ref_is_a_one_line_error(sandbox):
    from shrinker.upstream import fetch

    with pytest.raises(ShrinkError, match="could not clone"):
        fetch(f"git+file://{sandbox}/nothing-here@v1")


def test_load_before_fetch_says_how_to_fetch(sandbox):
    from shrinker.upstream import load

    with pytest.raises(ShrinkError, match="shrink upstream fetch pypi:sglang==0.5.99"):
        load("pypi:sglang==0.5.99")


def test_pypi_failure_is_a_clear_error(sandbox, monkeypatch):
    from shrinker.upstream import fetch

    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_NO_INDEX", "0")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "1")
    with pytest.raises(ShrinkError, match="could not download sglang==0.0.1"):
        fetch("pypi:sglang==0.0.1")


def test_metadata_to_pyproject_and_kernel_pin():
    import tomllib

    from shrinker.upstream.metadata import kernel_requirement, pyproject_from_metadata

    meta = ("Metadata-Version: 2.4\nName: sglang\nVersion: 1.0\nRequires-Python: >=3.10\n"
            "Requires-Dist: torch==2.11.0\nRequires-Dist: sglang-kernel==0.4.5\n"
            'Requires-Dist: pytest; extra == "test"\n\n')
    data = tomllib.loads(pyproject_from_metadata(meta))["project"]
    assert data["dependencies"] == ["torch==2.11.0", "sglang-kernel==0.4.5"]
    assert data["optional-dependencies"] == {"test": ["pytest"]}
    assert kernel_requirement(meta) == "sglang-kernel==0.4.5"
