"""The sections of reports/index.html, one function per JSON report of a release folder.

Each takes the key prefix (`deepseek/v0.5.16`), the parsed JSON (None when the file is absent: the
section then says "not run") and the link to the markdown next to it; each returns HTML. Figures are
taken from the JSON as written, or derived with one division (percentages), never re-measured.
"""

from __future__ import annotations

from typing import Any

from shrinker.report.index_html import DASH, bar, esc, fmt, not_run, pct, result_class, table, td, tds, val

Json = dict[str, Any]


def heading(title: str, links: str) -> str:
    return f'<h3>{esc(title)}<span class="links">{links}</span></h3>'


def headline(p: str, apply: Json | None) -> str:
    """Kept and removed share of upstream's non-blank Python lines, from apply.json's totals."""
    if apply is None:
        return not_run(f"{p}/apply/status", "apply")
    t = apply.get("totals") or {}
    up, kept = t.get("upstream_python_lines", 0), t.get("tree_python_lines", 0)
    return (f'<p class="headline">Removed <b>{val("span", f"{p}/apply/removed_pct", pct(up - kept, up))} %</b> '
            f'({val("span", f"{p}/apply/removed_lines", up - kept)} lines); kept '
            f'<b>{val("span", f"{p}/apply/kept_pct", pct(kept, up))} %</b> '
            f'({val("span", f"{p}/apply/kept_lines", kept)} of {val("span", f"{p}/apply/upstream_lines", up)} '
            f'non-blank Python lines of upstream {esc(apply.get("upstream", ""))}).</p>')


def _layer_rows(p: str, group: str, rows: list[Json], total: Json | None) -> list[str]:
    out = []
    for r in rows + ([total] if total else []):
        name = r.get("name", "")
        up, kept = r.get("upstream_lines", 0), r.get("kept_lines", 0)
        k = f"{p}/layers/{group}/{name}"
        share = pct(kept, up)
        cls = ' class="total"' if r is total else ""
        out.append(f"<tr{cls}><td>{esc(name)}</td>{td(k + '/upstream', up)}{td(k + '/kept', kept)}"
                   f"{td(k + '/removed', up - kept)}{td(k + '/kept_pct', share)}"
                   f"<td>{bar(share, f'{name}: kept {fmt(share)} %')}</td></tr>")
    return out


def layers(p: str, data: Json | None, links: str) -> str:
    """The layers picture: kept (green) vs removed (red) lines by top-level folder and by srt layer."""
    out = [heading("Kept vs removed, by folder and layer", links)]
    if data is None:
        return "\n".join(out + [not_run(f"{p}/layers/status", "layers")])
    head = ["", "upstream lines", "kept", "removed", "kept %", "kept | removed"]
    legend = ('<p class="legend">non-blank Python lines per folder:<span style="background:#2da44e"></span>kept'
              '<span style="background:#e5534b"></span>removed</p>')
    out.append(legend)
    out.append(table(["folder"] + head[1:], _layer_rows(p, "folder", data.get("folders", []), data.get("total"))))
    if data.get("layers"):
        out.append(table(["layer (sglang/srt)"] + head[1:], _layer_rows(p, "layer", data["layers"], None)))
    return "\n".join(out)


def batches(p: str, apply: Json | None, links: str) -> str:
    """Each apply batch with its gate and the share of upstream removed once it was committed."""
    out = [heading("Batches and their gates", links)]
    if apply is None:
        return "\n".join(out + [not_run(f"{p}/apply/batches/status", "apply")])
    up = (apply.get("totals") or {}).get("upstream_python_lines", 0)
    rows = []
    for i, b in enumerate(apply.get("batches", []), 1):
        k = f"{p}/apply/batch/{i}"
        after = pct(up - b["tree_lines"], up) if b.get("tree_lines") else None
        gate = str(b.get("gate", ""))
        rows.append(f"<tr>{td(k + '/number', b.get('number'))}<td>{esc(b.get('name', ''))}</td>"
                    + tds(k, b, "files_deleted", "files_edited", "lines_removed")
                    + td(k + "/removed_pct_after", after)
                    + f"<td>{bar(None if after is None else 100 - after, f'removed {fmt(after)} % after it')}</td>"
                    + td(k + "/gate", gate, cls=result_class(gate))
                    + f"<td><code>{esc(str(b.get('commit', ''))[:10])}</code></td>"
                    + f"{td(k + '/seconds', b.get('seconds'), 2)}</tr>")
    req = apply.get("requirements")
    if req:  # the last step: python/pyproject.toml's dependencies
        k = f"{p}/apply/requirements"
        gate = str(req.get("gate", ""))
        dropped = val("span", k + "/dropped", len(req.get("dropped", [])))
        rows.append(f"<tr><td></td><td>requirements ({dropped} dropped)</td>" + "<td></td>" * 5
                    + td(k + "/gate", gate, cls=result_class(gate))
                    + f"<td><code>{esc(str(req.get('commit') or '')[:10])}</code></td>"
                    + f"{td(k + '/seconds', req.get('seconds'), 2)}</tr>")
    out.append(table(["#", "batch", "deleted", "edited", "lines removed", "removed after it %", "kept | removed",
                      "gate", "commit", "seconds"], rows))
    return "\n".join(out)


def verify(p: str, data: Json | None, links: str) -> str:
    """shrink verify's checks: result, regressions and every count, pruned against upstream."""
    out = [heading("Verify checks", links)]
    if data is None:
        return "\n".join(out + [not_run(f"{p}/verify/status", "verify")])
    result = "passed" if data.get("passed") else "failed"
    out.append(f'<p>Result {val("b", f"{p}/verify/result", result, cls=result_class(result))}, '
               f'{val("span", f"{p}/verify/regressions", data.get("regressions"))} regressions, '
               f'{val("span", f"{p}/verify/seconds", data.get("seconds"), 1)} s.</p>')
    rows = []
    for c in data.get("checks", []):
        k = f"{p}/verify/check/{c.get('name', '')}"
        res = "skipped" if c.get("skipped") else ("passed" if c.get("passed") else "failed")
        counts = c.get("counts") or {}
        kv = " ".join(f'<span class="kv">{esc(n)} {val("b", f"{k}/counts/{n}", v)}</span>'
                      for n, v in counts.items() if n != "regressions")
        rows.append(f"<tr><td>{esc(c.get('name', ''))}</td>{td(k + '/result', res, cls=result_class(res))}"
                    f"{td(k + '/regressions', counts.get('regressions'))}<td>{kv}</td>"
                    f"{td(k + '/seconds', c.get('seconds'), 1)}</tr>")
    out.append(table(["check", "result", "regressions", "counts", "seconds"], rows))
    return "\n".join(out)


def gpu(p: str, reports: list[tuple[str, Json, str]], links: str) -> str:
    """One row per gpu-verify.json (the release folder's and its subfolders'): cases identical, device, date."""
    out = [heading("GPU cases (shrink verify --gpu)", links)]
    if not reports:
        return "\n".join(out + [not_run(f"{p}/gpu/status", "GPU verify")])
    rows = []
    for label, d, md in reports:
        k = f"{p}/gpu/{label}"
        counts, dev, jit, timing = (d.get(n) or {} for n in ("counts", "device", "pruned_jit", "timing"))
        trees = ", ".join(sorted({str(r.get("pruned_tree_sha256", ""))[:12] for r in d.get("runs", [])} - {""}))
        result = "passed" if d.get("passed") else "failed"
        rows.append(f"<tr><td>{md}</td>{td(k + '/result', result, cls=result_class(result))}"
                    f"{td(k + '/identical', counts.get('passed'))}{td(k + '/cases', counts.get('cases'))}"
                    f"{td(k + '/failed', counts.get('failed'))}{td(k + '/device', dev.get('gpu'))}"
                    f"{td(k + '/date', d.get('date'))}{td(k + '/jit_built', jit.get('built'))}"
                    f"{td(k + '/jit_total', jit.get('total'))}{td(k + '/import_ratio', timing.get('import_ratio'), 3)}"
                    f"{td(k + '/startup_ratio', timing.get('startup_ratio'), 3)}"
                    f"{td(k + '/worst_bench_ratio', timing.get('worst_bench_ratio'), 3)}"
                    f"{td(k + '/not_run', len(d.get('not_run', [])))}<td><code>{esc(trees or DASH)}</code></td></tr>")
    out.append(table(["report", "result", "identical", "cases", "failed", "device", "date", "JIT built", "JIT sources",
                      "import ×", "start-up ×", "worst bench ×", "not run", "pruned tree (sha256)"], rows))
    out.append('<p class="muted">identical: requests whose tokens and JSON match upstream\'s; × is pruned time '
               'over upstream time on the same machine.</p>')
    return "\n".join(out)


def requirements(p: str, data: Json | None, links: str) -> str:
    """python/pyproject.toml's dependencies: kept, dropped, and the installed megabytes dropped."""
    out = [heading("Requirements", links)]
    if data is None:
        return "\n".join(out + [not_run(f"{p}/requirements/status", "requirements")])
    k = f"{p}/requirements"
    dropped = sorted(d["name"] for d in data.get("decisions", []) if not d.get("kept"))
    mb = lambda n: None if n is None else n / 1e6  # noqa: E731 (bytes as the md report shows them)
    row = (f"<tr>{td(k + '/declared', data.get('upstream_declared'))}{td(k + '/kept', data.get('kept'))}"
           f"{td(k + '/dropped', data.get('dropped'))}{td(k + '/dropped_mb', mb(data.get('dropped_installed_bytes')))}"
           f"{td(k + '/freed_mb', mb(data.get('freed_installed_bytes')))}"
           f"{td(k + '/needs_a_look', len(data.get('needs_a_look', [])))}"
           f"{td(k + '/dropped_names', ', '.join(dropped))}</tr>")
    out.append(table(["declared upstream", "kept", "dropped", "dropped MB", "with freed deps MB", "needs a look",
                      "dropped"], [row]))
    return "\n".join(out)


def plan(p: str, data: Json | None, links: str) -> str:
    """What the plan stage predicted (module-level reachability, before codemods)."""
    out = [heading("Plan", links)]
    if data is None:
        return "\n".join(out + [not_run(f"{p}/plan/status", "plan")])
    t = (data.get("summary") or {}).get("total") or {}
    k = f"{p}/plan"
    row = (f"<tr>{td(k + '/upstream_lines', t.get('lines'))}{td(k + '/kept_lines', t.get('kept_lines'))}"
           f"{td(k + '/kept_pct', pct(t.get('kept_lines', 0), t.get('lines', 0)))}"
           f"{td(k + '/removed_files', t.get('removed_files'))}{td(k + '/cuts', data.get('cuts'))}</tr>")
    out.append(table(["upstream lines", "planned kept", "planned kept %", "files removed", "cuts"], [row]))
    return "\n".join(out)


def _kv_counts(key: str, counts: dict[str, int]) -> str:
    """`name <b>count</b>` for each entry of a JSON object, sorted by name."""
    return " ".join(f'<span class="kv">{esc(n.replace("_", " "))} {val("b", f"{key}/{n}", c)}</span>'
                    for n, c in sorted(counts.items()))


def regen(profile: str, reports: list[tuple[str, Json, str]]) -> str:
    """One table per regen walk (regen-<from>-to-<to>.json), one row per release step: verdict, what
    the rules decided, what needs a person, apply, verify, removed %, seconds, the step's details."""
    out = []
    for stem, d, md in reports:
        k = f"{profile}/regen/{stem}"
        verdict = "OK" if d.get("ok") else "stopped"
        out.append(f"<p>{md}: {d.get('from')} → {d.get('to')}, "
                   f"{val('b', k + '/verdict', verdict, cls='ok' if d.get('ok') else 'bad')}; "
                   f"{val('span', k + '/seconds', d.get('seconds'), 0)} s</p>")
        rows = []
        for step in d.get("steps", []):
            s = f"{k}/{step.get('version')}"
            label = f"{step.get('from_version')} → {step.get('version')}"
            rows.append(f"<tr>{td(s + '/step', label)}"
                        f"{td(s + '/verdict', step.get('verdict'), cls='ok' if step.get('verdict') == 'OK' else 'bad')}"
                        f"<td>{_kv_counts(s + '/decided', step.get('decided') or {})}</td>"
                        f"{td(s + '/for_a_person', len(step.get('for_a_person') or []))}"
                        f"{td(s + '/apply', step.get('apply'), cls=result_class(step.get('apply') or ''))}"
                        f"{td(s + '/verify', step.get('verify'), cls=result_class(step.get('verify') or ''))}"
                        f"{td(s + '/removed_pct', None if step.get('removed_fraction') is None else 100 * step['removed_fraction'], 1)}"
                        f"{td(s + '/seconds', step.get('seconds'), 0)}</tr>")
        out.append(table(["step", "verdict", "decided by the rules", "for a person", "apply", "verify",
                          "removed %", "seconds"], rows))
    return "\n".join(out)
