"""Feed recorded inputs to a tree's parsers, protocol models and start-up lookups; write what comes out
(verify env).

    python behaviour_probe.py CASES.json OUT.json

CASES.json holds `api` (kind -> "module:attribute" in the tree) and `cases`. Each case runs on its
own: an exception becomes the case's result ({"raised": type, "message"}), so a parser missing in
one tree shows as a difference instead of stopping the probe. Streaming cases are fed in the
recorded chunks and also re-split at fixed sizes, one chunk per call, as a server would.
Values a model generates itself (ids, timestamps) are masked: a field that differs between two
constructions from the same input is reported as "<generated>".
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback

CHUNK_SIZES = (1, 3, 8, 29)


def _resolve(target: str):
    module, _, attr = target.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj


def _plain(value):
    """JSON-able form of parser results (pydantic models, dataclasses, tuples)."""
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump(mode="json"))
    if hasattr(value, "__dataclass_fields__"):
        return {k: _plain(getattr(value, k)) for k in value.__dataclass_fields__}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def _chunkings(case: dict) -> dict[str, list[str]]:
    text = case["text"]
    out = {f"size{n}": [text[i:i + n] for i in range(0, len(text), n)] for n in CHUNK_SIZES}
    if case.get("chunks"):
        if "".join(case["chunks"]) != text:
            raise ValueError("recorded chunks do not join to the text")
        out["recorded"] = case["chunks"]
    return out


def _tools(api: dict, tools: list[dict]):
    tool_cls = _resolve(api["tool"])
    return [tool_cls.model_validate(t) for t in tools]


def run_tool_call(api: dict, case: dict, tool_sets: dict) -> dict:
    parser_cls = _resolve(api["tool_call_parser"])
    tools = _tools(api, tool_sets[case["tools"]])
    out = {}
    parser = parser_cls(tools=tools, tool_call_parser=case["parser"])
    out["has_tool_call"] = parser.has_tool_call(case["text"])
    out["non_stream"] = _plain(parser.parse_non_stream(case["text"]))
    for name, chunks in _chunkings(case).items():
        parser = parser_cls(tools=tools, tool_call_parser=case["parser"])
        steps = [_plain(parser.parse_stream_chunk(c)) for c in chunks]
        out[f"stream_{name}"] = _stream_summary(steps)
    return out


def _stream_summary(steps: list) -> dict:
    """The streamed normal text joined, every emitted call item, and the raw steps that emitted."""
    normal = "".join(s[0] or "" for s in steps)
    calls = [c for s in steps for c in (s[1] or [])]
    emitted = [[i, s] for i, s in enumerate(steps) if (s[0] or s[1])]
    return {"normal_text": normal, "calls": calls, "emitted": emitted}


def run_reasoning(api: dict, case: dict, _tool_sets: dict) -> dict:
    parser_cls = _resolve(api["reasoning_parser"])
    request = None
    if case.get("request"):
        request = _resolve(api["chat_request"]).model_validate(case["request"])
    kwargs = {"model_type": case["parser"], "stream_reasoning": case.get("stream_reasoning", True),
              "force_reasoning": case.get("force_reasoning"), "request": request}
    out = {"non_stream": _plain(parser_cls(**kwargs).parse_non_stream(case["text"]))}
    for name, chunks in _chunkings(case).items():
        parser = parser_cls(**kwargs)
        steps = [_plain(parser.parse_stream_chunk(c)) for c in chunks]
        end = _plain(parser.parse_stream_end())
        out[f"stream_{name}"] = {
            "reasoning": "".join(s[0] or "" for s in steps) + (end[0] or ""),
            "normal": "".join(s[1] or "" for s in steps) + (end[1] or ""),
            "end": end,
        }
    return out


def run_encode(api: dict, case: dict, _tool_sets: dict) -> dict:
    encoding = _resolve(api["dsv32_encoding"])
    prompt = encoding.encode_messages(case["messages"], thinking_mode=case["thinking_mode"],
                                      **case.get("options", {}))
    return {"prompt": prompt}


def run_decode(api: dict, case: dict, _tool_sets: dict) -> dict:
    encoding = _resolve(api["dsv32_encoding"])
    return {"message": _plain(encoding.parse_message_from_completion_text(case["text"], case["thinking_mode"]))}


def run_template(api: dict, case: dict, _tool_sets: dict) -> dict:
    detection = _resolve(api["template_detection"])
    content_format = _resolve(api["content_format"])
    template = case["template"]
    always_on, config = detection.detect_reasoning_pattern(template)
    return {
        "reasoning_pattern": [always_on, _plain(config)],
        "reasoning_parser": detection.detect_reasoning_parser(template, None, config, always_on),
        "tool_call_parser": detection.detect_tool_call_parser(template, None, config, always_on),
        "inline_system": detection.detect_inline_system_support(template),
        "content_format": content_format(template),
    }


def run_protocol(api: dict, case: dict, _tool_sets: dict) -> dict:
    model = _resolve(f"{api['protocol']}:{case['model']}")
    try:
        first = model.model_validate(case["data"]).model_dump(mode="json")
    except Exception as exc:
        if type(exc).__name__ != "ValidationError":
            raise
        return {"valid": False, "errors": [[list(map(str, e["loc"])), e["type"]] for e in exc.errors()]}
    second = model.model_validate(case["data"]).model_dump(mode="json")
    return {"valid": True, "dump": _mask(first, second)}


def run_transcription_adapter(api: dict, case: dict, _tool_sets: dict) -> dict:
    """What every server builds at start-up: its /v1/audio/transcriptions handler resolves an adapter for the
    served architectures (the Whisper one by default; without it no server starts)."""
    resolve = _resolve(api["transcription_adapter"])
    return {"adapter": type(resolve(case["architectures"])).__name__}


def _mask(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: _mask(a[k], b.get(k)) for k in a}
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [_mask(x, y) for x, y in zip(a, b)]
    return a if a == b else "<generated>"


RUNNERS = {"tool_call": run_tool_call, "reasoning": run_reasoning, "dsv32_encode": run_encode,
           "dsv32_decode": run_decode, "template": run_template, "protocol": run_protocol,
           "transcription_adapter": run_transcription_adapter}


def main() -> None:
    data = json.loads(open(sys.argv[1], encoding="utf-8").read())
    api, tool_sets = data["api"], data.get("tools", {})
    results = {}
    for case in data["cases"]:
        try:
            results[case["id"]] = RUNNERS[case["kind"]](api, case, tool_sets)
        except BaseException as exc:  # the difference is the finding
            tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            results[case["id"]] = {"raised": type(exc).__name__, "message": tail[:500]}
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False, sort_keys=True)


if __name__ == "__main__":
    main()
