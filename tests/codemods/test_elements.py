"""Dropping literal elements keeps layout, trailing comments and section headings."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from shrinker.codemods.elements import drop_from_literal


def drop(source: str, *values: str) -> str | None:
    node = cst.parse_expression(textwrap.dedent(source).strip())

    def hit(el: cst.CSTNode) -> bool:
        key = el.key if isinstance(el, cst.DictElement) else getattr(el, "value", None)
        return isinstance(key, cst.SimpleString) and key.evaluated_value in values

    new = drop_from_literal(node, hit)
    return None if new is None else cst.Module([]).code_for_node(new)


@pytest.mark.parametrize("source, removed, expected", [
    ('["a", "b", "c"]', ["b"], '["a", "c"]'),
    ('["a", "b", "c"]', ["c"], '["a", "b"]'),
    ('["a", "b", "c"]', ["a"], '["b", "c"]'),
    ('["a", "b", "c",]', ["c"], '["a", "b",]'),
    ('("a", "b")', ["b"], '("a",)'),
    ('{"a": 1, "b": 2}', ["a", "b"], "{}"),
    ('{"a", "b"}', ["a"], '{"b"}'),
])
def test_single_line(source: str, removed: list[str], expected: str) -> None:
    assert drop(source, *removed) == expected


def test_unchanged_is_none() -> None:
    assert drop('["a"]', "z") is None
    assert drop('{"a"}', "a") is None  # an empty set literal would be a dict


def test_multi_line_section_headings_and_trailing_comments() -> None:
    source = """
        [
            # Common
            "triton",
            "dsv4",  # V4
            # AMD specific
            "aiter",
            "wave",
            # Other platforms
            "intel_amx",
            "ascend",
        ]
        """
    assert drop(source, "aiter") == textwrap.dedent("""\
        [
            # Common
            "triton",
            "dsv4",  # V4
            # AMD specific
            "wave",
            # Other platforms
            "intel_amx",
            "ascend",
        ]""")
    assert drop(source, "aiter", "wave", "ascend", "dsv4") == textwrap.dedent("""\
        [
            # Common
            "triton",
            # Other platforms
            "intel_amx",
        ]""")
    assert drop(source, "aiter", "wave", "intel_amx", "ascend") == textwrap.dedent("""\
        [
            # Common
            "triton",
            "dsv4",  # V4
        ]""")
    # a heading over a run of removed entries goes with the run; one removed entry passes it on
    assert drop(source, "intel_amx", "dsv4", "aiter", "wave") == textwrap.dedent("""\
        [
            # Common
            "triton",
            # Other platforms
            "ascend",
        ]""")
    assert drop(source, "dsv4", "aiter", "wave", "intel_amx", "ascend") == textwrap.dedent("""\
        [
            # Common
            "triton",
        ]""")


def test_multi_line_without_trailing_comma_keeps_the_comment() -> None:
    source = """
        {
            "a": 1,  # first
            "b": 2
        }
        """
    assert drop(source, "b") == '{\n    "a": 1  # first\n}'
