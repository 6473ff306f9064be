"""Where a module-level name comes from: `from X import NAME` at a module's top level makes X the origin
of NAME there. Rules name a value by the module users import it from (`sglang.srt.server_args`'s
ATTENTION_BACKEND_CHOICES); upstream may move the definition and re-export it (0.5.23 defines it in
`sglang.srt.arg_groups.choices`), and the codemods must edit the definition wherever it now stands."""

from __future__ import annotations

from typing import Iterable

from shrinker.graph.records import MODULE, FileFacts


def import_origins(facts: Iterable[FileFacts]) -> dict[str, dict[str, str]]:
    """module -> {name: the module its top-level `from X import name` takes it from}."""
    return {f.module: found for f in facts if (found := _origins(f, plain=False))}


def plain_reexports(facts: FileFacts) -> dict[str, str]:
    """{name: origin} for the names one module binds once, by an unguarded top-level `from X import name`
    (not under an `if`, a `try` or TYPE_CHECKING): the module holds X's object under that name, always."""
    return _origins(facts, plain=True)


def _origins(f: FileFacts, *, plain: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for record in f.imports:
        if not record.is_from or record.where.scope != MODULE:
            continue
        if plain and (record.where.guards or record.where.try_import or record.where.type_checking):
            continue
        for name in record.names:
            # bound under its own name, not `as` another (and, for a plain re-export, by nothing else)
            if name != "*" and (f.defined.count(name) == 1 if plain else name in f.defined):
                out[name] = record.target
    return out


def defining_modules(origins: dict[str, dict[str, str]], module: str, name: str) -> list[str]:
    """`module` and every module `name` is re-exported from, following the chain to its definition."""
    chain = [module]
    while (origin := origins.get(chain[-1], {}).get(name)) is not None and origin not in chain:
        chain.append(origin)
    return chain
