"""graph/unset_attributes: private attributes of `self` that nothing in the kept tree sets."""

from __future__ import annotations

import textwrap
from pathlib import Path

from shrinker.graph.unset_attributes import unset_attributes


def tree_of(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, code in files.items():
        path = tmp_path / "python" / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))
    return tmp_path


ATTENTION = '''
class Attention:
    def forward(self, q):
        if getattr(self, "_split_kv_b", False):
            return split(q)
        if hasattr(self, "_gguf_weights"):
            return gguf(q)
        if getattr(self, "_set_here", None) is not None:
            return q
        if getattr(self, "_set_elsewhere", False):
            return q
        if getattr(config, "_from_config", False):
            return q
        return q

    def load(self):
        self._set_here = 1
'''


def test_only_reads_through_self_in_one_file(tmp_path: Path) -> None:
    found = unset_attributes(tree_of(tmp_path, {"__init__.py": "", "attention.py": ATTENTION, "other.py": '''
        def enable(layer):
            layer._set_elsewhere = True
        '''}))
    # `_set_here` is stored in its file, `_set_elsewhere` named in another, `_from_config` read off
    # another object (a checkpoint's config may carry it)
    assert found == frozenset({"_split_kv_b", "_gguf_weights"})
