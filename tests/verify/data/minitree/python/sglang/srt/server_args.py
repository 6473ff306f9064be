import dataclasses
import json
import os
from typing import Optional

from sglang.srt.function_call.function_call_parser import FunctionCallParser

ATTENTION_BACKEND_CHOICES = ["triton", "flashinfer", "ascend"]
DEVICE_CHOICES = ["cuda", "npu"]


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    device: str = "cuda"
    attention_backend: Optional[str] = None
    tool_call_parser: Optional[str] = None
    context_length: Optional[int] = None
    skip_tokenizer_init: bool = False
    random_seed: Optional[int] = None

    def __post_init__(self):
        with open(os.path.join(self.model_path, "config.json")) as f:
            config = json.load(f)
        if self.attention_backend is None:
            self.attention_backend = "flashinfer" if config.get("kv_lora_rank") else "triton"
        if self.context_length is None:
            self.context_length = config.get("max_position_embeddings")


def add_cli_args(parser):
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--device", choices=DEVICE_CHOICES, default="cuda")
    parser.add_argument("--attention-backend", choices=ATTENTION_BACKEND_CHOICES)
    parser.add_argument("--tool-call-parser", choices=list(FunctionCallParser.ToolCallParserEnum))
    parser.add_argument("--enable-npu-graph", action="store_true")
    parser.add_argument("--mm-attention-backend", choices=["sdpa", "fa3"])
