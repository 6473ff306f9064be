"""Seeded weights: checkpoint names and shapes match DeepSeek-V3's (what SGLang's loader maps)."""

from __future__ import annotations

import pytest

from shrinker.gpu.tiny_model import model_config
from shrinker.gpu.weights import _seed_for, checkpoint_shapes


def test_names_and_shapes():
    c = model_config()
    s = checkpoint_shapes(c)
    h, heads = c["hidden_size"], c["num_attention_heads"]
    assert s["model.layers.0.mlp.gate_proj.weight"][0] == (c["intermediate_size"], h)  # dense layer 0
    assert "model.layers.0.mlp.gate.weight" not in s
    assert s["model.layers.1.mlp.gate.weight"][0] == (c["n_routed_experts"], h)  # MoE from layer 1
    assert s["model.layers.1.mlp.experts.15.down_proj.weight"][0] == (h, c["moe_intermediate_size"])
    assert s["model.layers.1.self_attn.kv_a_proj_with_mqa.weight"][0] == (c["kv_lora_rank"] + c["qk_rope_head_dim"], h)
    assert s["model.layers.1.self_attn.q_b_proj.weight"][0] == (heads * 192, c["q_lora_rank"])
    assert s["model.layers.1.self_attn.kv_b_proj.weight"][0] == (heads * 256, c["kv_lora_rank"])
    # the NextN layer sits after the last decoder layer, with its own norms, projection and head
    n = c["num_hidden_layers"]
    assert s[f"model.layers.{n}.eh_proj.weight"][0] == (h, 2 * h)
    assert s[f"model.layers.{n}.shared_head.head.weight"][0] == (c["vocab_size"], h)
    assert f"model.layers.{n}.mlp.experts.0.gate_proj.weight" in s
    assert f"model.layers.{n + 1}.input_layernorm.weight" not in s
    assert s["model.norm.weight"] == ((h,), "norm")


def test_seeds_differ_by_name_and_seed():
    assert _seed_for(0, "a") != _seed_for(0, "b")
    assert _seed_for(0, "a") != _seed_for(1, "a")
    assert _seed_for(0, "a") == _seed_for(0, "a")


def test_exact_ints_are_fixed_bytes():
    """SHAKE-256, not a random generator: these bytes are the same on every machine and version."""
    from shrinker.gpu.weights import exact_ints

    assert exact_ints(1, 4).hex() == "17bf62fe150850ba"
    assert exact_ints(1, 8)[:8] == exact_ints(1, 4) and exact_ints(2, 4) != exact_ints(1, 4)


def test_exact_draw_is_pinned_and_has_the_std():
    import hashlib


    torch = pytest.importorskip("torch")
    from shrinker.gpu.weights import draw

    x = draw((4, 8), 1, 0.02, exact=True)
    digest = hashlib.sha256(x.to(torch.bfloat16).view(torch.int16).numpy().tobytes()).hexdigest()
    assert digest == "406bc46d3543755644a4a5b6eb116b97a22749f1b777b8155f24ff719ff2aa47"
    big = draw((256, 1024), 7, 0.02, exact=True)
    assert abs(big.std().item() - 0.02) < 5e-4 and big.abs().max().item() <= 0.02 * 3 ** 0.5 * (1 + 1e-6)


def test_exact_model_pins_its_weights():
    from shrinker.gpu.cases import load_cases

    spec = load_cases().model("tiny-exact")
    assert spec["exact"] is True and len(spec["weights_content_sha256"]) == 64


def test_content_sha256_sees_values_not_layout():
    torch = pytest.importorskip("torch")
    from shrinker.gpu.weights import content_sha256

    a = {"w": torch.arange(6, dtype=torch.bfloat16).reshape(2, 3), "n": torch.ones(3, dtype=torch.bfloat16)}
    # same tensors, other insertion order and a non-contiguous view: same digest
    b = {"n": torch.ones(3, dtype=torch.bfloat16), "w": torch.arange(6, dtype=torch.bfloat16).reshape(3, 2).t().t()}
    assert content_sha256(a) == content_sha256({"n": b["n"], "w": b["w"].reshape(2, 3)})
    changed = dict(a, w=a["w"].clone())
    changed["w"][1, 2] += 1
    assert content_sha256(changed) != content_sha256(a)
    assert content_sha256({"w": a["w"].float()}) != content_sha256({"w": a["w"]})  # dtype counts


def test_v32_checkpoint_has_the_indexer_in_every_layer():
    from shrinker.gpu.tiny_model import model_config
    from shrinker.gpu.weights import checkpoint_shapes

    c = model_config(arch="v32")
    shapes = checkpoint_shapes(c)
    for i in range(c["num_hidden_layers"] + c["num_nextn_predict_layers"]):
        p = f"model.layers.{i}.self_attn.indexer"
        assert shapes[f"{p}.wq_b.weight"][0] == (64 * 128, c["q_lora_rank"])
        assert shapes[f"{p}.wk.weight"][0] == (128, c["hidden_size"])
        assert shapes[f"{p}.weights_proj.weight"][0] == (64, c["hidden_size"])
        assert shapes[f"{p}.k_norm.bias"] == ((128,), "bias")
    assert not any("indexer" in n for n in checkpoint_shapes(model_config(arch="v3")))
