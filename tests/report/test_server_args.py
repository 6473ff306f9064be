"""`shrink report server-args`: fields upstream reads outside server_args.py that the kept tree no longer
reads: removed with their options, or still declared because kept checks read them."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from shrinker.report.server_args import server_args_reads, write_report

SERVER_ARGS = '''
from dataclasses import dataclass

@dataclass
class ServerArgs:
    model_path: str
    enable_lmcache: bool = False
    tp_size: int = 1
    _private: int = 0
    check_only: bool = False

    def __post_init__(self):
        if self.check_only and self.tp_size > 1:
            raise ValueError
'''


def make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"python/sglang/srt/server_args.py": SERVER_ARGS, **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_fields_only_removed_code_read(tmp_path: Path) -> None:
    scheduler = "def run(server_args):\n    return server_args.tp_size, getattr(server_args, 'model_path')\n"
    upstream = make(tmp_path / "up", {
        "python/sglang/srt/managers/scheduler.py": scheduler,
        "python/sglang/srt/mem_cache/lmcache_radix.py": "def build(args):\n    return args.enable_lmcache\n"})
    kept = make(tmp_path / "kept", {"python/sglang/srt/managers/scheduler.py": scheduler})
    reads = {r.name: r for r in server_args_reads(kept, upstream, "sglang.srt.server_args:ServerArgs")}
    assert set(reads) == {"model_path", "enable_lmcache", "tp_size", "check_only"}  # no _private
    assert reads["enable_lmcache"].only_removed_code
    assert reads["enable_lmcache"].first_upstream_reader == "python/sglang/srt/mem_cache/lmcache_radix.py"
    assert not reads["tp_size"].only_removed_code and not reads["model_path"].only_removed_code  # "model_path" string
    assert reads["check_only"].upstream_elsewhere == 0 and not reads["check_only"].only_removed_code

    assert all(r.kept_declared for r in reads.values())

    written = write_report(list(reads.values()), tmp_path / "out", "sglang.srt.server_args:ServerArgs", {})
    data = json.loads(written[1].read_text())
    assert data["removed"] == [] and data["only_removed_code_still_declared"] == ["enable_lmcache"]
    assert data["read_only_in_own_module"] == ["check_only"]
    assert "`enable_lmcache`" in written[0].read_text()


def test_removed_fields_listed_apart(tmp_path: Path) -> None:
    upstream = make(tmp_path / "up", {
        "python/sglang/srt/mem_cache/lmcache_radix.py": "def build(args):\n    return args.enable_lmcache\n"})
    kept = make(tmp_path / "kept", {
        "python/sglang/srt/server_args.py": SERVER_ARGS.replace("    enable_lmcache: bool = False\n", "")})
    reads = {r.name: r for r in server_args_reads(kept, upstream, "sglang.srt.server_args:ServerArgs")}
    assert not reads["enable_lmcache"].kept_declared and reads["tp_size"].kept_declared
    data = json.loads(write_report(list(reads.values()), tmp_path / "out", "x:ServerArgs", {})[1].read_text())
    assert data["removed"] == ["enable_lmcache"] and data["only_removed_code_still_declared"] == []
