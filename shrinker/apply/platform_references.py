"""Lines of the work tree that still name another platform or another model family (issue 17's
measures, in apply.md).

Platforms: a line counts when its code (comments and docstrings aside) matches the platform vocabulary of
the rules ([platform.strings]: a quoted platform name, an enum member `.MHA_NPU`, a predicate or flag named
for one: `_is_npu`, `is_gfx95_supported`, `_use_aiter`) or names a predicate rule (`*_aiter*`). Models: a
line counts when its code names a family of [architectures].other_families (`Qwen2ForCausalLM`,
`is_qwen3_next`, "gpt-oss"). Comments that name one count apart: they describe code, they do not run. So
do lines that name one only in prose, a string's words for a person (`help="... aiter on ROCm"`, an error
message): they select nothing.

A line the rules allow ([[platform.allowed]]: a vocabulary that describes targets, such as the kernel
registry's device types) is counted apart, under the rule's reason.
"""

from __future__ import annotations

import fnmatch
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from shrinker.graph.sources import python_sources
from shrinker.rules.patterns import name_glob_regex
from shrinker.rules.predicates import vocabulary_patterns


@dataclass
class PlatformReferences:
    code: list[tuple[str, int, str]] = field(default_factory=list)  # (path, line, text), not allowed
    comment_lines: int = 0
    prose_lines: int = 0  # code lines that name one only inside prose (a help text, a message)
    allowed: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)  # reason -> lines

    @property
    def files(self) -> int:
        return len({path for path, _, _ in self.code})

    def to_json(self) -> dict:
        data = {"code_lines": len(self.code), "files": self.files, "comment_lines": self.comment_lines,
                "prose_lines": self.prose_lines}
        if self.allowed:
            data["allowed"] = {reason: len(lines) for reason, lines in sorted(self.allowed.items())}
        return data


def reference_pattern(rules) -> re.Pattern:
    strings = rules.platform.strings
    predicates = [p for p in rules.platform.predicates if p.value is False and not p.name.isupper()]
    globs = [_identifier_glob(p.name) for p in predicates if any(c in p.name for c in "*?[")]
    # a predicate only called (`is_cpu()`) names no platform as an attribute: `tensor.is_cpu` is torch's;
    # a quoted one is a value, not the predicate (`ENCODER_ONLY = "encoder_only"`, an attention type)
    exact = [rf"""(?<![.'"])\b{re.escape(p.name)}\b(?!['"])""" if p.calls_only
             else rf"""(?<!['"])\b{re.escape(p.name)}\b(?!['"])"""
             for p in predicates if not any(c in p.name for c in "*?[")]
    return re.compile("|".join(vocabulary_patterns(strings.strings, strings.families) + exact + globs))


def _identifier_glob(name: str) -> str:
    """A predicate glob matching whole identifier parts: `aiter*` starts an identifier (`aiter_ops`, not
    `_update_handshake_waiters`), `*ascend*` starts one of its `_`-parts (`_use_ascend_fuseep`, not
    `descending`)."""
    rest = name.lstrip("*")
    if not name.startswith("*"):
        lead = r"\b"
    else:
        lead = r"\b\w*" if rest.startswith("_") else r"\b(?:\w*_)?"
    return lead + name_glob_regex(rest)


def family_pattern(families: list[str], served: list[str] = ()) -> re.Pattern | None:
    """A family word standing alone or starting a CamelCase name: `Qwen2ForCausalLM`, `LlamaMLP`,
    `is_qwen3_next`, not `Qwenlike` or `cllama`. A served model_type that starts with a family word
    (`kimi_k2`: Kimi K2 is a DeepSeek-V3 checkpoint) is not that family, however it is spelled
    (`KimiK2Detector`, `"kimi-k2"`), while a longer one is (`kimi_k25`, `kimi_k2_5`)."""
    if not families:
        return None
    alternatives = []
    for family in sorted(families, key=len, reverse=True):
        rests = [t[len(family):].lstrip("_-") for t in served if "*" not in t and t.lower().startswith(family.lower())
                 and t[len(family):len(family) + 1] in ("_", "-")]
        spelled = "".join(rf"(?![_-]?(?i:{re.escape(r)})(?![_.-]?[0-9]))" for r in rests if r)
        alternatives.append(rf"(?i:{re.escape(family)})(?![a-z]){spelled}")
    return re.compile(rf"(?<![A-Za-z])(?:{'|'.join(alternatives)})")


def platform_references(tree: Path, rules) -> PlatformReferences:
    words = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, rules.platform.strings.strings)), re.IGNORECASE)
    return _references(tree, reference_pattern(rules), words, rules.platform.allowed)


def model_references(tree: Path, rules) -> PlatformReferences | None:
    """Code lines naming another model family; None when the rules name no family."""
    pattern = family_pattern(rules.architectures.other_families, rules.architectures.model_types)
    return None if pattern is None else _references(tree, pattern, pattern, rules.architectures.allowed)


def _allowed_by(rel: str, code: str, allowed) -> str | None:
    """The reason of the first [[platform.allowed]] rule that covers this line, else None."""
    for rule in allowed:
        if any(fnmatch.fnmatchcase(rel, glob) for glob in rule.files) and (
                not rule.pattern or re.search(rule.pattern, code)):
            return rule.reason
    return None


def _references(tree: Path, pattern: re.Pattern, words: re.Pattern, allowed=()) -> PlatformReferences:
    found = PlatformReferences()
    for rel, text in sorted(python_sources(tree)):
        if pattern.search(text) is None and words.search(text) is None:
            continue
        lines = text.splitlines()
        blank = [list(line) for line in lines]  # the code with comments, docstrings and prose blanked out
        prose = [list(line) for line in lines]  # the code with comments and docstrings blanked out
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.COMMENT:
                    found.comment_lines += bool(words.search(tok.string))
                    _blank(blank, tok.start, tok.end)
                    _blank(prose, tok.start, tok.end)
                elif tok.type == tokenize.STRING and _docstring(tok.string):
                    _blank(blank, tok.start, tok.end)
                    _blank(prose, tok.start, tok.end)
                elif tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", None):
                    for start, end in _prose_pieces(tok):
                        _blank(blank, start, end)
        except (tokenize.TokenError, SyntaxError):
            continue  # verify's static check reports a file that does not parse
        for number, chars in enumerate(blank, 1):
            code = "".join(chars)
            if pattern.search(code):
                line = (rel, number, lines[number - 1].strip())
                reason = _allowed_by(rel, code, allowed)
                (found.code if reason is None else found.allowed.setdefault(reason, [])).append(line)
            elif pattern.search("".join(prose[number - 1])):
                found.prose_lines += 1
    return found


def _blank(rows: list[list[str]], start: tuple[int, int], end: tuple[int, int]) -> None:
    for row in range(start[0], end[0] + 1):
        first = start[1] if row == start[0] else 0
        last = end[1] if row == end[0] else len(rows[row - 1])
        rows[row - 1][first:last] = " " * (last - first)


def _prose_pieces(tok: tokenize.TokenInfo) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The (start, end) spans of a string token's literal pieces that hold whitespace: words for a
    person (`"requires SM100 or gfx950"`), not a name code compares (`"npu_memcache"`). An f-string's
    replacement fields are code; each literal piece between them is judged alone, as Python 3.12's
    tokenizer hands them over (FSTRING_MIDDLE), so every Python counts the same."""
    text = tok.string
    if tok.type == tokenize.STRING:
        prefix = len(text) - len(text.lstrip("rRbBuUfF"))
        quote = 3 if text[prefix:prefix + 3] in ('"""', "'''") else 1
        body_start, body_end = prefix + quote, len(text) - quote
        pieces = _literal_pieces(text, body_start, body_end, "f" in text[:prefix].lower())
    else:
        pieces = [(0, len(text))]
    out = []
    for first, last in pieces:
        if any(c.isspace() for c in text[first:last]):
            out.append((_position(tok.start, text, first), _position(tok.start, text, last)))
    return out


def _literal_pieces(text: str, start: int, end: int, formatted: bool) -> list[tuple[int, int]]:
    if not formatted:
        return [(start, end)]
    pieces, depth, piece, i = [], 0, start, start
    while i < end:
        c = text[i]
        if depth == 0 and c in "{}" and text[i + 1:i + 2] == c:
            i += 2  # `{{` / `}}`: a literal brace
            continue
        if c == "{":
            if depth == 0:
                pieces.append((piece, i))
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                piece = i + 1
        i += 1
    pieces.append((piece, end))
    return [(a, b) for a, b in pieces if b > a]


def _position(start: tuple[int, int], text: str, offset: int) -> tuple[int, int]:
    """The (row, column) of `offset` inside a token that starts at `start`."""
    before = text[:offset]
    newlines = before.count("\n")
    if not newlines:
        return start[0], start[1] + offset
    return start[0] + newlines, offset - before.rfind("\n") - 1


def _docstring(token: str) -> bool:
    return token.startswith(('"""', "'''", 'r"""', "r'''"))
