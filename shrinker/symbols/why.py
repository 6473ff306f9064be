"""`shrink why MODULE:SYMBOL`: why a symbol stays (the chain of references back to a root, or the
rule), or why it goes (no kept code reaches it; what mentions it is removed too)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from shrinker.errors import ShrinkError
from shrinker.graph.discover import path_candidates
from shrinker.symbols.graph import MODULE_CODE, SymbolGraph, sid, split_sid


@dataclass
class Step:
    symbol: str  # module:qualname, or module:<module> for module code
    reason: str
    line: int = 0  # where `symbol`'s code references the step before it (0: a root)


@dataclass
class SymbolWhy:
    symbol: str
    path: str
    line: int
    lines: int
    kept: bool
    reason: str
    chain: list[Step] = field(default_factory=list)  # from the symbol back to a root
    referrers: list[tuple[str, str, int]] = field(default_factory=list)  # (code, how, line) that mentions it


def resolve_target(graph: SymbolGraph, target: str) -> str:
    """`module:qualname`, `path/to/mod.py:qualname` or `module.qualname` -> a symbol id."""
    target = target.strip()
    module, _, qualname = target.partition(":")
    if not qualname:
        raise ShrinkError(f"{target!r}: give MODULE:SYMBOL (sglang.srt.utils.common:is_pin_memory_available)")
    if module.endswith(".py"):
        by_path = {ms.path: name for name, ms in graph.modules.items()}
        for candidate in path_candidates(module):
            if candidate in by_path:
                module = by_path[candidate]
                break
    symbol_id = sid(module, qualname)
    if symbol_id in graph.symbols:
        return symbol_id
    if module not in graph.modules:
        close = difflib.get_close_matches(module, list(graph.modules), n=3)
        raise ShrinkError(f"{module!r} is not a module of the tree"
                          + (f" (closest: {', '.join(close)})" if close else ""))
    ms = graph.modules[module]
    if qualname in ms.symbols:  # a name only third-party imports bind
        raise ShrinkError(f"{symbol_id} is bound only by an import from outside the tree: not a symbol here")
    close = difflib.get_close_matches(qualname, list(ms.symbols), n=3)
    raise ShrinkError(f"{module} has no module-level symbol {qualname!r} (conditional defs and plain "
                      f"statements are module code)" + (f"; closest: {', '.join(close)}" if close else ""))


def explain_symbol(graph: SymbolGraph, target: str) -> SymbolWhy:
    symbol_id = resolve_target(graph, target)
    item = graph.symbols[symbol_id]
    ms = graph.modules[item.module]
    kept = symbol_id in graph.live
    answer = SymbolWhy(symbol_id, ms.path, item.sym.line, item.sym.lines, kept, "")
    if kept:
        current, seen = symbol_id, set()
        while current and current not in seen:
            seen.add(current)
            reason = graph.live.get(current)
            if reason is None:
                break
            answer.chain.append(Step(current, reason.text, reason.line))
            nxt = reason.via
            member_of = graph.symbols[current].cls if current in graph.symbols else ""
            if not nxt and member_of:  # a member a rule keeps stays while its class does
                nxt = member_of
                answer.chain[-1].reason += f" — while its class {member_of} is kept"
            if not nxt or nxt == current:
                break
            if split_sid(nxt)[1] == MODULE_CODE:
                answer.chain.append(Step(nxt, "module code runs when the module is imported (the plan keeps the module)"))
                break
            current = nxt
        answer.reason = answer.chain[0].reason if answer.chain else ""
    else:
        if item.cls and item.cls not in graph.live:
            answer.reason = f"its class {item.cls} goes (nothing kept references it)"
        else:
            answer.reason = "no reference by name, attribute or string in kept code reaches it, and no rule protects it"
    answer.referrers = _referrers(graph, symbol_id)
    return answer


def _referrers(graph: SymbolGraph, symbol_id: str) -> list[tuple[str, str, int]]:
    """Code mentioning the symbol, and code mentioning the import aliases that re-bind it."""
    out: list[tuple[str, str, int]] = []
    todo, seen = [symbol_id], {symbol_id}
    while todo:
        current = todo.pop(0)
        for code, how, line in graph.referrers(current):
            out.append((code, how if current == symbol_id else f"{how} of alias {current}", line))
            if how == "import" and code in graph.symbols and code not in seen and len(seen) < 50:
                seen.add(code)
                todo.append(code)
    return out


def render(answer: SymbolWhy) -> list[str]:
    """Plain lines (the CLI adds colour)."""
    verdict = "kept" if answer.kept else "removed"
    out = [f"{answer.symbol} ({answer.path}:{answer.line}, {answer.lines} lines): {verdict} — {answer.reason}"]
    if answer.kept and len(answer.chain) > 1:
        out.append("chain back to a root:")
        for i, step in enumerate(answer.chain):
            at = f" (line {step.line})" if step.line else ""
            out.append(f"  {'  ' * min(i, 12)}{step.symbol}{at}: {step.reason}")
    if not answer.kept:
        if answer.referrers:
            out.append("mentioned only by code that goes too (or by nothing it can denote):")
            for code, how, line in answer.referrers[:12]:
                out.append(f"  {code} ({how}, line {line})")
            if len(answer.referrers) > 12:
                out.append(f"  ... and {len(answer.referrers) - 12} more")
        else:
            out.append("nothing in the tree mentions it")
    return out
