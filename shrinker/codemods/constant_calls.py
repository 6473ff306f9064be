"""Which names of one module call a constant function (graph/constant_functions): the Folder folds such a call
to the function's bool.

- `f(...)` where `f` is a top-level function of this module, or a name a top-level `from X import f [as g]`
  takes from a module defining one (through re-exports: `from sglang.srt.configs import is_kimi_k3`); the
  name is bound once in the module (no second import, assignment or parameter of that name at top level);
- `self.m(...)` where `m` is a constant method defined once in this module and named in no other file of the
  tree (`single_file_words`): no subclass elsewhere overrides it, no other file calls it;
- `x.m(...)` in any module where `m` is one of the tree's called methods (graph/constant_functions
  .called_methods: named for another platform or model family, one def in the tree, every use a call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_absolute_module_from_package_for_import

from shrinker.codemods.bindings import BindingCounts
from shrinker.graph.constant_functions import ConstantReturn
from shrinker.graph.reexports import defining_modules

if TYPE_CHECKING:
    from shrinker.codemods.fold_platform import Folder
    from shrinker.codemods.inputs import CodemodInputs


def constant_words(inputs: "CodemodInputs", none: bool = True) -> tuple[str, ...]:
    """Every name a constant call can be written with in some module (`is_kimi_k3`, a method's name that
    occurs in one file only); without the functions that return None unless `none`."""
    table = inputs.constant_functions or {}
    words = inputs.single_file_words or frozenset()
    return tuple(sorted({qualname.rpartition(".")[2] for functions in table.values()
                         for qualname, known in functions.items()
                         if (none or not known.none) and ("." not in qualname or qualname.rpartition(".")[2] in words)}
                        | {name for name, known in (inputs.called_methods or {}).items() if none or not known.none}))


def constant_calls(tree: cst.Module, module: str, package: str | None, inputs: "CodemodInputs",
                   folder: "Folder") -> tuple[dict[str, ConstantReturn], dict[str, ConstantReturn]]:
    """(names whose call is a constant, methods whose `self.` call is one) in the module `tree`."""
    table = inputs.constant_functions
    if not table or not module:
        return {}, {}
    own = table.get(module, {})
    calls = {name: known for name, known in own.items() if "." not in name}
    origins = inputs.removed.origins or {}
    for line in tree.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
                continue
            if small.relative and package is None:
                continue
            base = get_absolute_module_from_package_for_import(package, small)
            for alias in small.names if base else ():
                if not isinstance(alias.name, cst.Name):
                    continue
                name = alias.name.value
                for origin in defining_modules(origins, base, name):
                    if name in table.get(origin, {}):
                        calls[alias.evaluated_alias or name] = table[origin][name]
                        break
    counts = BindingCounts(folder)
    tree.visit(counts)
    calls = {name: known for name, known in calls.items() if counts.count.get(name, 0) == 1}
    words = inputs.single_file_words or frozenset()
    methods: dict[str, ConstantReturn] = {}  # `x.m()` of the tree's called methods: Folder._known_constant
    for qualname, known in own.items():
        _, dot, method = qualname.partition(".")
        if dot and method in words and counts.count.get(method, 0) == 1:
            methods[method] = known
    return calls, methods
