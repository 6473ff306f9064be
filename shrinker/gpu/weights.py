"""Seeded random weights for the tiny model, made on the device (too big to carry: ~130 MB).

`--load-format dummy` fills every tensor with uniform(-1e-3, 1e-3) values, norms included, so the
residual stream is all embedding and attention hardly moves a logit: an attention backend could be
wrong and the greedy tokens would not change. These weights have the usual scale (normal, std
0.02; norms 1), so every layer shapes the tokens. Each tensor gets its own generator seeded from
(seed, name), so the file depends only on the config, the seed and torch's CPU generator; its
sha256 goes into the record, and a comparison on different weights says so instead of failing.

`checkpoint_shapes` is plain Python (tested on CPU); `write_weights` needs torch and safetensors.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

WEIGHTS_FILE = "model.safetensors"


def _linear(out: int, inp: int) -> tuple[tuple[int, int], str]:
    return (out, inp), "linear"


def _layer(prefix: str, c: dict, moe: bool) -> dict[str, tuple[tuple[int, ...], str]]:
    h, heads = c["hidden_size"], c["num_attention_heads"]
    nope, rope, v = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    q_lora, kv_lora = c["q_lora_rank"], c["kv_lora_rank"]
    t: dict[str, tuple[tuple[int, ...], str]] = {
        f"{prefix}.input_layernorm.weight": ((h,), "norm"),
        f"{prefix}.post_attention_layernorm.weight": ((h,), "norm"),
        f"{prefix}.self_attn.q_a_proj.weight": _linear(q_lora, h),
        f"{prefix}.self_attn.q_a_layernorm.weight": ((q_lora,), "norm"),
        f"{prefix}.self_attn.q_b_proj.weight": _linear(heads * (nope + rope), q_lora),
        f"{prefix}.self_attn.kv_a_proj_with_mqa.weight": _linear(kv_lora + rope, h),
        f"{prefix}.self_attn.kv_a_layernorm.weight": ((kv_lora,), "norm"),
        f"{prefix}.self_attn.kv_b_proj.weight": _linear(heads * (nope + v), kv_lora),
        f"{prefix}.self_attn.o_proj.weight": _linear(h, heads * v),
    }
    if not moe:
        inter = c["intermediate_size"]
        t[f"{prefix}.mlp.gate_proj.weight"] = _linear(inter, h)
        t[f"{prefix}.mlp.up_proj.weight"] = _linear(inter, h)
        t[f"{prefix}.mlp.down_proj.weight"] = _linear(h, inter)
        return t
    inter, n = c["moe_intermediate_size"], c["n_routed_experts"]
    t[f"{prefix}.mlp.gate.weight"] = _linear(n, h)
    t[f"{prefix}.mlp.gate.e_score_correction_bias"] = ((n,), "bias_f32")
    for e in range(n):
        t[f"{prefix}.mlp.experts.{e}.gate_proj.weight"] = _linear(inter, h)
        t[f"{prefix}.mlp.experts.{e}.up_proj.weight"] = _linear(inter, h)
        t[f"{prefix}.mlp.experts.{e}.down_proj.weight"] = _linear(h, inter)
    shared = inter * c["n_shared_experts"]
    t[f"{prefix}.mlp.shared_experts.gate_proj.weight"] = _linear(shared, h)
    t[f"{prefix}.mlp.shared_experts.up_proj.weight"] = _linear(shared, h)
    t[f"{prefix}.mlp.shared_experts.down_proj.weight"] = _linear(h, shared)
    return t


def checkpoint_shapes(config: dict) -> dict[str, tuple[tuple[int, ...], str]]:
    """Tensor name -> (shape, kind) of a DeepSeek-V3 checkpoint (HF names, NextN layer included)."""
    c, h, vocab = config, config["hidden_size"], config["vocab_size"]
    layers = c["num_hidden_layers"]
    t: dict[str, tuple[tuple[int, ...], str]] = {
        "model.embed_tokens.weight": ((vocab, h), "embed"),
        "model.norm.weight": ((h,), "norm"),
        "lm_head.weight": ((vocab, h), "linear"),
    }
    for i in range(layers + c.get("num_nextn_predict_layers", 0)):
        t.update(_layer(f"model.layers.{i}", c, moe=i >= c["first_k_dense_replace"]))
    for i in range(layers, layers + c.get("num_nextn_predict_layers", 0)):
        p = f"model.layers.{i}"
        t[f"{p}.embed_tokens.weight"] = ((vocab, h), "embed")
        t[f"{p}.enorm.weight"] = ((h,), "norm")
        t[f"{p}.hnorm.weight"] = ((h,), "norm")
        t[f"{p}.eh_proj.weight"] = _linear(h, 2 * h)
        t[f"{p}.shared_head.norm.weight"] = ((h,), "norm")
        t[f"{p}.shared_head.head.weight"] = ((vocab, h), "linear")
    return t


def _seed_for(seed: int, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "little") & (2**63 - 1)


def write_weights(model_dir: Path, out_dir: Path, seed: int = 0, std: float = 0.02) -> str:
    """Copy the model folder to `out_dir` and add seeded bf16 weights; returns their sha256."""
    import torch
    from safetensors.torch import save_file

    model_dir, out_dir = Path(model_dir), Path(out_dir)
    config = json.loads((model_dir / "config.json").read_text())
    if "quantization_config" in config:
        raise ValueError("seeded weights are bf16 only; serve the FP8 config with --load-format dummy")
    out_dir.mkdir(parents=True, exist_ok=True)
    for f in model_dir.glob("*.json"):
        shutil.copyfile(f, out_dir / f.name)
    tensors = {}
    for name, (shape, kind) in sorted(checkpoint_shapes(config).items()):
        g = torch.Generator().manual_seed(_seed_for(seed, name))
        if kind == "norm":
            tensors[name] = torch.ones(shape, dtype=torch.bfloat16)
        elif kind == "bias_f32":
            tensors[name] = torch.zeros(shape, dtype=torch.float32)
        else:
            tensors[name] = (torch.randn(shape, generator=g, dtype=torch.float32) * std).to(torch.bfloat16)
    save_file(tensors, str(out_dir / WEIGHTS_FILE), metadata={"format": "pt", "seed": str(seed)})
    h = hashlib.sha256()
    with (out_dir / WEIGHTS_FILE).open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
