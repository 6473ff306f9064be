"""The tiny DeepSeek-V3 model: real MLA dims, dense + MoE + NextN, DeepSeek tokens, same bytes every run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shrinker.gpu import tiny_model
from shrinker.gpu.tiny_model import ADDED_TOKENS, SPECIAL_TOKENS, model_digest, write_tiny_model


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tiny")
    write_tiny_model(d)
    return d


def test_config_has_deepseek_v3_shapes(model_dir: Path):
    c = json.loads((model_dir / "config.json").read_text())
    assert c["architectures"] == ["DeepseekV3ForCausalLM"] and c["model_type"] == "deepseek_v3"
    # MLA with DeepSeek's real per-head dimensions
    assert (c["kv_lora_rank"], c["qk_rope_head_dim"], c["qk_nope_head_dim"], c["v_head_dim"]) == (512, 64, 128, 128)
    assert c["q_lora_rank"] > 0
    # dense layers first, then MoE layers; grouped top-k routing; a shared expert; one NextN layer
    assert 1 <= c["first_k_dense_replace"] < c["num_hidden_layers"]
    assert c["n_routed_experts"] >= 16 and c["n_group"] > 1 and c["topk_group"] < c["n_group"]
    assert c["n_routed_experts"] % c["n_group"] == 0 and c["num_experts_per_tok"] <= c["n_routed_experts"]
    assert c["topk_method"] == "noaux_tc" and c["n_shared_experts"] >= 1
    assert c["num_nextn_predict_layers"] == 1
    assert "quantization_config" not in c


def test_fp8_variant(tmp_path: Path):
    c = tiny_model.model_config(fp8=True)
    assert c["quantization_config"] == {"quant_method": "fp8", "weight_block_size": [128, 128],
                                        "activation_scheme": "dynamic", "fmt": "e4m3"}
    # FP8 block quantisation needs the GEMM inner dimensions in whole 128-blocks
    for key in ("hidden_size", "intermediate_size", "moe_intermediate_size", "q_lora_rank", "kv_lora_rank"):
        assert c[key] % 128 == 0, key


def test_tokenizer_matches_config_and_carries_deepseek_tokens(model_dir: Path):
    c = json.loads((model_dir / "config.json").read_text())
    tok = json.loads((model_dir / "tokenizer.json").read_text())
    added = {t["content"]: t for t in tok["added_tokens"]}
    vocab_size = len(tok["model"]["vocab"]) + sum(1 for t in added if t not in tok["model"]["vocab"])
    assert vocab_size == c["vocab_size"]
    assert set(SPECIAL_TOKENS + ADDED_TOKENS) <= set(added)
    assert added["<｜begin▁of▁sentence｜>"]["id"] == c["bos_token_id"]
    assert added["<｜end▁of▁sentence｜>"]["id"] == c["eos_token_id"]
    assert added["<｜begin▁of▁sentence｜>"]["special"] and not added["<｜tool▁calls▁begin｜>"]["special"]
    assert not added["</think>"]["special"]  # stays in decoded text for the reasoning parser
    cfg = json.loads((model_dir / "tokenizer_config.json").read_text())
    assert cfg["bos_token"] == SPECIAL_TOKENS[0] and "<｜Assistant｜>" in cfg["chat_template"]


def test_same_bytes_every_run(model_dir: Path, tmp_path: Path):
    again = tmp_path / "again"
    write_tiny_model(again)
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json",
                 "special_tokens_map.json"):
        assert (again / name).read_bytes() == (model_dir / name).read_bytes(), name
    assert model_digest(again) == model_digest(model_dir)


def test_tokenizer_round_trip_and_special_ids(model_dir: Path):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    text = "<｜User｜>Weather in Paris?<｜Assistant｜><think>\nok</think>{\"city\": \"Paris\"}"
    ids = tok.encode(text).ids
    assert tok.decode(ids, skip_special_tokens=False) == text
    assert tok.token_to_id("<｜User｜>") in ids and tok.token_to_id("</think>") in ids


def test_chat_template_renders_deepseek_turns(model_dir: Path):
    jinja2 = pytest.importorskip("jinja2")
    cfg = json.loads((model_dir / "tokenizer_config.json").read_text())
    env = jinja2.Environment()
    env.filters["tojson"] = lambda v: json.dumps(v)
    tmpl = env.from_string(cfg["chat_template"])
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "d",
                                               "parameters": {"type": "object"}}}]
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Lima\"}"}}]},
            {"role": "tool", "content": "19"}]
    out = tmpl.render(messages=msgs, tools=tools, bos_token=cfg["bos_token"], add_generation_prompt=True)
    assert out.startswith("<｜begin▁of▁sentence｜>S\n\n## Tools")
    assert ("<｜User｜>U<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
            "```json\n{\"city\": \"Lima\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>") in out
    assert out.endswith("<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>19<｜tool▁output▁end｜>"
                        "<｜tool▁outputs▁end｜><｜Assistant｜>")
    thinking = tmpl.render(messages=msgs[1:2], bos_token="", add_generation_prompt=True, thinking=True)
    assert thinking == "<｜User｜>U<｜Assistant｜><think>\n"


def test_small_vocab_and_too_small_corpus(tmp_path: Path):
    c = tiny_model.model_config(vocab_size=1024)
    assert c["vocab_size"] == 1024
    tok = tiny_model.build_tokenizer(1024)
    assert tok.get_vocab_size(with_added_tokens=True) == 1024


def test_v32_config_has_the_dsa_indexer_upstream_reads():
    from shrinker.gpu.tiny_model import model_config

    c = model_config(arch="v32")
    assert c["architectures"] == ["DeepseekV32ForCausalLM"] and c["model_type"] == "deepseek_v32"
    assert (c["index_head_dim"], c["index_n_heads"], c["index_topk"]) == (128, 64, 2048)
    assert (c["kv_lora_rank"], c["qk_rope_head_dim"]) == (512, 64)
    assert "index_topk" not in model_config(arch="v3")


def test_v4_config_follows_upstreams_asserts():
    from shrinker.gpu.tiny_model import model_config

    c = model_config(arch="v4")
    assert c["architectures"] == ["DeepseekV4ForCausalLM"] and c["num_key_value_heads"] == 1
    assert c["head_dim"] == c["qk_nope_head_dim"] + c["qk_rope_head_dim"] == 512
    assert len(c["compress_ratios"]) == c["num_hidden_layers"] + c["num_nextn_predict_layers"]
    assert set(c["compress_ratios"]) <= {0, 4, 128}
    assert c["sliding_window"] == c["window_size"] == 128  # upstream ModelConfig reads sliding_window
    assert c["quantization_config"]["weight_block_size"] == [128, 128]


def test_unknown_arch_is_refused():
    import pytest

    from shrinker.errors import ShrinkError
    from shrinker.gpu.tiny_model import model_config

    with pytest.raises(ShrinkError):
        model_config(arch="v5")


# Upstream 0.5.17's probe of a DeepSeek-V4 folder (model_loader/weight_utils.py:82-127
# probe_routed_expert_weight_dtype; configs/deepseek_v4.py try_detect_fp4_experts), as plain Python.
_ROUTED_EXPERT_KEY = r"\.experts\.\d+\.(?:w[123]|down_proj|up_proj|gate_proj)\.weight$"


def _probe_routed_expert_dtype(folder: Path) -> str | None:
    import re
    import struct

    index = folder / "model.safetensors.index.json"
    if index.is_file():
        weight_map = json.loads(index.read_text()).get("weight_map") or {}
        hit = next(((k, s) for k, s in weight_map.items() if re.search(_ROUTED_EXPERT_KEY, k)), None)
        if hit is None:
            return None
        key, shard = hit[0], folder / hit[1]
    else:
        shards = sorted(folder.glob("*.safetensors"))
        if not shards:
            return None
        key, shard = None, shards[0]
    with open(shard, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    if key is not None:
        return (header.get(key) or {}).get("dtype")
    return next((m["dtype"] for k, m in header.items()
                 if k != "__metadata__" and isinstance(m, dict) and re.search(_ROUTED_EXPERT_KEY, k)), None)


def _is_fp4_experts(folder: Path) -> bool:
    """What upstream sets for a V4 folder when SGLANG_DSV4_FP4_EXPERTS is unset (its default: True, MXFP4)."""
    detected = {"U8": True, "I8": True, "F4": True, "F8_E4M3": False}.get(_probe_routed_expert_dtype(folder))
    return True if detected is None else detected


@pytest.fixture(scope="module")
def v4_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tiny-v4")
    write_tiny_model(d, arch="v4")
    return d


def test_v4_folder_declares_fp8_routed_experts(v4_dir: Path, model_dir: Path):
    """The tiny V4 gets FP8 experts upstream, whose w13 is [E, 2I, hidden], so the Triton MoE's
    `hidden_states.shape[1] == w1.shape[2]` (fused_moe.py:914-916) holds. Without the layout file
    upstream assumed MXFP4 (w13 [E, 2I, hidden/2], fp8.py:1151-1170) and stopped there."""
    from shrinker.gpu.tiny_model import EXPERT_LAYOUT_FILE, EXPERT_LAYOUT_KEY, model_config

    c = model_config(arch="v4")
    assert _probe_routed_expert_dtype(v4_dir) == "F8_E4M3"
    assert not _is_fp4_experts(v4_dir)
    hidden = c["hidden_size"]
    w13_last_dim = hidden // 2 if _is_fp4_experts(v4_dir) else hidden  # fp8.py create_fp8_moe_weight_
    assert w13_last_dim == hidden
    # a real safetensors file: the one tensor at the expert's shape, e4m3 (one byte a value), 8-byte aligned
    raw = (v4_dir / EXPERT_LAYOUT_FILE).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    assert n % 8 == 0 and header[EXPERT_LAYOUT_KEY]["shape"] == [c["moe_intermediate_size"], hidden]
    assert header[EXPERT_LAYOUT_KEY]["data_offsets"] == [0, len(raw) - 8 - n] == [0, c["moe_intermediate_size"] * hidden]
    # FP8 block quantisation (128x128) of the experts: whole blocks in both GEMMs
    assert hidden % 128 == 0 and c["moe_intermediate_size"] % 128 == 0
    # the V3 folder stays as it was: no weight file, the same digest inputs
    assert not list(model_dir.glob("*.safetensors"))


def test_folder_without_expert_tensors_is_mxfp4_to_upstream(v4_dir: Path, tmp_path: Path):
    """The old tiny V4 folder (config + tokenizer only): upstream's probe finds nothing, so MXFP4."""
    import shutil

    from shrinker.gpu.tiny_model import EXPERT_LAYOUT_FILE

    old = tmp_path / "old"
    shutil.copytree(v4_dir, old, ignore=shutil.ignore_patterns(EXPERT_LAYOUT_FILE))
    assert _probe_routed_expert_dtype(old) is None and _is_fp4_experts(old)
    assert model_digest(old) != model_digest(v4_dir)  # the marker is part of the model's digest


def test_probe_pattern_is_upstreams():
    """Our copy of the probe's key pattern is upstream 0.5.17's (checked where its tree is cached)."""
    src = (Path(__file__).resolve().parents[2] / "upstream/cache/trees/pypi-sglang-0.5.17/python/sglang/srt"
           / "model_loader/weight_utils.py")
    if not src.is_file():
        pytest.skip("upstream 0.5.17 tree not cached here")
    text = src.read_text()
    assert f'r"{_ROUTED_EXPERT_KEY}"' in text
    assert 'if dtype in ("U8", "I8", "F4"):' in (src.parents[1] / "configs/deepseek_v4.py").read_text()
