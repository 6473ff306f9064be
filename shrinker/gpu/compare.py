"""What a GPU run records, and how a pruned run is compared with the upstream record.

Answers are normalised before they are stored: /generate keeps the token ids, text, finish reason,
token counts and the logprobs; chat answers keep everything but ids, timestamps and latencies
(random or clock-dependent, never the model's doing); a stream is folded into its joined content,
reasoning and tool calls (how many chunks a stream has depends on timing). Token ids and JSON must
be identical, and so must every logprob: the output tokens' logprobs, the top-k alternatives at
each output position (ids and values) and, where a request asks for them, the prompt's. Bit for
bit: the same kernels on the same weights give the same floats.

The one exception is measured, never assumed: a request the reference recorded twice (`NAME` and
`NAME@2`, the second after /flush_cache in the same server) shows how far upstream differs from
itself. Then a pruned value may differ from upstream's by at most that spread, and a top-k id may
differ only at a position where upstream's two runs chose differently; the verdict says so.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

IGNORED_KEYS = frozenset({"id", "created", "system_fingerprint", "rid", "request_id"})
IGNORED_PARTS = ("latency", "_ts", "timestamp", "time_", "_time", "throughput")
REPEAT_SUFFIX = "@2"  # the second recording of a request (after /flush_cache), for upstream's own spread
NOT_RUN = "not-run"  # a launch this machine cannot run (too few GPUs): listed, never a pass
# upstream itself could not serve the launch here (its server died on an error before it was ready):
# "not run on this hardware", with upstream's own error; never a pruned failure, never a pass
UPSTREAM_FAILED = "not-run-upstream"
# no upstream record of the launch in this run (upstream's launch was skipped for time, or timed out
# with no error in its log): nothing to compare against; never a pruned failure, never a pass
NOT_COMPARED = "not-compared"
NOT_COUNTED = frozenset({NOT_RUN, UPSTREAM_FAILED, NOT_COMPARED})  # rows that are no comparison at all
NOT_RUN_HERE = "not run on this hardware"


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
    for key, name in (("output_top_logprobs", "top_logprobs"), ("input_token_logprobs", "input_logprobs"),
                      ("input_top_logprobs", "input_top_logprobs")):
        if meta.get(key) is None:
            continue
        if key == "input_token_logprobs":
            out[name] = [[entry[1], entry[0]] for entry in meta[key]]  # [token id, logprob]
        else:  # one list per position of [logprob, token id, text] -> [[id, logprob], ...] (None kept)
            out[name] = [None if pos is None else [[e[1], e[0]] for e in pos] for pos in meta[key]]
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


LOGPROB_KEYS = ("logprobs", "top_logprobs", "input_logprobs", "input_top_logprobs")


def _split(value):
    """A normalised answer without its logprobs, and the logprobs alone (same nesting)."""
    if isinstance(value, list):
        parts = [_split(v) for v in value]
        return [p[0] for p in parts], [p[1] for p in parts]
    if isinstance(value, dict) and any(k in value for k in LOGPROB_KEYS):
        return ({k: v for k, v in value.items() if k not in LOGPROB_KEYS},
                {k: value[k] for k in LOGPROB_KEYS if k in value})
    return value, {}  # no logprobs


def _flat(lp, path: str = ""):
    """Every logprob leaf as (path, kind, value): kind 'id' for token ids, 'value' for logprobs."""
    if isinstance(lp, dict):
        for k in LOGPROB_KEYS:
            if k in lp:
                yield from _flat(lp[k], f"{path}.{k}")
    elif isinstance(lp, list):
        if len(lp) == 2 and isinstance(lp[0], int) and not isinstance(lp[0], bool) \
                and (lp[1] is None or isinstance(lp[1], float)):
            yield f"{path}.id", "id", lp[0]  # [token id, logprob]
            yield f"{path}.value", "value", lp[1]
            return
        for i, v in enumerate(lp):
            yield from _flat(v, f"{path}[{i}]")
    else:
        yield path or ".", "value", lp


def _shape(lp) -> list:
    return [(path, kind) for path, kind, _ in _flat(lp)]


def logprob_spread(first, second) -> tuple[float, set[str]]:
    """How far two recordings of one request differ: (largest value difference, paths of differing ids).

    Infinite when their token ids, answers or logprob shapes differ (no spread can be measured then).
    """
    body1, lp1 = _split(first)
    body2, lp2 = _split(second)
    if first_difference(body1, body2) or _shape(lp1) != _shape(lp2):
        return float("inf"), set()
    spread, ids = 0.0, set()
    for (path, kind, x), (_, _, y) in zip(_flat(lp1), _flat(lp2)):
        if kind == "id":
            if x != y:
                ids.add(path)
        elif x != y:
            spread = max(spread, float("inf") if x is None or y is None else abs(x - y))
    return spread, ids


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


# a traceback's last line: `ImportError: ...`, `torch.OutOfMemoryError: ...`, a bare `Exception: ...`
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception|Exit|Interrupt)(?::.*)?$")


def upstream_error(rec: dict) -> str | None:
    """The exception a launch's server log ends on: the last traceback line (`ImportError: ...`), or None."""
    found = None
    for line in str(rec.get("log_tail") or "").splitlines():
        line = line.rstrip()
        if _EXCEPTION_LINE.match(line):
            found = line
    return found


def reference_gap(lname: str, rl: dict) -> "CaseResult":
    """The row for a launch the upstream record holds no answers for (its status is not "ok").

    Upstream's server died on an error before it was ready: upstream cannot serve this launch on this
    machine, so it is "not run on this hardware", with upstream's own error and launch. Skipped for
    time (or timed out with no error to show): "not compared". Neither is a pruned failure or a pass.
    """
    status = str(rl.get("status") or "no status")
    if status.startswith("not run"):
        return CaseResult(lname, "*", NOT_RUN, status)
    err = upstream_error(rl)
    if status.startswith("failed") and not status.startswith("failed: model") and err:
        launch = f"; launch: `{rl['command']}`" if rl.get("command") else ""
        return CaseResult(lname, "*", UPSTREAM_FAILED,
                          f"{NOT_RUN_HERE}: upstream could not serve it: {err} (upstream {status}{launch})")
    why = status if err or not status.startswith("failed") else f"{status}, no error in its log"
    return CaseResult(lname, "*", NOT_COMPARED, f"not compared: no upstream record in this run (upstream launch {why})")


@dataclass
class CaseResult:
    launch: str
    request: str
    status: str  # pass | fail | missing | error | not-run | not-run-upstream | not-compared
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def compare_answers(ref, new, ref_repeat=None) -> tuple[str, str]:
    """(status, detail) for one request: tokens, JSON and logprobs (top-k ids and values) identical.

    `ref_repeat`: the reference's second recording of the request, when it has one. Where upstream
    differs from itself, a difference within that spread passes and the detail says so.
    """
    ref_body, ref_lp = _split(ref)
    new_body, new_lp = _split(new)
    diff = first_difference(ref_body, new_body)
    if diff:
        return "fail", diff
    if _shape(ref_lp) != _shape(new_lp):
        # e.g. one run has top-k logprobs and the other not, or other counts
        ref_n, new_n = len(_shape(ref_lp)), len(_shape(new_lp))
        return "fail", f"identical tokens, logprob entries differ in layout ({ref_n} upstream, {new_n} here)"
    spread, free_ids = (0.0, set()) if ref_repeat is None else logprob_spread(ref, ref_repeat)
    if spread == float("inf"):
        spread, free_ids = 0.0, set()  # upstream's repeat differed in tokens: no spread to lean on
    drift, worst, id_diffs, id_free = 0.0, "", [], 0
    for (path, kind, x), (_, _, y) in zip(_flat(ref_lp), _flat(new_lp)):
        if x == y:
            continue
        if kind == "id":
            if path in free_ids:
                id_free += 1
            else:
                id_diffs.append(f"{path}: {x} != {y}")
            continue
        d = float("inf") if x is None or y is None else abs(x - y)
        if d > drift:
            drift, worst = d, f"{path}: {x!r} != {y!r}"
    n = sum(1 for _, kind, _ in _flat(ref_lp) if kind == "value")
    if id_diffs:
        return "fail", f"identical tokens, top-k ids differ ({len(id_diffs)}), first {id_diffs[0]}"
    if drift > spread:
        own = f"; upstream against itself: {spread:.3g}" if ref_repeat is not None else ""
        return "fail", f"identical tokens, logprobs differ by up to {drift:.3g} ({worst}){own}"
    if drift == 0 and not id_free:
        return "pass", "identical" if n == 0 else f"identical (tokens and {n} logprobs, bit for bit)"
    return "pass", (f"identical tokens; logprobs within upstream's own spread {spread:.3g} (largest difference "
                    f"{drift:.3g}, {id_free} top-k ids where upstream's two runs differ)")


def compare_launches(ref: dict, new: dict) -> list[CaseResult]:
    """Every request of every reference launch that ran, against the same request of this run."""
    results = []
    for lname, rl in sorted(ref.items()):
        if rl.get("status") != "ok":
            # nothing recorded upstream: not a pruned failure, but a pruned run of it cannot pass either
            if lname in new:
                nst = str(new[lname].get("status", ""))
                results.append(CaseResult(lname, "*", NOT_RUN, nst) if nst.startswith("not run")
                               else reference_gap(lname, rl))
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
        if rl.get("env", {}) != nl.get("env", {}):
            note += f" [launch environment differs: upstream {rl.get('env', {})}, here {nl.get('env', {})}]"
        for rname, rreq in sorted(rl.get("requests", {}).items()):
            nreq = nl.get("requests", {}).get(rname)
            base = rname[: -len(REPEAT_SUFFIX)] if rname.endswith(REPEAT_SUFFIX) else rname + REPEAT_SUFFIX
            twin = rl.get("requests", {}).get(base)  # upstream's other recording of this request
            if nreq is None:
                results.append(CaseResult(lname, rname, "missing", "request not run"))
                continue
            if rreq.get("http_status") != nreq.get("http_status"):
                results.append(CaseResult(lname, rname, "fail",
                                          f"HTTP {rreq.get('http_status')} upstream, {nreq.get('http_status')} here"))
                continue
            repeat = twin.get("answer") if twin and twin.get("http_status") == 200 else None
            status, detail = compare_answers(rreq.get("answer"), nreq.get("answer"), ref_repeat=repeat)
            results.append(CaseResult(lname, rname, status, detail + note))
    return results


def _record_rank(launch: dict) -> tuple[bool, str]:
    return launch.get("status") == "ok", str(launch.get("recorded") or "")


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
            launch.setdefault("recorded", data.get("date"))
            # several records of one launch (a retry): the newest wins, but never a miss over an answer
            earlier = merged["launches"].get(name)
            if earlier is None or _record_rank(launch) >= _record_rank(earlier):
                merged["launches"][name] = launch
        for key in ("jit", "import", "timing", "environment", "models"):
            if data.get(key):
                merged.setdefault(key, data[key])
    return merged


def results_table(results: list[CaseResult]) -> list[dict]:
    return [asdict(r) for r in results]
