"""Regen between two fixture releases: every diff category, and exit 1 when a person is needed."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.conftest import MINITREE

ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=ENV)


def _release(origin, tag):
    _git(origin, "add", "-A")
    _git(origin, "commit", "-qm", tag)
    _git(origin, "tag", tag)


@pytest.fixture
def two_releases(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    (root / "rules").mkdir(parents=True)
    shutil.copy(MINITREE / "rules.toml", root / "rules" / "mini.toml")
    monkeypatch.setenv("SHRINK_ROOT", str(root))
    monkeypatch.setenv("SHRINK_CACHE", str(tmp_path / "cache"))
    origin = tmp_path / "origin"
    shutil.copytree(MINITREE, origin, ignore=shutil.ignore_patterns("rules.toml"))
    pkg = origin / "python" / "pkg"
    (pkg / "version.py").write_text('__version__ = "1.0"\n')
    _git(origin, "init", "-q", "-b", "main")
    _release(origin, "v1")
    # v2: a new model, a new attention backend, a new platform predicate, the NPU backend gone,
    # and a kept helper no longer imported.
    (pkg / "version.py").write_text('__version__ = "2.0"\n')
    (pkg / "models" / "qwen.py").write_text("class QwenForCausalLM:\n    pass\n\n\nEntryClass = QwenForCausalLM\n")
    reg = pkg / "layers" / "attention_registry.py"
    reg.write_text(reg.read_text() + '\n\n@register_attention_backend("newattn")\ndef create_new(runner):\n'
                   '    from pkg.layers.attention.triton_backend import TritonBackend\n\n    return TritonBackend(runner)\n')
    common = pkg / "utils" / "common.py"
    common.write_text(common.read_text() + "\n\ndef is_tpu():\n    return False\n\n\ndef is_npu_fast():\n    return False\n")
    server = pkg / "server.py"
    text = server.read_text().replace("from .utils.common import is_npu, is_hip",
                                      "from .utils.common import is_npu, is_hip, is_tpu, is_npu_fast")
    text = text.replace("    from pkg.npu.graph_runner import NPUGraphRunner\n", "    pass\n")
    text = text.replace("try:\n    from pkg.optional_fast import fast_path",
                        "if is_tpu():\n    import pkg.tpu_only\n\nif is_npu_fast():\n    import pkg.npu_fast_only\n\n"
                        "try:\n    from pkg.optional_fast import fast_path")
    server.write_text(text)
    (pkg / "tpu_only.py").write_text("X = 1\n")
    (pkg / "npu_fast_only.py").write_text("Y = 1\n")
    shutil.rmtree(pkg / "npu")
    _release(origin, "v2")
    from shrinker.upstream import fetch

    fetch(f"git+file://{origin}@v1")  # the pin
    return origin


def test_regen_reports_each_category_and_needs_a_person(two_releases):
    from shrinker.regen.run import regen

    result = regen(f"git+file://{two_releases}@v2", profile="mini", run_apply=False, jobs=1)
    ch, att = result.changes, result.attention
    assert "python/pkg/models/qwen.py" in ch["new_modules_removed"]
    assert "python/pkg/tpu_only.py" in ch["new_modules_kept"]  # guarded by a predicate no rule knows
    assert "python/pkg/npu/graph_runner.py" in ch["modules_gone"]
    # is_tpu names no platform of the vocabulary: it stays runtime code, listed, never a question
    assert any(i.startswith("is_tpu (tested in python/pkg/server.py")
               for i in result.warnings["predicates_kept_as_runtime_checks"])
    assert "uncovered_platform_predicates" not in att
    # is_npu_fast names one ("npu", [platform.strings]): it folds to False without a rule, and what it guarded goes
    assert result.decided["platform_predicates_folded"] == [
        "is_npu_fast() is False on CUDA: named for another platform ('npu', the [platform.strings] vocabulary) "
        "(tested in python/pkg/server.py)"]
    assert "python/pkg/npu_fast_only.py" in ch["new_modules_removed"]
    # new keys no keep list names are removed by the allowlist: decided, unless kept signal code names one
    assert att["new_registry_keys"] == []
    assert result.decided["new_registry_keys"] == [
        "attention_backends: newattn removed (not in the attention_backends keep list; no kept signal code selects it, no kept-architecture module registers it)",
        "models: QwenForCausalLM removed (not in the models keep list; no kept signal code selects it, no kept-architecture module registers it)"]
    # a removal rule with nothing left to remove is a warning, never a question
    assert not att["rules_whose_targets_vanished"]
    assert any("pkg.npu.**" in p and "matches no module" in p
               for p in result.warnings["rules_with_nothing_left_to_act_on"])
    assert not result.ok  # apply and verify did not run
    report = json.loads(result.report.with_name(result.report.name[:-3] + ".json").read_text())
    assert report["warnings"]["predicates_kept_as_runtime_checks"]
    assert report["decided"]["new_registry_keys"] and report["warnings"]["rules_with_nothing_left_to_act_on"]
    assert "## Decided by the rules" in result.report.read_text()
    assert result.report.relative_to(result.report.parents[2]).as_posix() == "mini/vv2/regen.md"  # git refs name it
    # Unchanged files between the releases were not parsed again.
    assert result.cache_hit_rate > 0.8


def test_regen_cli_exits_1_with_the_list(two_releases):
    from typer.testing import CliRunner

    from shrinker.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["regen", "--to", f"git+file://{two_releases}@v2", "-p", "mini", "--no-apply"])
    assert res.exit_code == 1
    assert "is_tpu" in res.output


def test_a_new_key_kept_code_names_is_a_question_with_the_rule_that_settles_it(two_releases, monkeypatch):
    from shrinker.regen.run import regen

    server = two_releases / "python" / "pkg" / "server.py"  # the mini rules' signal path
    # listed and compared: no evidence; selected (assigned): evidence
    server.write_text(server.read_text() + '\nCHOICES = ["triton", "newattn"]\n\n\ndef pick(b):\n'
                      '    if b == "newattn":\n        return None\n    return b\n\n\n'
                      'DEFAULT_BACKEND = "newattn" if CHOICES else None\n')
    # a new architecture whose module imports the kept one's code (a draft model of it): a question too
    (two_releases / "python" / "pkg" / "models" / "draftx.py").write_text(
        "from pkg.models.deepseek import DeepseekForCausalLM\n\n\nclass DraftX(DeepseekForCausalLM):\n"
        "    pass\n\n\nEntryClass = DraftX\n")
    _git(two_releases, "add", "-A")
    _git(two_releases, "commit", "-qam", "names newattn")
    _git(two_releases, "tag", "v3")
    result = regen(f"git+file://{two_releases}@v3", profile="mini", run_apply=False, jobs=1)
    question, draft = result.attention["new_registry_keys"]
    n = server.read_text().splitlines().index('DEFAULT_BACKEND = "newattn" if CHOICES else None') + 1
    assert question.startswith("attention_backends: newattn is removed, but kept code selects it or it belongs to a "
                               f"kept architecture (python/pkg/server.py:{n});")
    assert draft.startswith("models: DraftX is removed, but kept code selects it or it belongs to a kept architecture "
                            "(registered by pkg.models.draftx, which imports pkg.models.deepseek);")
    assert 'add "newattn" to the attention_backends keep list, or {key = "attention_backends:newattn", ' \
           'reason = "..."} to [regen].confirmed_removed' in question
    assert result.decided["new_registry_keys"] == [
        "models: QwenForCausalLM removed (not in the models keep list; no kept signal code selects it, no kept-architecture module registers it)"]
    # the one line a person writes settles it: the next run decides it
    rules = two_releases.parent / "proj" / "rules" / "mini.toml"
    rules.write_text(rules.read_text().replace('signal_paths = ["python/pkg/server.py"]',
                                               'signal_paths = ["python/pkg/server.py"]\n'
                                               'confirmed_removed = [{key = "attention_backends:newattn", '
                                               'reason = "a test backend"}]'))
    again = regen(f"git+file://{two_releases}@v3", profile="mini", run_apply=False, jobs=1)
    assert [q.split(" is removed")[0] for q in again.attention["new_registry_keys"]] == ["models: DraftX"]
    assert "attention_backends: newattn removed (not in the attention_backends keep list; confirmed by " \
           "[regen].confirmed_removed: a test backend)" in again.decided["new_registry_keys"]


def test_bad_targets_are_one_line_and_exit_2(monkeypatch):
    import urllib.error

    import shrinker.upstream.distributions as distributions
    from shrinker.errors import ShrinkError
    from shrinker.regen.run import check_target

    files = [{"filename": f"sglang-{v}-py3-none-any.whl"} for v in ("0.5.16", "0.5.17", "0.5.23", "0.6.0rc1")]
    monkeypatch.setattr(distributions, "_get", lambda url, headers=None: json.dumps({"files": files}).encode())
    check_target("pypi:sglang==0.5.16", "pypi:sglang==0.5.17")  # a newer release PyPI has: fine
    cases = {"pypi:sglang==0.5.99": "PyPI has no release 0.5.99 of sglang (the newest is 0.5.23)",
             "pypi:sglang==0.5.14": "is not newer than the pin pypi:sglang==0.5.16",
             "pypi:sglang==0.5.16": "is not newer than the pin",
             "pypi:sglang==banana": "'banana' is not a version",
             "sglang 0.5.17": "bad upstream spec"}
    for spec, message in cases.items():
        with pytest.raises(ShrinkError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
            check_target("pypi:sglang==0.5.16", spec)
        assert err.value.exit_code == 2 and "\n" not in str(err.value)

    def offline(url, headers=None):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.undo()  # the real _get again, with no network below it
    monkeypatch.setattr(distributions.urllib.request, "urlopen", lambda *a, **k: offline(a))
    with pytest.raises(ShrinkError, match="PyPI unreachable") as err:
        check_target("pypi:sglang==0.5.16", "pypi:sglang==0.5.17")
    assert err.value.exit_code == 2


def test_the_walk_writes_one_row_per_step_and_stops_where_a_person_is_needed(two_releases):
    from typer.testing import CliRunner

    from shrinker.cli import app

    server = two_releases / "python" / "pkg" / "server.py"
    server.write_text(server.read_text() + '\nDEFAULT_BACKEND = "newattn"\n')
    _release(two_releases, "v3")
    res = CliRunner().invoke(app, ["regen", "--to", f"git+file://{two_releases}@v3", "-p", "mini", "--no-apply"])
    assert res.exit_code == 1 and "needs a person" in res.output
    walk = json.loads(next((two_releases.parent / "proj" / "reports" / "mini").glob("regen-*.json")).read_text())
    (row,) = walk["steps"]
    assert row["verdict"] == "needs a person" and row["apply"] == "not run"
    assert row["for_a_person"][0].startswith("attention_backends: newattn is removed")
    assert row["decided"]["new_registry_keys"] == 1  # QwenForCausalLM, by the allowlist
    assert row["details"] == "vv3/regen.md" and not walk["ok"]


def test_releases_between_lists_every_final_release_after_the_pin(monkeypatch):
    from packaging.version import Version

    from shrinker.regen import walk

    monkeypatch.setattr(walk, "pypi_releases", lambda name: [Version(v) for v in ("0.5.15", "0.5.16", "0.5.17",
                                                                                 "0.5.18", "0.5.19")])
    assert walk.releases_between("pypi:sglang==0.5.16", "pypi:sglang==0.5.18") == [
        "pypi:sglang==0.5.17", "pypi:sglang==0.5.18"]
    assert walk.releases_between("pypi:sglang==0.5.16", "git+file:///x@v9") == ["git+file:///x@v9"]


def test_adopting_rewrites_only_the_root_lines_that_followed_a_move(tmp_path):
    from shrinker.regen.run import RegenResult
    from shrinker.regen.walk import follow_moved_roots

    rules = tmp_path / "r.toml"
    text = ('[[roots]]\nmodule = "pkg.bench_x"  \nreason = "b"\n[[roots]]\n# keep me\nmodule = "pkg.bench_x"\n'
            'reason = "again"\n[[roots]]\nmodule = "pkg.bench_x_other"\nreason = "c"\n')
    rules.write_text(text)
    step = RegenResult("a", "b", moves={"pkg.bench_x": "pkg.bench.x"})
    assert follow_moved_roots(rules, [step.moves]) == ["pkg.bench_x -> pkg.bench.x"]
    assert rules.read_text() == text.replace('\nmodule = "pkg.bench_x"\n', '\nmodule = "pkg.bench.x"\n')


def test_a_gate_finding_on_a_removed_module_names_the_keep_rule_that_would_settle_it():
    from shrinker.regen.run import settling_rule

    finding = ("[removed names still used] python/sglang/srt/utils/common.py:1574: is_audio_container from "
               "removed module sglang.srt.multimodal.audio_from_video is still used")
    assert settling_rule(finding, "0.5.17") == (
        '; settle with [[keep]] pattern = "sglang.srt.multimodal.audio_from_video", since = "0.5.17", '
        'reason = "..." if kept code needs it, or a rule that removes its user')
    assert settling_rule("[undefined_names] python/a.py:3 undefined name 'x'", "0.5.17") == ""


def test_a_walk_resumed_from_a_release_starts_there_and_checks_it(monkeypatch, tmp_path):
    from packaging.version import Version

    from shrinker.errors import ShrinkError
    from shrinker.regen import walk
    from shrinker.regen.run import RegenResult

    monkeypatch.setenv("SHRINK_ROOT", str(tmp_path))
    releases = [Version(v) for v in ("0.5.16", "0.5.17", "0.5.18", "0.5.19")]
    monkeypatch.setattr(walk, "pypi_releases", lambda name: releases)
    monkeypatch.setattr("shrinker.regen.run.pypi_releases", lambda name: releases)
    monkeypatch.setattr(walk, "pinned_spec", lambda: "pypi:sglang==0.5.16")
    monkeypatch.setattr(walk, "load_rules", lambda profile: "rules as written")
    monkeypatch.setattr(walk, "rules_at", lambda rules, pin, origin, **_: (f"{rules} carried from {pin} to {origin}", []))
    seen = []

    def step(spec, *, from_spec, rules, run_apply=True, **_):
        seen.append((from_spec, spec, rules))
        return RegenResult(from_spec, spec, apply_run=run_apply, apply_ok=run_apply, verify_ok=run_apply,
                           rules=f"rules after {spec}",
                           versions=(from_spec.split("==")[1], spec.split("==")[1]))

    monkeypatch.setattr(walk, "regen", step)
    result = walk.walk("pypi:sglang==0.5.19", from_spec="pypi:sglang==0.5.17")
    # each step starts from the rules the step before left (roots and names that followed a move)
    assert seen == [("pypi:sglang==0.5.17", "pypi:sglang==0.5.18",
                     "rules as written carried from pypi:sglang==0.5.16 to pypi:sglang==0.5.17"),
                    ("pypi:sglang==0.5.18", "pypi:sglang==0.5.19", "rules after pypi:sglang==0.5.18")]
    assert result.ok and result.report.name == "regen-0.5.17-to-0.5.19.md"
    planned = walk.walk("pypi:sglang==0.5.19", from_spec="pypi:sglang==0.5.17", run_apply=False)
    assert "Verdict: **planned only (--no-apply): nothing for a person**" in planned.report.read_text()
    with pytest.raises(ShrinkError, match="not newer than the pin"):
        walk.walk("pypi:sglang==0.5.19", from_spec="pypi:sglang==0.5.15")


def test_another_familys_model_built_on_kept_code_is_decided_and_a_draft_follows_its_base(tmp_path):
    # 0.5.20: GLM-5 Next and Hunyuan V4 import DeepSeek code; a DeepSeek-named draft model is still asked
    from shrinker.graph.build import build_graph
    from shrinker.regen.run import _judge_new_keys
    from shrinker.regen.signals import module_evidence
    from tests.plan.test_roots import _tree

    graph = build_graph(_tree(tmp_path, {
        "python/pkg/models/__init__.py": "",
        "python/pkg/models/deepseek_v2.py": "class DeepseekV2ForCausalLM:\n    pass\n\n\nEntryClass = DeepseekV2ForCausalLM\n",
        "python/pkg/models/glm5_next.py": "from pkg.models.deepseek_v2 import DeepseekV2ForCausalLM\n\n\n"
                                          "class Glm5Next(DeepseekV2ForCausalLM):\n    pass\n\n\nEntryClass = Glm5Next\n",
        "python/pkg/models/deepseek_v9_draft.py": "from pkg.models.deepseek_v2 import DeepseekV2ForCausalLM\n\n\n"
                                                  "class V9Draft:\n    pass\n\n\nEntryClass = V9Draft\n",
        "python/pkg/models/llama.py": "class Llama:\n    pass\n\n\nEntryClass = Llama\n",
    }), jobs=1)
    keys = {"models": ["Glm5Next", "V9Draft", "Llama"]}
    own, other = module_evidence(graph, {"models": "pkg.models"}, keys, ["pkg.models.deepseek*"], ["deepseek"])
    assert set(own) == {("models", "V9Draft")}  # its module names DeepSeek
    assert set(other) == {("models", "Glm5Next")}
    assert set(module_evidence(graph, {"models": "pkg.models"}, keys, ["pkg.models.deepseek*"])[0]) == {
        ("models", "V9Draft"), ("models", "Glm5Next")}  # no family words: every one is asked
    removed = {"models": {"Glm5Next", "V9Draft", "Llama", "KimiK3NextN", "KimiK3"}}
    questions, decided = _judge_new_keys({"models": ["Glm5Next", "V9Draft", "Llama", "KimiK3NextN"]}, removed,
                                         {**own, ("models", "KimiK3NextN"): ["registered by pkg.models.kimi_nextn"]},
                                         {"models:KimiK3": "Moonshot's model"}, other, ["NextN", "MTP"])
    assert [q.split(" is removed")[0] for q in questions] == ["models: V9Draft"]
    assert any(d.startswith("models: Glm5Next removed") and "named for another model family" in d for d in decided)
    assert any(d.startswith("models: KimiK3NextN removed") and "the draft model of KimiK3" in d for d in decided)


def test_the_removed_share_comes_from_the_line_counts(tmp_path, monkeypatch):
    # apply.json's fraction has 4 digits: 0.62849 is stored 0.6285, which a percentage shows as 62.9 %
    from shrinker.regen.run import _removed_fraction

    monkeypatch.setenv("SHRINK_ROOT", str(tmp_path))
    report = tmp_path / "reports/deepseek/v9.9.9"
    report.mkdir(parents=True)
    report.joinpath("apply.json").write_text(json.dumps({"totals": {
        "upstream_python_lines": 100000, "removed_lines": 62849, "removed_fraction": 0.6285}}))
    assert f"{100 * _removed_fraction('deepseek', '9.9.9'):.1f}" == "62.8"
    report.joinpath("apply.json").write_text("{}")
    assert _removed_fraction("deepseek", "9.9.9") is None


def test_the_verify_surface_follows_the_roots_a_walk_moved(tmp_path):
    """0.5.21 moved sglang.bench_one_batch: verify probes `--help` of the successor, and adopting the
    release rewrites the verify data's name as the rules' root line."""
    from shrinker.regen.run import RegenResult, followed_surface
    from shrinker.regen.walk import follow_moved_surface
    from shrinker.rules.load import load_rules
    from shrinker.plan.moves import follow_roots

    # the rules as written before 0.5.21 (the pin's rules have followed the move since)
    written = follow_roots(load_rules("deepseek"), {"sglang.benchmark.one_batch": "sglang.bench_one_batch"})
    followed = follow_roots(written, {"sglang.bench_one_batch": "sglang.benchmark.one_batch"})
    surface = {"cli": {"modules": ["sglang.launch_server", "sglang.bench_one_batch"]}, "pretend": {"x": 1}}
    got = followed_surface(surface, written, followed)
    assert got["cli"]["modules"] == ["sglang.launch_server", "sglang.benchmark.one_batch"]
    assert got["pretend"] == {"x": 1} and surface["cli"]["modules"][1] == "sglang.bench_one_batch"
    assert followed_surface(surface, written, written) is surface

    verify_toml = tmp_path / "v.toml"
    text = '[cli]\n# keep me\nmodules = ["sglang.launch_server", "sglang.bench_one_batch"]\n'
    verify_toml.write_text(text)
    step = RegenResult("a", "b", moves={"sglang.bench_one_batch": "sglang.benchmark.one_batch"})
    assert follow_moved_surface(verify_toml, [step.moves]) == ["sglang.bench_one_batch -> sglang.benchmark.one_batch (1x)"]
    assert verify_toml.read_text() == text.replace('"sglang.bench_one_batch"', '"sglang.benchmark.one_batch"')


def test_a_pin_that_is_the_newest_release_walks_nothing_and_passes(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from shrinker.cli import app
    from shrinker.regen import walk

    monkeypatch.setenv("SHRINK_ROOT", str(tmp_path))
    monkeypatch.setattr(walk, "pinned_spec", lambda: "pypi:sglang==0.5.23")
    monkeypatch.setattr(walk, "newest_on_pypi", lambda: "pypi:sglang==0.5.23")
    monkeypatch.setattr(walk, "regen", lambda *a, **k: pytest.fail("no step to run"))
    result = walk.walk()
    assert result.ok and result.planned == [] and result.report is None
    run = CliRunner().invoke(app, ["regen"])
    assert run.exit_code == 0 and "is the newest release: nothing to walk" in run.output
