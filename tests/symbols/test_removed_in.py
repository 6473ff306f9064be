"""`shrink why` for a symbol that is gone: the work-tree commit that removed it."""

from __future__ import annotations

from pathlib import Path

import git

from shrinker.symbols.removed_in import defines, removed_in

V1 = "def keep():\n    pass\n\n\ndef gone():\n    pass\n\n\nclass Args:\n    port: int = 1\n    flexkv: bool = False\n"
V2 = "def keep():\n    pass\n\n\nclass Args:\n    port: int = 1\n"


def test_defines_finds_module_symbols_and_members() -> None:
    assert defines(V1, "gone") == 5 and defines(V1, "Args.flexkv") == 11 and defines(V1, "Args") == 9
    assert defines(V2, "gone") is None and defines(V2, "Args.flexkv") is None
    assert defines("def broken(:\n", "broken") is None


def test_removed_in_names_the_commit(tmp_path: Path) -> None:
    repo = git.Repo.init(tmp_path)
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "t").set_value("user", "email", "t@t")
    mod = tmp_path / "python" / "pkg" / "mod.py"
    other = tmp_path / "python" / "pkg" / "other.py"
    mod.parent.mkdir(parents=True)
    mod.write_text(V1)
    other.write_text("def helper():\n    pass\n")
    repo.index.add([str(mod), str(other)])
    repo.index.commit("upstream")
    mod.write_text(V2)
    repo.index.add([str(mod)])
    symbols = repo.index.commit("shrink: batch 7 — dead symbols (pass 1)")
    repo.index.remove([str(other)], working_tree=True)
    files = repo.index.commit("shrink: batch 5 — remaining unreachable modules")

    gone = removed_in(tmp_path, ["python/pkg/mod.py"], "Args.flexkv")
    assert gone is not None and gone.commit == symbols.hexsha and not gone.file_deleted and gone.line == 11
    assert gone.subject == "shrink: batch 7 — dead symbols (pass 1)"
    deleted = removed_in(tmp_path, ["sgl-kernel/python/pkg/other.py", "python/pkg/other.py"], "helper")
    assert deleted is not None and deleted.commit == files.hexsha and deleted.file_deleted
    assert removed_in(tmp_path, ["python/pkg/mod.py"], "keep") is None  # still there
    assert removed_in(tmp_path, ["python/pkg/mod.py"], "never_defined") is None
    assert removed_in(tmp_path.parent / "no-such-tree", ["python/pkg/mod.py"], "gone") is None
