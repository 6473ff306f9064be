"""plan/batches: where prune_cli_choices edits (registry modules, their re-export origins, inline choices)."""

from __future__ import annotations

import re
from types import SimpleNamespace

from shrinker.graph.records import MODULE, FileFacts, ImportRecord, Where
from shrinker.plan.batches import _choices_modules
from shrinker.rules.load import load_rules
from shrinker.rules.schema import Registry


def test_registry_origins_inline_platform_choices_and_option_fields(tmp_path):
    files = {
        "sglang.srt.server_args": "from sglang.srt.arg_groups.choices import ATTENTION_BACKEND_CHOICES\n",
        "sglang.srt.arg_groups.choices": 'ATTENTION_BACKEND_CHOICES = ["fa3", "aiter"]\n',
        "sglang.srt.arg_groups.fields.exec_": 'x: A[str, Arg(choices=["deepep", "mori"])] = "none"\n',
        "sglang.srt.arg_groups.fields.cache": 'hicache_storage_backend: A[str, Arg(choices=["file", "eic"])] = None\n',
        "sglang.srt.other": 'y: A[str, Arg(choices=["a", "b"])] = "a"\n',
    }
    paths = {m: m.replace(".", "/") + ".py" for m in files}
    for m, text in files.items():
        (tmp_path / paths[m]).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / paths[m]).write_text(text)
    facts = {"sglang.srt.server_args": FileFacts(
        path=paths["sglang.srt.server_args"], module="sglang.srt.server_args", is_package=False, lines=1,
        imports=[ImportRecord("sglang.srt.arg_groups.choices", ["ATTENTION_BACKEND_CHOICES"], 1, True,
                              Where(scope=MODULE))],
        defined=["ATTENTION_BACKEND_CHOICES"])}
    g = SimpleNamespace(facts=facts, tree=tmp_path, module_path=paths)
    rules = load_rules("deepseek")
    registries = [Registry(name="abc", kind="choices", module="sglang.srt.server_args",
                           variable="ATTENTION_BACKEND_CHOICES", follows="attention_backends", reason="t"),
                  Registry(name="hicache", kind="choices", module="sglang.srt.server_args",
                           variable="hicache_storage_backend", keep=["file"], reason="t")]
    rules = rules.model_copy(update={"registries": registries})
    found = _choices_modules(g, rules, sorted(files), re.compile(r'"(?:aiter|mori)"'))
    assert found == {"sglang.srt.server_args", "sglang.srt.arg_groups.choices",
                     "sglang.srt.arg_groups.fields.exec_", "sglang.srt.arg_groups.fields.cache"}
