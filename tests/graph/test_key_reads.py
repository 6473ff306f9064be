"""graph/key_reads: names every importer reads only as `x in NAME`."""

from __future__ import annotations

from pathlib import Path

import pytest

from shrinker.graph.key_reads import imported_read_by_key

UTILS = 'FORWARD_ABSORB = ["fa3", "ascend"]\n'
USER = (
    "from sglang.srt.models.deepseek_common.utils import FORWARD_ABSORB\n\n\n"
    "def forward(backend):\n    return backend in FORWARD_ABSORB or backend not in FORWARD_ABSORB\n"
)


def _tree(tmp_path: Path, *users: str) -> Path:
    package = tmp_path / "python/sglang/srt/models/deepseek_common"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "utils.py").write_text(UTILS)
    for i, text in enumerate(users):
        (package / f"user{i}.py").write_text(text)
    return tmp_path


def test_a_name_every_importer_reads_by_membership(tmp_path: Path) -> None:
    # 0.5.23's forward_mla; a relative import and an alias resolve to the same name
    relative = "from .utils import FORWARD_ABSORB as ABSORB\n\n\ndef f(b):\n    return b in ABSORB\n"
    found = imported_read_by_key(_tree(tmp_path, USER, relative))
    assert found == {"sglang.srt.models.deepseek_common.utils": frozenset({"FORWARD_ABSORB"})}


@pytest.mark.parametrize("other", [
    "from .utils import FORWARD_ABSORB\n\n\ndef f():\n    return list(FORWARD_ABSORB)\n",   # passed on
    "from .utils import FORWARD_ABSORB\n\nFORWARD_ABSORB.append('x')\n",                  # mutated
    "from .utils import FORWARD_ABSORB\n",                                                # a re-export
    "from . import utils\n\n\ndef f(b):\n    return b in utils.FORWARD_ABSORB\n",          # an attribute read
    "__all__ = ['FORWARD_ABSORB']\n",                                                     # named by a string
])
def test_any_other_use_anywhere_keeps_it_out(tmp_path: Path, other: str) -> None:
    assert imported_read_by_key(_tree(tmp_path, USER, other)) == {}
