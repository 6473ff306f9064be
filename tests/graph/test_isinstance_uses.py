"""Names a module reads only as isinstance classes: the plan cuts a removed config module kept only by them."""

from __future__ import annotations

import textwrap

import pytest

from shrinker.graph.isinstance_uses import isinstance_only_names

TARGET = "sglang.srt.configs.qwen4_exp"


def only(code: str, names=("Qwen4ExpTextConfig",), module="sglang.srt.mem_cache.kv_cache_configurator",
         is_package=False) -> set[str]:
    return isinstance_only_names(textwrap.dedent(code), module, is_package, TARGET, set(names))


def test_a_function_local_import_read_only_by_isinstance() -> None:
    # 0.5.23's kv_cache_configurator
    assert only("""
        class Configurator:
            def _get_ple_req_pool_kwargs(self):
                from sglang.srt.configs.qwen4_exp import Qwen4ExpTextConfig

                if not isinstance(self.mambaish_config, Qwen4ExpTextConfig):
                    return {}
                return {"ple": True}
    """) == {"Qwen4ExpTextConfig"}


def test_one_import_per_function_tuples_unions_and_relative_imports() -> None:
    assert only("""
        def a(config):
            from sglang.srt.configs.qwen4_exp import Qwen4ExpTextConfig
            return isinstance(config.hf_text_config, (int, Qwen4ExpTextConfig))

        def b(config):
            from .qwen4_exp import Qwen4ExpTextConfig, Qwen4ExpConfig
            return isinstance(config, Qwen4ExpConfig | Qwen4ExpTextConfig)
    """, names=("Qwen4ExpTextConfig", "Qwen4ExpConfig"), module="sglang.srt.configs.hybrid_arch") == {
        "Qwen4ExpTextConfig", "Qwen4ExpConfig"}


@pytest.mark.parametrize("use", [
    "Qwen4ExpTextConfig()",                                   # an instance: the module must stay
    "class Sub(Qwen4ExpTextConfig): pass",                    # a base class
    "issubclass(type(x), Qwen4ExpTextConfig)",                # not the fold's shape
    "isinstance(f(x), Qwen4ExpTextConfig)",                   # the first argument is a call
    "isinstance(x, (A, (Qwen4ExpTextConfig,)))",              # a nested tuple
    "def f(c: Qwen4ExpTextConfig): pass",                     # an annotation is evaluated
    "Qwen4ExpTextConfig = None",                              # bound another way too
])
def test_any_other_use_keeps_the_module(use: str) -> None:
    code = f"from sglang.srt.configs.qwen4_exp import Qwen4ExpTextConfig\nisinstance(y, Qwen4ExpTextConfig)\n{use}\n"
    assert only(code) == set()


def test_an_alias_a_local_isinstance_or_another_module_is_not_followed() -> None:
    aliased = "from sglang.srt.configs.qwen4_exp import Qwen4ExpTextConfig as C\nisinstance(y, C)\n"
    assert only(aliased) == set()
    shadowed = ("from sglang.srt.configs.qwen4_exp import Qwen4ExpTextConfig\n"
                "def isinstance(a, b): return True\nisinstance(y, Qwen4ExpTextConfig)\n")
    assert only(shadowed) == set()
    elsewhere = "from sglang.srt.configs.qwen3_next import Qwen4ExpTextConfig\nisinstance(y, Qwen4ExpTextConfig)\n"
    assert only(elsewhere) == set()


def test_a_name_never_read_is_a_reexport() -> None:
    # `sglang/__init__.py`: `from sglang.lang.api import Runtime, ...` makes them the package's attributes
    assert only("from sglang.srt.configs.qwen4_exp import Qwen4ExpTextConfig\n") == set()
    assert only("from sglang.srt.configs.qwen4_exp import Qwen4ExpTextConfig, Qwen4ExpConfig\n"
                "isinstance(y, Qwen4ExpTextConfig)\n", names=("Qwen4ExpTextConfig", "Qwen4ExpConfig")) == {
        "Qwen4ExpTextConfig"}
