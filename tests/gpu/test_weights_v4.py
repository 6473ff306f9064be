"""The tiny DeepSeek-V4's seeded checkpoint: every parameter upstream 0.5.17 loads, at its shape and dtype.

The checks run upstream's own name remapping (DeepseekV4ForCausalLM.remap_weight_name_to_dpsk_hf_format,
taken from the cached 0.5.17 tree) over our names, then the loader's fusions (wq_a+wkv -> wqkv_a,
compressor wkv+wgate -> wkv_gate, experts -> w13/w2, shared gate/up -> gate_up_proj), and compare the
result with the parameters read off upstream's constructors (weights_v4.expected_parameters).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from shrinker.gpu.tiny_model import model_config
from shrinker.gpu.weights_v4 import checkpoint_layout, expected_parameters

SRT = Path(__file__).resolve().parents[2] / "upstream/cache/trees/pypi-sglang-0.5.17/python/sglang/srt"
ROUTED_EXPERT_KEY = r"\.experts\.\d+\.(?:w[123]|down_proj|up_proj|gate_proj)\.weight$"  # weight_utils.py


def _src(rel: str) -> str:
    path = SRT / rel
    if not path.is_file():
        pytest.skip("upstream 0.5.17 tree not cached here")
    return path.read_text()


def _upstream_remap():
    """Upstream's remap_weight_name_to_dpsk_hf_format, compiled from its source (pure string handling)."""
    tree = ast.parse(_src("models/deepseek_v4.py"))
    fn = next(n for n in ast.walk(tree)
              if isinstance(n, ast.FunctionDef) and n.name == "remap_weight_name_to_dpsk_hf_format")
    fn.decorator_list = []
    ns: dict = {"Optional": __import__("typing").Optional}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "deepseek_v4.py", "exec"), ns)
    return ns["remap_weight_name_to_dpsk_hf_format"]


_NEXTN_OUT_OF_LAYER = ["shared_head.norm", "shared_head.head", "embed_tokens", ".e_proj", "h_proj", "enorm",
                       "hnorm", "hc_head_base", "hc_head_fn", "hc_head_scale"]  # load_weights, is_nextn


def _load(config: dict, nextn: bool) -> dict[str, tuple[tuple[int, ...], str]]:
    """Our checkpoint through upstream's renaming and the loader's fusions: parameter -> (shape, dtype)."""
    remap = _upstream_remap()
    layers = config["num_hidden_layers"]
    out: dict[str, tuple[tuple[int, ...], str]] = {}
    pending: dict[str, dict[str, tuple]] = {}
    experts: dict[str, dict] = {}
    for ck, (shape, dtype, _init) in sorted(checkpoint_layout(config).items()):
        name = remap(ck, is_nextn=nextn, num_hidden_layers=layers)
        if not nextn:
            if name.startswith("mtp") or (name.startswith("model.layers.") and int(name.split(".")[2]) >= layers):
                continue
        else:
            if "shared_head.head" in name or "embed_tokens" in name:
                continue
            prefix = f"model.layers.{layers}"
            if not name.startswith(prefix):
                continue
            if any(w in name for w in _NEXTN_OUT_OF_LAYER):
                name = name.replace(prefix, "model")
            else:
                name = name.replace(prefix, "model.decoder")
        m = re.match(r"(.*\.mlp\.experts)\.(\d+)\.(gate_proj|up_proj|down_proj)\.(weight|weight_scale_inv)$", name)
        if m:
            experts.setdefault(m[1], {})[(int(m[2]), m[3], m[4])] = (shape, dtype)
            continue
        if ".compressor.w" in name:  # COMPRESSOR_PART: wkv and wgate, concatenated on dim 0
            key = name.rsplit(".", 2)[0]
            assert name.endswith((".wkv.weight", ".wgate.weight")), name
            pending.setdefault(key + ".wkv_gate.weight", {})[name.rsplit(".", 2)[1]] = (shape, dtype)
            continue
        m = re.match(r"(.*)\.(wq_a|wkv)\.(weight|weight_scale_inv)$", name)
        if m:  # SGLANG_OPT_FUSE_WQA_WKV: q then kv, concatenated on dim 0
            pending.setdefault(f"{m[1]}.wqkv_a.{m[3]}", {})[m[2]] = (shape, dtype)
            continue
        m = re.match(r"(.*\.shared_experts)\.(gate_proj|up_proj)\.(weight|weight_scale_inv)$", name)
        if m:  # stacked ("gate_up_proj", "gate_proj", 0), ("gate_up_proj", "up_proj", 1)
            pending.setdefault(f"{m[1]}.gate_up_proj.{m[3]}", {})[m[2]] = (shape, dtype)
            continue
        assert name not in out, name
        out[name] = (shape, dtype)
    for name, parts in pending.items():
        assert len(parts) == 2, (name, parts)  # the loader asserts nothing is left half-fused
        (s0, d0), (s1, d1) = parts.values()
        assert d0 == d1 and s0[1:] == s1[1:], (name, parts)
        out[name] = ((s0[0] + s1[0],) + s0[1:], d0)
    n = config["n_routed_experts"]
    for prefix, got in experts.items():
        for suffix, projs in (("weight", ("gate_proj", "up_proj")), ("weight", ("down_proj",)),
                              ("weight_scale_inv", ("gate_proj", "up_proj")), ("weight_scale_inv", ("down_proj",))):
            shapes = [got.pop((e, p, suffix)) for e in range(n) for p in projs]
            assert len({s for s in shapes}) == 1, (prefix, projs)
            (rows, cols), dtype = shapes[0]
            param = ("w13_" if len(projs) == 2 else "w2_") + suffix
            out[f"{prefix}.{param}"] = ((n, rows * len(projs), cols), dtype)
        assert not got, sorted(got)[:3]  # no expert beyond n_routed_experts
    return out


def test_checkpoint_loads_every_parameter_of_the_main_model():
    c = model_config(arch="v4")
    got, want = _load(c, nextn=False), expected_parameters(c)
    assert sorted(set(want) - set(got)) == []  # upstream would warn "Some weights are not initialized"
    assert sorted(set(got) - set(want)) == []  # upstream would warn "... not found in params_dict."
    assert {k: got[k] for k in want} == want


def test_checkpoint_loads_every_parameter_of_the_mtp_layer():
    c = model_config(arch="v4")
    got, want = _load(c, nextn=True), expected_parameters(c, nextn=True)
    # the NextN model shares the main model's embedding and head (upstream skips checking them)
    want = {k: v for k, v in want.items() if k not in ("model.embed_tokens.weight", "lm_head.weight")}
    assert got == want


def test_tiny_v4_shapes():
    c = model_config(arch="v4")
    t = checkpoint_layout(c)
    assert c["compress_ratios"][:4] == [0, 4, 128, 4]
    # grouped output projection: wo_a maps each group's heads*head_dim/groups to o_lora_rank
    assert t["layers.0.attn.wo_a.weight"] == ((8 * 512, 64 * 512 // 8), "f8_e4m3", "fp8")
    assert t["layers.0.attn.wo_a.scale"] == ((32, 32), "f32", "scale")
    assert t["layers.0.attn.wq_b.weight"][0] == (64 * 512, 512)
    assert t["layers.0.attn.wkv.weight"][0] == (512, 1024)  # one KV head of head_dim 512
    # ratio 0: neither compressor nor indexer; 4: both (overlap: coff 2); 128: compressor only (coff 1)
    assert not any(k.startswith(("layers.0.attn.compressor", "layers.0.attn.indexer")) for k in t)
    assert t["layers.1.attn.compressor.ape"][0] == (4, 2 * 512)
    assert t["layers.1.attn.compressor.wkv.weight"][:2] == ((2 * 512, 1024), "bf16")
    assert t["layers.1.attn.indexer.wq_b.weight"][0] == (64 * 128, 512)
    assert t["layers.1.attn.indexer.compressor.ape"][0] == (4, 2 * 128)
    assert t["layers.1.attn.indexer.compressor.norm.weight"][:2] == ((128,), "f32")
    assert t["layers.2.attn.compressor.ape"][0] == (128, 512)
    assert not any(k.startswith("layers.2.attn.indexer") for k in t)
    # hyper-connections: hc_mult 4 -> mix (2 + 4) * 4 = 24 rows over 4 * hidden
    assert t["layers.3.hc_ffn_fn"][:2] == ((24, 4096), "f32") and t["hc_head_fn"][:2] == ((4, 4096), "f32")
    assert t["layers.3.ffn.gate.bias"] == ((16,), "f32", "zeros_f32")
    assert t["layers.3.ffn.experts.15.w2.weight"][:2] == ((1024, 256), "f8_e4m3")
    assert "layers.3.ffn.experts.16.w1.weight" not in t and "layers.4.attn_norm.weight" not in t
    # the MTP layer: ratio 0, its own projections and norms; no embedding or head of its own
    assert t["mtp.0.e_proj.weight"][:2] == ((1024, 1024), "f8_e4m3") and "mtp.0.attn.compressor.ape" not in t
    assert not any(k.startswith(("mtp.0.emb", "mtp.0.head")) for k in t)
    # every FP8 weight has its block scale and nothing else is FP8; every scale has its weight
    for k, (shape, dtype, init) in t.items():
        if dtype == "f8_e4m3":
            s = t[k.removesuffix(".weight") + ".scale"]
            assert s[0] == tuple(-(-d // 128) for d in shape) and s[1:] == ("f32", "scale")
        if init == "scale":
            assert t[k.removesuffix(".scale") + ".weight"][1] == "f8_e4m3"
    # upstream's probe (weight_utils.probe_routed_expert_weight_dtype) finds FP8 experts in this checkpoint
    hits = {t[k][1] for k in t if re.search(ROUTED_EXPERT_KEY, k)}
    assert hits == {"f8_e4m3"}


def test_upstream_constructors_say_what_the_layout_assumes():
    """The facts the layout rests on, in upstream 0.5.17's source (a change there fails here)."""
    v4 = _src("models/deepseek_v4.py")
    for line in ("mix_hc = (2 + hc_mult) * hc_mult", "hc_dim = hc_mult * hidden_size",
                 "torch.empty(self.n_heads, dtype=torch.float32)",  # attn_sink
                 "self.q_lora_rank + self.head_dim,",  # wqkv_a
                 "self.n_heads * self.head_dim // self.n_groups,", "self.n_groups * self.o_lora_rank,",  # wo_a
                 'name.replace(".gate.bias", ".gate.e_score_correction_bias")', "COMPRESSOR_PART = \".compressor.w\"",
                 "fused_weight = torch.cat([kv, wgate], dim=0)",
                 'torch.cat(\n                                        [bucket["q"], bucket["kv"]], dim=0'):
        assert line in v4, line
    comp = _src("layers/attention/dsv4/compressor.py")
    for line in ("self.coff = coff = 1 + self.overlap", "self.overlap = self.ratio == 4",
                 "torch.empty(self.ratio, coff * self.head_dim, dtype=torch.float32)",
                 "2 * coff * self.head_dim,", "self.head_dim, eps=config.rms_norm_eps, weight_dtype=torch.float32"):
        assert line in comp, line
    idx = _src("layers/attention/dsv4/indexer.py")
    assert "self.n_heads * self.head_dim,\n            bias=False,\n            quant_config=quant_config," in idx
    assert "self.n_heads,\n            bias=False,\n            quant_config=None," in idx  # weights_proj bf16
    assert "COMPRESS_RATIO_NEXTN_LAYER = 0" in _src("models/deepseek_v4_nextn.py")
    env = _src("environ.py")
    assert "SGLANG_OPT_FP8_WO_A_GEMM = EnvBool(True)" in env and "SGLANG_OPT_FUSE_WQA_WKV = EnvBool(True)" in env
    assert "correction_bias_dtype = torch.float32" in _src("models/deepseek_v2.py")


def test_layout_refuses_what_it_does_not_lay_out():
    c = model_config(arch="v4")
    with pytest.raises(ValueError):
        checkpoint_layout(model_config())  # V3
    with pytest.raises(ValueError):
        checkpoint_layout(dict(c, n_hash_layers=3))  # hash-routed layers: tid2eid tables
    with pytest.raises(ValueError):
        checkpoint_layout(dict(c, compress_ratios=[0, 4, 64, 4, 0]))


def test_fp8_block_quantize_and_write_weights(tmp_path: Path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    from shrinker.gpu.weights import draw, fp8_block_quantize

    w = draw((256, 384), 5, 0.02, exact=True)
    q, s = fp8_block_quantize(w, 9)
    assert q.dtype == torch.float8_e4m3fn and s.shape == (2, 3) and s.dtype == torch.float32
    assert set(s.flatten().tolist()) <= {2.0 ** -6, 2.0 ** -7, 2.0 ** -8}
    back = q.float() * s.repeat_interleave(128, 0).repeat_interleave(128, 1)
    assert (back - w).abs().max().item() < 0.02 * 0.07  # e4m3 keeps 3 mantissa bits
