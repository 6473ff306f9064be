"""CLI surface (`--help` options and choices) and ServerArgs defaults, upstream vs pruned."""

from __future__ import annotations

from shrinker.verify import verify_tree
from shrinker.verify.cli_surface import RuleIndex, compare_help, compare_server_args, registry_keys, tokens
from shrinker.checks.tree import SourceTree
from tests.verify.conftest import edit

SERVER_ARGS = "python/sglang/srt/server_args.py"


def _run(pruned, upstream, env, surface, rules, checks=("cli",)):
    return verify_tree(pruned, upstream, checks=list(checks), env=env, surface=surface, rules=rules)


def test_registry_keys_from_upstream_source(trees, verify_rules):
    keys = registry_keys(verify_rules, SourceTree.load(trees[0]))
    assert keys == {"attention_backends": {"triton", "ascend"}, "tool_call_parsers": {"deepseekv3", "qwen"}}


def test_rule_index_explains_by_registry_platform_and_remove_rule(verify_rules):
    keys = {"attention_backends": {"triton", "flashinfer", "ascend"}, "tool_call_parsers": {"deepseekv3", "qwen"}}
    index = RuleIndex(verify_rules, removed_modules=["sglang.srt.disaggregation.mooncake", "sglang.srt.layers.quantization.auto_round"], keys=keys)
    backends = ["triton", "flashinfer", "ascend", "aiter"]
    assert "attention_backends" in index.explain_choice("--attention-backend", "ascend", backends)
    assert index.explain_choice("--attention-backend", "flashinfer", backends) is None  # kept: never explained
    assert "tool_call_parsers" in index.explain_choice("--tool-call-parser", "qwen", ["deepseekv3", "qwen"])
    # not a registry's option: platform words, predicate globs, remove rules and removed modules
    assert "'npu'" in index.explain_choice("--device", "npu", ["cuda", "npu"])
    assert "aiter" in index.explain_choice("--moe-runner-backend", "aiter_fused", ["triton", "aiter_fused"])
    assert "multimodal" in index.explain_option("--enable-multimodal")
    assert "mooncake" in index.explain_choice("--transfer-backend", "mooncake", ["nixl", "mooncake"])
    assert index.explain_choice("--load-mode", "auto", ["auto", "eager"]) is None  # no prefix guesses
    # a kept key is never explained away, whatever else matches
    assert index.explain_choice("--moe-runner-backend", "triton", ["triton", "aiter_fused"]) is None
    assert index.explain_option("--enable-npu-graph") is not None
    assert index.explain_option("--mm-attention-backend") is None
    # a registry whose keys are unknown, listed first in the rules, does not take another's choice
    configs = verify_rules.registries[0].model_copy(update={"name": "model_configs", "kind": "dict", "keep": ["qwen"],
                                                            "reason": "configs"})
    rules = verify_rules.model_copy(update={"registries": [configs, *verify_rules.registries]})
    keys["tool_call_parsers"].add("glm")
    index = RuleIndex(rules, keys=keys)
    assert "'tool_call_parsers'" in index.explain_choice("--tool-call-parser", "glm", ["deepseekv3", "qwen", "glm"])
    assert tokens("--Enable-NPU_graph") == ["enable", "npu", "graph"]


def _help(options: dict) -> dict:
    return {"exit": 0, "parsers": [{"prog": "x", "actions": [
        {"options": [opt], "dest": opt.strip("-"), "choices": choices} for opt, choices in options.items()]}]}


def test_compare_help_subset_and_explanations(verify_rules):
    index = RuleIndex(verify_rules, keys={"attention_backends": {"triton", "flashinfer", "ascend"}})
    up = _help({"--attention-backend": ["triton", "flashinfer", "ascend"], "--device": ["cuda", "npu"],
                "--enable-npu-graph": None, "--mm-attention-backend": ["sdpa"], "--port": None})
    pr = _help({"--attention-backend": ["triton"], "--device": ["cuda"], "--port": None, "--new-flag": None})
    diff = compare_help("sglang.launch_server", up, pr, index, "python/sglang/launch_server.py")
    assert sorted(diff.findings) == sorted([
        "python/sglang/launch_server.py:1 sglang.launch_server: option --new-flag is not in upstream",
        "python/sglang/launch_server.py:1 sglang.launch_server: option --mm-attention-backend disappeared and no rule names it",
        "python/sglang/launch_server.py:1 sglang.launch_server: --attention-backend choice 'flashinfer' disappeared and no rule names it",
    ])
    assert len(diff.explained) == 3  # ascend (registry), npu (platform), --enable-npu-graph (platform)
    assert (diff.options_upstream, diff.options_pruned) == (5, 4)


def test_help_failing_pruned_is_a_finding(verify_rules):
    up = _help({"--port": None})
    diff = compare_help("m", up, {"exit": 1, "error": "ImportError: x", "parsers": []}, RuleIndex(verify_rules), "m.py")
    assert diff.findings == ["m.py:1 `python -m m --help` works upstream but fails pruned: ImportError: x"]


def test_unmodified_tree_cli_passes(trees, fake_env, surface, verify_rules):
    upstream, pruned = trees
    result = _run(pruned, upstream, fake_env, surface, verify_rules, checks=("cli", "server_args"))
    cli = result.check("cli")
    assert result.passed, result.to_json()
    assert cli.counts["options_upstream"] == cli.counts["options_pruned"] == 8  # with -h/--help
    assert cli.counts["choices_upstream"] == 9
    assert result.check("server_args").counts["fields_compared"] == 7


def test_dropped_choice_no_rule_names_is_caught(trees, fake_env, surface, verify_rules):
    upstream, pruned = trees
    edit(pruned / SERVER_ARGS, '["triton", "flashinfer", "ascend"]', '["triton", "ascend"]')
    cli = _run(pruned, upstream, fake_env, surface, verify_rules).check("cli")
    assert not cli.passed
    assert cli.findings == ["python/sglang/launch_server.py:1 sglang.launch_server: --attention-backend choice "
                            "'flashinfer' disappeared and no rule names it"]


def test_dropped_choices_named_by_rules_pass(trees, fake_env, surface, verify_rules):
    upstream, pruned = trees
    edit(pruned / SERVER_ARGS, '["triton", "flashinfer", "ascend"]', '["triton", "flashinfer"]')
    edit(pruned / SERVER_ARGS, 'DEVICE_CHOICES = ["cuda", "npu"]', 'DEVICE_CHOICES = ["cuda"]')
    edit(pruned / SERVER_ARGS, '    parser.add_argument("--enable-npu-graph", action="store_true")\n', "")
    edit(pruned / "python/sglang/srt/function_call/function_call_parser.py", '        "qwen": QwenDetector,\n', "")
    cli = _run(pruned, upstream, fake_env, surface, verify_rules).check("cli")
    assert cli.passed, cli.findings
    assert sorted(cli.notes) == sorted([
        "sglang.launch_server: option --enable-npu-graph removed (platform string 'npu')",
        "sglang.launch_server: --attention-backend choice 'ascend' removed (registry 'attention_backends' keeps only triton, flashinfer)",
        "sglang.launch_server: --device choice 'npu' removed (platform string 'npu')",
        "sglang.launch_server: --tool-call-parser choice 'qwen' removed (registry 'tool_call_parsers' keeps only deepseekv3)",
    ])


def test_dropped_option_no_rule_names_is_caught(trees, fake_env, surface, verify_rules):
    upstream, pruned = trees
    edit(pruned / SERVER_ARGS, '    parser.add_argument("--mm-attention-backend", choices=["sdpa", "fa3"])\n', "")
    cli = _run(pruned, upstream, fake_env, surface, verify_rules).check("cli")
    assert cli.findings == ["python/sglang/launch_server.py:1 sglang.launch_server: option --mm-attention-backend "
                            "disappeared and no rule names it"]


def test_server_args_default_changed(trees, fake_env, surface, verify_rules):
    upstream, pruned = trees
    edit(pruned / SERVER_ARGS, '"flashinfer" if config.get("kv_lora_rank") else "triton"', '"triton"')
    check = _run(pruned, upstream, fake_env, surface, verify_rules, checks=("server_args",)).check("server_args")
    assert check.findings == ["python/sglang/srt/server_args.py:1 ServerArgs.attention_backend: upstream 'flashinfer', pruned 'triton'"]


def test_compare_server_args_fields():
    up = {"fields": {"a": 1, "b": "x", "gone": True}, "error": ""}
    pr = {"fields": {"a": 1, "b": "y", "new": 0}, "error": ""}
    findings, notes, compared, equal = compare_server_args(up, pr, "s.py")
    assert (compared, equal) == (2, 1)
    assert findings == ["s.py:1 ServerArgs.b: upstream 'x', pruned 'y'", "s.py:1 ServerArgs.new is not in upstream"]
    assert notes == ["ServerArgs.gone removed (upstream default True)"]


def test_server_args_difference_a_rule_decides_is_a_note():
    up = {"fields": {"a": 1, "b": "x"}, "error": ""}
    pr = {"fields": {"a": 1, "b": "y"}, "error": ""}
    findings, notes, compared, equal = compare_server_args(up, pr, "s.py", {"b": "rule: b is CUDA-only"})
    assert not findings and (compared, equal) == (2, 1)
    assert notes == ["ServerArgs.b: upstream 'x', pruned 'y' (rule: b is CUDA-only)"]


def _tree(root, server_args: str, files: dict[str, str] | None = None):
    for rel, text in {SERVER_ARGS: server_args, **(files or {})}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_removed_fields_are_checked_against_both_trees(tmp_path, verify_rules):
    from shrinker.symbols.rules import AttributeTable
    from shrinker.verify.cli_surface import removed_fields

    fields = ("class ServerArgs:\n    tp_size: int = 1\n    enable_lmcache: bool = False\n"
              "    noop_flag: bool = False\n    still_read: bool = False\n")
    upstream = _tree(tmp_path / "up", fields, {"python/sglang/srt/lmc.py": "x = a.enable_lmcache or a.still_read\n"})
    pruned = _tree(tmp_path / "pr", "class ServerArgs:\n    tp_size: int = 1\n",
                   {"python/sglang/srt/sched.py": "y = getattr(a, 'still_read')\n"})
    table = AttributeTable.model_validate({"class": "sglang.srt.server_args:ServerArgs", "reason": "r",
                                          "only_removed_readers": True})
    why, findings = removed_fields(upstream, pruned, "sglang.srt.server_args:ServerArgs", table)
    assert list(why) == ["enable_lmcache"] and "python/sglang/srt/lmc.py" in why["enable_lmcache"]
    assert sorted(findings) == [
        "sglang.srt.server_args:ServerArgs.noop_flag removed though upstream never reads it (rule only_removed_readers)",
        "sglang.srt.server_args:ServerArgs.still_read removed but python/sglang/srt/sched.py still reads it"]
    _, no_rule = removed_fields(upstream, pruned, "sglang.srt.server_args:ServerArgs", None)
    assert len(no_rule) == 3 and all("no attribute-table rule" in f for f in no_rule)

    # the option that stored into a removed field is explained by it; the ServerArgs probe notes it
    up = _help({"--enable-lmcache": None, "--noop-flag": None, "--port": None})
    for parser in up["parsers"]:
        for action in parser["actions"]:
            action["dest"] = action["options"][0].lstrip("-").replace("-", "_")
    diff = compare_help("sglang.launch_server", up, _help({"--port": None}), RuleIndex(verify_rules),
                        "l.py", why)
    assert diff.explained == [f"sglang.launch_server: option --enable-lmcache removed (ServerArgs.enable_lmcache: "
                              f"{why['enable_lmcache']})"]
    assert diff.findings == ["l.py:1 sglang.launch_server: option --noop-flag disappeared and no rule names it"]
    up_fields = {"fields": {"tp_size": 1, "enable_lmcache": False, "noop_flag": False}, "error": ""}
    findings, notes, _, _ = compare_server_args(up_fields, {"fields": {"tp_size": 1}, "error": ""}, "s.py", {}, why)
    assert findings == ["s.py:1 ServerArgs.noop_flag disappeared and no rule names it"]
    assert notes == [f"ServerArgs.enable_lmcache removed (upstream default False; {why['enable_lmcache']})"]

