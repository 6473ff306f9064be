"""Drop elements from a list/tuple/set/dict literal or an import's names, keeping layout and comments.

Shared by the import, registry and CLI-choices codemods. The whitespace between two elements lives
on the comma before the second one; in a multi-line literal it holds the trailing comment of the
element before (`first_line`), comment lines heading the next element (`empty_lines`) and the
indentation. Removing an element merges the whitespace around it so that:
  - the kept element before it keeps its own trailing comment;
  - a comment line heading the removed element (`# AMD specific` above "aiter") moves to the next
    element when that one is kept, directly follows and has no heading of its own ("wave"); when
    the next element goes too, the heading goes with the run (`# Apple MLX` above "mlx_q4",
    "mlx_q8": nothing tells where its section ends, and a heading over unrelated entries misleads);
  - a trailing comma is kept when the original had one, dropped when it did not;
  - a literal that empties becomes `[]` / `{}` / `()`; a one-element tuple keeps its comma.
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar, Union

import libcst as cst

Ws = Union[cst.SimpleWhitespace, cst.ParenthesizedWhitespace]
E = TypeVar("E", bound=cst.CSTNode)


def _merge(before: Ws, after: Ws, next_exists: bool, carry: bool = False) -> Ws:
    """The whitespace that replaces `before <removed element>, after`."""
    if isinstance(before, cst.ParenthesizedWhitespace) and isinstance(after, cst.ParenthesizedWhitespace):
        heading = after.empty_lines
        if not heading and carry:
            heading = before.empty_lines  # the removed element's heading now heads the next one
        return before.with_changes(empty_lines=heading, indent=after.indent, last_line=after.last_line)
    return before if next_exists else after


def _comma_ws(el: cst.CSTNode) -> Ws | None:
    comma = getattr(el, "comma", cst.MaybeSentinel.DEFAULT)
    return comma.whitespace_after if isinstance(comma, cst.Comma) else None


def _with_comma_ws(el: E, ws: Ws) -> E:
    return el.with_changes(comma=el.comma.with_changes(whitespace_after=ws))  # type: ignore[attr-defined]


def drop_elements(elements: Sequence[E], drop: Callable[[E], bool], lead: Ws | None, tail: Ws | None
                  ) -> tuple[list[E], Ws | None, Ws | None] | None:
    """Elements kept, with the whitespace after the opening and before the closing bracket.

    `lead`/`tail` are the whitespace after `[` and before `]` (None when the sequence has no
    brackets, as in `import a, b`). Returns None when nothing is dropped.
    """
    flags = [drop(el) for el in elements]
    if not any(flags):
        return None
    if all(flags):
        empty = cst.SimpleWhitespace("")
        return [], (None if lead is None else empty), (None if tail is None else empty)
    out: list[E] = []
    n = len(elements)
    for i, el in enumerate(elements):
        if not flags[i]:
            out.append(el)
            continue
        comma = el.comma  # type: ignore[attr-defined]
        before = _comma_ws(out[-1]) if out else lead
        if i == n - 1:
            # The new last element takes over the removed one's trailing comma (or its absence);
            # its own trailing comment moves to the closing side when a line break sits there.
            if not out:
                continue  # unreachable: all-dropped is handled above
            prev = out[-1]
            after = comma.whitespace_after if isinstance(comma, cst.Comma) else None
            if isinstance(before, cst.ParenthesizedWhitespace) and isinstance(after, cst.ParenthesizedWhitespace):
                out[-1] = _with_comma_ws(prev, _merge(before, after, next_exists=False))
                continue
            if isinstance(before, cst.ParenthesizedWhitespace) and isinstance(tail, cst.ParenthesizedWhitespace):
                tail = tail.with_changes(first_line=before.first_line)
            if after is None:
                out[-1] = prev.with_changes(comma=cst.MaybeSentinel.DEFAULT)
            else:
                out[-1] = _with_comma_ws(prev, after)
            continue
        # An inner element always has a comma; the whitespace after it leads to the next element.
        merged = _merge(before if before is not None else cst.SimpleWhitespace(""),
                        comma.whitespace_after, next_exists=True, carry=not flags[i + 1])
        if out:
            out[-1] = _with_comma_ws(out[-1], merged)
        elif lead is not None:
            lead = merged
    return out, lead, tail


def drop_from_literal(node: cst.BaseExpression, drop: Callable[[cst.CSTNode], bool]) -> cst.BaseExpression | None:
    """`node` (List, Set, Tuple or Dict) without the elements `drop` selects, or None when unchanged."""
    if isinstance(node, (cst.List, cst.Set, cst.Dict)):
        if isinstance(node, cst.List):
            open_, close = node.lbracket, node.rbracket
            open_key, close_key = "lbracket", "rbracket"
        else:
            open_, close = node.lbrace, node.rbrace
            open_key, close_key = "lbrace", "rbrace"
        result = drop_elements(node.elements, drop, open_.whitespace_after, close.whitespace_before)
        if result is None:
            return None
        kept, lead, tail = result
        if not kept and isinstance(node, cst.Set):
            return None  # `{}` would be a dict: leave an emptying set alone (callers report it)
        return node.with_changes(elements=kept,
                                 **{open_key: open_.with_changes(whitespace_after=lead),
                                    close_key: close.with_changes(whitespace_before=tail)})
    if isinstance(node, cst.Tuple):
        paren = bool(node.lpar)
        lead = node.lpar[0].whitespace_after if paren else None
        tail = node.rpar[-1].whitespace_before if paren else None
        result = drop_elements(node.elements, drop, lead, tail)
        if result is None:
            return None
        kept, lead, tail = result
        if not kept and not paren:
            return None  # a bare tuple cannot be empty
        if len(kept) == 1 and not isinstance(kept[0].comma, cst.Comma):
            kept = [kept[0].with_changes(comma=cst.Comma())]  # `("a",)` stays a tuple
        changes: dict = {"elements": kept}
        if paren:
            changes["lpar"] = [node.lpar[0].with_changes(whitespace_after=lead), *node.lpar[1:]]
            changes["rpar"] = [*node.rpar[:-1], node.rpar[-1].with_changes(whitespace_before=tail)]
        return node.with_changes(**changes)
    return None
