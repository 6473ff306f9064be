"""The tiny DeepSeek-V4's checkpoint layout, as upstream SGLang 0.5.17 loads it (plain Python, tested on CPU).

Derived from upstream 0.5.17's `models/deepseek_v4.py` (DeepseekV4ForCausalLM.load_weights,
remap_weight_name_to_dpsk_hf_format, MqaAttentionBase/MQALayer, DeepseekV4DecoderLayer,
DeepseekV4Model, make_hc_mixing_params/make_hc_head_params), `layers/attention/dsv4/compressor.py`
(Compressor), `layers/attention/dsv4/indexer.py` (C4Indexer), `models/deepseek_v2.py` (MoEGate,
DeepseekV2MoE) and `models/deepseek_v4_nextn.py` (DeepseekV4ModelNextN):

- Names are DeepSeek's own (`embed.weight`, `layers.N.attn.wq_a.weight`, `layers.N.ffn.experts.E.w1.weight`,
  `mtp.0.…`), as the released V4 checkpoints carry them: the loader remaps them to its parameters
  (`.attn.` -> `.self_attn.`, `.ffn.` -> `.mlp.`, `attn_norm` -> `input_layernorm`, `w1/w2/w3` ->
  `gate/down/up_proj`, `.scale` -> `.weight_scale_inv`), and two of its steps need those names: the FP8
  `wo_a` check and dequantisation (`.wo_a.weight`/`.wo_a.scale`) and the MTP layer's `mtp.0.` prefix.
- FP8 (e4m3) with one float32 scale per 128x128 block (`.scale`, [ceil(out/128), ceil(in/128)]): every
  linear built with the model's quant_config — attention wq_a, wkv (fused by the loader into wqkv_a),
  wq_b, wo_a (the loader refuses a non-FP8 wo_a while SGLANG_OPT_FP8_WO_A_GEMM is on, its default),
  wo_b; the indexer's wq_b; routed and shared experts; the MTP layer's e_proj/h_proj.
- bf16: embedding, head, the MoE gate, the compressors' wkv and wgate (the loader concatenates them into
  `wkv_gate`, bf16 without quantisation), the indexer's weights_proj, RMSNorm weights.
- float32: attn_sink [heads], the hyper-connection (mHC) mixing parameters hc_{attn,ffn}_{fn,base,scale}
  ([(2+hc)*hc, hc*hidden], [(2+hc)*hc], [3]) and the head's hc_head_{fn,base,scale} ([hc, hc*hidden],
  [hc], [1]), the compressors' `ape` [ratio, coff*head_dim] (coff 2 where ratio is 4) and `norm`
  [head_dim], the gate's bias (e_score_correction_bias, noaux_tc).
- Per layer, compress_ratios[layer] picks the attention's extras: 4 -> compressor (head_dim 512, overlap)
  and C4 indexer (wq_b, weights_proj and its own compressor of index_head_dim); 128 -> compressor only;
  0 -> neither. The MTP layer (num_nextn_predict_layers 1) always has ratio 0
  (deepseek_v4_nextn.COMPRESS_RATIO_NEXTN_LAYER); its embedding and head are the model's (the loader skips
  `mtp.0.emb`/`mtp.0.head`), so they are not written.

`checkpoint_layout(config)` -> {name: (shape, dtype, init)}; `expected_parameters(config)` -> the
parameters upstream's DeepseekV4ForCausalLM should end with ({name: (shape, dtype)}), used by the tests
to check the layout covers every one of them after the loader's renaming and fusions.
"""

from __future__ import annotations

BLOCK = 128  # weight_block_size [128, 128] (tiny_model.FP8_QUANTIZATION)

# init kinds: "normal" (bf16 draw), "fp8" (e4m3 draw with its ".scale"), "scale" (float32, made with its
# weight), "f32" (float32 draw), "ones" / "ones_f32", "zeros_f32"
Entry = tuple[tuple[int, ...], str, str]


def _blocks(n: int) -> int:
    return -(-n // BLOCK)


def _fp8(t: dict, name: str, out: int, inp: int) -> None:
    t[f"{name}.weight"] = ((out, inp), "f8_e4m3", "fp8")
    t[f"{name}.scale"] = ((_blocks(out), _blocks(inp)), "f32", "scale")


def _compressor(t: dict, p: str, c: dict, ratio: int, head_dim: int) -> None:
    coff = 2 if ratio == 4 else 1  # Compressor: overlap = ratio == 4; coff = 1 + overlap
    h = c["hidden_size"]
    t[f"{p}.ape"] = ((ratio, coff * head_dim), "f32", "f32")
    t[f"{p}.wkv.weight"] = ((coff * head_dim, h), "bf16", "normal")
    t[f"{p}.wgate.weight"] = ((coff * head_dim, h), "bf16", "normal")
    t[f"{p}.norm.weight"] = ((head_dim,), "f32", "ones_f32")


def _block(t: dict, p: str, c: dict, ratio: int) -> None:
    """One decoder layer (DeepseekV4DecoderLayer) under prefix `p` (`layers.N` or `mtp.0`)."""
    h, heads, hd = c["hidden_size"], c["num_attention_heads"], c["head_dim"]
    q_lora, o_lora, groups, hc = c["q_lora_rank"], c["o_lora_rank"], c["o_groups"], c["hc_mult"]
    if ratio not in (0, 4, 128):
        raise ValueError(f"V4 compress_ratio must be 0, 4 or 128, not {ratio}")
    t[f"{p}.attn_norm.weight"] = ((h,), "bf16", "ones")
    t[f"{p}.ffn_norm.weight"] = ((h,), "bf16", "ones")
    mix = (2 + hc) * hc
    for part in ("attn", "ffn"):
        t[f"{p}.hc_{part}_fn"] = ((mix, hc * h), "f32", "f32")
        t[f"{p}.hc_{part}_base"] = ((mix,), "f32", "f32")
        t[f"{p}.hc_{part}_scale"] = ((3,), "f32", "ones_f32")
    a = f"{p}.attn"
    t[f"{a}.attn_sink"] = ((heads,), "f32", "f32")
    _fp8(t, f"{a}.wq_a", q_lora, h)
    _fp8(t, f"{a}.wkv", hd, h)
    t[f"{a}.q_norm.weight"] = ((q_lora,), "bf16", "ones")
    t[f"{a}.kv_norm.weight"] = ((hd,), "bf16", "ones")
    _fp8(t, f"{a}.wq_b", heads * hd, q_lora)
    _fp8(t, f"{a}.wo_a", groups * o_lora, heads * hd // groups)
    _fp8(t, f"{a}.wo_b", h, groups * o_lora)
    if ratio in (4, 128):
        _compressor(t, f"{a}.compressor", c, ratio, hd)
    if ratio == 4:
        ih, idim = c["index_n_heads"], c["index_head_dim"]
        _fp8(t, f"{a}.indexer.wq_b", ih * idim, q_lora)
        t[f"{a}.indexer.weights_proj.weight"] = ((ih, h), "bf16", "normal")
        _compressor(t, f"{a}.indexer.compressor", c, 4, idim)
    f = f"{p}.ffn"
    n, inter = c["n_routed_experts"], c["moe_intermediate_size"]
    t[f"{f}.gate.weight"] = ((n, h), "bf16", "normal")
    t[f"{f}.gate.bias"] = ((n,), "f32", "zeros_f32")
    for e in range(n):
        _fp8(t, f"{f}.experts.{e}.w1", inter, h)
        _fp8(t, f"{f}.experts.{e}.w2", h, inter)
        _fp8(t, f"{f}.experts.{e}.w3", inter, h)
    shared = inter * c["n_shared_experts"]
    _fp8(t, f"{f}.shared_experts.w1", shared, h)
    _fp8(t, f"{f}.shared_experts.w2", h, shared)
    _fp8(t, f"{f}.shared_experts.w3", shared, h)


def checkpoint_layout(config: dict) -> dict[str, Entry]:
    """Tensor name -> (shape, dtype, init) of a DeepSeek-V4 FP8 checkpoint in DeepSeek's names."""
    c = config
    if c.get("model_type") != "deepseek_v4":
        raise ValueError("checkpoint_layout lays out DeepSeek-V4 only")
    if c.get("n_hash_layers", 0) or c.get("num_hash_layers", 0):
        # hash-routed layers load an integer token->expert table (gate.tid2eid) and no gate bias
        raise ValueError("hash-routed MoE layers (n_hash_layers > 0) are not laid out")
    if c.get("first_k_dense_replace", 0):
        raise ValueError("every V4 layer is MoE (first_k_dense_replace 0)")
    h, vocab, hc = c["hidden_size"], c["vocab_size"], c["hc_mult"]
    layers, nextn = c["num_hidden_layers"], c.get("num_nextn_predict_layers", 0)
    ratios = c["compress_ratios"]
    if len(ratios) < layers + nextn:
        raise ValueError("compress_ratios needs one entry per layer, the MTP layer's included")
    t: dict[str, Entry] = {
        "embed.weight": ((vocab, h), "bf16", "normal"),
        "head.weight": ((vocab, h), "bf16", "normal"),
        "norm.weight": ((h,), "bf16", "ones"),
        "hc_head_fn": ((hc, hc * h), "f32", "f32"),
        "hc_head_base": ((hc,), "f32", "f32"),
        "hc_head_scale": ((1,), "f32", "ones_f32"),
    }
    for i in range(layers):
        _block(t, f"layers.{i}", c, ratios[i])
    if nextn > 1:
        raise ValueError("upstream loads one MTP layer (num_nextn_predict_layers 1)")
    if nextn:
        m = "mtp.0"
        _block(t, m, c, 0)  # deepseek_v4_nextn.COMPRESS_RATIO_NEXTN_LAYER
        _fp8(t, f"{m}.e_proj", h, h)
        _fp8(t, f"{m}.h_proj", h, h)
        t[f"{m}.enorm.weight"] = ((h,), "bf16", "ones")
        t[f"{m}.hnorm.weight"] = ((h,), "bf16", "ones")
        t[f"{m}.norm.weight"] = ((h,), "bf16", "ones")
        t[f"{m}.hc_head_fn"] = ((hc, hc * h), "f32", "f32")
        t[f"{m}.hc_head_base"] = ((hc,), "f32", "f32")
        t[f"{m}.hc_head_scale"] = ((1,), "f32", "ones_f32")
    return t


def _expected_block(t: dict, p: str, c: dict, ratio: int) -> None:
    """Parameters of one DeepseekV4DecoderLayer (fused forms: wqkv_a, wkv_gate, gate_up_proj, w13/w2)."""
    h, heads, hd = c["hidden_size"], c["num_attention_heads"], c["head_dim"]
    q_lora, o_lora, groups, hc = c["q_lora_rank"], c["o_lora_rank"], c["o_groups"], c["hc_mult"]
    mix = (2 + hc) * hc
    for part in ("attn", "ffn"):
        t[f"{p}.hc_{part}_fn"] = ((mix, hc * h), "f32")
        t[f"{p}.hc_{part}_base"] = ((mix,), "f32")
        t[f"{p}.hc_{part}_scale"] = ((3,), "f32")
    t[f"{p}.input_layernorm.weight"] = ((h,), "bf16")
    t[f"{p}.post_attention_layernorm.weight"] = ((h,), "bf16")
    a = f"{p}.self_attn"
    t[f"{a}.attn_sink"] = ((heads,), "f32")

    def lin(name: str, out: int, inp: int) -> None:
        t[f"{name}.weight"] = ((out, inp), "f8_e4m3")
        t[f"{name}.weight_scale_inv"] = ((_blocks(out), _blocks(inp)), "f32")

    lin(f"{a}.wqkv_a", q_lora + hd, h)  # SGLANG_OPT_FUSE_WQA_WKV (default on)
    t[f"{a}.q_norm.weight"] = ((q_lora,), "bf16")
    t[f"{a}.kv_norm.weight"] = ((hd,), "bf16")
    lin(f"{a}.wq_b", heads * hd, q_lora)
    lin(f"{a}.wo_a", groups * o_lora, heads * hd // groups)  # SGLANG_OPT_FP8_WO_A_GEMM (default on)
    lin(f"{a}.wo_b", h, groups * o_lora)

    def comp(q: str, r: int, d: int) -> None:
        coff = 2 if r == 4 else 1
        t[f"{q}.ape"] = ((r, coff * d), "f32")
        t[f"{q}.wkv_gate.weight"] = ((2 * coff * d, h), "bf16")
        t[f"{q}.norm.weight"] = ((d,), "f32")

    if ratio in (4, 128):
        comp(f"{a}.compressor", ratio, hd)
    if ratio == 4:
        ih, idim = c["index_n_heads"], c["index_head_dim"]
        lin(f"{a}.indexer.wq_b", ih * idim, q_lora)
        t[f"{a}.indexer.weights_proj.weight"] = ((ih, h), "bf16")
        comp(f"{a}.indexer.compressor", 4, idim)
    f = f"{p}.mlp"
    n, inter = c["n_routed_experts"], c["moe_intermediate_size"]
    t[f"{f}.gate.weight"] = ((n, h), "bf16")
    t[f"{f}.gate.e_score_correction_bias"] = ((n,), "f32")
    t[f"{f}.experts.w13_weight"] = ((n, 2 * inter, h), "f8_e4m3")
    t[f"{f}.experts.w13_weight_scale_inv"] = ((n, 2 * _blocks(inter), _blocks(h)), "f32")
    t[f"{f}.experts.w2_weight"] = ((n, h, inter), "f8_e4m3")
    t[f"{f}.experts.w2_weight_scale_inv"] = ((n, _blocks(h), _blocks(inter)), "f32")
    shared = inter * c["n_shared_experts"]
    lin(f"{f}.shared_experts.gate_up_proj", 2 * shared, h)
    lin(f"{f}.shared_experts.down_proj", h, shared)


def expected_parameters(config: dict, nextn: bool = False) -> dict[str, tuple[tuple[int, ...], str]]:
    """What upstream's DeepseekV4ForCausalLM (or, `nextn`, DeepseekV4ForCausalLMNextN) should load.

    One GPU, no shared-expert fusion into the routed MoE (our launches), fused wqkv_a and FP8 wo_a
    (upstream's defaults). Names after the loader's renaming.
    """
    c = config
    h, vocab, hc = c["hidden_size"], c["vocab_size"], c["hc_mult"]
    t: dict[str, tuple[tuple[int, ...], str]] = {
        "model.embed_tokens.weight": ((vocab, h), "bf16"),
        "lm_head.weight": ((vocab, h), "bf16"),
        "model.hc_head_fn": ((hc, hc * h), "f32"),
        "model.hc_head_base": ((hc,), "f32"),
        "model.hc_head_scale": ((1,), "f32"),
    }
    if not nextn:
        t["model.norm.weight"] = ((h,), "bf16")
        for i in range(c["num_hidden_layers"]):
            _expected_block(t, f"model.layers.{i}", c, c["compress_ratios"][i])
        return t
    _expected_block(t, "model.decoder", c, 0)
    for name in ("e_proj", "h_proj"):
        t[f"model.{name}.weight"] = ((h, h), "f8_e4m3")
        t[f"model.{name}.weight_scale_inv"] = ((_blocks(h), _blocks(h)), "f32")
    for name in ("enorm", "hnorm", "shared_head.norm"):
        t[f"model.{name}.weight"] = ((h,), "bf16")
    return t
