"""Parse one .py file with libcst and record its imports, module-naming strings and registry shapes.

The walk goes statement by statement (a full CST visitor costs about as much as the parse itself)
and renders only small statements, which is cheap. Line numbers come from searching the rendered
statement forward in the source, since statements are met in source order.
"""

from __future__ import annotations

import re

import libcst as cst

from shrinker.graph.records import (
    CLASS, FUNCTION, MODULE, DictEntry, DictLiteral, FileFacts, ImportRecord, StringRef, Where)

# Bump when FileFacts' meaning changes: old cache entries are then ignored.
PARSER_VERSION = "12"

_EMPTY = cst.Module(body=[])
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
# A dotted string that may name a module, optionally with ":attr" ("pkg.mod:Cls").
_MODULE_STRING = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_][\w.]*)?$")
# The last branch: an f-string that starts with a module-level name (`f"{_PKG}.mod:attr"`).
_STRING_HINT = re.compile(
    r"""["'][A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[\w.]+)?["']|import_module|LazyImport|["']\{[A-Za-z_]\w*\}\.\w""")


def _code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _str_value(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def resolve_relative(module: str, is_package: bool, level: int, name: str) -> str:
    """`from ..a import b` in package-relative terms → absolute dotted name."""
    if level == 0:
        return name
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, name] if name else base)


class _StringCollector(cst.CSTVisitor):
    """Module-naming strings inside one small statement or expression."""

    def __init__(self, loop_values: dict[str, list[str]], module: str, texts: dict[str, str] | None = None):
        # (target, kind, attr, the call's other keywords, the call's dotted name)
        self.found: list[tuple[str, str, str, dict[str, str], str]] = []
        self.loop_values = loop_values
        self.module = module
        self.texts = texts or {}  # module-level NAME = "a.b" string constants
        self._calls: list[cst.Call] = []
        self._keyword: list[tuple[cst.Call, str]] = []  # (call, keyword) of the keyword arguments entered

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and self._calls:
            self._keyword.append((self._calls[-1], node.keyword.value))

    def leave_Arg(self, original_node: cst.Arg) -> None:
        if original_node.keyword is not None and self._calls:
            self._keyword.pop()

    def leave_Call(self, original_node: cst.Call) -> None:
        self._calls.pop()

    def _siblings(self) -> tuple[dict[str, str], str]:
        """The other keyword arguments of the call whose keyword argument holds the current string, and
        that call's dotted name (`KernelSpec`)."""
        if not self._keyword:
            return {}, ""
        call, keyword = self._keyword[-1]
        return {a.keyword.value: _code(a.value) for a in call.args
                if a.keyword is not None and a.keyword.value != keyword}, _dotted(call.func)

    def visit_Call(self, node: cst.Call) -> None:
        self._calls.append(node)
        func = _dotted(node.func).rsplit(".", 1)[-1]
        if func == "import_module" and node.args:
            first = node.args[0].value
            text = _str_value(first)
            if text is not None:
                self.found.append((text, "import_module", "", {}, ""))
            elif isinstance(first, cst.FormattedString):
                for target in self._expand_fstring(first):
                    self.found.append((target, "fstring", "", {}, ""))
        elif func == "LazyImport" and len(node.args) >= 1:
            text = _str_value(node.args[0].value)
            attr = _str_value(node.args[1].value) if len(node.args) > 1 else ""
            if text is not None:
                self.found.append((text, "lazy_import", attr or "", {}, ""))

    def _expand_fstring(self, node: cst.FormattedString) -> list[str]:
        """f"{__name__}.{g}" with g looping over a constant tuple → one target per value."""
        pieces: list[list[str]] = [[""]]
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                pieces.append([part.value])
            elif isinstance(part, cst.FormattedStringExpression):
                name = _dotted(part.expression)
                if name == "__name__":
                    pieces.append([self.module])
                elif name in self.loop_values:
                    pieces.append(self.loop_values[name])
                elif self.texts.get(name):
                    pieces.append([self.texts[name]])
                else:
                    return []
        targets = [""]
        for options in pieces:
            targets = [t + o for t in targets for o in options]
        return targets

    def visit_Tuple(self, node: cst.Tuple) -> None:
        # `("sglang.srt.model_executor.model_runner", "LocalSerializedTensor")` (utils/common's unpickle
        # allowlist, read as getattr(import_module(m), name)) names one attribute of the module, as
        # "m:Name" would: the module is no more read whole than by that string
        if len(node.elements) != 2 or any(isinstance(e, cst.StarredElement) for e in node.elements):
            return
        module, name = (_str_value(e.value) if isinstance(e.value, cst.SimpleString) else None for e in node.elements)
        if module and name and ":" not in module and _MODULE_STRING.match(module) and name.isidentifier():
            if not any(module == found[0] and name == found[2] for found in self.found):
                self.found.append((module, "mod_attr", name, *self._siblings()))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self._module_string(_str_value(node))

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        # `target=f"{_KDA_PACKAGE}.qwen3x_nvfp4_gemm:try_qwen3x_nvfp4_gemm"` names a module as surely as
        # the literal would, when every piece is text, `__name__`, a loop value or a module string constant
        for text in self._expand_fstring(node):
            self._module_string(text)

    def _module_string(self, text: str | None) -> None:
        if text and any(text == found[0] for found in self.found):
            return  # already taken by import_module / LazyImport
        if text and _MODULE_STRING.match(text):
            target, _, attr = text.partition(":")
            self.found.append((target, "mod_attr" if attr else "string", attr, *self._siblings()))


class _Walker:
    def __init__(self, source: str, module: str, is_package: bool, facts: FileFacts):
        self.source = source
        self.module = module
        self.is_package = is_package
        self.facts = facts
        self.cursor = 0
        self.line_at_cursor = 1
        self.consts: dict[str, list[str]] = {}  # module-level NAME = ("a", "b") tuples of strings
        self.texts: dict[str, str] = {}  # module-level NAME = "a.b" strings, read by f-strings
        self.has_strings = bool(_STRING_HINT.search(source))

    # -- positions -------------------------------------------------------------------------
    def _line_of(self, text: str) -> int:
        # the whole statement first: statements that start alike (`register_kernel(`, one record after
        # another) would all take the first one's line
        whole = text.strip()
        idx = self.source.find(whole, self.cursor) if "\n" in whole else -1
        if idx < 0:
            probe = whole.splitlines()[0] if whole else ""
            idx = self.source.find(probe, self.cursor) if probe else -1
        if idx < 0:
            return self.line_at_cursor
        self.line_at_cursor += self.source.count("\n", self.cursor, idx)
        self.cursor = idx
        return self.line_at_cursor

    # -- statements ------------------------------------------------------------------------
    def walk(self, body, where: Where, loop_values: dict[str, list[str]] | None = None) -> None:
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self._small(small, where, loop_values or {})
            else:
                self._compound(stmt, where, loop_values or {})

    def _block(self, block) -> list:
        return list(block.body) if isinstance(block, cst.IndentedBlock) else list(block.body)

    def _compound(self, stmt: cst.BaseCompoundStatement, where: Where, loops: dict) -> None:
        if isinstance(stmt, cst.If):
            self._if(stmt, where, loops)
        elif isinstance(stmt, cst.Try) or isinstance(stmt, getattr(cst, "TryStar", cst.Try)):
            catches = any(self._catches_import_error(h) for h in stmt.handlers)
            inner = _with(where, try_import=where.try_import or catches)
            self.walk(self._block(stmt.body), inner, loops)
            for handler in stmt.handlers:
                self.walk(self._block(handler.body), where, loops)
            if stmt.orelse:
                self.walk(self._block(stmt.orelse.body), inner, loops)
            if stmt.finalbody:
                self.walk(self._block(stmt.finalbody.body), where, loops)
        elif isinstance(stmt, cst.FunctionDef):
            keys = [k for d in stmt.decorators for k in self._registry_keys(d)]
            self._line_of(f"def {stmt.name.value}")
            qual = f"{where.function}.{stmt.name.value}" if where.function else stmt.name.value
            if where.scope == MODULE:
                self.facts.defined.append(stmt.name.value)
            self.facts.registry_defs.extend([deco, key, qual] for deco, key in keys)
            inner = _with(where, scope=FUNCTION, function=qual,
                          registry_keys=[*where.registry_keys, *keys])
            for deco in stmt.decorators:
                self._strings_in(deco, where, loops)
            self.walk(self._block(stmt.body), inner, loops)
        elif isinstance(stmt, cst.ClassDef):
            # a class registers as a function does (`@register_model_config_parser("mistral") class ...`)
            keys = [k for d in stmt.decorators for k in self._registry_keys(d)]
            self._line_of(f"class {stmt.name.value}")
            if where.scope == MODULE:
                self.facts.defined.append(stmt.name.value)
            qual = f"{where.function}.{stmt.name.value}" if where.function else stmt.name.value
            self.facts.registry_defs.extend([deco, key, qual] for deco, key in keys)
            inner = _with(where, scope=CLASS if where.scope != FUNCTION else FUNCTION, function=qual,
                          registry_keys=[*where.registry_keys, *keys])
            self.walk(self._block(stmt.body), inner, loops)
        elif isinstance(stmt, cst.For):
            values = self._loop_values(stmt)
            new_loops = {**loops, **values} if values else loops
            self.walk(self._block(stmt.body), where, new_loops)
            if stmt.orelse:
                self.walk(self._block(stmt.orelse.body), where, loops)
        elif isinstance(stmt, (cst.While, cst.With)):
            self.walk(self._block(stmt.body), where, loops)
            if isinstance(stmt, cst.While) and stmt.orelse:
                self.walk(self._block(stmt.orelse.body), where, loops)
        elif isinstance(stmt, cst.Match):
            for case in stmt.cases:
                self.walk(self._block(case.body), where, loops)

    def _if(self, stmt: cst.If, where: Where, loops: dict) -> None:
        test = _code(stmt.test)
        self._line_of(test)
        if _dotted(stmt.test).rsplit(".", 1)[-1] == "TYPE_CHECKING":
            self.walk(self._block(stmt.body), _with(where, type_checking=True), loops)
        else:
            self._strings_in(stmt.test, where, loops)
            self.walk(self._block(stmt.body), _with(where, guards=[*where.guards, test]), loops)
        negated = [*where.guards, f"not ({test})"]
        orelse = stmt.orelse
        if isinstance(orelse, cst.If):
            self._if(orelse, _with(where, guards=negated), loops)
        elif isinstance(orelse, cst.Else):
            self.walk(self._block(orelse.body), _with(where, guards=negated), loops)

    @staticmethod
    def _catches_import_error(handler: cst.ExceptHandler) -> bool:
        if handler.type is None:
            return True
        names = [handler.type] if not isinstance(handler.type, cst.Tuple) else [e.value for e in handler.type.elements]
        return any(_dotted(n).rsplit(".", 1)[-1] in _IMPORT_ERRORS for n in names)

    @staticmethod
    def _registry_keys(deco: cst.Decorator) -> list[list[str]]:
        """[decorator, key] per leading string argument: `@register_attention_backend("fa3")`, and
        `@_register_for("DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM")` registers under both."""
        if not isinstance(deco.decorator, cst.Call):
            return []
        name = _dotted(deco.decorator.func).rsplit(".", 1)[-1]
        keys = []
        for arg in deco.decorator.args:
            key = _str_value(arg.value) if arg.keyword is None and not arg.star else None
            if key is None:
                break
            keys.append([name, key])
        return keys

    def _loop_values(self, stmt: cst.For) -> dict[str, list[str]]:
        if not isinstance(stmt.target, cst.Name):
            return {}
        it = stmt.iter
        if isinstance(it, cst.Name) and it.value in self.consts:
            return {stmt.target.value: self.consts[it.value]}
        values = _const_strings(it)
        return {stmt.target.value: values} if values else {}

    def _small(self, small: cst.BaseSmallStatement, where: Where, loops: dict) -> None:
        if isinstance(small, cst.Import):
            line = self._line_of(_code(small))
            for alias in small.names:
                target = _dotted(alias.name)
                self.facts.imports.append(ImportRecord(target, [], line, False, where))
                if where.scope == MODULE:
                    self.facts.defined.append(_dotted(alias.asname.name) if alias.asname else target.split(".")[0])
            return
        if isinstance(small, cst.ImportFrom):
            line = self._line_of(_code(small))
            level = len(small.relative)
            name = _dotted(small.module) if small.module else ""
            target = resolve_relative(self.module, self.is_package, level, name)
            if isinstance(small.names, cst.ImportStar):
                names = ["*"]
            else:
                names = [_dotted(a.name) for a in small.names]
                if where.scope == MODULE:
                    self.facts.defined.extend(
                        _dotted(a.asname.name) if a.asname else _dotted(a.name) for a in small.names)
            self.facts.imports.append(ImportRecord(target, names, line, True, where))
            return
        if isinstance(small, (cst.Assign, cst.AnnAssign)):
            self._assign(small, where)
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            self._update_call(small.value, where)
        if self.has_strings:
            self._strings_in(small, where, loops)

    def _strings_in(self, node: cst.CSTNode, where: Where, loops: dict) -> None:
        if not self.has_strings:
            return
        text = _code(node)
        if not _STRING_HINT.search(text):
            return
        collector = _StringCollector(loops, self.module, self.texts)
        node.visit(collector)
        if not collector.found:
            return
        line = self._line_of(text)
        for target, kind, attr, keywords, call in collector.found:
            self.facts.strings.append(StringRef(target, line, kind, where, attr, keywords, call))

    def _assign(self, small, where: Where) -> None:
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        value = small.value
        for target in targets:
            name = _dotted(target)
            if not name:
                continue
            if where.scope == MODULE:
                self.facts.defined.append(name)
                if name == "EntryClass" and value is not None:
                    self.facts.entry_class = _names_in(value)
                strings = _const_strings(value) if value is not None else []
                if strings:
                    self.consts[name] = strings
                # a name bound twice is no constant: neither value is the one an f-string surely reads
                text = _str_value(value) if value is not None else None
                self.texts[name] = text if text is not None and name not in self.texts else ""
            if value is not None and where.scope in (MODULE, CLASS) and isinstance(value, cst.Dict):
                qual = f"{where.function}.{name}" if where.scope == CLASS else name
                self._record_dict(qual, value, where)

    def _update_call(self, call: cst.Call, where: Where) -> None:
        if where.scope == FUNCTION or not isinstance(call.func, cst.Attribute) or call.func.attr.value != "update":
            return
        if call.args and isinstance(call.args[0].value, cst.Dict):
            self._record_dict(_dotted(call.func.value), call.args[0].value, where)

    def _record_dict(self, name: str, node: cst.Dict, where: Where) -> None:
        entries = []
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = _str_value(element.key)
                if key is not None:
                    entries.append(DictEntry(key, _code(element.value), 0))
        if entries:
            line = self._line_of(_code(node).splitlines()[0])
            self.facts.dicts.append(DictLiteral(name, entries, line, list(where.guards)))


def _const_strings(node: cst.BaseExpression) -> list[str]:
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        values = [_str_value(e.value) for e in node.elements]
        if values and all(v is not None for v in values):
            return values  # type: ignore[return-value]
    return []


def _names_in(node: cst.BaseExpression) -> list[str]:
    if isinstance(node, (cst.Name, cst.Attribute)):
        return [_dotted(node).rsplit(".", 1)[-1]]
    if isinstance(node, (cst.List, cst.Tuple)):
        return [n for e in node.elements for n in _names_in(e.value)]
    return []


def _with(where: Where, **changes) -> Where:
    data = {**where.__dict__, **changes}
    return Where(**data)


def count_lines(source: str) -> int:
    """Non-blank lines, the unit every report uses."""
    return sum(1 for line in source.splitlines() if line.strip())


def parse_file(source: str, path: str, module: str, is_package: bool) -> FileFacts:
    """Facts of one file; a file libcst cannot parse gets `parse_error` and no edges."""
    facts = FileFacts(path=path, module=module, is_package=is_package, lines=count_lines(source))
    try:
        tree = cst.parse_module(source)
    except Exception as exc:  # libcst.ParserSyntaxError and friends
        facts.parse_error = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        return facts
    _Walker(source, module, is_package, facts).walk(tree.body, Where())
    return facts
