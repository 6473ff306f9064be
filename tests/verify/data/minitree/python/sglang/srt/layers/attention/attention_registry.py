import importlib

# name -> "module:Class", imported when the backend is picked
ATTENTION_BACKENDS = {
    "triton": "sglang.srt.layers.attention.triton_backend:TritonBackend",
    "ascend": "sglang.srt.layers.attention.ascend_backend:AscendBackend",
}


def create_backend(name):
    module, _, cls = ATTENTION_BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), cls)()
