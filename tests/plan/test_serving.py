"""The kept-architecture check: a kept architecture's own code must not select a removed registry key."""

from __future__ import annotations

from pathlib import Path

from shrinker.plan.serving import architecture_selections
from shrinker.rules.load import load_rules

# 0.5.16's arg_groups/overrides.py, shortened: V4's defaults pick "dsv4"; other models pick fa4/aiter.
OVERRIDES = '''
@_register_for("DeepseekV4ForCausalLM")
def _deepseek_v4_overrides(server_args, hf_config):
    overrides = {"attention_backend": "dsv4"}
    if server_args.device == "npu":
        overrides["prefill_attention_backend"] = "dsv4"
    return overrides


@_register_for("MiniMaxM3ForCausalLM")
def _minimax_overrides(server_args, hf_config):
    return {"attention_backend": "fa4"}


@_register_for(lambda arch: "Step3p5ForCausalLM" in arch or "DeepseekV3ForCausalLM" in arch)
def _shared(server_args, hf_config):
    backend = "fa4" if is_blackwell_supported() else "triton"
    return {"attention_backend": backend}


def _general(server_args, model_arch):
    if model_arch in ["DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"]:
        server_args.tool_call_parser = "mistral"
    elif model_arch != "DeepseekV2ForCausalLM":
        server_args.attention_backend = "fa4"  # every other architecture: not a kept one's pick
    if is_hip():
        server_args.attention_backend = "aiter"  # a platform key: dead on CUDA
'''

MODEL = '''
class DeepseekV4ForCausalLM(nn.Module):
    def __init__(self, config):
        self.draft_backend = "dsv4"
'''

REMOVED = {"attention_backends": ["aiter", "dsv4", "fa4"], "tool_call_parsers": ["mistral"],
           "models": ["MiniMaxM3ForCausalLM"]}


def _tree(tmp_path: Path) -> tuple[Path, list[str]]:
    files = {"python/sglang/srt/arg_groups/overrides.py": OVERRIDES,
             "python/sglang/srt/models/deepseek_v4.py": MODEL,
             "python/sglang/srt/other.py": "x = 'dsv4'\n"}  # names no architecture: no context
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path, sorted(files)


def test_the_v4_case_as_it_was_and_nothing_else(tmp_path):
    tree, kept = _tree(tmp_path)
    found = architecture_selections(tree, kept, load_rules("deepseek"), REMOVED)
    where = [f.split(": ", 1)[0] for f in found]
    assert where == ["python/sglang/srt/arg_groups/overrides.py:4",   # {"attention_backend": "dsv4"}
                     "python/sglang/srt/arg_groups/overrides.py:6",   # the NPU branch picks it too
                     "python/sglang/srt/arg_groups/overrides.py:17",  # fa4 through a ternary, V3 in the lambda
                     "python/sglang/srt/arg_groups/overrides.py:23",  # mistral for V3/V3.2
                     "python/sglang/srt/models/deepseek_v4.py:4"]     # the model file is V4's own code
    assert "DeepseekV4ForCausalLM selects attention_backends key 'dsv4'" in found[0]
    assert "DeepseekV32ForCausalLM, DeepseekV3ForCausalLM selects tool_call_parsers key 'mistral'" in found[3]


def test_nothing_removed_that_a_kept_architecture_picks(tmp_path):
    tree, kept = _tree(tmp_path)
    removed = {"attention_backends": ["aiter"], "models": ["MiniMaxM3ForCausalLM"]}
    assert architecture_selections(tree, kept, load_rules("deepseek"), removed) == []
    assert architecture_selections(tree, [], load_rules("deepseek"), REMOVED) == []  # nothing kept: nothing read
