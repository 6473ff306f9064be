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
    return rules.model_copy(update={"platform": rules.platform.model_copy(update={"parameters": list(params)})})


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
