"""gpu-verify.json and gpu-verify.md from the upstream reference and the device runs (standard library).

Before any pruned run exists the report describes the reference alone and says the pruned
comparison is pending; afterwards it lists every case pass/fail, the JIT build counts, the
pruned/upstream timing ratios (above RATIO_LIMIT is a failure to explain) and what was not run.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from shrinker.gpu import compare, jit

RATIO_LIMIT = 1.05


def _load_runs(run_dirs: list[Path]) -> tuple[dict, list[dict], dict]:
    """Merge the pruned results, compare summaries and timing of every run folder."""
    pruned: dict = {"launches": {}, "parts": []}
    summaries: list[dict] = []
    timing: dict = {}
    for d in run_dirs:
        for f in sorted(Path(d).glob("results-part*-pruned.json")):
            data = json.loads(f.read_text())
            pruned["parts"].append({k: v for k, v in data.items() if k != "launches"})
            pruned["launches"].update(data.get("launches", {}))
            for key in ("jit", "import", "environment", "models"):
                if data.get(key):
                    pruned.setdefault(key, data[key])
            if data.get("timing"):
                timing = data["timing"]
        for f in sorted(Path(d).glob("compare-part*.json")):
            summaries.append(json.loads(f.read_text()))
    return pruned, summaries, timing


def _median(values: list[float]) -> float | None:
    values = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(values) if values else None


def timing_ratios(timing: dict) -> dict:
    """pruned/upstream for import, start-up and each bench_one_batch row (medians over rounds)."""
    if not timing or "pruned" not in timing.get("trees", []) or "upstream" not in timing.get("trees", []):
        return {}
    out: dict = {}

    def ratio(p, u):
        return round(p / u, 3) if p and u else None

    imp = timing.get("import", {})
    out["import_median_s"] = {w: imp.get(w, {}).get("median_s") for w in ("pruned", "upstream")}
    out["import_ratio"] = ratio(out["import_median_s"]["pruned"], out["import_median_s"]["upstream"])
    rows: dict = {}
    for w in ("pruned", "upstream"):
        for rnd in timing.get("bench", {}).get(w, []):
            for row in rnd.get("rows", []):
                key = f"bs{row['batch_size']}-in{row['input_len']}-out{row['output_len']}"
                for metric in ("prefill_latency", "median_decode_latency", "total_latency"):
                    rows.setdefault(key, {}).setdefault(metric, {}).setdefault(w, []).append(row.get(metric))
    bench = {}
    for key, metrics in sorted(rows.items()):
        bench[key] = {}
        for metric, by_tree in metrics.items():
            p, u = _median(by_tree.get("pruned", [])), _median(by_tree.get("upstream", []))
            bench[key][metric] = {"pruned": p, "upstream": u, "ratio": ratio(p, u)}
    out["bench"] = bench
    worst = [v["ratio"] for m in bench.values() for v in m.values() if v["ratio"]]
    out["worst_bench_ratio"] = max(worst) if worst else None
    out["over_limit"] = [f"{k} {m}" for k, ms in bench.items() for m, v in ms.items()
                         if v["ratio"] and v["ratio"] > RATIO_LIMIT]
    return out


def startup_ratios(ref: dict, new: dict) -> dict:
    """pruned/upstream start-up per launch, where neither was its call's first (cold-cache) launch."""
    out = {}
    for name, r in sorted(ref.items()):
        n = new.get(name, {})
        if r.get("startup_s") and n.get("startup_s") and not r.get("first_launch_of_call") \
                and not n.get("first_launch_of_call"):
            out[name] = {"pruned": n["startup_s"], "upstream": r["startup_s"],
                         "ratio": round(n["startup_s"] / r["startup_s"], 3)}
    return out


def _env_line(env: dict) -> str:
    keys = ("gpu", "capability", "nvidia-smi", "python", "torch", "torch.cuda", "sglang", "sglang-kernel",
            "transformers", "tokenizers", "flashinfer-python", "xgrammar", "apache-tvm-ffi", "triton")
    return ", ".join(f"{k} {env.get(k)}" for k in keys if env.get(k))


def reference_section(ref: dict) -> list[str]:
    lines = ["## Upstream reference", ""]
    envs = [p.get("environment", {}) for p in ref["parts"]]
    if envs:
        lines.append(f"- Device and versions: {_env_line(envs[0])}")
    dates = sorted({p.get('date', '') for p in ref['parts']})
    lines.append(f"- Recorded: {', '.join(dates)} (parts {', '.join(str(p.get('part')) for p in ref['parts'])})")
    if ref.get("models"):
        for name, m in sorted(ref["models"].items()):
            extra = f", weights sha256 {m['weights_sha256'][:16]}…" if m.get("weights_sha256") else ""
            lines.append(f"- Model `{name}`: --load-format {m.get('load_format')}, config digest "
                         f"{str(m.get('config_digest'))[:16]}…{extra}")
    if ref.get("import"):
        imp = ref["import"]
        lines.append(f"- `import sglang.launch_server`: first {imp.get('first_s')} s, then {imp.get('runs_s')}")
    j = ref.get("jit")
    if j and "total" in j:
        lines.append(f"- JIT sources compiled (nvcc, {j.get('jobs')} jobs, {j.get('budget_s')} s box): "
                     f"{j['built']} built, {j['failed']} failed, {j['timeout']} not finished, of {j['total']} "
                     f"in {j['seconds']} s")
    lines += ["", "Each launch is `python3 -m sglang.launch_server --model-path <model> --host 127.0.0.1 --port <free>` "
              "plus the flags below; start-up is launch to the first HTTP 200 of /health (a call's first launch on "
              "a fresh machine also compiles Triton/FlashInfer/DeepGEMM kernels: marked *).", "",
              "| launch | part | status | start-up s | requests | seeded weights | flags |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, rec in sorted(ref["launches"].items()):
        reqs = rec.get("requests", {})
        ok = sum(1 for r in reqs.values() if r.get("http_status") == 200)
        flags = " ".join(rec.get("flags", []))
        star = "*" if rec.get("first_launch_of_call") else ""
        weights = (rec.get("weights_sha256") or "")[:12] or "dummy"
        lines.append(f"| {name} | {rec.get('part', '')} | {rec.get('status')} | {rec.get('startup_s', '')}{star} "
                     f"| {ok}/{len(reqs)} HTTP 200 | {weights} | `{flags}` |")
    return lines


def write_report(ref_dir: Path, run_dirs: list[Path], out_dir: Path) -> int:
    ref = compare.load_record(ref_dir)
    pruned, summaries, timing = _load_runs(run_dirs)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    from shrinker.gpu.cases import load_cases

    not_run = load_cases().raw.get("not_run", [])
    report: dict = {"reference": {"dir": str(ref_dir), "parts": ref["parts"], "launches": {
        k: {"status": v.get("status"), "startup_s": v.get("startup_s"), "flags": v.get("flags"),
            "command": v.get("command")} for k, v in ref["launches"].items()}},
        "not_run": not_run}
    md = ["# `shrink verify --gpu` — DeepSeek v0.5.16", ""]
    code = 0
    if not pruned["parts"]:
        report["pruned"] = "pending"
        md += ["Pruned comparison: **pending** (no pruned run yet). Only the upstream reference is recorded.", ""]
    else:
        cases = [c for s in summaries for c in s["cases"]]
        report["cases"] = cases
        passed = sum(1 for c in cases if c["status"] == "pass")
        jit_cmp = jit.compare_jit(ref.get("jit", {}), pruned.get("jit", {})) if pruned.get("jit") else None
        ratios = timing_ratios(timing)
        ratios["startup_by_launch"] = startup_ratios(ref["launches"], pruned["launches"])
        report.update(jit=jit_cmp, pruned_jit={k: pruned.get("jit", {}).get(k) for k in
                                               ("built", "failed", "timeout", "total", "seconds")},
                      timing=ratios, pruned_environment=pruned.get("environment"))
        all_ok = passed == len(cases) and cases and (jit_cmp is None or jit_cmp["passed"])
        code = 0 if all_ok else 1
        md += [f"Cases: **{passed}/{len(cases)} passed**" + ("" if all_ok else " — FAILURES below"), ""]
        if pruned.get("environment"):
            md.append(f"- Pruned run device and versions: {_env_line(pruned['environment'])}")
        if jit_cmp is not None:
            pj = pruned["jit"]
            md.append(f"- JIT sources (pruned): {pj.get('built')} built, {pj.get('failed')} failed, "
                      f"{pj.get('timeout')} not finished, of {pj.get('total')}; regressions against upstream: "
                      f"{len(jit_cmp['regressions'])}")
        if ratios.get("bench") or ratios.get("import_ratio"):
            md.append(f"- Timing pruned/upstream (same machine, alternating): import {ratios.get('import_ratio')}, "
                      f"worst bench_one_batch {ratios.get('worst_bench_ratio')}"
                      + (f" — over {RATIO_LIMIT}: {', '.join(ratios['over_limit'])}" if ratios.get("over_limit") else ""))
        if ratios.get("startup_by_launch"):
            parts = ", ".join(f"{k} {v['ratio']}" for k, v in ratios["startup_by_launch"].items())
            md.append(f"- Start-up pruned/upstream (warm-cache launches; reference from another machine): {parts}")
        md += ["", "| launch | request | status | detail |", "| --- | --- | --- | --- |"]
        md += [f"| {c['launch']} | {c['request']} | {c['status']} | {c['detail']} |" for c in cases]
        md.append("")
    md += reference_section(ref)
    notes = Path(ref_dir) / "README.md"
    if notes.is_file():
        md += ["", f"Recording notes (commands, device time, findings): `{notes.as_posix()}`."]
    md += ["", "## Not run", ""] + [f"- {n['name']}: {n['why']}" for n in not_run]
    (out_dir / "gpu-verify.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    (out_dir / "gpu-verify.md").write_text("\n".join(md) + "\n")
    return code
