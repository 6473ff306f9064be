"""checks/tree: the modules of a source tree, the same whatever folders a work tree's history left behind."""

from __future__ import annotations

from pathlib import Path

from shrinker.checks.tree import SourceTree


def test_a_folder_without_files_is_no_module(tmp_path: Path) -> None:
    package = tmp_path / "python" / "sglang"
    (package / "srt" / "kept").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "srt" / "kept" / "a.py").write_text("")
    (package / "data" / "csrc").mkdir(parents=True)
    (package / "data" / "csrc" / "k.cuh").write_text("")  # a namespace package of data files stays
    (package / "srt" / "gone" / "deeper").mkdir(parents=True)  # what deleting its files left
    (package / "srt" / "cached" / "__pycache__").mkdir(parents=True)
    (package / "srt" / "cached" / "__pycache__" / "x.pyc").write_text("")
    names = set(SourceTree.load(tmp_path).modules)
    assert names == {"sglang", "sglang.srt", "sglang.srt.kept", "sglang.srt.kept.a", "sglang.data",
                     "sglang.data.csrc"}
