"""What a GPU run records, and how a pruned run is compared with the upstream record.

Answers are normalised before they are stored: /generate keeps the token ids, text, finish reason,
token counts and the logprobs; chat answers keep everything but ids, timestamps and latencies
(random or clock-dependent, never the model's doing); a stream is folded into its joined content,
reasoning and tool calls (how many chunks a stream has depends on timing). Token ids and JSON must
be identical; logprobs may differ by `LOGPROB_TOL` (reported as the largest difference).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

IGNORED_KEYS = frozenset({"id", "created", "system_fingerprint", "rid", "request_id"})
IGNORED_PARTS = ("latency", "_ts", "timestamp", "time_", "_time", "throughput")
LOGPROB_TOL = 1e-2
NOT_RUN = "not-run"  # a launch this machine cannot run (too few GPUs): listed, never a pass


def _ignored(key: str) -> bool:
    return key in IGNORED_KEYS or any(part in key for part in IGNORED_PARTS)


def strip_volatile(obj):
    """A copy of a JSON value without ids, timestamps and latencies, at any depth."""
    if isinstance(obj, dict):
        return {k: strip_volatile(v) for k, v in obj.items() if not _ignored(k)}
    if isinstance(obj, list):
        return [strip_volatile(v) for v in obj]
    return obj


def normalize_generate(resp):
    """One /generate answer (or a batch: a list) -> ids, text, finish reason, counts, logprobs."""
    if isinstance(resp, list):
        return [normalize_generate(r) for r in resp]
    if not isinstance(resp, dict):
        return {"raw": resp}
    meta = resp.get("meta_info", {}) or {}
    out = {
        "output_ids": resp.get("output_ids"),
        "text": resp.get("text"),
        "finish_reason": strip_volatile(meta.get("finish_reason")),
        "prompt_tokens": meta.get("prompt_tokens"),
        "completion_tokens": meta.get("completion_tokens"),
    }
    if meta.get("output_token_logprobs"):
        out["logprobs"] = [entry[0] for entry in meta["output_token_logprobs"]]
    return out


def fold_stream(events: list) -> dict:
    """Chat completion chunks -> the answer they spell out (content, reasoning, tool calls, finish)."""
    content, reasoning, finish, tool_calls = [], [], None, {}
    usage = None
    for ev in events:
        if not isinstance(ev, dict):
            continue
        if ev.get("usage"):
            usage = strip_volatile(ev["usage"])
        for choice in ev.get("choices", []):
            delta = choice.get("delta", {}) or {}
            if delta.get("content"):
                content.append(delta["content"])
            if delta.get("reasoning_content"):
                reasoning.append(delta["reasoning_content"])
            for tc in delta.get("tool_calls") or []:
                slot = tool_calls.setdefault(tc.get("index", 0), {"name": "", "arguments": ""})
                fn = tc.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    return {"content": "".join(content), "reasoning_content": "".join(reasoning),
            "tool_calls": [tool_calls[k] for k in sorted(tool_calls)], "finish_reason": finish, "usage": usage}


def normalize(endpoint: str, resp, stream: bool = False):
    if stream:
        return fold_stream(resp)
    if endpoint == "/generate":
        return normalize_generate(resp)
    return strip_volatile(resp)


def _pop_logprobs(value):
    """Split logprobs out of a normalised /generate answer: (answer without them, flat list)."""
    if isinstance(value, list):
        parts = [_pop_logprobs(v) for v in value]
        return [p[0] for p in parts], [x for p in parts for x in p[1]]
    if isinstance(value, dict) and "logprobs" in value:
        rest = {k: v for k, v in value.items() if k != "logprobs"}
        return rest, [x for x in value["logprobs"] if x is not None]
    return value, []


def first_difference(a, b, path: str = "") -> str | None:
    """Where two JSON values first differ ('' when equal), e.g. `[1].output_ids[7]: 513 != 88`."""
    if type(a) is not type(b):
        return f"{path or '.'}: {json.dumps(a)[:80]} != {json.dumps(b)[:80]}"
    if isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:  # the record's order: output_ids first
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'reference' if k in a else 'this run'}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        return None
    return None if a == b else f"{path or '.'}: {json.dumps(a)[:80]} != {json.dumps(b)[:80]}"


@dataclass
class CaseResult:
    launch: str
    request: str
    status: str  # pass | fail | missing | error | not-run
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def compare_answers(ref, new) -> tuple[str, str]:
    """(status, detail) for one recorded request: tokens and JSON identical, logprobs within tolerance."""
    ref_body, ref_lp = _pop_logprobs(ref)
    new_body, new_lp = _pop_logprobs(new)
    diff = first_difference(ref_body, new_body)
    if diff:
        return "fail", diff
    if len(ref_lp) != len(new_lp):
        return "fail", f"logprob count {len(ref_lp)} != {len(new_lp)}"
    drift = max((abs(x - y) for x, y in zip(ref_lp, new_lp)), default=0.0)
    if drift > LOGPROB_TOL:
        return "fail", f"identical tokens, logprobs differ by up to {drift:.3g}"
    return "pass", "identical" if drift == 0 else f"identical tokens, logprobs within {drift:.2g}"


def compare_launches(ref: dict, new: dict) -> list[CaseResult]:
    """Every request of every reference launch that ran, against the same request of this run."""
    results = []
    for lname, rl in sorted(ref.items()):
        if rl.get("status") != "ok":
            # nothing recorded upstream: not a pruned failure, but a pruned run of it cannot pass either
            if lname in new and not str(new[lname].get("status", "")).startswith("not run"):
                results.append(CaseResult(lname, "*", "error",
                                          f"no upstream reference: the upstream launch {rl.get('status')}"))
            continue
        nl = new.get(lname)
        if nl is None:
            results.append(CaseResult(lname, "*", "missing", "launch not run"))
            continue
        if str(nl.get("status", "")).startswith("not run"):
            results.append(CaseResult(lname, "*", NOT_RUN, nl["status"]))
            continue
        if nl.get("status") != "ok":
            results.append(CaseResult(lname, "*", "error", f"launch {nl.get('status')}"))
            continue
        # Seeded weights come from torch's CPU generator on the device; two machines have given
        # different bytes for them (float32 RNG paths differ by CPU). Say so next to every verdict.
        note = ""
        # the content hash when both records have it (the file hash also depends on safetensors' layout)
        key = "weights_content_sha256" if rl.get("weights_content_sha256") and nl.get("weights_content_sha256") \
            else "weights_sha256"
        if rl.get(key) and nl.get(key) and rl[key] != nl[key]:
            note = " [seeded weights differ from the reference's]"
        if rl.get("config_digest") and nl.get("config_digest") and rl["config_digest"] != nl["config_digest"]:
            note += " [model folder differs from the reference's: another tokenizers version?]"
        for rname, rreq in sorted(rl.get("requests", {}).items()):
            nreq = nl.get("requests", {}).get(rname)
            if nreq is None:
                results.append(CaseResult(lname, rname, "missing", "request not run"))
                continue
            if rreq.get("http_status") != nreq.get("http_status"):
                results.append(CaseResult(lname, rname, "fail",
                                          f"HTTP {rreq.get('http_status')} upstream, {nreq.get('http_status')} here"))
                continue
            status, detail = compare_answers(rreq.get("answer"), nreq.get("answer"))
            results.append(CaseResult(lname, rname, status, detail + note))
    return results


def load_record(directory: Path) -> dict:
    """Merge every results*.json of a record folder: launches, jit, timing, environment by part."""
    merged: dict = {"launches": {}, "parts": []}
    files = sorted(Path(directory).glob("results*.json"))
    if not files:
        raise FileNotFoundError(f"no results*.json in {directory}")
    for f in files:
        data = json.loads(f.read_text())
        merged["parts"].append({k: v for k, v in data.items() if k not in ("launches",)})
        for name, launch in data.get("launches", {}).items():
            # which weights this launch served (parts ran on different machines)
            model = (data.get("models") or {}).get(launch.get("model"), {})
            launch.setdefault("weights_sha256", model.get("weights_sha256"))
            launch.setdefault("weights_content_sha256", model.get("weights_content_sha256"))
            launch.setdefault("config_digest", model.get("config_digest"))
            launch.setdefault("part", data.get("part"))
            merged["launches"][name] = launch
        for key in ("jit", "import", "timing", "environment", "models"):
            if data.get(key):
                merged.setdefault(key, data[key])
    return merged


def results_table(results: list[CaseResult]) -> list[dict]:
    return [asdict(r) for r in results]
