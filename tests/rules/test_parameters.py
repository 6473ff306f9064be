"""rules.platform.parameters are checked against the callers (shrinker/rules/parameters.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from shrinker.errors import ShrinkError
from shrinker.rules.load import load_rules
from shrinker.rules.parameters import check_parameters
from shrinker.rules.schema import FixedParameter

FUSED = '''
def try_fused(x, residual, is_gfx95_supported, *, eager=False):
    if not is_gfx95_supported:
        return None
    return x
'''


def rules_with(*params: FixedParameter):
    rules = load_rules("deepseek")
    features = [f.model_copy(update={"parameters": []}) for f in rules.features]
    return rules.model_copy(update={"platform": rules.platform.model_copy(update={"parameters": list(params)}),
                                    "features": features})


RULE = FixedParameter(function="pkg.amd.fused:try_fused", name="is_gfx95_supported", value=False, reason="test")


def files(caller: str) -> list[tuple[str, str]]:
    return [("python/pkg/amd/fused.py", FUSED), ("python/pkg/model.py", textwrap.dedent(caller))]


def test_every_call_passing_the_platform_value_holds() -> None:
    sites = check_parameters(Path("."), rules_with(RULE), files("""
        _is_gfx95_supported = is_gfx95_supported()
        try_fused(x, r, _is_gfx95_supported)
        try_fused(x, r, is_gfx95_supported=is_hip())
        """))
    passed = [s.passed for s in sites["pkg.amd.fused:try_fused(is_gfx95_supported)"]]
    assert passed == ["_is_gfx95_supported", "is_hip()"]


@pytest.mark.parametrize("caller, named", [
    ("try_fused(x, r, True)\n", "python/pkg/model.py:1 passes True"),
    ("try_fused(x, r, flag)\n", "passes flag"),
    ("try_fused(x, r)\n", "passes nothing"),
    ("try_fused(*args)\n", "passes *args"),
])
def test_a_call_passing_anything_else_fails_the_plan(caller: str, named: str) -> None:
    with pytest.raises(ShrinkError, match="do not hold") as err:
        check_parameters(Path("."), rules_with(RULE), files(caller))
    assert named in str(err.value)


def test_a_rule_naming_no_function_or_parameter_fails() -> None:
    missing = RULE.model_copy(update={"function": "pkg.amd.fused:gone"})
    wrong = RULE.model_copy(update={"name": "is_mi300"})
    with pytest.raises(ShrinkError) as err:
        check_parameters(Path("."), rules_with(missing, wrong), files("pass\n"))
    assert "no function gone" in str(err.value) and "has no parameter is_mi300" in str(err.value)


def test_the_function_rebinding_the_parameter_fails() -> None:
    body = FUSED.replace("    if not", "    is_gfx95_supported = probe()\n    if not")
    with pytest.raises(ShrinkError, match="assigns is_gfx95_supported"):
        check_parameters(Path("."), rules_with(RULE), [("python/pkg/amd/fused.py", body)])


# -- [[features]].parameters: only the callers the cut leaves count ---------------------------------
BACKEND = '''
class TritonAttnBackend:
    def __init__(self, runner, skip_prefill=False, *, dllm_fa4: bool = False):
        self.fa4 = dllm_fa4
'''
REGISTRY = '''
@register_attention_backend("triton")
def create_triton_backend(runner):
    return TritonAttnBackend(runner)


@register_attention_backend("fa4")
def create_flashattention_v4_backend(runner):
    return TritonAttnBackend(runner, dllm_fa4=True)
'''
FEATURE_RULE = FixedParameter(function="sglang.srt.layers.attention.triton_backend:TritonAttnBackend.__init__",
                              name="dllm_fa4", value=False, since="0.5.22", reason="test")


def feature_rules_with(param: FixedParameter):
    rules = rules_with()
    features = [f.model_copy(update={"parameters": [param] if i == 0 else []}) for i, f in enumerate(rules.features)]
    return rules.model_copy(update={"features": features})


def backend_files(registry: str = REGISTRY, extra: str = "") -> list[tuple[str, str]]:
    return [("python/sglang/srt/layers/attention/triton_backend.py", BACKEND + extra),
            ("python/sglang/srt/layers/attention/attention_registry.py", registry)]


REMOVED = {"attention_backends": {"fa4"}}  # what the plan's registry view removes


def test_a_feature_parameter_ignores_the_calls_of_a_removed_registry_key() -> None:
    # the plan removes "fa4": its factory goes, and its dllm_fa4=True with it
    sites = check_parameters(Path("."), feature_rules_with(FEATURE_RULE), backend_files(), removed_keys=REMOVED)
    key = "sglang.srt.layers.attention.triton_backend:TritonAttnBackend.__init__(dllm_fa4)"
    assert [(s.line, s.passed) for s in sites[key]] == [(4, "default: False")]
    # without the plan's removed keys every call counts
    with pytest.raises(ShrinkError, match="attention_registry.py:9 passes True"):
        check_parameters(Path("."), feature_rules_with(FEATURE_RULE), backend_files())


def test_a_kept_caller_passing_the_other_value_fails() -> None:
    kept = REGISTRY.replace('backend("fa4")', 'backend("triton")')
    with pytest.raises(ShrinkError, match="attention_registry.py:9 passes True"):
        check_parameters(Path("."), feature_rules_with(FEATURE_RULE), backend_files(kept), removed_keys=REMOVED)


def test_a_subclass_of_the_constructors_class_fails() -> None:
    sub = "\n\nclass DraftBackend(TritonAttnBackend):\n    pass\n"
    with pytest.raises(ShrinkError, match="subclasses TritonAttnBackend"):
        check_parameters(Path("."), feature_rules_with(FEATURE_RULE), backend_files(extra=sub), removed_keys=REMOVED)


def test_a_parameter_rule_applies_from_its_release_on() -> None:
    from shrinker.plan.reach import active_rules

    rules = feature_rules_with(FEATURE_RULE)
    assert not [p for f in active_rules(rules, "0.5.21").features for p in f.parameters]
    assert [p for f in active_rules(rules, "0.5.22").features for p in f.parameters] == [FEATURE_RULE]
    assert active_rules(rules, "99.0") is rules  # nothing left out: the same object
