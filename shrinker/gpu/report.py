"""gpu-verify.json and gpu-verify.md from the upstream reference and the device runs (standard library).

Before any pruned run exists the report describes the reference alone and says the pruned
comparison is pending; afterwards it lists every case pass/fail, the JIT build counts, the
pruned/upstream timing ratios (above RATIO_LIMIT is a failure to explain) and what was not run.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict
from pathlib import Path

from shrinker.gpu import compare, jit

RATIO_LIMIT = 1.05


def _load_runs(run_dirs: list[Path]) -> tuple[dict, list[dict], dict]:
    """Merge the pruned results, compare summaries and timing of every run folder."""
    pruned: dict = {"launches": {}, "parts": []}
    summaries: list[dict] = []
    timing: dict = {}
    for d in run_dirs:
        for f in sorted(Path(d).glob("results-part*-pruned*.json")):
            data = json.loads(f.read_text())
            pruned["parts"].append({k: v for k, v in data.items() if k != "launches"})
            pruned["launches"].update(data.get("launches", {}))
            for key in ("jit", "import", "environment", "models"):
                if data.get(key):
                    pruned.setdefault(key, data[key])
            if data.get("timing"):
                timing = _merge_timing(timing, data["timing"])
        for f in sorted(Path(d).glob("compare-part*.json")):
            summaries.append(json.loads(f.read_text()))
    return pruned, summaries, timing


def _has_figures(section) -> bool:
    """A timing section (import / startup / bench: {tree: ...}) that measured something."""
    if not isinstance(section, dict):
        return False
    for value in section.values():
        if isinstance(value, list) and any(isinstance(v, dict) and "error" not in v for v in value):
            return True
        if isinstance(value, dict) and (value.get("runs_s") or value.get("first_s")):
            return True
    return False


def _merge_timing(earlier: dict, later: dict) -> dict:
    """A later call's timing supersedes, section by section: a `--only bench` call (no import or
    start-up figures) replaces the bench rows and keeps the earlier call's import and start-up."""
    merged = dict(later)
    for key in ("import", "startup"):
        if not _has_figures(later.get(key)) and _has_figures(earlier.get(key)):
            merged[key] = earlier[key]
            if key == "startup" and "startup_flags" in earlier:
                merged["startup_flags"] = earlier["startup_flags"]
    return merged


def _median(values: list[float]) -> float | None:
    values = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(values) if values else None


def timing_ratios(timing: dict) -> dict:
    """pruned/upstream for import, start-up and each bench_one_batch row (medians over rounds and repeats)."""
    if not timing or "pruned" not in timing.get("trees", []) or "upstream" not in timing.get("trees", []):
        return {}
    out: dict = {}

    def ratio(p, u):
        return round(p / u, 3) if p and u else None

    imp = timing.get("import", {})
    out["import_median_s"] = {w: imp.get(w, {}).get("median_s") for w in ("pruned", "upstream")}
    out["import_ratio"] = ratio(out["import_median_s"]["pruned"], out["import_median_s"]["upstream"])
    startup = timing.get("startup") if isinstance(timing.get("startup"), dict) else {}
    if startup and "error" not in startup:
        med = {w: _median([r.get("ready_s") for r in startup.get(w, []) if isinstance(r, dict)])
               for w in ("pruned", "upstream")}
        out["startup_median_s"] = med
        out["startup_ratio"] = ratio(med["pruned"], med["upstream"])
    rows: dict = {}
    bench = timing.get("bench") if isinstance(timing.get("bench"), dict) else {}
    for w in ("pruned", "upstream"):
        for rnd in bench.get(w, []) if isinstance(bench.get(w), list) else []:
            for row in rnd.get("rows", []):
                key = f"bs{row['batch_size']}-in{row['input_len']}-out{row['output_len']}"
                for metric in ("prefill_latency", "median_decode_latency", "total_latency"):
                    rows.setdefault(key, {}).setdefault(metric, {}).setdefault(w, []).append(row.get(metric))
    table = {}
    for key, metrics in sorted(rows.items()):
        table[key] = {}
        for metric, by_tree in metrics.items():
            p, u = _median(by_tree.get("pruned", [])), _median(by_tree.get("upstream", []))
            table[key][metric] = {"pruned": p, "upstream": u, "ratio": ratio(p, u),
                                  "samples": {w: len(v) for w, v in by_tree.items()}}
    out["bench"] = table
    worst = [v["ratio"] for m in table.values() for v in m.values() if v["ratio"]]
    out["worst_bench_ratio"] = max(worst) if worst else None
    out["over_limit"] = [f"{k} {m}" for k, ms in table.items() for m, v in ms.items()
                         if v["ratio"] and v["ratio"] > RATIO_LIMIT]
    errors = {w: [r["error"].splitlines()[0] for r in bench.get(w, []) if isinstance(r, dict) and r.get("error")]
              for w in ("pruned", "upstream") if isinstance(bench.get(w), list)}
    if any(errors.values()):
        out["bench_errors"] = errors
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


VERSION_KEYS = ("python", "torch", "torch.cuda", "triton", "sglang", "sglang-kernel", "transformers", "tokenizers",
                "flashinfer-python", "xgrammar", "apache-tvm-ffi", "pydantic", "fastapi", "openai")
NOT_RUN_HERE = compare.NOT_RUN_HERE
LABELS = {compare.UPSTREAM_FAILED: NOT_RUN_HERE, compare.NOT_COMPARED: "not compared", compare.NOT_RUN: NOT_RUN_HERE}


def with_reference_gaps(cases: list[dict], ref_launches: dict) -> list[dict]:
    """The case rows, with every launch the upstream record holds no answers for classified from that record.

    A `*` row of such a launch (an older compare called it "error: no upstream reference") becomes
    upstream's start failure ("not run on this hardware", with upstream's error) or "not compared"
    (no upstream record in this run); a failed reference launch that no run compared gets its row too.
    A launch upstream served stays what the comparison said: a pruned-only failure is a failure.
    """
    out, seen = [], set()
    for c in cases:
        rl = ref_launches.get(c["launch"])
        seen.add(c["launch"])
        if c["request"] == "*" and rl is not None and rl.get("status") != "ok" and c["status"] != compare.NOT_RUN:
            out.append(asdict(compare.reference_gap(c["launch"], rl)))
        else:
            out.append(c)
    for name, rl in sorted(ref_launches.items(), key=lambda kv: (kv[1].get("part") or 0, kv[0])):
        if name not in seen and str(rl.get("status", "")).startswith("failed"):
            gap = compare.reference_gap(name, rl)
            if gap.status == compare.UPSTREAM_FAILED:
                out.append(asdict(gap))
    return out


def _upstream_status(rec: dict) -> str:
    """The reference table's status: upstream's start failure says it is not run here, and why."""
    gap = compare.reference_gap("", rec) if rec.get("status") != "ok" else None
    if gap is not None and gap.status == compare.UPSTREAM_FAILED:
        return f"{NOT_RUN_HERE}: {rec.get('status')} — `{compare.upstream_error(rec)}`"
    return str(rec.get("status"))


def _env_line(env: dict) -> str:
    keys = ("gpu", "gpu_count", "capability", "nvidia-smi", "python", "torch", "torch.cuda", "sglang", "sglang-kernel",
            "transformers", "tokenizers", "flashinfer-python", "xgrammar", "apache-tvm-ffi", "triton")
    return ", ".join(f"{k} {env.get(k)}" for k in keys if env.get(k))


def device_of(env: dict) -> dict:
    """The device as the run saw it: name, count, capability, driver line, CPU."""
    return {k: env.get(k) for k in ("gpu", "gpu_count", "capability", "nvidia-smi", "cpu_model", "cpus", "host")
            if env.get(k) is not None}


def versions_of(env: dict) -> dict:
    return {k: env.get(k) for k in VERSION_KEYS if env.get(k) is not None}


def _is_blackwell(env: dict) -> bool:
    try:
        return float(env.get("capability") or 0) >= 10.0
    except ValueError:
        return False


def not_run_list(not_run: list[dict], envs: list[dict], launches_not_run: dict[str, str]) -> list[dict]:
    """What was not run, each with its status. Blackwell-only paths are "not run on this hardware"
    unless a run was on Blackwell (they have no cases yet, so even then they are never "passed")."""
    on_blackwell = any(_is_blackwell(e) for e in envs)
    rows = []
    for n in not_run:
        if n.get("hardware") == "blackwell":
            status = "no case yet (Blackwell run)" if on_blackwell else NOT_RUN_HERE
        else:
            status = "not run"
        rows.append({"name": n["name"], "why": n["why"], "status": status, "hardware": n.get("hardware")})
    for name, why in sorted(launches_not_run.items()):
        rows.append({"name": name, "why": why, "status": NOT_RUN_HERE if "GPUs" in why else "not run",
                     "hardware": None})
    return rows


def reference_section(ref: dict) -> list[str]:
    lines = ["## Upstream reference", ""]
    seen = []
    for p in sorted(ref["parts"], key=lambda p: p.get("part", 0)):
        line = _env_line(p.get("environment", {}))
        if line and line not in seen:
            seen.append(line)
            parts = [str(q.get("part")) for q in ref["parts"] if _env_line(q.get("environment", {})) == line]
            lines.append(f"- Device and versions (part {', '.join(parts)}): {line}")
    dates = sorted({p.get('date', '') for p in ref['parts']})
    lines.append(f"- Recorded: {', '.join(dates)} (parts {', '.join(str(p.get('part')) for p in ref['parts'])})")
    for p in ref["parts"]:
        if p.get("command"):
            lines.append(f"- Part {p.get('part')}: `{p['command']}`")
    models: dict = {}
    for p in sorted(ref["parts"], key=lambda p: str(p.get("date") or ""), reverse=True):  # the newest record's
        for name, m in (p.get("models") or {}).items():
            models.setdefault(name, m)
    for name, m in sorted(models.items()):
        extra = f", weights sha256 {m['weights_sha256'][:16]}… ({m.get('weights_generator', 'normal')})" \
            if m.get("weights_sha256") else ""
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
              "plus the flags below; start-up is launch to the first HTTP 200 of /health (a machine's first launch "
              "also compiles Triton/FlashInfer/DeepGEMM kernels: marked *).", "",
              "| launch | part | GPUs | status | start-up s | requests | seeded weights | flags |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, rec in sorted(ref["launches"].items(), key=lambda kv: (kv[1].get("part") or 0, kv[0])):
        reqs = rec.get("requests", {})
        ok = sum(1 for r in reqs.values() if r.get("http_status") == 200)
        flags = " ".join([f"{k}={v}" for k, v in sorted(rec.get("env", {}).items())] + rec.get("flags", []))
        star = "*" if rec.get("first_launch_of_call") else ""
        weights = (rec.get("weights_sha256") or "")[:12] or "dummy"
        lines.append(f"| {name} | {rec.get('part', '')} | {rec.get('gpus', 1)} | {_upstream_status(rec)} "
                     f"| {rec.get('startup_s', '')}{star} | {ok}/{len(reqs)} HTTP 200 | {weights} | `{flags}` |")
    return lines


def _timing_lines(ratios: dict) -> list[str]:
    lines = []
    if ratios.get("import_ratio") is not None or ratios.get("startup_ratio") is not None or ratios.get("bench"):
        imp, st = ratios.get("import_median_s", {}), ratios.get("startup_median_s", {})
        lines.append(f"- Timing pruned/upstream (same machine, alternating): `import sglang.launch_server` "
                     f"{ratios.get('import_ratio')} ({imp.get('pruned')} s / {imp.get('upstream')} s), server "
                     f"start-up {ratios.get('startup_ratio')} ({st.get('pruned')} s / {st.get('upstream')} s), "
                     f"worst bench_one_batch {ratios.get('worst_bench_ratio')}"
                     + (f" — over {RATIO_LIMIT}: {', '.join(ratios['over_limit'])}" if ratios.get("over_limit") else ""))
    if ratios.get("bench"):
        lines += ["", "| bench_one_batch | metric | pruned s | upstream s | ratio | samples |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for key, metrics in ratios["bench"].items():
            for metric, v in metrics.items():
                fmt = lambda x: f"{x:.5f}" if isinstance(x, (int, float)) else str(x)  # noqa: E731
                lines.append(f"| {key} | {metric} | {fmt(v['pruned'])} | {fmt(v['upstream'])} | {v['ratio']} "
                             f"| {v.get('samples', '')} |")
        lines.append("")
    if ratios.get("bench_errors"):
        lines.append(f"- bench_one_batch errors: {ratios['bench_errors']}")
    if ratios.get("startup_by_launch"):
        parts = ", ".join(f"{k} {v['ratio']}" for k, v in ratios["startup_by_launch"].items())
        lines.append(f"- Start-up pruned/upstream per launch (warm caches; the reference ran on another machine "
                     f"of the same kind): {parts}")
    return lines


def _commands(pruned: dict, timing: dict) -> dict:
    calls = sorted({p["command"] for p in pruned["parts"] if p.get("command")})
    launches = {k: v.get("command") for k, v in sorted(pruned["launches"].items()) if v.get("command")}
    bench = []
    for w, rounds in (timing.get("bench") or {}).items():
        if isinstance(rounds, list):
            bench += [r["command"] for r in rounds if isinstance(r, dict) and r.get("command")]
    return {"device_calls": calls, "launches": launches, "bench_one_batch": sorted(set(bench)),
            "startup_flags": timing.get("startup_flags")}


def superseded_dropped(cases: list[dict]) -> list[dict]:
    """Drop a launch's "skipped: no time left" row when another call of the same run compared that launch.

    A call that runs out of time skips its last launch; a later call (`--only NAME`) runs it. Only
    skips are superseded: a failure stays whatever a later call says.
    """
    compared = {c["launch"] for c in cases if c["request"] != "*"}
    return [c for c in cases
            if not (c["request"] == "*" and "skipped" in c["detail"] and c["launch"] in compared)]


def one_per_case(cases: list[dict]) -> list[dict]:
    """One row per (launch, request) when several calls compared the same case (a re-run of a part):
    a pass counts once, with how many calls agreed; any call's failure is the row kept."""
    by: dict[tuple[str, str], list[dict]] = {}
    for c in cases:
        by.setdefault((c["launch"], c["request"]), []).append(c)
    out = []
    for rows in by.values():
        bad = [r for r in rows if r["status"] != "pass"]
        if bad or len(rows) == 1:
            out += bad or rows
        else:
            out.append({**rows[0], "detail": f"{rows[0]['detail']} (in {len(rows)} calls)"})
    return out


def flash_ops_used(parts: list[dict]) -> dict[str, dict]:
    """sha256 -> {bytes, sources, parts} of the sgl_kernel flash_ops each run's site held (our slim FA3)."""
    out: dict[str, dict] = {}
    for p in parts:
        fo = (p.get("install") or {}).get("flash_ops") or {}
        if fo.get("present"):
            entry = out.setdefault(fo["sha256"], {"bytes": fo.get("bytes"), "sources": [], "parts": []})
            if fo.get("source") not in entry["sources"]:
                entry["sources"].append(fo.get("source"))
            entry["parts"].append(p.get("part"))
    return out


def flash_ops_lines(ref_parts: list[dict], pruned_parts: list[dict]) -> list[str]:
    """What FA3 the runs loaded: ours, one file for both trees (or say where they differed)."""
    ref, new = flash_ops_used(ref_parts), flash_ops_used(pruned_parts)
    if not ref and not new:
        return []
    shas = sorted(set(ref) | set(new))
    line = (f"- sgl_kernel's `flash_ops` (FA3) in the runs that had one: our slim build from FlashAttention's public "
            f"hopper sources (`shrink gpu-fa3`), not upstream's prebuilt flash_ops (1.1 GB, which no device call can "
            f"carry): " + "; ".join(f"sha256 {s[:12]}…, {(ref.get(s) or new.get(s))['bytes']} bytes (installed: "
                                   + " / ".join(sorted({*ref.get(s, {}).get('sources', []), *new.get(s, {}).get('sources', [])}))
                                   + ")" for s in shas))
    if set(new) <= set(ref) and len(shas) == 1:
        line += (". Upstream and pruned loaded this same file, so \"identical\" means the two trees compute the same "
                 "with the same kernels.")
    else:
        line += ". **Upstream and pruned runs did not all load the same flash_ops.**"
    return [line]


def pruned_tree_sha(part: dict) -> str | None:
    """Which pruned tree a run served: the sha256 of the bundle's sglang-pruned archive (runs of several trees can be merged)."""
    archive = (part.get("install", {}).get("archives") or {}).get("sglang-pruned.tar.xz") or {}
    return archive.get("sha256")


def write_report(ref_dir: Path, run_dirs: list[Path], out_dir: Path, version: str = "0.5.16") -> int:
    import datetime as _dt

    ref = compare.load_record(ref_dir)
    pruned, summaries, timing = _load_runs(run_dirs)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    from shrinker.gpu.cases import load_cases

    cases_toml = load_cases()
    not_run = cases_toml.raw.get("not_run", [])
    today = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    envs = [p.get("environment", {}) for p in pruned["parts"]]
    report: dict = {
        "date": today,
        "reference": {"dir": Path(ref_dir).as_posix(), "parts": ref["parts"], "launches": {
            k: {"status": v.get("status"), "startup_s": v.get("startup_s"), "flags": v.get("flags"),
                "command": v.get("command"), "part": v.get("part"), "gpus": v.get("gpus", 1)}
            for k, v in ref["launches"].items()}}}
    report["upstream_version"] = version
    md = [f"# `shrink verify --gpu` — DeepSeek v{version}", "", f"Report written {today}.", ""]
    code = 0
    launches_not_run: dict[str, str] = {}
    upstream_failed: dict[str, str] = {}
    not_compared: dict[str, str] = {}
    unrecorded: dict[str, str] = {}
    if not pruned["parts"]:
        report["pruned"] = "pending"
        md += ["Pruned comparison: **pending** (no pruned run yet). Only the upstream reference is recorded.", ""]
    else:
        cases = with_reference_gaps(one_per_case(superseded_dropped([c for s in summaries for c in s["cases"]])),
                                    ref["launches"])
        launches_not_run = {c["launch"]: c["detail"] for c in cases if c["status"] == compare.NOT_RUN}
        upstream_failed = {c["launch"]: c["detail"] for c in cases if c["status"] == compare.UPSTREAM_FAILED}
        not_compared = {c["launch"]: c["detail"] for c in cases if c["status"] == compare.NOT_COMPARED}
        compared = [c for c in cases if c["status"] not in compare.NOT_COUNTED]
        passed = sum(1 for c in compared if c["status"] == "pass")
        jit_cmp = jit.compare_jit(ref.get("jit", {}), pruned.get("jit", {})) if pruned.get("jit") else None
        ratios = timing_ratios(timing)
        ratios["startup_by_launch"] = startup_ratios(ref["launches"], pruned["launches"])
        # reference launches no pruned run compared (e.g. part 5 where no two-GPU machine was lent)
        ran = {c["launch"] for c in cases}
        for name, rec in sorted(ref["launches"].items()):
            if name not in ran and rec.get("status") == "ok":
                launches_not_run[name] = f"no pruned run of part {rec.get('part')} (needs {rec.get('gpus', 1)} GPU(s))"
        # launches of cases.toml that neither the reference nor a run has (e.g. a release recorded in
        # part): listed under "Not run", counted apart (`not_recorded`)
        for launch in cases_toml.launches:
            if launch.name not in ran and launch.name not in ref["launches"]:
                unrecorded[launch.name] = (f"part {launch.part}: neither recorded nor compared"
                                                 + (f" (needs {launch.gpus} GPUs)" if launch.gpus > 1 else ""))
        if not _has_figures(timing.get("bench")) and not _has_figures(timing.get("import")):
            unrecorded[f"timing (part {cases_toml.timing['part']})"] = "import, start-up and bench_one_batch not run"
        all_ok = passed == len(compared) and bool(compared) and (jit_cmp is None or jit_cmp["passed"])
        code = 0 if all_ok else 1
        report.update(
            passed=all_ok,
            counts={"cases": len(compared), "passed": passed, "failed": len(compared) - passed,
                    "launches_not_run": len(launches_not_run), "not_recorded": len(unrecorded),
                    "not_run_upstream_failed": len(upstream_failed), "not_compared": len(not_compared)},
            not_run_upstream_failed={name: {"error": compare.upstream_error(ref["launches"][name]),
                                            "status": ref["launches"][name].get("status"),
                                            "command": ref["launches"][name].get("command"),
                                            "part": ref["launches"][name].get("part")}
                                     for name in sorted(upstream_failed)},
            runs=[{k: p.get(k) for k in ("part", "date", "command", "seconds")}
                  | {"device": device_of(p.get("environment", {})), "pruned_tree_sha256": pruned_tree_sha(p)}
                  for p in sorted(pruned["parts"], key=lambda p: (p.get("part", 0), p.get("date", "")))],
            device=device_of(envs[0]) if envs else None,
            versions=versions_of(envs[0]) if envs else None,
            commands=_commands(pruned, timing),
            cases=cases, jit=jit_cmp,
            pruned_jit={k: pruned.get("jit", {}).get(k) for k in ("built", "failed", "timeout", "total", "seconds")},
            timing=ratios, pruned_environment=pruned.get("environment"))
        plural = lambda n: "launch" if n == 1 else "launches"  # noqa: E731
        md += [(f"Cases: **{passed}/{len(compared)} compared requests identical**" if all_ok
                else f"Cases: **{passed}/{len(compared)} passed** — FAILURES below")
               + (f"; {len(upstream_failed)} {plural(len(upstream_failed))} {NOT_RUN_HERE}: upstream could not "
                  f"serve {'it' if len(upstream_failed) == 1 else 'them'} (reasons below)" if upstream_failed else "")
               + (f"; {len(not_compared)} {plural(len(not_compared))} not compared: no upstream record in this run"
                  if not_compared else "")
               + (f"; {len(launches_not_run)} launch(es) not run (below)" if launches_not_run else "")
               + (f"; {len(unrecorded)} launch(es) or steps of cases.toml neither recorded nor compared (below)"
                  if unrecorded else ""), ""]
        devices = sorted({_env_line(e) for e in envs if e})
        for line in devices:
            md.append(f"- Pruned run device and versions: {line}")
        for r in report["runs"]:
            tree = f" on pruned tree {r['pruned_tree_sha256'][:12]}" if r.get("pruned_tree_sha256") else ""
            md.append(f"- Part {r['part']} ran {r['date']}{tree} in {r['seconds']} s: `{r['command']}`")
        md += flash_ops_lines(ref["parts"], pruned["parts"])
        report["flash_ops"] = {"upstream": flash_ops_used(ref["parts"]), "pruned": flash_ops_used(pruned["parts"])}
        if jit_cmp is not None:
            pj = pruned["jit"]
            md.append(f"- JIT sources (pruned): {pj.get('built')} built, {pj.get('failed')} failed, "
                      f"{pj.get('timeout')} not finished, of {pj.get('total')}; regressions against upstream: "
                      f"{len(jit_cmp['regressions'])}")
        md += _timing_lines(ratios)
        md += ["", "| launch | request | status | detail |", "| --- | --- | --- | --- |"]
        md += [f"| {c['launch']} | {c['request']} | {LABELS.get(c['status'], c['status'])} | {c['detail']} |"
               for c in cases]
        md.append("")
        if upstream_failed:
            md += [f"## {NOT_RUN_HERE}: upstream could not serve these launches", "",
                   "Upstream's own server died before it was ready, so there is nothing to compare the pruned tree "
                   "with: not a pruned failure, not a pass. Upstream's error is the last traceback line of its log.",
                   "", "| launch | part | upstream's error | upstream's status | launch |", "| --- | --- | --- | --- | --- |"]
            for name, u in report["not_run_upstream_failed"].items():
                md.append(f"| {name} | {u['part']} | `{u['error']}` | {u['status']} | `{u['command']}` |")
            md.append("")
    rows = not_run_list(not_run, envs or [p.get("environment", {}) for p in ref["parts"]],
                        {**launches_not_run, **unrecorded})
    rows += [{"name": name, "why": why, "status": NOT_RUN_HERE, "hardware": None}
             for name, why in sorted(upstream_failed.items())]
    rows += [{"name": name, "why": why, "status": "not compared", "hardware": None}
             for name, why in sorted(not_compared.items())]
    report["not_run"] = rows
    md += reference_section(ref)
    notes = Path(ref_dir) / "README.md"
    if notes.is_file():
        md += ["", f"Recording notes (commands, device time, findings): `{notes.as_posix()}`."]
    md += ["", "## Not run", "", "| what | status | why |", "| --- | --- | --- |"]
    md += [f"| {r['name']} | {r['status']} | {r['why']} |" for r in rows]
    (out_dir / "gpu-verify.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    (out_dir / "gpu-verify.md").write_text("\n".join(md) + "\n")
    return code
