"""Shared fixture of the symbol tests: a small tree laid out like SGLang's (python/<package>)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

TREE = {
    "pyproject.toml": """
        [project]
        name = "pkg"
        [project.scripts]
        pkg-cli = "pkg.cli:main"
        """,
    "python/pkg/__init__.py": """
        from pkg.engine import Engine

        __all__ = ["Engine"]
        """,
    "python/pkg/cli.py": """
        def main():
            from pkg.engine import Engine
            Engine().generate("hi")


        def unused_cli_helper():
            pass
        """,
    "python/pkg/engine.py": """
        from pkg import util
        from pkg.util import parse, legacy


        class Engine:
            def generate(self, prompt):
                if self.device.is_hip:
                    return None
                return self._tokenize(util.fmt(prompt))

            def _tokenize(self, text):
                return parse(text)

            def _old_path(self, text):
                return legacy(text)
        """,
    "python/pkg/platform.py": """
        def is_hip():
            return False


        def is_cuda():
            return True
        """,
    "python/pkg/util.py": """
        from pkg.platform import is_cuda, is_hip


        def fmt(x):
            return x if CUDA else None


        def parse(x):
            return x


        # Only the old path used this.
        def legacy(x):
            return _FLAG and _HIP and x


        _HIP = is_hip()
        CUDA = is_cuda()


        _FLAG = compute_flag()


        def compute_flag():
            return True
        """,
}


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("SHRINK_PARSE_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "tree"
    for rel, text in TREE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root
