"""prune_entry_classes: a kept model module registers no architecture the plan removed."""

from __future__ import annotations

import textwrap

from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.pipeline import transform_source
from shrinker.rules.load import load_rules

REMOVED = {"models": frozenset({"LlamaForCausalLM", "Phi3ForCausalLM", "DbrxForCausalLM"})}


def run(code: str, module: str = "sglang.srt.models.llama") -> tuple[str, dict]:
    inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(registry_keys=REMOVED))
    code = textwrap.dedent(code)
    result = transform_source(code, path="x.py", module=module, inputs=inputs, codemods=["prune_entry_classes"])
    assert result.status in ("success", "skip"), result.error
    again = transform_source(result.code, path="x.py", module=module, inputs=inputs, codemods=["prune_entry_classes"])
    assert again.code == result.code and not again.changes, "not idempotent"
    return result.code, result.changes


def test_removed_architectures_leave_the_list() -> None:
    out, changes = run('''
        class LlamaForCausalLM: ...
        class DeepseekV3ForCausalLM: ...

        EntryClass = [
            LlamaForCausalLM,  # the base
            DeepseekV3ForCausalLM,
        ]
        ''')
    assert out == textwrap.dedent('''
        class LlamaForCausalLM: ...
        class DeepseekV3ForCausalLM: ...

        EntryClass = [
            DeepseekV3ForCausalLM,
        ]
        ''')
    assert changes == {"prune_entry_classes.architectures_dropped": 1}


def test_an_emptied_or_single_entry_goes() -> None:
    out, _ = run('''
        class LlamaForCausalLM: ...
        class Phi3ForCausalLM(LlamaForCausalLM): ...

        EntryClass = [LlamaForCausalLM, Phi3ForCausalLM]
        ''')
    assert "EntryClass" not in out and "class Phi3ForCausalLM" in out
    out, _ = run("class DbrxForCausalLM: ...\n\nEntryClass = DbrxForCausalLM\n", module="sglang.srt.models.dbrx")
    assert out == "class DbrxForCausalLM: ...\n"


def test_a_star_export_keeps_the_name_bound() -> None:
    out, _ = run('''
        __all__ = ["LlamaForCausalLM", "EntryClass"]
        EntryClass = [LlamaForCausalLM]
        ''')
    assert "EntryClass = []" in out


def test_what_stays() -> None:
    code = '''
        EntryClass = [DeepseekV3ForCausalLM, helper()]

        def f():
            EntryClass = [LlamaForCausalLM]  # a local, not the registry's
            return EntryClass
        '''
    assert run(code)[0] == textwrap.dedent(code)
    # a module outside the scanned package registers nothing
    assert run("EntryClass = [LlamaForCausalLM]\n", module="sglang.srt.layers.llama_like")[0] == \
        "EntryClass = [LlamaForCausalLM]\n"
