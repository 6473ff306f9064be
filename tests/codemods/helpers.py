"""Test helpers for the platform codemods: libcst's CodemodTest, plus idempotence and findings.

`PlatformCodemodTest.assertCodemod(before, after)` is libcst's assertCodemod (fixtures dedented the
same way) with the deepseek profile's CodemodInputs, and in addition checks that the output
compiles and that a second run changes nothing (no diff, no change counted). It returns the
transform instance so a test can look at `changes` and `findings`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

import libcst as cst
from libcst.codemod import CodemodTest

from shrinker.codemods.base import new_context
from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.rules.load import load_rules


@lru_cache(maxsize=1)
def deepseek_inputs() -> CodemodInputs:
    return CodemodInputs(rules=load_rules("deepseek"), removed=Removed())


def run_transform(cls, code: str, inputs: Optional[CodemodInputs] = None, path: str = "sglang/srt/x.py",
                  module: str = "sglang.srt.x"):
    """Run one codemod class over `code` exactly as given; returns (new code, instance)."""
    instance = cls(new_context(path, module), inputs or deepseek_inputs())
    out = instance.transform_module(cst.parse_module(code))
    return out.code, instance


def removed_parser_inputs() -> CodemodInputs:
    """The deepseek rules with some tool-call and reasoning parsers removed (as the plan records them)."""
    keys = {"tool_call_parsers": frozenset({"kimi_k3", "glm47", "gpt-oss"}),
            "reasoning_parsers": frozenset({"hunyuan", "mistral"})}
    return CodemodInputs(rules=load_rules("deepseek"), removed=Removed(registry_keys=keys))


class PlatformCodemodTest(CodemodTest):
    TRANSFORM = None  # set by subclasses

    def assertCodemod(self, before: str, after: str, *, findings: Optional[list[str]] = None,
                      inputs: Optional[CodemodInputs] = None, **_: object):
        source = self.make_fixture_data(before)
        code, instance = run_transform(self.TRANSFORM, source, inputs)
        self.assertEqual(self.make_fixture_data(after), self.make_fixture_data(code))
        compile(code, "<after>", "exec")
        again, second = run_transform(self.TRANSFORM, code, inputs)
        self.assertEqual(code, again, "not idempotent: the second run changed the code")
        self.assertEqual(+second.changes, {}, "not idempotent: the second run counted changes")
        if code == source:
            self.assertEqual(+instance.changes, {}, "nothing changed but changes were counted")
        else:
            self.assertTrue(+instance.changes, "the code changed but no change was counted")
        if findings is not None:
            got = [f.split(": ", 1)[1] if ": " in f else f for f in instance.findings]
            self.assertEqual(len(got), len(findings), instance.findings)
            for expected, message in zip(findings, got):
                self.assertIn(expected, message)
        return instance

    def assertUnchanged(self, code: str, **kwargs):
        """`code` comes out byte-identical (no fixture normalisation)."""
        source = self.make_fixture_data(code)
        out, instance = run_transform(self.TRANSFORM, source, kwargs.get("inputs"))
        self.assertEqual(source, out)
        self.assertEqual(+instance.changes, {})
        return instance
