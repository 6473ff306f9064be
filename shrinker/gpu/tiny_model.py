"""`shrink tiny-model DIR [--arch v3|v32|v4]`: a small DeepSeek model folder that SGLang can serve.

`--arch v32` adds DeepSeek-V3.2's DSA indexer to the V3 config, `--arch v4` writes a DeepSeek-V4
config (FP8); the tokenizer is the same for all three.

It holds config.json (real MLA dimensions, dense and MoE layers, grouped top-k routing, a shared
expert, one NextN/MTP layer), a byte-level BPE tokenizer trained here with `tokenizers` on text
generated from a fixed seed, DeepSeek's special tokens and a DeepSeek-V3-style chat template.
There are no weights: the server runs with `--load-format dummy`, or the device generates seeded
weights (shrinker.gpu.weights). The V4 folder alone carries one small safetensors file,
`expert-layout.safetensors`: a single routed-expert tensor in FP8, the layout upstream reads off a
checkpoint's files to choose its MoE weights (see EXPERT_LAYOUT_FILE). Same arguments give the same
bytes, so upstream and pruned runs, on any machine, see one model; `model_digest` names it in reports.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from shrinker.errors import ShrinkError

# DeepSeek-V3's special tokens. The first three are true special tokens (dropped when decoding with
# skip_special_tokens); the others stay in decoded text, as in DeepSeek's own tokenizer, so the
# tool-call and reasoning parsers can see them.
BOS, EOS, PAD = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>"
SPECIAL_TOKENS = [BOS, EOS, PAD]
ADDED_TOKENS = [
    "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>",
    "<｜fim▁hole｜>", "<｜fim▁begin｜>", "<｜fim▁end｜>",
    "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
    "<｜tool▁outputs▁begin｜>", "<｜tool▁outputs▁end｜>", "<｜tool▁output▁begin｜>",
    "<｜tool▁output▁end｜>", "<｜tool▁sep｜>",
]

# The DeepSeek-V3 architecture at toy width. MLA keeps DeepSeek's real per-head dimensions
# (kv_lora_rank 512, rope 64, nope 128, v 128) so the MLA kernels run their production shapes.
BASE_CONFIG: dict = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "pad_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 1024,
    "initializer_range": 0.02,
    "intermediate_size": 2048,
    "kv_lora_rank": 512,
    "max_position_embeddings": 4096,
    "moe_intermediate_size": 256,
    "moe_layer_freq": 1,
    "first_k_dense_replace": 1,
    "n_group": 4,
    "n_routed_experts": 16,
    "n_shared_experts": 1,
    "norm_topk_prob": True,
    "num_attention_heads": 16,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 3,
    "num_key_value_heads": 16,
    "num_nextn_predict_layers": 1,
    "q_lora_rank": 384,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "rms_norm_eps": 1e-06,
    "rope_theta": 10000,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 4,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 1024,
        "type": "yarn",
    },
    "routed_scaling_factor": 2.5,
    "scoring_func": "sigmoid",
    "topk_group": 2,
    "topk_method": "noaux_tc",
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "vocab_size": 32000,
}

# DeepSeek-V3.2 (DSA): the V3 architecture plus a lightning indexer in every layer, as upstream 0.5.17
# reads it (configs/model_config.py is_deepseek_dsa: architecture DeepseekV32ForCausalLM and an
# `index_topk`; utils/hf_transformers/common.py registers model_type deepseek_v32 as the V3 config
# class). The index dims are DeepSeek-V3.2-Exp's own: 64 index heads of 128, top-2048 selection
# (the DSA dense-prefill threshold upstream sets to index_topk).
V32_FIELDS: dict = {
    "architectures": ["DeepseekV32ForCausalLM"],
    "model_type": "deepseek_v32",
    "index_head_dim": 128,
    "index_n_heads": 64,
    "index_topk": 2048,
}

# DeepSeek-V4 at toy width, from upstream 0.5.17's DeepSeekV4Config (configs/deepseek_v4.py) and
# what models/deepseek_v4.py asserts: one KV head, head_dim 512 (nope 448 + rope 64), v 512,
# compress ratios from (0, 4, 128) per layer (the NextN layer's last), the 64-head x 128 indexer
# with top-512, a 128-token sliding window, 4 hyper-connection streams, grouped low-rank output
# (o_groups 8). Its checkpoints are FP8 (block 128x128), so the config carries that quantization
# (and the folder its FP8 routed-expert layout: EXPERT_LAYOUT_FILE).
# `sliding_window` too: upstream's ModelConfig reads that name (the first device try, without it, failed
# with AttributeError: '_DeepseekV4ConfigAlias' object has no attribute 'sliding_window').
# No hash-routed layers (n_hash_layers 0): their token->expert table is an integer tensor that
# `--load-format dummy` leaves uninitialised. The other fields are the V3 toy's (BASE_CONFIG).
V4_FIELDS: dict = {
    "architectures": ["DeepseekV4ForCausalLM"],
    "model_type": "deepseek_v4",
    "first_k_dense_replace": 0,
    "head_dim": 512,
    "index_head_dim": 128,
    "index_n_heads": 64,
    "index_topk": 512,
    "num_attention_heads": 64,
    "num_hidden_layers": 4,
    "num_key_value_heads": 1,
    "q_lora_rank": 512,
    "qk_nope_head_dim": 448,
    "v_head_dim": 512,
    "o_lora_rank": 512,
    "o_groups": 8,
    "window_size": 128,
    "sliding_window": 128,  # what upstream 0.5.17's ModelConfig reads (model_config.py _derive_model_shapes)
    "compress_rope_theta": 40000,
    "compress_ratios": [0, 4, 128, 4, 0],
    "n_hash_layers": 0,
    "hc_mult": 4,
    "hc_sinkhorn_iters": 20,
    "hc_eps": 1e-06,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 4,
        "original_max_position_embeddings": 1024,
        "type": "yarn",
    },
    "routed_scaling_factor": 1.5,
    "scoring_func": "sqrtsoftplus",
}

ARCHES = ("v3", "v32", "v4")

# DeepSeek-V4's routed experts come in two layouts, and upstream 0.5.17 tells them apart by the files,
# not config.json: configs/model_config.py:364-378 sets `is_fp4_experts` from SGLANG_DSV4_FP4_EXPERTS
# (environ.py:1157, default True: MXFP4, as DeepSeek released V4) unless configs/deepseek_v4.py
# try_detect_fp4_experts finds a routed-expert tensor (model_loader/weight_utils.py:82-127
# probe_routed_expert_weight_dtype: the first `*.safetensors`, or the shard the index names, a key
# matching `\.experts\.\d+\.(w[123]|down_proj|up_proj|gate_proj)\.weight$`): F8_E4M3 means the
# FP4-to-FP8 converted checkpoint (is_fp4_experts False), U8/I8/F4 MXFP4. A real checkpoint always
# carries those tensors; a folder without weights falls to the default, MXFP4, and then on Hopper the
# default MoE runner (auto -> triton, fp8.py:2271-2280) gets int8 experts, two FP4 values a byte
# (fp8.py:1151-1170: w13 [E, 2I, hidden/2]) and stops at fused_moe.py:914-916
# (`hidden_states.shape[1] == w1.shape[2]`: "Hidden size mismatch"). So the V4 folder ships the one
# tensor upstream's probe reads, in FP8 e4m3 at its real shape (zeros): the tiny V4 is the FP8
# checkpoint its config.json says it is (quantization_config fp8, block 128x128), as an FP8 V4
# checkpoint on Hopper is. `--load-format dummy` reads no weight file.
EXPERT_LAYOUT_FILE = "expert-layout.safetensors"
EXPERT_LAYOUT_KEY = "layers.0.ffn.experts.0.w1.weight"  # DeepSeek's own names (deepseek_v4.py:2738, 2747 map them)


def expert_layout_safetensors(config: dict) -> bytes:
    """A safetensors file with one FP8 (F8_E4M3) routed-expert weight of the config's shape, all zeros."""
    shape = [config["moe_intermediate_size"], config["hidden_size"]]
    size = shape[0] * shape[1]  # one byte per e4m3 value
    header = {
        "__metadata__": {"format": "pt", "shrinker": "routed-expert layout marker for --load-format dummy"},
        EXPERT_LAYOUT_KEY: {"dtype": "F8_E4M3", "shape": shape, "data_offsets": [0, size]},
    }
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    return len(text).to_bytes(8, "little") + text + bytes(size)

# DeepSeek's FP8 checkpoints: e4m3 weights with one scale per 128x128 block, activations
# quantised on the fly.
FP8_QUANTIZATION = {
    "activation_scheme": "dynamic",
    "fmt": "e4m3",
    "quant_method": "fp8",
    "weight_block_size": [128, 128],
}

# A DeepSeek-V3-style chat template (system prompt first, <｜User｜>/<｜Assistant｜> turns, tool calls
# as fenced JSON between tool-call tokens, tool results between tool-output tokens) with a tools
# section in the system prompt and a `thinking` switch (default off, as DeepSeek-V3.1) that opens
# <think> like R1; SGLang's template detection reads that switch as DeepSeek's reasoning toggle.
CHAT_TEMPLATE = (
    "{% if not thinking is defined %}{% set thinking = false %}{% endif %}"
    "{%- if not add_generation_prompt is defined %}{%- set add_generation_prompt = false %}{%- endif %}"
    "{%- set ns = namespace(system_prompt='', is_first_sp=true, is_tool=false, is_output_first=true) %}"
    "{%- for message in messages %}{%- if message['role'] == 'system' %}"
    "{%- if ns.is_first_sp %}{%- set ns.system_prompt = ns.system_prompt + message['content'] %}"
    "{%- set ns.is_first_sp = false %}"
    "{%- else %}{%- set ns.system_prompt = ns.system_prompt + '\\n\\n' + message['content'] %}{%- endif %}"
    "{%- endif %}{%- endfor %}"
    "{%- if tools is defined and tools %}"
    "{%- set ns.system_prompt = ns.system_prompt + ('\\n\\n' if ns.system_prompt else '')"
    " + '## Tools\\nYou have access to the following tools:\\n' %}"
    "{%- for tool in tools %}{%- set fn = tool['function'] if 'function' in tool else tool %}"
    "{%- set ns.system_prompt = ns.system_prompt + '\\n### ' + fn['name'] + '\\nDescription: '"
    " + (fn['description'] or '') + '\\nParameters: ' + (fn['parameters'] | tojson) + '\\n' %}"
    "{%- endfor %}"
    "{%- set ns.system_prompt = ns.system_prompt + '\\nIMPORTANT: ALWAYS use this exact format to call tools:\\n"
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>tool_call_name\\n```json\\n"
    "{\"arg\": \"value\"}\\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>' %}"
    "{%- endif %}"
    "{{- bos_token }}{{- ns.system_prompt }}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'user' %}{%- set ns.is_tool = false %}{{- '<｜User｜>' + message['content'] }}"
    "{%- elif message['role'] == 'assistant' and message.get('tool_calls') %}{%- set ns.is_tool = false %}"
    "{{- '<｜Assistant｜>' + (message['content'] or '') + '<｜tool▁calls▁begin｜>' }}"
    "{%- for tool in message['tool_calls'] %}"
    "{%- set args = tool['function']['arguments'] %}"
    "{%- if args is not string %}{%- set args = args | tojson %}{%- endif %}"
    "{{- '<｜tool▁call▁begin｜>' + tool.get('type', 'function') + '<｜tool▁sep｜>' + tool['function']['name']"
    " + '\\n```json\\n' + args + '\\n```<｜tool▁call▁end｜>' }}"
    "{%- endfor %}{{- '<｜tool▁calls▁end｜><｜end▁of▁sentence｜>' }}"
    "{%- elif message['role'] == 'assistant' %}"
    "{%- if ns.is_tool %}{{- '<｜tool▁outputs▁end｜>' }}{%- set ns.is_tool = false %}{%- endif %}"
    "{%- set content = message['content'] or '' %}"
    "{%- if '</think>' in content %}{%- set content = content.split('</think>')[-1] %}{%- endif %}"
    "{{- '<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>' }}"
    "{%- elif message['role'] == 'tool' %}"
    "{%- if not ns.is_tool %}{{- '<｜tool▁outputs▁begin｜>' }}{%- set ns.is_tool = true %}{%- endif %}"
    "{{- '<｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if ns.is_tool %}{{- '<｜tool▁outputs▁end｜>' }}{%- endif %}"
    "{%- if add_generation_prompt %}{{- '<｜Assistant｜>' }}"
    "{%- if thinking %}{{- '<think>\\n' }}{%- endif %}{%- endif %}"
)

_SYLLABLES = ("ka ri to mu sa ne lo vi pe da go zu ha mi ro te nu si ba ko ye wa fu ji el an or "
              "in th st qu ch sh pr tr gl bl cr dr fl gr pl sl sp sw").split()
_CODE = ('def ', 'return ', 'import ', 'class ', 'for ', 'in ', 'if ', 'else:', '{"', '": ', '", ',
         '"}', '```json\n', '```\n', '(', ')', '[', ']', ' = ', ' == ', '0', '1', '2', '42', '3.14',
         'get_weather', 'city', 'Paris', 'Tokyo', 'unit', 'celsius', 'add', 'a', 'b', 'true', 'false')


def corpus(seed: int = 0, lines: int = 30000) -> list[str]:
    """Deterministic training text: invented words, sentences, numbers and code/JSON fragments."""
    rng = random.Random(seed)
    words = sorted({"".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(40000)})
    out: list[str] = []
    for i in range(lines):
        kind = i % 5
        if kind == 3:
            out.append("".join(rng.choice(_CODE) for _ in range(rng.randint(4, 16))))
        elif kind == 4:
            out.append(" ".join(str(rng.randint(0, 10 ** rng.randint(1, 6))) for _ in range(rng.randint(2, 8))))
        else:
            sent = " ".join(rng.choice(words) for _ in range(rng.randint(4, 20)))
            out.append(sent.capitalize() + rng.choice([".", "?", "!", ","]))
    return out


def build_tokenizer(vocab_size: int, seed: int = 0):
    """A byte-level BPE with exactly `vocab_size` entries; DeepSeek's tokens at fixed ids."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(ADDED_TOKENS),
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(seed), trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED_TOKENS])
    if tok.get_vocab_size(with_added_tokens=True) != vocab_size:
        raise ShrinkError(
            f"the tokenizer came out with {tok.get_vocab_size(with_added_tokens=True)} entries, not {vocab_size}: "
            "the training text is too small for that vocabulary")
    return tok


def tokenizer_config(chat_template: str = CHAT_TEMPLATE) -> dict:
    return {
        "add_bos_token": False,
        "add_eos_token": False,
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": PAD,
        "unk_token": None,
        "clean_up_tokenization_spaces": False,
        "legacy": True,
        "model_max_length": BASE_CONFIG["max_position_embeddings"],
        "tokenizer_class": "PreTrainedTokenizerFast",
        "chat_template": chat_template,
    }


def model_config(fp8: bool = False, vocab_size: int | None = None, arch: str = "v3") -> dict:
    if arch not in ARCHES:
        raise ShrinkError(f"unknown architecture {arch!r} (one of {', '.join(ARCHES)})")
    config = json.loads(json.dumps(BASE_CONFIG))
    config.update(json.loads(json.dumps({"v3": {}, "v32": V32_FIELDS, "v4": V4_FIELDS}[arch])))
    fp8 = fp8 or arch == "v4"  # V4's checkpoints and kernels are FP8
    if vocab_size is not None:
        config["vocab_size"] = vocab_size
    if fp8:
        config["quantization_config"] = dict(FP8_QUANTIZATION)
    return config


def _dump(obj: dict) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_tiny_model(directory: Path, fp8: bool = False, vocab_size: int | None = None, seed: int = 0,
                     arch: str = "v3") -> dict:
    """Write the model folder (`arch`: v3, v32 or v4); returns {file: sha256}. Same tokenizer for all."""
    directory = Path(directory)
    config = model_config(fp8=fp8, vocab_size=vocab_size, arch=arch)
    tok = build_tokenizer(config["vocab_size"], seed=seed)
    vocab = tok.get_vocab(with_added_tokens=True)
    if [vocab[t] for t in SPECIAL_TOKENS] != [config["bos_token_id"], config["eos_token_id"], config["pad_token_id"]]:
        raise ShrinkError("special token ids do not match config.json's bos/eos/pad ids")
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "config.json": _dump(config),
        "generation_config.json": _dump({"bos_token_id": config["bos_token_id"], "do_sample": False,
                                         "eos_token_id": config["eos_token_id"]}),
        "tokenizer_config.json": _dump(tokenizer_config()),
        "special_tokens_map.json": _dump({"bos_token": BOS, "eos_token": EOS, "pad_token": PAD}),
        # tokenizers' own serialisation, re-dumped with sorted keys so the bytes never depend on it.
        "tokenizer.json": _dump(json.loads(tok.to_str())),
    }
    blobs = {name: text.encode("utf-8") for name, text in files.items()}
    if arch == "v4":
        blobs[EXPERT_LAYOUT_FILE] = expert_layout_safetensors(config)
    digests = {}
    for name, data in blobs.items():
        (directory / name).write_bytes(data)
        digests[name] = hashlib.sha256(data).hexdigest()
    return digests


def model_digest(directory: Path) -> str:
    """One hash over the model folder's files (names and bytes; weights excluded, V4's layout marker in)."""
    h = hashlib.sha256()
    paths = sorted(Path(directory).glob("*.json"))
    if (Path(directory) / EXPERT_LAYOUT_FILE).is_file():
        paths.append(Path(directory) / EXPERT_LAYOUT_FILE)
    for path in paths:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()
