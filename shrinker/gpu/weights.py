"""Seeded random weights for the tiny model, made on the device (too big to carry: ~130 MB).

`--load-format dummy` fills every tensor with uniform(-1e-3, 1e-3) values, norms included, so the
residual stream is all embedding and attention hardly moves a logit: an attention backend could be
wrong and the greedy tokens would not change. These weights have the usual scale (normal, std
0.02; norms 1), so every layer shapes the tokens. Each tensor gets its own generator seeded from
(seed, name), so the file depends only on the config, the seed and torch's CPU generator; its
sha256 goes into the record, and a comparison on different weights says so instead of failing.

torch's float32 normal generator takes CPU-dependent (vectorised) paths: two machines have given
different bytes. `exact=True` takes no random generator at all: each tensor's values are int16s read
from SHAKE-256 of its (seed, name), scaled by one float32 multiply — uniform(-a, a) with the same
std, and the same bytes on any CPU and any torch version (int16 -> float32 is exact, a float32
multiply and the bf16 cast round the same way everywhere). Seen once: torch.randint gave other
bytes under torch 2.11 on the device than under 2.13 here. The launches recorded on one machine
and compared on another (multi-GPU, part 5) use these, and cases.toml pins their sha256.

DeepSeek-V4 (`shrink tiny-model --arch v4`) has its own layout, in DeepSeek's tensor names and FP8:
shrinker.gpu.weights_v4 (e4m3 linears and experts with float32 128x128 block scales, bf16 embedding,
head, gate, compressors and norms, float32 hyper-connection, sink, ape and compressor-norm parameters).
Its FP8 weights are the same seeded draws cast to e4m3 after a seeded power-of-two block scale.

`checkpoint_shapes` and weights_v4 are plain Python (tested on CPU); `write_weights` needs torch and
safetensors.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
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
    if c.get("index_topk") is not None:  # DeepSeek-V3.2's DSA indexer (layers/attention/dsa/dsa_indexer.py)
        ih, idim = c["index_n_heads"], c["index_head_dim"]
        t[f"{prefix}.self_attn.indexer.wq_b.weight"] = _linear(ih * idim, q_lora)
        t[f"{prefix}.self_attn.indexer.wk.weight"] = _linear(idim, h)
        t[f"{prefix}.self_attn.indexer.weights_proj.weight"] = _linear(ih, h)
        t[f"{prefix}.self_attn.indexer.k_norm.weight"] = ((idim,), "norm")
        t[f"{prefix}.self_attn.indexer.k_norm.bias"] = ((idim,), "bias")
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
    """Tensor name -> (shape, kind) of a DeepSeek-V3 / V3.2 checkpoint (HF names, NextN layer included)."""
    if config.get("model_type") == "deepseek_v4":
        raise ValueError("DeepSeek-V4 has its own layout: shrinker.gpu.weights_v4.checkpoint_layout")
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


EXACT_BITS = 15  # int16 values, in [-2**15, 2**15)


def exact_ints(seed: int, numel: int) -> bytes:
    """`numel` little-endian int16s from SHAKE-256 of the seed: the same bytes on every machine."""
    return hashlib.shake_256(f"shrinker-weights:{seed}".encode()).digest(2 * numel)


def draw(shape: tuple[int, ...], seed: int, std: float, exact: bool):
    """One seeded float32 tensor of std `std`: normal (CPU-dependent bytes) or exact uniform (same bytes anywhere)."""
    import math

    import torch

    if not exact:
        g = torch.Generator().manual_seed(seed)
        return torch.randn(shape, generator=g, dtype=torch.float32) * std
    numel = math.prod(shape)
    if sys.byteorder != "little":  # x86-64 and Arm64 Linux are little-endian; the int16s are read as such
        raise RuntimeError("exact weights are defined for little-endian machines")
    ints = torch.frombuffer(bytearray(exact_ints(seed, numel)), dtype=torch.int16)
    # uniform(-a, a) has std a/sqrt(3); int16 -> float32 is exact, one multiply rounds once
    scale = torch.tensor(std * 3 ** 0.5 / (1 << EXACT_BITS), dtype=torch.float32)
    return ints.to(torch.float32).reshape(shape) * scale


def fp8_block_quantize(w, seed: int):
    """float32 [out, in] -> (e4m3 weight, float32 scales [ceil(out/128), ceil(in/128)]).

    Each 128x128 block's scale is 2**-e, e in {6, 7, 8} read from SHAKE-256 of `seed` (powers of two:
    exact in float32 and in UE8M0), so the dequantised weight (e4m3 * scale) keeps about w's std
    (0.02 * 2**e is 1.3 to 5.1 in e4m3, whose largest value is 448) and blocks differ in scale.
    """
    import torch

    from shrinker.gpu.weights_v4 import BLOCK

    out, inp = w.shape
    sn, sk = -(-out // BLOCK), -(-inp // BLOCK)
    ints = torch.frombuffer(bytearray(exact_ints(seed, sn * sk)), dtype=torch.int16).to(torch.int32)
    e = (ints.remainder(3) + 6).reshape(sn, sk)
    mult = (torch.ones_like(e) << e).to(torch.float32)  # 2**e, exact
    full = mult.repeat_interleave(BLOCK, 0).repeat_interleave(BLOCK, 1)[:out, :inp]
    q = (w * full).to(torch.float8_e4m3fn)
    return q, (1.0 / mult).to(torch.float32)


def v4_tensors(config: dict, seed: int, std: float, exact: bool) -> dict:
    """The tiny V4's checkpoint (shrinker.gpu.weights_v4.checkpoint_layout), seeded per tensor name."""
    import torch

    from shrinker.gpu.weights_v4 import checkpoint_layout

    dtypes = {"bf16": torch.bfloat16, "f32": torch.float32}
    layout = checkpoint_layout(config)
    tensors = {}
    for name, (shape, dtype, init) in sorted(layout.items()):
        if init == "scale":
            continue  # made with its weight
        if init == "fp8":
            w = draw(shape, _seed_for(seed, name), std, exact)
            base = name.removesuffix(".weight")
            q, s = fp8_block_quantize(w, _seed_for(seed, base + ".scale"))
            if tuple(s.shape) != layout[base + ".scale"][0]:
                raise AssertionError(f"{base}.scale: {tuple(s.shape)} != {layout[base + '.scale'][0]}")
            tensors[name], tensors[base + ".scale"] = q, s
        elif init in ("ones", "ones_f32"):
            tensors[name] = torch.ones(shape, dtype=dtypes[dtype])
        elif init == "zeros_f32":
            tensors[name] = torch.zeros(shape, dtype=torch.float32)
        elif init in ("normal", "f32"):
            tensors[name] = draw(shape, _seed_for(seed, name), std, exact).to(dtypes[dtype])
        else:
            raise ValueError(f"{name}: unknown init {init!r}")
    if sorted(tensors) != sorted(layout):
        raise AssertionError("V4 tensors do not match the layout")
    return tensors


def content_sha256(tensors: dict) -> str:
    """sha256 of the tensors themselves (sorted names, dtypes, shapes, raw bytes).

    The file's own hash also depends on how the installed safetensors lays out its header: the same
    exact weights gave other file hashes on the device (torch 2.11) than here (torch 2.13).
    """
    import torch

    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}\n".encode())
        h.update(t.view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def write_weights(model_dir: Path, out_dir: Path, seed: int = 0, std: float = 0.02, exact: bool = False) -> str:
    """Copy the model folder to `out_dir` and add seeded bf16 weights.

    Returns "<file sha256> <content sha256>" (see content_sha256).
    """
    import torch
    from safetensors.torch import save_file

    model_dir, out_dir = Path(model_dir), Path(out_dir)
    config = json.loads((model_dir / "config.json").read_text())
    v4 = config.get("model_type") == "deepseek_v4"
    if "quantization_config" in config and not v4:
        raise ValueError("seeded V3/V3.2 weights are bf16 only; serve the FP8 config with --load-format dummy")
    out_dir.mkdir(parents=True, exist_ok=True)
    # only the JSON files: V4's expert-layout.safetensors (a zero marker for --load-format dummy) stays
    # behind, the checkpoint carries the real expert tensors and the loader reads every *.safetensors
    for f in model_dir.glob("*.json"):
        shutil.copyfile(f, out_dir / f.name)
    tensors = v4_tensors(config, seed, std, exact) if v4 else {}
    for name, (shape, kind) in ([] if v4 else sorted(checkpoint_shapes(config).items())):
        if kind == "norm":
            tensors[name] = torch.ones(shape, dtype=torch.bfloat16)
        elif kind == "bias":
            tensors[name] = torch.zeros(shape, dtype=torch.bfloat16)
        elif kind == "bias_f32":
            tensors[name] = torch.zeros(shape, dtype=torch.float32)
        else:
            tensors[name] = draw(shape, _seed_for(seed, name), std, exact).to(torch.bfloat16)
    meta = {"format": "pt", "seed": str(seed), "generator": "exact-uniform" if exact else "normal"}
    if v4:
        meta["fp8"] = "e4m3, float32 scale per 128x128 block (2**-6..2**-8)"
    save_file(tensors, str(out_dir / WEIGHTS_FILE), metadata=meta)
    h = hashlib.sha256()
    with (out_dir / WEIGHTS_FILE).open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return f"{h.hexdigest()} {content_sha256(tensors)}"
