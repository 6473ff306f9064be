"""Names a module reads only as the class of an `isinstance` test (0.5.23's kv_cache_configurator:
`from sglang.srt.configs.qwen4_exp import Qwen4ExpTextConfig` inside a method that only asks
`isinstance(self.mambaish_config, Qwen4ExpTextConfig)`).

Such a use creates no object of the class: when the class's module goes, no instance can exist and the test
is False, which remove_dead_imports folds (its `isinstance` shapes: the second argument is the name, a tuple
of names holding it or a `|` union of it, and the first argument a name or attribute). The plan asks this
before it cuts a module kept only by such uses. Read with `ast`, rule-free; anything else (a call, a base
class, an annotation, `issubclass`, a name some other statement binds) is a use that keeps the module.
"""

from __future__ import annotations

import ast

from shrinker.graph.bindings import names_bound_by
from shrinker.graph.parse import resolve_relative


def isinstance_only_names(text: str, module: str, is_package: bool, target: str, names: set[str]) -> set[str]:
    """The names of `names` that `module` (whose source is `text`) binds only by `from <target> import name`
    statements (no alias; one per function that needs it is fine) and reads, at least once, only as the class
    argument of builtin isinstance calls whose first argument is a name or attribute."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    found = set(names)
    for node in ast.walk(tree):
        bound = names_bound_by(node)
        if "isinstance" in bound:
            return set()  # the module's own `isinstance` is no builtin test
        from_target = (isinstance(node, ast.ImportFrom)
                       and resolve_relative(module, is_package, node.level, node.module or "") == target)
        if from_target:
            found -= {a.name for a in node.names if a.asname}  # read under another name: not followed
        elif bound & found:
            found -= bound  # bound some other way
    allowed = _isinstance_class_ids(tree)
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in found:
            if id(node) not in allowed:
                found.discard(node.id)
            read.add(node.id)
    return found & read  # a name never read is a re-export (`from .api import Runtime` in a package)


def _isinstance_class_ids(tree: ast.Module) -> set[int]:
    """ids of the Name nodes that stand as a class of an `isinstance(obj, ...)` test."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
                and len(node.args) == 2 and not node.keywords
                and isinstance(node.args[0], (ast.Name, ast.Attribute))):
            ids.update(id(n) for n in _class_names(node.args[1]))
    return ids


def _class_names(node: ast.expr) -> list[ast.Name]:
    if isinstance(node, ast.Name):
        return [node]
    if isinstance(node, ast.Tuple):  # `(A, C)`: the fold drops a dead element
        return [e for e in node.elts if isinstance(e, ast.Name)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _class_names(node.left) + _class_names(node.right)
    return []
