"""Which keys callers ask an inventory for (`get_kernel("x.y")`), read with `ast`.

A `records` registry (rules/schema.py) names the calls that look a key up (`lookups`, as
`module:name` or `module:object.method`). A call counts where the name it calls resolves, through
the file's own imports (any scope) and the re-exports of graph/reexports.py, to one of them; its
first argument is the key. A literal is asked for; anything else (a variable, an f-string) is a
computed ask, which may be any key. The lookups' own modules pass a caller's key on (the selector's
`registry.get(op)`) and are not read.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from shrinker.graph.bindings import dotted as dotted_name
from shrinker.graph.parse import resolve_relative
from shrinker.graph.reexports import defining_modules


@dataclass
class KeyAsks:
    asked: set[str] = field(default_factory=set)  # keys some call asks for with a literal
    where: dict[str, list[str]] = field(default_factory=dict)  # key -> "module:line" of each literal ask
    computed: list[str] = field(default_factory=list)  # "module:line" of each ask with a computed key


def _bindings(tree: ast.AST, module: str, is_package: bool) -> dict[str, list[str]]:
    """name -> what the file's imports bind it to: "module:name" for `from`, "module" for `import`."""
    out: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = resolve_relative(module, is_package, node.level, node.module or "")
            for alias in node.names:
                out.setdefault(alias.asname or alias.name, []).append(f"{source}:{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                out.setdefault(bound, []).append(alias.name if alias.asname else bound)
    return out


def _callee(dotted: str, bindings: dict[str, list[str]], origins: dict[str, dict[str, str]]) -> set[str]:
    """Every dotted path the called name may stand for (a `from` import followed to its definition;
    an `import` as the path it spells): `pkg.selector.get_kernel`."""
    head, _, rest = dotted.partition(".")
    tail = f".{rest}" if rest else ""
    out: set[str] = set()
    for bound in bindings.get(head, ()):
        if ":" in bound:
            source, name = bound.split(":", 1)
            out.update(f"{m}.{name}{tail}" for m in defining_modules(origins, source, name))
        else:
            out.add(f"{bound}{tail}")
    return out


def _spelled(lookup: str) -> str:
    """`sglang.kernels.selector:get_kernel` as a dotted path: `sglang.kernels.selector.get_kernel` (so
    `from sglang.kernels import selector` then `selector.get_kernel(...)` is the same lookup)."""
    return lookup.replace(":", ".")


def key_asks(tree: Path, module_path: dict[str, str], origins: dict[str, dict[str, str]],
             lookups: list[str]) -> KeyAsks:
    """The keys the modules of `module_path` ask `lookups` for (see the module docstring)."""
    asks = KeyAsks()
    own = {lookup.split(":")[0] for lookup in lookups}
    words = {lookup.split(":")[1].split(".")[0] for lookup in lookups}
    wanted = {_spelled(lookup) for lookup in lookups}
    for module in sorted(module_path):
        path = module_path[module]
        if not path.endswith(".py") or module in own:
            continue
        source = (tree / path).read_text(errors="replace")
        if not any(word in source for word in words):
            continue
        try:
            parsed = ast.parse(source)
        except SyntaxError:
            continue
        bindings = _bindings(parsed, module, path.endswith("__init__.py"))
        for node in ast.walk(parsed):
            if not isinstance(node, ast.Call):
                continue
            dotted = dotted_name(node.func)
            if not dotted or not (_callee(dotted, bindings, origins) & wanted):
                continue
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                asks.asked.add(first.value)
                asks.where.setdefault(first.value, []).append(f"{module}:{node.lineno}")
            else:
                asks.computed.append(f"{module}:{node.lineno}")
    return asks
