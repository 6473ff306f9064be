"""The predicate table's platform vocabulary: a new release's `is_<platform>_*()` folds without a new rule."""

from __future__ import annotations

from shrinker.rules.predicates import PredicateTable
from shrinker.rules.schema import Platform

PLATFORM = Platform.model_validate({
    "strings": {"strings": ["npu", "xpu", "hip", "aiter"], "reason": "other vendors"}, "methods": [], "packages": [],
    "predicates": [{"name": "is_cuda", "value": True, "reason": "CUDA"},
                   {"name": "*gfx9*", "value": False, "reason": "AMD GPUs"}],
})


def test_a_predicate_named_for_another_platform_is_false_when_called():
    table = PredicateTable(PLATFORM)
    for name in ("_is_xpu_available", "is_npu", "use_aiter_moe", "has_hip_graphs", "IS_HIP_CDNA"):
        assert table.value(name, called=True) is False, name
        assert "vocabulary" in table.rule_for(name).reason
        assert table.written_rule_for(name) is None
    # only calls: a bare name may be a variable or parameter holding anything
    assert table.value("_is_xpu_available", called=False) is None


def test_only_the_first_word_counts_and_written_rules_win():
    table = PredicateTable(PLATFORM)
    for name in ("is_cuda_or_hip", "is_not_npu", "is_mnnvl_fabric_device", "is_cpu", "npu_is_ready", "is_npux"):
        assert table.rule_for(name) is None, name
    assert table.value("is_cuda", called=True) is True
    assert table.written_rule_for("is_gfx95_supported").reason == "AMD GPUs"


def test_no_vocabulary_no_fallback():
    table = PredicateTable(Platform.model_validate({"strings": {"strings": [], "reason": "none"}, "predicates": [],
                                                    "methods": [], "packages": []}))
    assert table.rule_for("is_npu_available") is None


def test_a_chip_family_word_names_its_platform():
    from shrinker.rules.load import load_rules
    from shrinker.rules.predicates import PlatformStrings, PredicateTable

    strings = PlatformStrings(["npu"], ["gfx"])
    assert "gfx1250" in strings and "arch_gfx942" in strings and "npu" in strings
    assert "gfx" not in strings and "gfxfoo" not in strings and "cuda" not in strings
    table = PredicateTable(load_rules("deepseek").platform)
    assert table.value("is_gfx1250_supported", called=True) is False  # 0.5.19, by the vocabulary
    assert table.value("is_sm121", called=True) is None  # a CUDA chip: runtime code


def test_a_probe_for_an_attribute_only_another_platform_sets_is_false():
    from shrinker.rules.predicates import evaluate_source

    platform = Platform.model_validate({**PLATFORM.model_dump(), "attributes": ["req_to_c128_sidecar"]})
    table = PredicateTable(platform)
    assert evaluate_source('hasattr(params.req_to_token_pool, "req_to_c128_sidecar")', table) is False
    assert evaluate_source('not hasattr(pool, "req_to_c128_sidecar")', table) is True
    assert evaluate_source('hasattr(pool, "req_to_token")', table) is None  # an attribute CUDA pools have
    assert evaluate_source('hasattr(pool, "req_to_c128_sidecar")', PredicateTable(PLATFORM)) is None  # no rule
    # getattr with a literal bool default is that default (0.5.23: `getattr(layer, "aiter_bpreshuffled", False)`)
    assert evaluate_source('getattr(pool, "req_to_c128_sidecar", False)', table) is False
    assert evaluate_source('not getattr(pool, "req_to_c128_sidecar", True)', table) is False
    assert evaluate_source('getattr(pool, "req_to_c128_sidecar", None)', table) is None  # not a bool: stays
    assert evaluate_source('getattr(pool, "req_to_c128_sidecar")', table) is None  # raises where unset: stays


def test_the_planner_reads_a_picked_parser_as_the_codemods_do() -> None:
    # an import under `if self.reasoning_parser == "hunyuan":` keeps nothing once the plan removed that parser
    from shrinker.rules.load import load_rules
    from shrinker.rules.predicates import evaluate_source, profile_table

    rules = load_rules("deepseek")
    table = profile_table(rules, {"reasoning_parsers": {"hunyuan"}, "tool_call_parsers": {"kimi_k3"}})
    assert evaluate_source('self.reasoning_parser == "hunyuan"', table) is False
    assert evaluate_source('get_serving().tool_call_parser != "kimi_k3"', table) is True
    assert evaluate_source('self.reasoning_parser == "kimi_k3"', table) is None
    assert evaluate_source('self.reasoning_parser == "deepseek-r1"', table) is None
