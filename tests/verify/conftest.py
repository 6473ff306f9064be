"""Fixtures for the verify tests: copies of the mini tree (upstream + pruned), a stand-in verify
environment (this interpreter: the mini tree needs only pydantic), small rules, and for the
`upstream`-marked tests the real pinned upstream and .venv-verify (skipped cleanly when absent)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shrinker.rules.schema import Rules
from shrinker.verify.env import VerifyEnv

DATA = Path(__file__).parent / "data"
MINITREE = DATA / "minitree"


@pytest.fixture(autouse=True)
def _isolated_cache(request, tmp_path, monkeypatch):
    """Unit tests get their own cache; upstream tests use the real (warm) one."""
    if request.node.get_closest_marker("upstream") is None:
        monkeypatch.setenv("SHRINK_CACHE", str(tmp_path / "cache"))



def copy_tree(dest: Path) -> Path:
    shutil.copytree(MINITREE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


@pytest.fixture
def trees(tmp_path):
    """(upstream, pruned): two copies of the mini tree; tests plant faults in the second."""
    return copy_tree(tmp_path / "upstream"), copy_tree(tmp_path / "pruned")


def git_commit(root: Path) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin:/usr/local/bin"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "fixture"]):
        subprocess.run(["git", "-C", str(root), *cmd], check=True, env=env, capture_output=True)
    return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture
def fake_env(tmp_path):
    """The verify environment stand-in: this interpreter (pydantic is all the mini tree imports)."""
    return VerifyEnv(root=tmp_path, python=Path(sys.executable), requirements_hash="fixture")


@pytest.fixture
def verify_rules():
    return Rules.model_validate({
        "profile": {"name": "fixture", "description": "fixture", "package": "sglang"},
        "roots": [{"module": "sglang.launch_server", "reason": "cli"}],
        "architectures": {"keep": ["DeepseekV2ForCausalLM"], "reason": "fixture"},
        "platform": {
            "predicates": [{"name": "is_npu", "value": False, "reason": "npu"},
                           {"name": "*aiter*", "value": False, "reason": "rocm"}],
            "strings": {"strings": ["npu", "hip"], "reason": "other vendors"},
            "methods": ["forward_npu"], "packages": ["torch_npu"]},
        "registries": [
            {"name": "attention_backends", "kind": "dict", "module": "sglang.srt.layers.attention.attention_registry",
             "variable": "ATTENTION_BACKENDS", "keep": ["triton", "flashinfer"], "reason": "nvidia"},
            {"name": "tool_call_parsers", "kind": "dict", "module": "sglang.srt.function_call.function_call_parser",
             "variable": "FunctionCallParser.ToolCallParserEnum", "keep": ["deepseekv3"], "reason": "deepseek"},
        ],
        "remove": [{"pattern": "sglang.srt.multimodal.**", "reason": "text only", "category": "multimodal"}],
        "requirements": {"target": {"sys_platform": "linux", "platform_machine": "x86_64", "python_version": "3.12"}},
    })


@pytest.fixture
def surface():
    return {"cli": {"modules": ["sglang.launch_server"]},
            "server_args": {"target": "sglang.srt.server_args:ServerArgs", "config": str(MINITREE / "config.json"),
                            "kwargs": {"skip_tokenizer_init": True}},
            "behaviour": {"cases": str(MINITREE / "behaviour_cases.json")}}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


# --- the real upstream and verify environment (tests marked `upstream`) -------------------------

@pytest.fixture(scope="session")
def verify_env(pinned_upstream):
    from shrinker.verify.env import load_env, requirements_for

    env = load_env(reqs=requirements_for(pinned_upstream.root))  # the pinned release's own pins
    if env is None:
        pytest.skip("no verify environment for the pinned upstream (make verify-env)")
    return env


@pytest.fixture(scope="session")
def pinned_upstream():
    from shrinker.errors import ShrinkError
    from shrinker.upstream import load

    try:
        return load()
    except ShrinkError as exc:
        pytest.skip(f"upstream not fetched: {exc}")


@pytest.fixture
def upstream_clone(pinned_upstream, tmp_path):
    """A git clone of the pinned upstream (what `shrink apply` starts from), to plant faults in."""
    dest = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(pinned_upstream.root), str(dest)], check=True)
    return dest
