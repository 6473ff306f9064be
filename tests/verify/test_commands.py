"""`shrink verify`: table, exit 0 / 1 / 2, reports, --gpu hand-off."""

from __future__ import annotations

import json
import sys
import types

import pytest

from tests.verify.conftest import edit


def _shrink(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    from shrinker import cli

    monkeypatch.setattr(sys, "argv", ["shrink", *args])
    try:
        cli.main()
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_clean_tree_exits_0_and_writes_reports(trees, monkeypatch, capsys, tmp_path):
    upstream, pruned = trees
    code, text = _shrink(monkeypatch, capsys, "verify", "--tree", str(pruned), "--upstream", str(upstream),
                         "--check", "static", "--report-dir", str(tmp_path / "r"))
    assert code == 0, text
    assert "internal_imports" in text and "verify passed" in text
    data = json.loads((tmp_path / "r" / "verify.json").read_text())
    assert data["passed"] and data["regressions"] == 0
    assert [c["name"] for c in data["checks"]][:2] == ["syntax", "internal_imports"]
    assert "| syntax | pass |" in (tmp_path / "r" / "verify.md").read_text()


def test_planted_fault_exits_1(trees, monkeypatch, capsys, tmp_path):
    upstream, pruned = trees
    (pruned / "python/sglang/srt/layers/helper_ops.py").unlink()
    code, text = _shrink(monkeypatch, capsys, "verify", "--tree", str(pruned), "--upstream", str(upstream),
                         "-c", "internal_imports", "--report-dir", str(tmp_path / "r"))
    assert code == 1
    assert "helper_ops, which is not in the tree" in text and "verify failed: 2 regressions" in text
    md = (tmp_path / "r" / "verify.md").read_text()
    assert "## internal_imports: regressions (2)" in md


@pytest.mark.parametrize("args", [["plan", "--bogus"], ["verify", "--jobs", "zero"], ["nonsense"]])
def test_usage_errors_exit_2_without_a_traceback(monkeypatch, capsys, args):
    # typer >= 0.29 raises its vendored click's exceptions (typer._click), not click's own
    code, text = _shrink(monkeypatch, capsys, *args)
    assert code == 2 and "Traceback" not in text and "Error:" in text


@pytest.mark.parametrize("args, message", [
    (["--tree", "{missing}"], "no tree at"),
    (["--check", "nonsense"], "unknown check 'nonsense'"),
])
def test_bad_input_exits_2(trees, monkeypatch, capsys, tmp_path, args, message):
    upstream, pruned = trees
    args = [a.replace("{missing}", str(tmp_path / "nope")) for a in args]
    if "--tree" not in args:
        args += ["--tree", str(pruned)]
    code, text = _shrink(monkeypatch, capsys, "verify", "--upstream", str(upstream), "--no-report", *args)
    assert code == 2 and message in text


def test_dynamic_checks_make_the_env_first(trees, monkeypatch, capsys, tmp_path, fake_env):
    from shrinker.verify import env as venv

    upstream, pruned = trees
    monkeypatch.setenv("SHRINK_VERIFY_VENV", str(tmp_path / "no-venv"))
    made = []
    monkeypatch.setattr(venv, "make_env", lambda **kw: made.append(kw) or fake_env)
    code, text = _shrink(monkeypatch, capsys, "verify", "--tree", str(pruned), "--upstream", str(upstream),
                         "--no-report", "--check", "imports")
    assert code == 0, text
    assert len(made) == 1


def test_api_without_env_is_a_clear_error(trees, monkeypatch, tmp_path):
    from shrinker.errors import ShrinkError
    from shrinker.verify import verify_tree

    upstream, pruned = trees
    monkeypatch.setenv("SHRINK_VERIFY_VENV", str(tmp_path / "no-venv"))
    with pytest.raises(ShrinkError, match="shrink verify env"):
        verify_tree(pruned, upstream, checks=["imports"])


def test_gpu_module_missing_exits_2(trees, monkeypatch, capsys):
    upstream, pruned = trees
    monkeypatch.setitem(sys.modules, "shrinker.gpu.verify", None)  # import fails as if not built
    code, text = _shrink(monkeypatch, capsys, "verify", "--tree", str(pruned), "--upstream", str(upstream),
                         "--no-report", "--check", "syntax", "--gpu")
    assert code == 2 and "shrinker.gpu.verify is not available" in text


@pytest.mark.parametrize("gpu_code, expected", [(0, 0), (1, 1), (3, 3)])
def test_gpu_runner_called_with_tree_and_upstream(trees, monkeypatch, capsys, gpu_code, expected):
    upstream, pruned = trees
    calls = []
    fake = types.ModuleType("shrinker.gpu.verify")
    fake.run_gpu_verify = lambda tree, upstream_root: calls.append((tree, upstream_root)) or gpu_code
    monkeypatch.setitem(sys.modules, "shrinker.gpu.verify", fake)
    code, _ = _shrink(monkeypatch, capsys, "verify", "--tree", str(pruned), "--upstream", str(upstream),
                      "--no-report", "--check", "syntax", "--gpu")
    assert code == expected
    assert calls == [(pruned, upstream)]


def test_cpu_failure_wins_over_gpu(trees, monkeypatch, capsys):
    upstream, pruned = trees
    edit(pruned / "python/sglang/srt/layers/helper_ops.py", "def scale(x, factor):", "def scale(x, factor:")
    fake = types.ModuleType("shrinker.gpu.verify")
    fake.run_gpu_verify = lambda tree, upstream_root: 0
    monkeypatch.setitem(sys.modules, "shrinker.gpu.verify", fake)
    code, _ = _shrink(monkeypatch, capsys, "verify", "--tree", str(pruned), "--upstream", str(upstream),
                      "--no-report", "--check", "syntax", "--gpu")
    assert code == 1


def test_gpu_without_a_gpu_exits_2_first(trees, monkeypatch, capsys):
    """`shrink verify --gpu` on a machine without a GPU: one line, exit 2, before any CPU check runs."""
    from shrinker.gpu import verify as gpu_verify
    from shrinker.verify import run as verify_run

    upstream, pruned = trees
    monkeypatch.setattr(gpu_verify, "gpu_missing_reason", lambda: "no GPU here: nvidia-smi not found (" + "x" * 90 + ")")
    ran = []
    monkeypatch.setattr(verify_run, "verify_tree", lambda *a, **k: ran.append(a))
    code, text = _shrink(monkeypatch, capsys, "verify", "--tree", str(pruned), "--upstream", str(upstream),
                         "--no-report", "--gpu")
    assert code == 2 and not ran
    assert text.count("\n") == 1 and text.startswith("error: no GPU here: nvidia-smi not found")  # never wrapped


def test_gpu_cli_on_this_machine_exits_2_with_one_line(tmp_path):
    """The real command, in a fresh process (CI and this machine have no GPU)."""
    import subprocess

    from shrinker.gpu import verify as gpu_verify

    if gpu_verify.gpu_missing_reason() is None:
        pytest.skip("a GPU is present")
    proc = subprocess.run([sys.executable, "-m", "shrinker.cli", "verify", "--gpu"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: no GPU here")
