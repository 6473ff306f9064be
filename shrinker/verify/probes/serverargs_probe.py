"""Construct the tree's ServerArgs for a model config and dump its resolved fields (verify env).

    python serverargs_probe.py SPEC.json OUT.json

SPEC: {"target": "module:Class", "model_dir": path holding config.json, "kwargs": {...},
       "preimport": [modules ServerArgs imports lazily],
       "gpu": {"name", "capability": [major, minor], "memory_bytes", "count"} or null}.

ServerArgs resolves its defaults for the device it finds. On this CPU machine it would take the CPU
path, which a CUDA-only tree drops on purpose; with "gpu" set, torch.cuda answers as that GPU would
(availability, name, capability, memory), so both trees resolve the CUDA defaults that DeepSeek on
NVIDIA gets. Nothing runs on the device: ServerArgs only asks questions.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
import traceback
from types import SimpleNamespace


def _pretend_gpu(gpu: dict) -> None:
    import torch

    cuda = torch.cuda
    major, minor = gpu["capability"]
    props = SimpleNamespace(name=gpu["name"], major=major, minor=minor, total_memory=gpu["memory_bytes"],
                            multi_processor_count=gpu.get("sm_count", 132), L2_cache_size=50 * 2**20,
                            gcnArchName="", uuid="00000000-0000-0000-0000-000000000000", is_integrated=False)
    cuda.is_available = lambda: True
    cuda.device_count = lambda: gpu.get("count", 1)
    cuda.current_device = lambda: 0
    cuda.get_device_name = lambda *a, **k: gpu["name"]
    cuda.get_device_capability = lambda *a, **k: (major, minor)
    cuda.get_device_properties = lambda *a, **k: props
    cuda.mem_get_info = lambda *a, **k: (gpu["memory_bytes"] - 2**30, gpu["memory_bytes"])
    cuda.is_bf16_supported = lambda *a, **k: True
    torch.version.cuda = gpu.get("cuda_version", "13.0")


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


def main() -> None:
    spec = json.loads(open(sys.argv[1]).read())
    result: dict = {"fields": {}, "error": ""}
    try:
        module, _, attr = spec["target"].partition(":")
        # Import first, with the real (CPU) torch: module-level device flags then skip the CUDA-only
        # kernel package, which cannot load here; only ServerArgs' own questions see the GPU.
        cls = getattr(importlib.import_module(module), attr)
        for name in spec.get("preimport", []):  # what ServerArgs imports lazily, same reason
            importlib.import_module(name)
        if spec.get("gpu"):
            _pretend_gpu(spec["gpu"])
        args = cls(model_path=spec["model_dir"], **spec.get("kwargs", {}))
        for f in dataclasses.fields(args):
            result["fields"][f.name] = _plain(getattr(args, f.name))
    except BaseException as exc:
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        result["error"] = "\n".join("".join(lines).rstrip().splitlines()[-8:])
    with open(sys.argv[2], "w") as f:
        json.dump(result, f, sort_keys=True)


if __name__ == "__main__":
    main()
