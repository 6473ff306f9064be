"""`shrink report index`: reports/index.html shows the figures of the JSON reports, and only those.

The expected figures are computed here from the JSON, independently of shrinker.report.index_*; the real
page is read back from headless Chromium's DOM (so what a browser parses is what is checked).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from shrinker.report.index_page import find_releases, render_index, write_index

REPORTS = Path(__file__).resolve().parents[2] / "reports"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


# --- reading a page back ---------------------------------------------------------------------------------

class KeyedText(HTMLParser):
    """The text of every element with a data-key attribute (keys seen twice are kept in `duplicates`)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.values: dict[str, str] = {}
        self.duplicates: list[str] = []
        self.hrefs: list[str] = []
        self._open: list[tuple[str, str | None, list[str]]] = []  # (tag, key, text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"] or "")
        if tag not in VOID:
            self._open.append((tag, a.get("data-key"), []))

    def handle_data(self, data: str) -> None:
        for _, key, text in self._open:
            if key is not None:
                text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        while self._open:  # a DOM serialisation closes every element; tolerate raw HTML anyway
            open_tag, key, text = self._open.pop()
            if key is not None:
                if key in self.values:
                    self.duplicates.append(key)
                self.values[key] = "".join(text).strip()
            if open_tag == tag:
                break


def read_page(html: str) -> KeyedText:
    parser = KeyedText()
    parser.feed(html)
    parser.close()
    return parser


# --- the figures, computed from the JSON -----------------------------------------------------------------

def _json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def _passed(flag: object) -> str:
    return "passed" if flag else "failed"


def expected_values(root: Path) -> dict[str, object]:
    """Every data-key the page should carry and the JSON figure behind it (None: shown as a dash)."""
    exp: dict[str, object] = {}
    for folder in sorted(p for p in root.glob("*/v*") if p.is_dir() and next(p.rglob("*.json"), None)):
        p = f"{folder.parent.name}/{folder.name}"

        apply = _json(folder / "apply.json")
        if apply is None:
            exp[f"{p}/apply/status"] = exp[f"{p}/apply/batches/status"] = "not run"
        else:
            up, kept = apply["totals"]["upstream_python_lines"], apply["totals"]["tree_python_lines"]
            exp.update({f"{p}/apply/upstream_lines": up, f"{p}/apply/kept_lines": kept,
                        f"{p}/apply/removed_lines": up - kept, f"{p}/apply/kept_pct": 100 * kept / up,
                        f"{p}/apply/removed_pct": 100 * (up - kept) / up})
            for i, b in enumerate(apply["batches"], 1):
                k = f"{p}/apply/batch/{i}"
                exp.update({f"{k}/number": b["number"], f"{k}/files_deleted": b["files_deleted"],
                            f"{k}/files_edited": b["files_edited"], f"{k}/lines_removed": b["lines_removed"],
                            f"{k}/removed_pct_after":
                                100 * (up - b["tree_lines"]) / up if b.get("tree_lines") else None,
                            f"{k}/gate": b["gate"], f"{k}/seconds": b["seconds"]})
            if apply.get("requirements"):
                r = apply["requirements"]
                exp.update({f"{p}/apply/requirements/gate": r["gate"], f"{p}/apply/requirements/seconds": r["seconds"],
                            f"{p}/apply/requirements/dropped": len(r["dropped"])})

        layers = _json(folder / "layers.json")
        if layers is None:
            exp[f"{p}/layers/status"] = "not run"
        else:
            groups = [("folder", layers["folders"] + [layers["total"]]), ("layer", layers.get("layers", []))]
            for group, rows in groups:
                for r in rows:
                    k = f"{p}/layers/{group}/{r['name']}"
                    exp.update({f"{k}/upstream": r["upstream_lines"], f"{k}/kept": r["kept_lines"],
                                f"{k}/removed": r["upstream_lines"] - r["kept_lines"],
                                f"{k}/kept_pct":
                                    100 * r["kept_lines"] / r["upstream_lines"] if r["upstream_lines"] else None})

        verify = _json(folder / "verify.json")
        if verify is None:
            exp[f"{p}/verify/status"] = "not run"
        else:
            exp.update({f"{p}/verify/result": _passed(verify["passed"]),
                        f"{p}/verify/regressions": verify["regressions"],
                        f"{p}/verify/seconds": verify["seconds"]})
            for c in verify["checks"]:
                k = f"{p}/verify/check/{c['name']}"
                exp[f"{k}/result"] = "skipped" if c.get("skipped") else _passed(c["passed"])
                exp[f"{k}/regressions"] = c["counts"].get("regressions")
                exp[f"{k}/seconds"] = c["seconds"]
                exp.update({f"{k}/counts/{n}": v for n, v in c["counts"].items() if n != "regressions"})

        gpu = sorted(q for q in [folder / "gpu-verify.json", *folder.glob("*/gpu-verify.json")] if q.is_file())
        if not gpu:
            exp[f"{p}/gpu/status"] = "not run"
        for path in gpu:
            d = json.loads(path.read_text())
            k = f"{p}/gpu/{path.relative_to(folder).as_posix().removesuffix('.json')}"
            exp.update({f"{k}/result": _passed(d["passed"]), f"{k}/identical": d["counts"]["passed"],
                        f"{k}/cases": d["counts"]["cases"], f"{k}/failed": d["counts"]["failed"],
                        f"{k}/device": d["device"]["gpu"], f"{k}/date": d["date"],
                        f"{k}/jit_built": d["pruned_jit"]["built"], f"{k}/jit_total": d["pruned_jit"]["total"],
                        # a run without part 4 (timing) has no ratios: the page shows a dash
                        f"{k}/import_ratio": d["timing"].get("import_ratio"),
                        f"{k}/startup_ratio": d["timing"].get("startup_ratio"),
                        f"{k}/worst_bench_ratio": d["timing"].get("worst_bench_ratio"), f"{k}/not_run": len(d["not_run"])})

        req = _json(folder / "requirements.json")
        if req is None:
            exp[f"{p}/requirements/status"] = "not run"
        else:
            dropped = sorted(x["name"] for x in req["decisions"] if not x["kept"])
            assert len(dropped) == req["dropped"]  # the report agrees with itself
            exp.update({f"{p}/requirements/declared": req["upstream_declared"], f"{p}/requirements/kept": req["kept"],
                        f"{p}/requirements/dropped": req["dropped"],
                        f"{p}/requirements/dropped_mb": req["dropped_installed_bytes"] / 1e6,
                        f"{p}/requirements/freed_mb": req["freed_installed_bytes"] / 1e6,
                        f"{p}/requirements/needs_a_look": len(req["needs_a_look"]),
                        f"{p}/requirements/dropped_names": ", ".join(dropped)})

        plan = _json(folder / "plan.json")
        if plan is None:
            exp[f"{p}/plan/status"] = "not run"
        else:
            t = plan["summary"]["total"]
            exp.update({f"{p}/plan/upstream_lines": t["lines"], f"{p}/plan/kept_lines": t["kept_lines"],
                        f"{p}/plan/kept_pct": 100 * t["kept_lines"] / t["lines"],
                        f"{p}/plan/removed_files": t["removed_files"],
                        f"{p}/plan/cuts": plan["cuts"]})

    profiles = {p.parent for p in root.glob("*/v*") if p.is_dir() and next(p.rglob("*.json"), None)}
    for profile in sorted(profiles | {p.parent for p in root.glob("*/regen-*.json")}):
        files = sorted(profile.glob("regen-*.json"))
        if not files:
            exp[f"{profile.name}/regen/status"] = "not run"
        for path in files:
            d = json.loads(path.read_text())
            k = f"{profile.name}/regen/{path.stem.removeprefix('regen-')}"
            exp.update({f"{k}/verdict": "OK" if d["ok"] else "stopped", f"{k}/seconds": d["seconds"]})
            for step in d["steps"]:
                s = f"{k}/{step['version']}"
                exp.update({f"{s}/step": f"{step['from_version']} → {step['version']}", f"{s}/verdict": step["verdict"],
                            f"{s}/for_a_person": len(step["for_a_person"]), f"{s}/apply": step["apply"],
                            f"{s}/verify": step["verify"], f"{s}/seconds": step["seconds"],
                            f"{s}/removed_pct": None if step["removed_fraction"] is None
                            else 100 * step["removed_fraction"]})
                exp.update({f"{s}/decided/{n}": c for n, c in step["decided"].items()})
    return exp


def matches(shown: str, want: object) -> bool:
    """Whether the text on the page is the JSON figure: integers exactly, floats to the decimals shown."""
    if want is None:
        return shown == "–"
    if isinstance(want, bool):
        return shown == _passed(want)
    if isinstance(want, int):
        return shown.replace(",", "") == str(want)
    if isinstance(want, float):
        if not re.fullmatch(r"-?[\d,]+(\.\d+)?", shown):
            return False
        decimals = len(shown.split(".")[1]) if "." in shown else 0
        return abs(float(shown.replace(",", "")) - want) <= 0.5 * 10 ** -decimals + 1e-9
    return shown == str(want)


def assert_page_shows(page: KeyedText, root: Path) -> None:
    exp = expected_values(root)
    assert not page.duplicates, f"data-keys used twice: {page.duplicates[:5]}"
    assert sorted(set(exp) - set(page.values)) == [], "figures missing from the page"
    assert sorted(set(page.values) - set(exp)) == [], "figures on the page the test does not know"
    wrong = {k: (page.values[k], exp[k]) for k in exp if not matches(page.values[k], exp[k])}
    assert wrong == {}


# --- fixture reports -------------------------------------------------------------------------------------

def _write(root: Path, rel: str, data: object) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=1))


def _fixture(root: Path) -> Path:
    """A release with apply, layers and verify (no GPU run, requirements, plan), an older one with only
    layers, and one regen report."""
    _write(root, "deepseek/v1.2/apply.json", {
        "upstream": "pypi:sglang==1.2",
        "batches": [{"number": 1, "name": "models", "files_deleted": 3, "files_edited": 1, "lines_removed": 400,
                     "gate": "passed", "commit": "a" * 40, "seconds": 1.25, "tree_lines": 600},
                    {"number": 2, "name": "platforms <npu & hip>", "files_deleted": 0, "files_edited": 2,
                     "lines_removed": 33, "gate": "failed", "commit": "b" * 40, "seconds": 3.5, "tree_lines": 567}],
        "requirements": None,
        "totals": {"upstream_python_lines": 1000, "tree_python_lines": 567, "removed_lines": 433,
                   "removed_fraction": 0.433}})
    _write(root, "deepseek/v1.2/apply.md", "# Apply\n")
    _write(root, "deepseek/v1.2/layers.json", {
        "total": {"name": "total", "upstream_lines": 1000, "kept_lines": 567},
        "folders": [{"name": "sglang/srt", "upstream_lines": 900, "kept_lines": 567},
                    {"name": "sglang/*.py", "upstream_lines": 100, "kept_lines": 0}],
        "layers": [{"name": "models", "upstream_lines": 3, "kept_lines": 1}]})
    _write(root, "deepseek/v1.2/verify.json", {
        "passed": False, "regressions": 1, "seconds": 12.34,
        "checks": [{"name": "syntax", "passed": True, "counts": {"files": 1234, "regressions": 0},
                    "findings": [], "skipped": "", "seconds": 0.5},
                   {"name": "imports", "passed": False, "counts": {"modules": 7, "regressions": 1},
                    "findings": ["x"], "skipped": "", "seconds": 2.0},
                   {"name": "cli", "passed": True, "counts": {}, "findings": [], "skipped": "no GPU", "seconds": 0.0}]})
    _write(root, "deepseek/v1.1/layers.json", {"total": {"name": "total", "upstream_lines": 10, "kept_lines": 10},
                                               "folders": [], "layers": []})
    _write(root, "deepseek/regen-1.1-to-1.2.json", {
        "from": "pypi:sglang==1.1", "to": "pypi:sglang==1.2", "ok": False, "seconds": 10.0, "not_reached": [],
        "adopted": "", "steps": [{"from": "pypi:sglang==1.1", "to": "pypi:sglang==1.2", "from_version": "1.1",
                                  "version": "1.2", "verdict": "not verified", "apply": "not run",
                                  "verify": "not run", "decided": {"new_registry_keys": 3, "roots_followed": 0},
                                  "for_a_person": [], "warnings": 1, "removed_fraction": None, "seconds": 9.5,
                                  "details": "v1.2/regen.md"}]})
    _write(root, "bench/apply.json", {"what": "not a release"})  # reports/bench/ is no release folder
    return root


def test_missing_reports_say_not_run(tmp_path):
    page = read_page(render_index(_fixture(tmp_path)))
    for key in ("deepseek/v1.2/gpu/status", "deepseek/v1.2/requirements/status", "deepseek/v1.2/plan/status",
                "deepseek/v1.1/apply/status", "deepseek/v1.1/verify/status"):
        assert page.values[key] == "not run"
    assert page.values["deepseek/v1.2/apply/removed_pct"] == "43.3"
    assert page.values["deepseek/v1.2/apply/batch/2/gate"] == "failed"
    assert page.values["deepseek/v1.2/verify/check/cli/result"] == "skipped"
    assert page.values["deepseek/regen/1.1-to-1.2/1.2/apply"] == "not run"
    assert_page_shows(page, tmp_path)


def test_release_order_and_relative_links(tmp_path):
    root = _fixture(tmp_path)
    assert [(r.profile, r.version) for r in find_releases(root)] == [("deepseek", "1.2"), ("deepseek", "1.1")]
    html = render_index(root)
    page = read_page(html)
    assert "deepseek/v1.2/apply.md" in page.hrefs  # next to its JSON, relative to reports/
    assert "deepseek/v1.2/verify.md" not in page.hrefs  # absent: named, not linked
    assert all(h.startswith("#") or not re.match(r"[a-z]+:|/", h) for h in page.hrefs)
    assert "http://" not in html and "https://" not in html and "<script" not in html  # self-contained, static
    assert "platforms &lt;npu &amp; hip&gt;" in html  # names are escaped
    assert str(tmp_path) not in html  # no machine paths


def test_same_json_same_bytes(tmp_path):
    a, b = _fixture(tmp_path / "a"), _fixture(tmp_path / "b")
    path, changed = write_index(a)
    assert changed and path == a / "index.html"
    first = path.read_bytes()
    assert write_index(a) == (path, False) and path.read_bytes() == first  # the page itself is no input
    assert render_index(b).encode() == first  # another folder, same JSON: same bytes


def test_empty_reports_folder(tmp_path):
    assert "No reports yet" in render_index(tmp_path)


def test_cli_writes_and_checks(tmp_path):
    from typer.testing import CliRunner

    from shrinker.cli import app
    from shrinker.errors import CheckFailed

    root = _fixture(tmp_path)
    runner = CliRunner()
    assert runner.invoke(app, ["report", "index", "--reports", str(root), "--check"]).exception.__class__ is CheckFailed
    res = runner.invoke(app, ["report", "index", "--reports", str(root)])
    assert res.exit_code == 0 and (root / "index.html").is_file()
    assert runner.invoke(app, ["report", "index", "--reports", str(root), "--check"]).exit_code == 0


# --- the real page ---------------------------------------------------------------------------------------

def _chromium() -> str:
    found = next((c for c in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser"))
                  if c and os.access(c, os.X_OK)), None)
    if found is None:
        if os.environ.get("CI"):  # CI installs chromium: a missing browser there is a broken job, not a skip
            pytest.fail("chromium not found (CI installs it: apt-get install -y chromium)")
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    return found


def _dump_dom(browser: str, page: Path, profile_dir: Path) -> str:
    """The DOM after Chromium loaded the page: what a reader's browser makes of the file."""
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile_dir}", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "<html" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


def test_committed_page_is_current():
    """A page older than its JSON fails: regenerate with `shrink report index`."""
    page = REPORTS / "index.html"
    assert page.is_file(), "reports/index.html missing: run `shrink report index`"
    assert page.read_text(encoding="utf-8") == render_index(REPORTS), "stale: run `shrink report index`"


def test_real_page_in_chromium_shows_the_json_figures(tmp_path):
    browser = _chromium()
    page = REPORTS / "index.html"
    assert page.is_file(), "reports/index.html missing: run `shrink report index`"
    dom = read_page(_dump_dom(browser, page, tmp_path / "chromium-profile"))
    assert_page_shows(dom, REPORTS)
    for href in dom.hrefs:  # every relative link opens a file of the checkout
        if not href.startswith("#"):
            assert (REPORTS / href).is_file(), href
    # the headline agrees with the markdown report people already read
    for release in find_releases(REPORTS):
        md = release.folder / "apply.md"
        if md.is_file():
            shown = dom.values[f"{release.key}/apply/removed_pct"]
            assert f"({shown} %)" in md.read_text(), (shown, md)


def test_no_chromium_skips_locally_and_fails_on_ci(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        _chromium()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        _chromium()
