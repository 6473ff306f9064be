"""Shared bases for the import check: tree modules a fork server imports once, so the children that
import a module on top of one skip that part of its closure.

Most of a module's import time is the tree's own closure (layers, server args, memory pools ...),
shared by hundreds of modules. A base B is used for a module M only when
- B imported in a fresh process of its own (a base's failure is its own result, and it is never used);
- B is in M's certain closure (certain_closures: module-level imports outside any if/try/loop/with,
  and parent packages, followed transitively): M's own first lines import B anyway, so no foreign
  side effect is added, and a pruned import line M needed for B's side effects takes B out of it;
- M is not among the modules B's import loaded (else M would be preloaded).
The bases are picked from those closures (no names to configure): greedily, the module whose closure
most modules contain, weighted by its size. The caller re-runs fresh every import that fails on a
base, so a base can never create a failure.
"""

from __future__ import annotations

import heapq
from typing import Mapping, Sequence

MAX_BASES = 16
MIN_GAIN = 2000  # tree-module loads a base must save to be worth its own fresh import
MIN_CLOSURE = 20  # smaller closures are cheap: not worth a fork level


def choose_bases(closures: Mapping[str, frozenset[str]], candidates: Sequence[str],
                 modules: Sequence[str]) -> list[str]:
    """Greedy: each pick saves the most module loads over what the earlier picks already save.
    `closures`: upstream's loaded tree modules per module (ok imports only)."""
    max_bases, min_gain = MAX_BASES, MIN_GAIN  # read at call time (tests lower them)
    allowed = {b for b in candidates if b in closures and len(closures[b]) >= MIN_CLOSURE}
    bits = _bitsets(closures)  # subset tests on ints: ~100x faster than on sets of names
    users: dict[str, list[str]] = {}
    for m in modules:
        cm = closures.get(m)
        if cm is None:
            continue
        for b in allowed.intersection(cm):  # b's closure holds b, so only m's own closure can hold a base
            if m not in closures[b] and bits[b] & bits[m] == bits[b]:
                users.setdefault(b, []).append(m)
    covered = {m: 0 for m in modules}  # size of the best base picked so far for m

    def gain(b: str) -> int:
        size = len(closures[b])
        return sum(size - covered[m] for m in users[b] if size > covered[m])

    # lazy greedy: a gain only shrinks as picks are made, so a stale upper bound is re-checked on top
    heap = [(-gain(b), b) for b in sorted(users)]
    heapq.heapify(heap)
    picks: list[str] = []
    while heap and len(picks) < max_bases:
        _, b = heapq.heappop(heap)
        g = gain(b)
        if heap and g < -heap[0][0]:
            heapq.heappush(heap, (-g, b))
            continue
        if g < min_gain:
            break
        picks.append(b)
        for m in users[b]:
            covered[m] = max(covered[m], len(closures[b]))
    return picks


def _bitsets(closures: Mapping[str, frozenset[str]]) -> dict[str, int]:
    index: dict[str, int] = {}
    out = {}
    for m, closure in closures.items():
        value = 0
        for name in closure:
            value |= 1 << index.setdefault(name, len(index))
        out[m] = value
    return out


def _import_edges(facts: Mapping, modules: Sequence[str], counts) -> dict[str, set[str]]:
    """importer -> the tree modules its import statements that `counts(ref)` accepts name (parents
    included: importing a.b.c imports a and a.b first; every module imports its own parent)."""
    known = set(modules)
    edges: dict[str, set[str]] = {}

    def add(src: str, dst: str) -> None:
        parts = dst.split(".")
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            if name in known and name != src:
                edges.setdefault(src, set()).add(name)

    for m in known:
        add(m, m.rpartition(".")[0])
        f = facts.get(m)
        for ref in f.imports if f is not None else ():
            if not counts(ref):
                continue
            add(m, ref.module)
            for n in ref.names or ():
                if f"{ref.module}.{n}" in known:
                    add(m, f"{ref.module}.{n}")
    return edges


def _reach(edges: Mapping[str, set[str]], targets: Sequence[str]) -> dict[str, frozenset[str]]:
    out = {}
    for t in targets:
        seen, todo = {t}, [t]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        out[t] = frozenset(seen)
    return out


def certain_closures(facts: Mapping, modules: Sequence[str], targets: Sequence[str]) -> dict[str, frozenset[str]]:
    """target -> the tree modules its import certainly loads (itself included): its parent packages
    and, transitively, the `certain` imports of each (facts.ImportRef.certain; `from X import n`
    counts X.n when that is a module). `facts`: module -> FileFacts; `modules`: every tree module."""
    return _reach(_import_edges(facts, modules, lambda ref: ref.certain and not ref.guard), targets)


def assign_certain(modules: Sequence[str], certain: Mapping[str, frozenset[str]],
                   base_closures: Mapping[str, frozenset[str]]) -> dict[str, str]:
    """module -> the largest base its import certainly loads anyway ('' = none); `base_closures`:
    the bases that imported in a fresh process, with what they loaded."""
    out: dict[str, str] = {}
    for m in modules:
        cm = certain.get(m, frozenset())
        best = ""
        for b, cb in base_closures.items():
            if b != m and b in cm and m not in cb and (not best or len(cb) > len(base_closures[best])):
                best = b
        out[m] = best
    return out
