"""The plan's pre-filter for the platform batch's folding codemods (shrinker/plan/batches._platform_pattern)."""

from shrinker.plan.batches import _platform_pattern
from shrinker.rules.load import load_rules


def test_files_testing_the_served_model_type_are_folded() -> None:
    # 0.5.23 serving_chat.py names no platform, only `...hf_config.model_type == "gpt_oss"`: the platform
    # batch must still fold it ([architectures].model_type_at), or the test stays in the tree
    pattern = _platform_pattern(load_rules("deepseek"))
    assert pattern.search('self.is_gpt_oss = model_config.hf_config.model_type == "gpt_oss"')
    assert pattern.search("if _is_hip:")
    assert not pattern.search("self.modeltype = kind")


def test_files_reading_only_a_build_attribute_are_folded() -> None:
    # 0.5.23 dsv4/dsv41_sparse.py and inkling_common/moe.py read no predicate, only `torch.version.hip`
    # ([platform].build_attributes): the platform batch must still fold them
    pattern = _platform_pattern(load_rules("deepseek"))
    assert pattern.search("scale = 2 if torch.version.hip else 1")
    assert pattern.search("if torch.xpu.is_available():")
    assert not pattern.search("print(torch.version.cuda)")


def test_files_testing_a_picked_parser_are_folded() -> None:
    # 0.5.23 detokenizer_manager.py: `get_serving().tool_call_parser == "gpt-oss"` ([[registries]].held_at)
    pattern = _platform_pattern(load_rules("deepseek"))
    assert pattern.search('self.is_gpt_oss = get_serving().tool_call_parser == "gpt-oss"')
    assert pattern.search('if self.reasoning_parser == "hunyuan":')
    assert not pattern.search("parser = make_parser(kind)")
