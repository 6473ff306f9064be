"""CLI: `shrink tiny-model`, `shrink gpu-bundle`, `shrink gpu-report` (auto-registered by cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from shrinker.console import console, out
from shrinker.errors import ShrinkError


def register(app: typer.Typer) -> None:
    @app.command("tiny-model")
    def tiny_model_cmd(
        directory: Path = typer.Argument(..., help="Folder to write (created if missing)."),
        fp8: bool = typer.Option(False, "--fp8", help="Add DeepSeek's FP8 block quantization_config."),
        vocab_size: Optional[int] = typer.Option(None, "--vocab-size", help="Tokenizer/config vocabulary size."),
        seed: int = typer.Option(0, "--seed", help="Seed of the tokenizer's training text."),
        arch: str = typer.Option("v3", "--arch", help="v3 (DeepSeek-V3), v32 (V3.2: DSA indexer) or v4 (DeepSeek-V4, FP8)."),
    ) -> None:
        """Write a tiny DeepSeek model folder (config + tokenizer, no weights)."""
        from shrinker.gpu.tiny_model import model_digest, write_tiny_model

        with console.status("training the tokenizer ..."):
            write_tiny_model(directory, fp8=fp8, vocab_size=vocab_size, seed=seed, arch=arch)
        out.print(f"[green]tiny model[/] {directory}  digest {model_digest(directory)[:16]}")

    @app.command("gpu-bundle")
    def gpu_bundle_cmd(
        which: str = typer.Option("upstream", "--which",
                                  help="upstream: the reference bundle; pruned: the pruned tree plus upstream "
                                       "(for alternating timings)."),
        no_upstream: bool = typer.Option(False, "--no-upstream", help="With --which pruned: leave upstream out."),
        blackwell: bool = typer.Option(False, "--blackwell", help="Also ship sgl_kernel's sm100 ops."),
        tree: Optional[Path] = typer.Option(None, "--tree",
                                            help="With --which pruned: the pruned tree's root (holding python/sglang) "
                                                 "instead of the work tree, e.g. a `git archive` snapshot of a batch commit."),
        upstream: Optional[str] = typer.Option(None, "--upstream", metavar="SPEC",
                                               help="The release to bundle (e.g. pypi:sglang==0.5.17, fetched with "
                                                    "`shrink upstream fetch SPEC --no-pin`; default: the pin). Its "
                                                    "pinned dependency versions and kernel wheel are shipped; the "
                                                    "pruned tree is build/deepseek-v<version>/. The pin stays."),
        out_dir: Optional[Path] = typer.Option(None, "--out", help="Where the bundle goes (default: .gpu-bundle/ship), "
                                                                   "e.g. .gpu-bundle/carry-up23 beside another bundle."),
    ) -> None:
        """Pack what the GPU machine lacks into .gpu-bundle/ship/ or --out (carry it to the device)."""
        from shrinker import paths
        from shrinker.gpu import bundle
        from shrinker.upstream import load

        if which not in ("upstream", "pruned"):
            raise ShrinkError(f"--which must be upstream or pruned, not {which!r}")
        trees = ["upstream"] if which == "upstream" else (["pruned"] if no_upstream else ["pruned", "upstream"])
        if tree is not None and which != "pruned":
            raise ShrinkError("--tree names the pruned tree: use it with --which pruned")
        spec = bundle.release_spec(load(upstream))
        kernel = paths.cache_dir() / "downloads" / spec["kernel"]["wheel"]
        roots = bundle.tree_roots(trees, pruned_tree=tree, upstream=upstream)
        with console.status("building the GPU bundle (first time: downloads and xz, a few minutes) ..."):
            manifest = bundle.build_bundle(roots, kernel, blackwell=blackwell, spec=spec, out=out_dir)
        out.print(f"  upstream {spec['upstream']['spec']}"
                  + "".join(f"; {k} {v} (the release's pin)" for k, v in spec["deps_from_release"].items()))
        for a in manifest["archives"]:
            out.print(f"  {a['file']:28} {a['bytes'] / 2**20:7.1f} MiB  {len(a['wheels'])} wheel(s)")
        ship = out_dir or bundle.ship_dir()
        out.print(f"[green]bundle[/] {ship}  {manifest['total_bytes'] / 2**20:.1f} MiB  (carry it)")

    @app.command("gpu-report")
    def gpu_report_cmd(
        run: List[Path] = typer.Argument(..., help="Folders with the device runs' results (files_at of each call)."),
        ref: Optional[Path] = typer.Option(None, "--ref", help="Reference folder (default: the committed one)."),
        out_dir: Optional[Path] = typer.Option(None, "--out", help="Where gpu-verify.json/.md go."),
        upstream: Optional[str] = typer.Option(None, "--upstream", metavar="SPEC",
                                               help="The release the runs served (e.g. pypi:sglang==0.5.17; default: "
                                                    "the pin): the default --ref is reports/deepseek/v<version>/"
                                                    "gpu-reference and the report is titled with that version."),
    ) -> None:
        """Write gpu-verify.json/.md from the device runs and the upstream reference."""
        from shrinker.gpu import report, verify

        version = verify.release_version(upstream)
        ref_dir = ref or verify.reference_dir(version)
        dest = out_dir or ref_dir.parent
        code = report.write_report(ref_dir, run, dest, version=version)
        out.print(f"{'[green]passed' if code == 0 else '[red]FAILED'}[/]  {dest / 'gpu-verify.md'}")
        if code:
            raise typer.Exit(code)
