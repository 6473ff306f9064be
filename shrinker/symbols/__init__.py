"""Symbol-level dead code: which functions, classes, methods and module-level names of a kept tree
no reference can reach (issue 7).

- `facts`: one file -> `ModuleSymbols` (its symbols, what each references, the module's root code);
  read with the stdlib `ast` (about 10x faster than libcst, and enough: the analysis needs names,
  not formatting), cached by content hash like the import tracer's facts.
- `rules`: the protected API and the name lists, from `rules/<profile>-symbols.toml`.
- `graph`: `SymbolGraph` — every module's symbols, resolved by name, attribute and string, and the
  live set: what module code, protected API and registrations reach, to a fixpoint, with the
  reason each symbol is live (`why`).
- `fixpoint`: analyse -> remove (the `remove_dead_symbols` codemod) -> analyse again, on a scratch
  tree, until a pass removes nothing; counts lines and seconds.
"""
