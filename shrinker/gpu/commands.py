"""CLI: `shrink tiny-model`, `shrink gpu-bundle`, `shrink gpu-fa3`, `shrink gpu-report` (auto-registered by cli.py)."""

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
        extra: List[str] = typer.Option([], "--extra", help="Also ship bundle.toml's [extras] group NAME "
                                                             "(e.g. v4: tilelang), one archive per wheel."),
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
            manifest = bundle.build_bundle(roots, kernel, blackwell=blackwell, spec=spec, out=out_dir, extras=extra)
        out.print(f"  upstream {spec['upstream']['spec']}"
                  + "".join(f"; {k} {v} (the release's pin)" for k, v in spec["deps_from_release"].items()))
        for a in manifest["archives"]:
            out.print(f"  {a['file']:28} {a['bytes'] / 2**20:7.1f} MiB  {len(a['wheels'])} wheel(s)")
        ship = out_dir or bundle.ship_dir()
        out.print(f"[green]bundle[/] {ship}  {manifest['total_bytes'] / 2**20:.1f} MiB  (carry it)")

    @app.command("gpu-fa3")
    def gpu_fa3_cmd(
        action: str = typer.Argument(..., help="pack: the FA3 source pack for the device; take: the .so it built; "
                                                "report: kernels-build.{json,md} from what take kept."),
        fa_git: Optional[Path] = typer.Option(None, "--fa-git",
                                              help="pack: a git clone or mirror of Dao-AILab/flash-attention holding "
                                                   "fa3.toml's commit."),
        run: Optional[Path] = typer.Option(None, "--run", help="take: the folder the device's $OUT came back to."),
        out_dir: Optional[Path] = typer.Option(None, "--out", help="report: where kernels-build.json/.md go "
                                                                  "(default: reports/deepseek/v<version>/)."),
        upstream: Optional[str] = typer.Option(None, "--upstream", metavar="SPEC",
                                               help="pack: the release whose kernel wheel and flashinfer pin to use "
                                                    "(default: fa3.toml's kernel wheel, the 0.5.17 one)."),
    ) -> None:
        """Our slim FA3 flash_ops: `pack` FlashAttention's hopper sources to .gpu-bundle/fa3-src (build them on the
        device with `python3 -m shrinker.gpu.fa3_build`), `take` the built .so into .gpu-bundle/fa3."""
        from shrinker import paths
        from shrinker.gpu import bundle, fa3, fa3_build

        if action == "pack":
            if fa_git is None:
                raise ShrinkError("pack needs --fa-git DIR (a clone of Dao-AILab/flash-attention)")
            cfg = fa3_build.load_config()
            kernel = paths.cache_dir() / "downloads" / cfg["source"]["kernel_wheel"]
            if upstream is not None:
                from shrinker.upstream import load

                kernel = paths.cache_dir() / "downloads" / bundle.release_spec(load(upstream))["kernel"]["wheel"]
            if not kernel.is_file():
                raise ShrinkError(f"no kernel wheel at {kernel}: run `shrink upstream fetch pypi:sglang==0.5.17 --no-pin`")
            (wheel,) = bundle.pip_download([cfg["source"]["cutlass_wheel"]], bundle.bundle_dir() / "cache" / "wheels",
                                           bundle.load_spec())
            with console.status("packing FlashAttention's hopper sources and CUTLASS ..."):
                m = fa3.pack(fa_git, kernel, wheel, cfg=cfg)
            out.print(f"[green]fa3 pack[/] {fa3.src_dir()}  {m['pack_bytes'] / 2**20:.1f} MiB, {m['files']} files, "
                      f"FlashAttention {m['commit'][:12]}, CUTLASS {m['cutlass_version']}, "
                      f"{len(m['kernels'])} kernels (+{len(m['kernels_stubbed'])} stubs)  (carry it)")
        elif action == "take":
            if run is None:
                raise ShrinkError("take needs --run DIR (the device call's files)")
            info = fa3.take(run)
            out.print(f"[green]flash_ops[/] {fa3.fa3_dir() / info['so']}  {info['so_bytes'] / 2**20:.1f} MiB, "
                      f"sha256 {info['so_sha256'][:16]}, built in {info['ninja_wall_s']} s on {info['jobs']} jobs")
        elif action == "report":
            import json as _json

            from shrinker.gpu import verify

            cfg = fa3_build.load_config()
            built, packed = fa3.fa3_dir(), fa3.src_dir()
            for need in (built / "build.json", built / "flash_ops.abi3.so", packed / "manifest.json"):
                if not need.is_file():
                    raise ShrinkError(f"no {need}: run `shrink gpu-fa3 pack`, the device build and `shrink gpu-fa3 take` first")
            check = built / "check.json"
            # the device console's `c++ --version` line, where build.json lacks it (builds of session 16)
            console_txt = built / "console.txt"
            cxx_line = next((ln.strip() for ln in console_txt.read_text().splitlines() if ln.startswith("c++ (")), None) \
                if console_txt.is_file() else None
            kernel = paths.cache_dir() / "downloads" / cfg["source"]["kernel_wheel"]
            dest = out_dir or paths.reports_dir("deepseek", verify.release_version(upstream or "pypi:sglang==0.5.17"))
            with console.status("counting kernels in upstream's prebuilt flash_ops (1.1 GB) ..."):
                rep = fa3.kernels_report(_json.loads((built / "build.json").read_text()),
                                         _json.loads(check.read_text()) if check.is_file() else None,
                                         _json.loads((packed / "manifest.json").read_text()),
                                         kernel if kernel.is_file() else None, built / "flash_ops.abi3.so", dest,
                                         host_cxx=cxx_line)
            out.print(f"[green]kernels-build[/] {dest / 'kernels-build.md'}  {rep['ours']['bytes']:,} bytes vs "
                      f"{rep['upstream_prebuilt'].get('bytes')} upstream")
        else:
            raise ShrinkError(f"gpu-fa3: unknown action {action!r} (pack, take or report)")

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
