"""Part 4 end to end on the CPU: real subprocesses, real HTTP, two fake `sglang` trees.

Each fake tree's `sglang.launch_server` serves /health after a delay and `sglang.bench_one_batch`
parses the flags run_timing passes and writes the result rows upstream's would, so the import
timing, the server start-up, the bench command line and its parsing all run as on the device;
only the model and the GPU are missing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from shrinker.gpu import install, report, verify
from shrinker.gpu.cases import load_cases

LAUNCH_SERVER = '''
import argparse, http.server, time
{delay}
ap = argparse.ArgumentParser()
ap.add_argument("--model-path"); ap.add_argument("--host"); ap.add_argument("--port", type=int)
args, _ = ap.parse_known_args()
if __name__ == "__main__":
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
        def log_message(self, *a): pass
    http.server.HTTPServer((args.host, args.port), H).serve_forever()
'''

BENCH = '''
import argparse, json
ap = argparse.ArgumentParser()
ap.add_argument("--model-path", required=True); ap.add_argument("--load-format")
ap.add_argument("--batch-size", type=int, nargs="+"); ap.add_argument("--input-len", type=int, nargs="+")
ap.add_argument("--output-len", type=int, nargs="+"); ap.add_argument("--run-name"); ap.add_argument("--result-filename")
args, _ = ap.parse_known_args()
with open(args.result_filename, "a") as f:
    for bs in args.batch_size:
        lat = {latency} * bs
        f.write(json.dumps({{"run_name": args.run_name, "batch_size": bs, "input_len": args.input_len[0],
                             "output_len": args.output_len[0], "prefill_latency": lat,
                             "median_decode_latency": lat / 10, "total_latency": lat * 2}}) + "\\n")
'''


def _tree(root: Path, import_delay: float, latency: float) -> Path:
    pkg = root / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text(LAUNCH_SERVER.format(delay=f"time.sleep({import_delay})"))
    (pkg / "bench_one_batch.py").write_text(BENCH.format(latency=latency))
    return root


def test_part4_runs_both_trees_alternating_with_real_processes(tmp_path, monkeypatch):
    cases = load_cases()
    trees = {"pruned": _tree(tmp_path / "tree-pruned", 0.05, 0.010),
             "upstream": _tree(tmp_path / "tree-upstream", 0.25, 0.010)}
    inst = install.Installed(root=tmp_path, site=tmp_path / "site", trees=trees, models={}, manifest={})
    (tmp_path / "site").mkdir()
    logs = tmp_path / "logs" / "part4"
    logs.mkdir(parents=True)
    monkeypatch.setattr(verify, "prepare_models", lambda c, i, e, names=None: {
        "tiny-dummy": {"path": str(tmp_path), "load_format": "dummy"}})
    monkeypatch.setattr(verify.server, "wait_gpu_free", lambda timeout=30.0: None)
    out = verify.run_timing(cases, inst, "pruned", logs, t0=time.monotonic(), deadline_s=1000,
                            main_env=verify.tree_env(inst, "pruned"))

    assert out["trees"] == ["pruned", "upstream"]
    for w in ("pruned", "upstream"):
        assert out["import"][w]["first_s"] and len(out["import"][w]["runs_s"]) == cases.timing["import_runs"]
        assert [r.get("ready_s") is not None for r in out["startup"][w]] == [True] * cases.timing["startup_rounds"]
        rows = out["bench"][w][0]["rows"]
        assert len(rows) == len(cases.timing["bench_batch_sizes"]) * cases.timing["bench_repeats"], out["bench"][w]
    assert "pruned" in out["startup_warmup"]  # a fresh machine: one uncounted launch first
    r = report.timing_ratios(out)
    assert r["import_ratio"] < 1  # the fake pruned tree imports faster
    assert r["startup_ratio"] is not None and r["worst_bench_ratio"] == 1.0
    n = cases.timing["bench_repeats"] * cases.timing["bench_rounds"]
    assert all(v["samples"] == {"pruned": n, "upstream": n}
               for m in r["bench"].values() for v in m.values())
    json.dumps(out)  # what goes into results-part4-pruned.json
