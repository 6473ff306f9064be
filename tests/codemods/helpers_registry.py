"""Shared helpers for the import/registry codemod tests: inputs, a runner that keeps the transform."""

from __future__ import annotations

import textwrap
from functools import lru_cache
from typing import Iterable

import libcst as cst
from libcst.codemod import CodemodContext

from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.rules.load import load_rules
from shrinker.rules.schema import Registry, Rules


@lru_cache(maxsize=1)
def deepseek_rules() -> Rules:
    return load_rules("deepseek")


def make_inputs(modules: Iterable[str] = (), keys: dict[str, Iterable[str]] | None = None,
                registries: list[dict] | None = None, names: dict[str, Iterable[str]] | None = None
                ) -> CodemodInputs:
    """Inputs with the given removed modules/registry keys; `registries` replaces the rules' list."""
    rules = deepseek_rules()
    if registries is not None:
        rules = rules.model_copy(update={"registries": [Registry(reason="test", **r) for r in registries]})
    removed = Removed(modules=frozenset(modules),
                      registry_keys={k: frozenset(v) for k, v in (keys or {}).items()})
    if names is not None:
        # `Removed.names` (names a kept module no longer provides) is proposed to the lead;
        # the codemods read it with getattr until the field exists.
        removed.names = {k: frozenset(v) for k, v in names.items()}  # type: ignore[attr-defined]
    return CodemodInputs(rules=rules, removed=removed)


def context(module: str = "pkg.mod", filename: str | None = None, package: str | None = None) -> CodemodContext:
    return CodemodContext(filename=filename or module.replace(".", "/") + ".py",
                          full_module_name=module, full_package_name=package)


def run(cls, code: str, inputs: CodemodInputs, module: str = "pkg.mod", dedent: bool = True,
        filename: str | None = None, package: str | None = None, **kwargs):
    """Run one codemod over `code`; returns (new code, the transform instance)."""
    source = textwrap.dedent(code) if dedent else code
    transform = cls(context(module, filename, package), inputs, **kwargs)
    out = transform.transform_module(cst.parse_module(source))
    return out.code, transform


def assert_idempotent(cls, code: str, inputs: CodemodInputs, module: str = "pkg.mod", **kwargs) -> str:
    """Run twice: the second run must give no diff and no change count. Returns the first output."""
    once, _ = run(cls, code, inputs, module, **kwargs)
    twice, transform = run(cls, once, inputs, module, dedent=False, **kwargs)
    assert twice == once
    assert not +transform.changes, transform.changes
    return once
