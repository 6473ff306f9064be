"""The text scan of which files read a name (ServerArgs fields, attribute-table entries)."""

from __future__ import annotations

from pathlib import Path

from shrinker.symbols.name_reads import name_readers


def test_reads_stores_and_strings(tmp_path: Path) -> None:
    files = {
        "python/pkg/reader.py": "if args.enable_x == 1:\n    pass\n",
        "python/pkg/by_name.py": "getattr(args, 'by_string')\n",
        "python/pkg/store.py": "raw_args.stored_only = 2\nraw_args.bumped += 1\n",
        "python/pkg/own.py": "x = self.enable_x\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    found = name_readers(tmp_path, ["enable_x", "by_string", "stored_only", "bumped", "unused"],
                         skip="python/pkg/own.py")
    assert found["enable_x"] == ["python/pkg/reader.py"]  # own.py skipped
    assert found["by_string"] == ["python/pkg/by_name.py"]
    assert found["stored_only"] == []  # a plain store keeps nothing alive
    assert found["bumped"] == ["python/pkg/store.py"]  # += reads it
    assert found["unused"] == []
