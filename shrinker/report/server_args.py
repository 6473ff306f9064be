"""Which ServerArgs fields served only removed code: those the dead-symbol batch removed with their
CLI options (rules: attribute_tables, `only_removed_readers`), and those still declared (issue 7, item 4).

The class is the one `shrink verify` probes (`[server_args].target` in rules/<profile>-verify.toml). A
field is read as an attribute (`server_args.enable_lmcache`, `self.enable_lmcache`,
`get_global_server_args().enable_lmcache`) or by its name in a string (`getattr(args, "...")`). For
every field the report counts such reads OUTSIDE the class's own module, in upstream and in the kept
tree: a field upstream reads elsewhere and the kept tree reads nowhere else served only code that is
gone. The symbol graph removes such a field when nothing in the kept tree names it, server_args.py
included; one the kept checks in server_args.py still read stays, listed here with its option.
Fields read only inside server_args.py upstream (checks, defaults) are listed apart.

A text scan (word-bounded `.name` and quoted "name"), so a field that shares its name with another
attribute read elsewhere counts as read: the list errs towards keeping.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from shrinker.graph.discover import module_file
from shrinker.symbols.name_reads import dataclass_fields, name_readers


@dataclass
class FieldReads:
    name: str
    line: int
    upstream_elsewhere: int  # files outside the class's module reading it, upstream
    kept_elsewhere: int  # the same in the kept tree
    first_upstream_reader: str  # one such upstream file, for the report
    kept_declared: bool = True  # the kept tree's class still declares it

    @property
    def only_removed_code(self) -> bool:
        return self.upstream_elsewhere > 0 and self.kept_elsewhere == 0


def server_args_reads(tree: Path, upstream: Path, target: str) -> list[FieldReads]:
    module, _, class_name = target.partition(":")
    own = module_file(upstream, module)
    source = (upstream / own).read_text()
    fields = dataclass_fields(source, class_name)
    names = [n for n, _ in fields]
    up, kept = name_readers(upstream, names, own), name_readers(tree, names, own)
    kept_own = tree / module_file(tree, module)
    declared = {n for n, _ in dataclass_fields(kept_own.read_text(), class_name)}
    return [FieldReads(n, line, len(up[n]), len(kept[n]), sorted(up[n])[0] if up[n] else "", n in declared)
            for n, line in fields]


def write_report(reads: list[FieldReads], out_dir: Path, target: str, labels: dict[str, str]) -> list[Path]:
    removed = [r for r in reads if not r.kept_declared]
    left = [r for r in reads if r.only_removed_code and r.kept_declared]
    inside = [r for r in reads if r.upstream_elsewhere == 0 and r.kept_declared]
    data = {"target": target, "fields": len(reads), "removed": [r.name for r in removed],
            "only_removed_code_still_declared": [r.name for r in left],
            "read_only_in_own_module": [r.name for r in inside], **labels}
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "server-args.json", out_dir / "server-args.md"
    json_path.write_text(json.dumps(data, indent=1) + "\n")
    head = "| field | upstream line | upstream files reading it elsewhere | e.g. |\n|---|---:|---:|---|"
    lines = [f"# {target}: fields that served removed code", "",
             f"Trees: kept {labels.get('tree', '')}, upstream {labels.get('upstream', '')}. "
             f"{len(reads)} fields upstream; a read is `.field` or \"field\" in a file other than the class's "
             f"module.", "",
             f"**{len(removed)} fields removed** with their CLI options: upstream reads them, no kept code names "
             f"them (the dead-symbol batch, rules attribute_tables; `shrink verify` re-checks each against both "
             f"trees).", "", head]
    lines += [f"| `{r.name}` | {r.line} | {r.upstream_elsewhere} | {r.first_upstream_reader} |" for r in removed]
    lines += ["", f"**{len(left)} fields still declared** though only removed code reads them outside "
                  f"server_args.py: the kept checks and defaults there still read them, so the symbol graph keeps "
                  f"them (their options parse and feed only those checks).", "", head]
    lines += [f"| `{r.name}` | {r.line} | {r.upstream_elsewhere} | {r.first_upstream_reader} |" for r in left]
    lines += ["", f"{len(inside)} fields are read only inside their own module upstream too (defaults and "
                  f"checks; kept): " + ", ".join(f"`{r.name}`" for r in inside) + "."]
    md_path.write_text("\n".join(lines) + "\n")
    return [md_path, json_path]
