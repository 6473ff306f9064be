from pydantic import BaseModel

from sglang.srt.layers.helper_ops import fused_add, scale
from sglang.srt.utils import get_device


class DeepseekV2Config(BaseModel):
    hidden_size: int = 8


class DeepseekV2ForCausalLM:
    device = get_device()

    def forward(self, x):
        return scale(fused_add(x, x), 2)


EntryClass = DeepseekV2ForCausalLM
