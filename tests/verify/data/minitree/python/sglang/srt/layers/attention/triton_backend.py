from sglang.srt.layers.helper_ops import fused_add


class TritonBackend:
    def forward(self, q, k):
        return fused_add(q, k)
