"""A symbol batch applied to a work tree made from a fixture upstream: one gated commit per pass until a
pass finds nothing, what registration / dispatch / rules / strings keep, the requirements step."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from shrinker.errors import ShrinkError
from tests.apply.mini_project import make_project, mini_rules
from tests.conftest import FIXTURES

EXTRAS = '''
"""Symbols of every kind the symbol batch judges."""
from enum import Enum

from .linear import linear_layers

HANDLERS = {}


def register_handler(name):
    def wrap(fn):
        HANDLERS[name] = fn
        return fn
    return wrap


@register_handler("ping")
def handle_ping():
    import numpy
    return numpy.zeros(1)


def compute_flag():
    return 1


_FLAG = compute_flag()


def legacy(x):
    return _FLAG and x


def unused_helper():
    return 1


class Runner:
    def run(self, mode):
        return getattr(self, f"forward_{mode}")()

    def forward_extend(self):
        return 1

    def _old_path(self):
        return legacy(0)


def keep_by_rule():
    return 3


def named_in_string():
    return 4


class Worker:
    def __init__(self):
        self.use_npu_path = False

    def step(self):
        if self.use_npu_path:
            return npu_step()
        return self.norm(scale(1, use_npu=False), allow_npu_quant=False)

    def norm(self, x, allow_npu_quant=True):
        if self.use_npu_path and allow_npu_quant:
            return npu_step()
        return x


def npu_step():
    run_mode(Mode.PACKED)
    return scale(2, use_npu=True)


def scale(x, use_npu=False):
    return x * 2


class DeviceBackend(Enum):
    CUDA = "cuda"
    NPU = "npu"


def backend_of(name) -> DeviceBackend:
    return DeviceBackend(name)


class Mode(Enum):
    FAST = "fast"
    SLOW = "slow"
    PACKED = "packed"


def run_mode(mode):
    if mode is Mode.SLOW:
        return slow_path()
    if mode is Mode.PACKED:
        return packed_path()
    return 1


def slow_path():
    return 2


def packed_path():
    return 3


HANDLERS["run"] = lambda mode: Runner().run(mode)
HANDLERS["hook"] = "pkg.extras:named_in_string"
HANDLERS["work"] = lambda: Worker().step()
HANDLERS["layers"] = lambda model: linear_layers(model)
HANDLERS["backend"] = backend_of
HANDLERS["mode"] = lambda: run_mode(Mode.FAST)
'''

# A class nothing builds, tested in a comprehension's filter: the refold's fold finds the filter always False
# and reports it (a finding a codemod never settles by guessing), so the refold leaves the file as it was.
LINEAR = '''
class LinearAttention:
    pass


def linear_layers(model):
    return [m for m in model if isinstance(m, LinearAttention)]
'''

# A dead writer of the Worker's attribute in another module: while it stands, `use_npu_path` holds two
# values; once pass 1 removes it, the attribute only ever holds False and the refold folds its test.
OLD_PROBE = '''
def old_probe(worker):
    worker.use_npu_path = True
'''

PYPROJECT = '''[project]
name = "pkg"
version = "1.0"
dependencies = [
    "numpy>=1.0",
    "requests",
]
'''

SYMBOL_BATCH = '''[[batches]]
name = "dead symbols"
risk = "medium"
codemods = ["remove_dead_symbols", "remove_unused_names"]
description = "dead symbols"
'''


def _add_extras(origin) -> None:
    (origin / "python/pkg/extras.py").write_text(textwrap.dedent(EXTRAS).lstrip())
    (origin / "python/pkg/extras_old.py").write_text(textwrap.dedent(OLD_PROBE).lstrip())
    (origin / "python/pkg/linear.py").write_text(textwrap.dedent(LINEAR).lstrip())
    server = origin / "python/pkg/server.py"
    server.write_text(server.read_text().replace("from . import quant\n", "from . import quant\nfrom . import extras, extras_old\n"))
    (origin / "python/pyproject.toml").write_text(PYPROJECT)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The mini tree plus pkg/extras.py (imported by the server), its rules as profile `mini` with a
    fourth batch `dead symbols`, and symbol rules protecting pkg.extras:keep_by_rule."""
    symbols = (FIXTURES / "symbols" / "rules-symbols.toml").read_text()
    symbols += '\n[[symbols.protect]]\nsymbol = "pkg.extras:keep_by_rule"\nreason = "a rule names it"\n'
    return make_project(tmp_path, monkeypatch, mini_rules() + SYMBOL_BATCH, symbols, edit_origin=_add_extras)


def _subjects(tree):
    log = subprocess.run(["git", "log", "--format=%s"], cwd=tree, capture_output=True, text=True).stdout
    return [s for s in log.split("\n") if s.startswith("shrink:")]


def test_the_plan_gives_the_symbol_batch_no_files_and_the_rules_hash(project):
    from shrinker import paths

    plan = json.loads((paths.manifests_dir("mini", project["upstream"].version) / "batches.json").read_text())
    last = plan["batches"][-1]
    assert last["name"] == "dead symbols" and last["delete"] == [] and last["files"] == 0
    assert [c["name"] for c in last["codemods"]] == ["remove_dead_symbols", "remove_unused_names"]
    assert last["symbols"]["rules"] == "mini-symbols.toml" and len(last["symbols"]["sha256"]) == 64
    # files no batch's categories name went to the last file batch, not to the symbol batch
    assert plan["batches"][2]["files"] > 0


def test_each_pass_commits_until_one_finds_nothing(project, monkeypatch):
    from shrinker import paths
    from shrinker.apply import requirements_step
    from shrinker.apply.run import apply_batches
    from shrinker.upstream.distributions import DistIndex, DistInfo

    # the release's distribution index, as PyPI would give it (no network in a unit test)
    index = DistIndex("pkg==1.0", "2026-01-01T00:00:00Z", {"sys_platform": "linux"},
                      {n: DistInfo(n, "1.0", f"{n}-1.0-py3-none-any.whl", [n], [], 1000) for n in ("numpy", "requests")})
    monkeypatch.setattr(requirements_step, "load_index", lambda root, target: index)

    outcomes = apply_batches("mini", all_batches=True, jobs=1, use_verify=False)
    assert all(o.gate == "passed" for o in outcomes)
    passes = [o for o in outcomes if o.number == 4]
    # pass 1: legacy, unused_helper, Runner._old_path ...; remove_unused_names then drops `_FLAG = ...`,
    # which only legacy read; pass 2: compute_flag
    # pass 3 finds nothing and refolds instead: pass 1 took old_probe, the other writer of `use_npu_path`,
    # so Worker's attribute is a constant now and its branch goes; pass 4 takes npu_step, the branch's call;
    # pass 5 finds nothing (one refold a batch: MAX_REFOLDS); pass 4 took npu_step, Mode.PACKED's one producer,
    # so the refold's work runs again over the files naming such enums: the PACKED test and member go, and its
    # parameter step takes scale's `use_npu` (npu_step was the one call passing True); pass 6 takes packed_path,
    # and pass 7 finds nothing: its parameter step alone changes nothing, so it commits nothing
    assert [(o.symbol_pass, o.name) for o in passes] == [
        (1, "dead symbols (pass 1)"), (2, "dead symbols (pass 2)"), (3, "dead symbols (pass 3: refold)"),
        (4, "dead symbols (pass 4)"), (5, "dead symbols (pass 5: enum members)"), (6, "dead symbols (pass 6)")]
    assert all(o.commit and o.lines_removed > 0 and o.tree_lines > 0 for o in passes)
    assert passes[4].files_edited == 1
    assert passes[2].codemods["refold: files left as they were (a finding)"] == [
        "python/pkg/linear.py:6: comprehension filter is always false on CUDA: kept"]
    assert passes[1].tree_lines < passes[0].tree_lines
    tree = paths.work_tree_dir("mini", project["upstream"].version)
    subjects = _subjects(tree)
    assert subjects[:7] == ["shrink: requirements — python/pyproject.toml dependencies",
                            "shrink: batch 4 — dead symbols (pass 6)",
                            "shrink: batch 4 — dead symbols (pass 5: enum members)",
                            "shrink: batch 4 — dead symbols (pass 4)", "shrink: batch 4 — dead symbols (pass 3: refold)",
                            "shrink: batch 4 — dead symbols (pass 2)", "shrink: batch 4 — dead symbols (pass 1)"]
    # pass 1 dropped server's import of CudaGraphRunner (a dead class): reachability then finds its module
    # unreachable, and the same pass deletes it
    assert passes[0].files_deleted >= 1 and not (tree / "python/pkg/cuda_graph.py").exists()
    extras = (tree / "python/pkg/extras.py").read_text()
    for gone in ("def legacy", "def unused_helper", "def _old_path", "_FLAG", "def compute_flag", "use_npu_path",
                 "npu_step"):
        assert gone not in extras, gone
    # registered by a decorator, dispatched by getattr(f"forward_{mode}"), protected by a rule, named in a string
    for kept in ("def handle_ping", "def forward_extend", "def keep_by_rule", "def named_in_string",
                 "def register_handler", "def run", "def step"):
        assert kept in extras, kept
    # the refold left norm's parameter unread (its one read stood in the branch it folded): it leaves the
    # signature and the call
    assert "def norm(self, x):" in extras and "return self.norm(scale(1))" in extras
    assert "def scale(x):" in extras and passes[4].codemods["refold: remove_constant_parameters"]["success"] == 1
    assert "PACKED" not in extras and "packed_path" not in extras
    assert passes[2].codemods["refold: remove_constant_parameters"]["success"] == 1
    assert "isinstance(m, LinearAttention)" in (tree / "python/pkg/linear.py").read_text()
    # the refold took the enum member whose value names the platform and which nothing names (the fixture's
    # pkg.backends_lazy has a class `Backend`: an enum of that name would keep its members)
    assert 'CUDA = "cuda"' in extras and "NPU" not in extras
    # nothing produces Mode.SLOW: the refold decides its test, the next pass takes slow_path, and the member's
    # definition goes once nothing names it
    assert "Mode.FAST" in extras and "SLOW" not in extras and "slow_path" not in extras
    assert passes[2].codemods["refold: unnamed members: remove_platform_enum_members"]["success"] == 1
    for path in tree.rglob("*.py"):
        if path.name != "broken.py":  # the fixture's deliberately broken file stays as it was
            compile(path.read_text(), str(path), "exec")
    # the requirements step: numpy is imported by kept code, requests by nothing
    pyproject = (tree / "python/pyproject.toml").read_text()
    assert '"numpy>=1.0"' in pyproject and "requests" not in pyproject
    report = json.loads((paths.reports_dir("mini", project["upstream"].version) / "apply.json").read_text())
    assert [(b["number"], b["symbol_pass"]) for b in report["batches"]][-6:] == [(4, 1), (4, 2), (4, 3), (4, 4),
                                                                                (4, 5), (4, 6)]
    assert report["requirements"]["dropped"] == ["requests"] and report["requirements"]["gate"] == "passed"
    md = (paths.reports_dir("mini", project["upstream"].version) / "apply.md").read_text()
    assert "dead symbols (pass 3: refold)" in md and "Requirements" in md
    # everything applied: a second run does nothing and commits nothing
    assert apply_batches("mini", all_batches=True, jobs=1, use_verify=False) == []
    assert _subjects(tree) == subjects
    again = json.loads((paths.reports_dir("mini", project["upstream"].version) / "apply.json").read_text())
    assert again["requirements"]["gate"] == "unchanged"
    assert again["requirements"]["commit"] == report["requirements"]["commit"]


def test_a_failing_pass_rolls_back_and_earlier_passes_stay(project, monkeypatch):
    from shrinker import paths
    from shrinker.apply import symbol_batch
    from shrinker.apply.run import apply_batches

    apply_batches("mini", batch=1, jobs=1, use_verify=False)
    apply_batches("mini", batch=2, jobs=1, use_verify=False)
    apply_batches("mini", batch=3, jobs=1, use_verify=False)
    real = symbol_batch.run_pass

    def breaking(tree, number, *args, **kwargs):  # pass 2 also deletes a module kept code imports
        result = real(tree, number, *args, **kwargs)
        if number == 2:
            (tree / "python/pkg/extras.py").unlink()
        return result

    monkeypatch.setattr(symbol_batch, "run_pass", breaking)
    outcomes = apply_batches("mini", batch=4, jobs=1, use_verify=False)
    assert [(o.symbol_pass, o.gate) for o in outcomes] == [(1, "passed"), (2, "failed")]
    tree = paths.work_tree_dir("mini", project["upstream"].version)
    assert (tree / "python/pkg/extras.py").exists()  # rolled back to pass 1's commit
    assert _subjects(tree)[0] == "shrink: batch 4 — dead symbols (pass 1)"
    report = (paths.reports_dir("mini", project["upstream"].version) / "batch-4.md").read_text()
    assert "imports extras from pkg" in report
    head = subprocess.run(["git", "log", "-1", "--format=%B"], cwd=tree, capture_output=True, text=True).stdout
    assert "Batch: stopped before its fixpoint" in head  # pass 1's commit, marked by pass 2's failure
    # the next `apply --all` resumes the batch at the failed pass and keeps pass 1
    monkeypatch.setattr(symbol_batch, "run_pass", real)
    resumed = apply_batches("mini", all_batches=True, jobs=1, use_verify=False)
    assert [(o.number, o.symbol_pass, o.gate) for o in resumed][:2] == [(4, 2, "passed"), (4, 3, "passed")]
    subjects = _subjects(tree)
    assert subjects.count("shrink: batch 4 — dead symbols (pass 1)") == 1 and "pass 2" in subjects[-5]
    applied = json.loads((paths.reports_dir("mini", project["upstream"].version) / "apply.json").read_text())
    commits = subprocess.run(["git", "log", "--format=%H"], cwd=tree, capture_output=True, text=True).stdout.split()
    assert all(b["commit"] in commits for b in applied["batches"])  # pass 1 under its marked hash
    assert [(b["number"], b["symbol_pass"]) for b in applied["batches"]][-6:] == [(4, 1), (4, 2), (4, 3), (4, 4),
                                                                                 (4, 5), (4, 6)]
    assert apply_batches("mini", all_batches=True, jobs=1, use_verify=False) == []  # nothing left to resume


def test_changed_symbol_rules_need_a_new_plan(project):
    from shrinker.apply.run import apply_batches

    for n in (1, 2, 3):
        apply_batches("mini", batch=n, jobs=1, use_verify=False)
    rules = project["root"] / "rules" / "mini-symbols.toml"
    rules.write_text(rules.read_text() + "\n# edited\n")
    with pytest.raises(ShrinkError, match="mini-symbols.toml changed since the plan"):
        apply_batches("mini", batch=4, jobs=1, use_verify=False)


def test_a_symbol_batch_takes_no_categories(mini_rules):
    from shrinker.plan.batches import make_batches
    from shrinker.rules.schema import Batch

    mini_rules.batches.append(Batch(name="x", risk="low", categories=["registry"],
                                    codemods=["remove_dead_symbols"], description="x"))
    with pytest.raises(ShrinkError, match="takes no categories"):
        make_batches(None, None, mini_rules, [])


def test_nothing_dead_marks_the_batch_applied_with_an_empty_commit(project, monkeypatch):
    from shrinker import paths
    from shrinker.apply import refold, symbol_batch
    from shrinker.apply.run import apply_batches

    monkeypatch.setattr(symbol_batch, "run_pass", lambda tree, number, *a, **k: (None, 0))
    # nor any refold work: the fixture's DeviceBackend.NPU and Mode.SLOW's test would go in the refold
    monkeypatch.setattr(refold, "platform_members", lambda facts, names_platform: {})
    monkeypatch.setattr(refold, "never_produced", lambda facts: {})
    outcomes = apply_batches("mini", all_batches=True, jobs=1, use_verify=False)
    assert [(o.number, o.name, o.gate) for o in outcomes][-1] == (4, "dead symbols (nothing dead)", "passed")
    tree = paths.work_tree_dir("mini", project["upstream"].version)
    assert "shrink: batch 4 — dead symbols (nothing dead)" in _subjects(tree)
    assert apply_batches("mini", all_batches=True, jobs=1, use_verify=False) == []
