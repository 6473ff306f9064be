"""On the real pinned upstream (marked `upstream`; skipped without it or without .venv-verify):
an unmodified clone verifies with 0 regressions, and planted faults in a clone are each caught by
the check meant for it. The import check is limited to the parser/entrypoint area here (the full
set is `shrink verify` / `make bench`); upstream results come from the per-commit cache."""

from __future__ import annotations

import pytest

from shrinker.verify import verify_tree
from tests.verify.conftest import edit

pytestmark = pytest.mark.upstream

ONLY = ["sglang.srt.function_call", "sglang.srt.parser", "sglang.srt.entrypoints.openai.protocol",
        "sglang.srt.mem_cache.storage", "sglang.launch_server"]


def test_unmodified_clone_passes_every_check(upstream_clone, pinned_upstream, verify_env):
    result = verify_tree(upstream_clone, pinned_upstream.root, env=verify_env, only=ONLY)
    assert result.passed, [f for c in result.checks for f in c.findings][:20]
    assert result.regressions == 0
    counts = {c.name: c.counts for c in result.checks}
    assert counts["syntax"]["files"] > 2800
    assert counts["imports"]["import_pruned"] > 50 and counts["imports"]["import_upstream_of_those"] == 0
    assert counts["cli"]["options_upstream"] == counts["cli"]["options_pruned"] > 400
    assert counts["server_args"]["fields_compared"] > 400
    assert counts["behaviour"]["identical"] == counts["behaviour"]["cases"] > 40


def test_planted_faults_caught_by_their_checks(upstream_clone, pinned_upstream, verify_env):
    py = upstream_clone / "python" / "sglang"
    # 1. a deleted helper still imported
    (py / "srt/function_call/deepseekv31_detector.py").unlink()
    # 2. a removed name still used (deepseekv3_detector imports it)
    edit(py / "srt/function_call/utils.py", "def _is_complete_json(", "def _was_complete_json(")
    # 3. a removed module still named by a registry string (nothing imports it statically)
    (py / "srt/mem_cache/storage/eic/eic_storage.py").unlink()
    result = verify_tree(upstream_clone, pinned_upstream.root, env=verify_env, only=ONLY)
    findings = {c.name: c.findings for c in result.checks}
    assert not result.passed

    assert any("function_call_parser.py" in f and "deepseekv31_detector, which is not in the tree" in f
               for f in findings["internal_imports"])
    assert any("deepseekv3_detector.py" in f and "'_is_complete_json'" in f for f in findings["import_names"])
    assert any("backend_factory.py" in f and "eic.eic_storage" in f for f in findings["registry_strings"])
    # the CLI no longer starts: server_args imports the parser registry
    assert any("launch_server --help` works upstream but fails pruned" in f for f in findings["cli"])
    # the import check sees 1 and 2 at run time, with the traceback's last line
    broken = {f.split(" ")[1]: f for f in findings["imports"]}
    assert "cannot import name '_is_complete_json'" in broken["sglang.srt.function_call.deepseekv3_detector"]
    assert "sglang.srt.function_call.function_call_parser" in broken  # it imports both
    # and the parsers behave differently: every tool-call case now raises
    assert any("case tool_v31_single: works upstream, pruned raises" in f for f in findings["behaviour"])
    # ServerArgs cannot even be built (server_args imports the parser registry) ...
    assert any("ServerArgs works upstream but fails pruned" in f for f in findings["server_args"])
    # ... and checks the faults do not concern stay quiet
    assert not findings["syntax"] and not findings["third_party"] and not findings["undefined_names"]


def test_dropped_cli_choice_no_rule_names(upstream_clone, pinned_upstream, verify_env):
    edit(upstream_clone / "python/sglang/srt/server_args.py", '"lpm",', "")
    cli = verify_tree(upstream_clone, pinned_upstream.root, env=verify_env, checks=["cli"]).check("cli")
    assert sorted(cli.findings) == [
        "python/sglang/bench_one_batch.py:1 sglang.bench_one_batch: --schedule-policy choice 'lpm' disappeared and no rule names it",
        "python/sglang/launch_server.py:1 sglang.launch_server: --schedule-policy choice 'lpm' disappeared and no rule names it",
    ]
    assert cli.counts["options_pruned"] == cli.counts["options_upstream"]
