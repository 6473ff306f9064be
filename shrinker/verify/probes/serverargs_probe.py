"""Construct the tree's ServerArgs for a model config and dump its resolved fields (verify env).

    python serverargs_probe.py SPEC.json OUT.json

SPEC: {"target": "module:Class", "model_dir": path holding config.json, "kwargs": {...},
       "pretend": a pretend_cuda spec or null}. A record with `resolve_once()` (0.5.20) is resolved by it.

ServerArgs resolves its defaults for the device it finds. On this CPU machine it would take the CPU
path, which a CUDA-only tree drops on purpose; with "pretend" set, everything (imports included)
runs as on that GPU, so both trees resolve the CUDA defaults that DeepSeek on NVIDIA gets. Nothing
runs on the device: ServerArgs only asks questions.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
import traceback


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "value") and hasattr(type(value), "__members__"):  # enums
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


def field_names(args) -> list[str]:
    """A dataclass's fields (to 0.5.19), or a msgspec Struct's public ones (0.5.20's ServerArgs is
    assembled with msgspec.defstruct; its `_`-fields are resolution bookkeeping)."""
    if dataclasses.is_dataclass(args):
        return [f.name for f in dataclasses.fields(args)]
    names = getattr(type(args), "__struct_fields__", None)
    if names is None:
        raise TypeError(f"{type(args).__name__} is neither a dataclass nor a msgspec Struct")
    return [n for n in names if not n.startswith("_")]


def main() -> None:
    spec = json.loads(open(sys.argv[1]).read())
    result: dict = {"fields": {}, "error": ""}
    try:
        if spec.get("pretend"):
            import pretend_cuda

            pretend_cuda.install(spec["pretend"])
        module, _, attr = spec["target"].partition(":")
        cls = getattr(importlib.import_module(module), attr)
        args = cls(model_path=spec["model_dir"], **spec.get("kwargs", {}))
        resolve = getattr(args, "resolve_once", None)
        if callable(resolve):  # from 0.5.20 construction leaves the record raw; this call resolves it
            resolve()
        for name in field_names(args):
            result["fields"][name] = _plain(getattr(args, name))
    except BaseException as exc:
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        result["error"] = "\n".join("".join(lines).rstrip().splitlines()[-8:])
    with open(sys.argv[2], "w") as f:
        json.dump(result, f, sort_keys=True)


if __name__ == "__main__":
    main()
