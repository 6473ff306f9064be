"""`shrink report layers`: rows by folder and by layer, the markdown table and the SVG."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from shrinker.report.layers import (LayerSpec, Row, folder_of, layer_of, layers_report, python_lines, render_svg, tabulate,
                                    total)

SPEC = LayerSpec("python/sglang/srt", ("layers",))  # what rules/deepseek.toml [report_layers] says


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


UPSTREAM = {
    "python/sglang/__init__.py": "import os\n\nx = 1\n",  # 2 non-blank lines
    "python/sglang/srt/server_args.py": "a = 1\nb = 2\n",
    "python/sglang/srt/layers/moe/ep.py": "a = 1\nb = 2\nc = 3\n",
    "python/sglang/srt/layers/linear.py": "a = 1\n",
    "python/sglang/srt/models/llama.py": "a = 1\n" * 10,
    "python/sglang/srt/models/deepseek_v2.py": "a = 1\n" * 5,
    "python/sglang/multimodal_gen/x.py": "a = 1\n" * 4,
    "sgl-kernel/python/sgl_kernel/ops/gemm.py": "a = 1\n\n\n",
    "python/sglang/srt/notes.txt": "not python\n",
}


def test_rows():
    assert folder_of("python/sglang/srt/layers/moe/ep.py") == "sglang/srt"
    assert folder_of("python/sglang/__init__.py") == "sglang/*.py"
    assert folder_of("sgl-kernel/python/sgl_kernel/ops/gemm.py") == "sgl_kernel"
    assert folder_of("setup.py") == "(other .py)"
    assert layer_of("python/sglang/srt/layers/moe/ep.py", SPEC) == "layers/moe"
    assert layer_of("python/sglang/srt/layers/linear.py", SPEC) == "layers/*.py"
    assert layer_of("python/sglang/srt/server_args.py", SPEC) == "srt/*.py"
    assert layer_of("python/sglang/srt/models/llama.py", SPEC) == "models"
    assert layer_of("python/sglang/lang/api.py", SPEC) is None


def test_report_counts_and_files(tmp_path):
    up = _write(tmp_path / "up", UPSTREAM)
    kept = {k: v for k, v in UPSTREAM.items() if "llama" not in k and "multimodal" not in k}
    kept["python/sglang/srt/layers/moe/ep.py"] = "a = 1\n"  # a codemod removed two lines
    tree = _write(tmp_path / "tree", kept)
    assert python_lines(up)["python/sglang/__init__.py"] == 2 and "python/sglang/srt/notes.txt" not in python_lines(up)

    folders, layers, written = layers_report(tree, up, tmp_path / "out", SPEC, tree_label="tree", upstream_label="up")
    by = {r.name: r for r in layers}
    assert (by["models"].upstream, by["models"].kept, by["models"].kept_files) == (15, 5, 1)
    assert (by["layers/moe"].upstream, by["layers/moe"].kept) == (3, 1)
    assert [r.name for r in layers][0] == "models"  # largest upstream first
    t = total(folders)
    assert (t.upstream, t.kept) == (28, 12)
    md = (tmp_path / "out" / "layers.md").read_text()
    assert "**12 of 28 kept (42.9 %)**" in md
    assert "| models | 15 | 5 | 10 | 33.3 | 1 / 2 |" in md
    assert "| sglang/multimodal_gen | 4 | 0 | 4 | 0.0 | 0 / 1 |" in md
    data = json.loads((tmp_path / "out" / "layers.json").read_text())
    assert data["total"]["kept_lines"] == 12
    svg = ET.fromstring((tmp_path / "out" / "layers.svg").read_text())  # well-formed XML
    texts = [e.text for e in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert "layers/moe" in texts and "5 / 15 (33 %)" in texts
    assert sorted(p.name for p in written) == ["layers.json", "layers.md", "layers.svg"]


def test_svg_folds_small_rows_and_escapes():
    rows = [Row(f"r{i}", 100 - i, 50) for i in range(30)] + [Row("a<b", 1, 1)]
    svg = render_svg(rows, rows, SPEC, limit=10)
    root = ET.fromstring(svg)
    texts = [e.text for e in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "22 others, summed" in texts and "r8" in texts and "r9" not in texts
    assert len(svg) < 20_000


def test_cli(tmp_path, monkeypatch, capsys):
    from shrinker import cli

    up = _write(tmp_path / "up", UPSTREAM)
    tree = _write(tmp_path / "tree", {k: v for k, v in UPSTREAM.items() if "llama" not in k})
    monkeypatch.setattr(sys, "argv", ["shrink", "report", "layers", "--tree", str(tree), "--upstream", str(up),
                                      "--out", str(tmp_path / "out")])
    cli.main()
    assert "kept 18 of 28 lines" in capsys.readouterr().out
    assert (tmp_path / "out" / "layers.svg").exists()
    assert tabulate({"python/sglang/srt/a.py": 1}, {}, lambda rel: layer_of(rel, SPEC))[0].kept_files == 0
