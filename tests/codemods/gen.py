"""Hypothesis strategies that write small SGLang-like modules, with or without platform predicates.

The shapes (flags, dispatch chains, ternaries, try-imports, MultiPlatformOp classes, dispatch
tables) follow SGLang v0.5.16; the text is generated, never copied. Formatting varies on purpose:
comments after colons, parenthesised multi-line tests, `if(x):` without a space, blank lines.
"""

from __future__ import annotations

from hypothesis import strategies as st

# Never a predicate, platform string or platform method of the deepseek rules (checked by a test).
NEUTRAL_TESTS = [
    "self.use_fp8",
    "server_args.enable_dp_attention",
    "x.numel() > 0",
    'x.device.type == "cpu"',
    'device == "cuda"',
    "is_cpu",  # calls_only in the rules: a bare name is left alone
    "not self.training",
    "get_bool_env_var(\"SGLANG_ENABLE_JIT_DEEPGEMM\")",
    "envs.SGLANG_USE_CUTLASS.get()",
    "True",
    "False",
    "hasattr(torch, \"cuda\")",
    "self.ready()",
    "is_sm100_supported()",
    "page_size > 1",
]
PREDICATE_TESTS = [
    "_is_hip",
    "_is_npu",
    "is_npu()",
    "is_hip()",
    "not _is_cuda",
    "_is_cuda",
    "is_cuda()",
    "current_platform.is_npu()",
    "current_platform.is_xpu()",
    "_use_aiter",
    "_is_cpu and _is_cpu_amx_available",
    'device == "npu"',
    'self.device in ("npu", "xpu")',
    "_use_aiter_gfx95",
]
STATEMENTS = [
    "x = fused(x)",
    "out = torch.empty_like(x)",
    "logger.info(\"kernel ready\")",
    "self.weight = nn.Parameter(torch.ones(hidden_size))",
    "y = x + 1  # keep this comment",
    "pass",
]


def _tests(with_predicates: bool) -> st.SearchStrategy[str]:
    atoms = st.sampled_from(NEUTRAL_TESTS + (PREDICATE_TESTS if with_predicates else []))

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.builds(lambda a: f"not ({a})", inner),
            st.builds(lambda a, b: f"{a} and {b}", inner, inner),
            st.builds(lambda a, b: f"({a} or {b})", inner, inner),
        )

    return st.recursive(atoms, extend, max_leaves=4)


def _header(keyword: str, test: str, style: int) -> str:
    if style == 0:
        return f"{keyword} {test}:"
    if style == 1:
        return f"{keyword} {test}:  # why"
    if style == 2:
        return f"{keyword}(\n    {test}\n):"
    return f"{keyword}({test}):"


def _indent(lines: list[str], by: str = "    ") -> list[str]:
    return [by + line if line else line for line in "\n".join(lines).split("\n")]


def _blocks(with_predicates: bool, depth: int) -> st.SearchStrategy[list[str]]:
    tests = _tests(with_predicates)
    simple = st.builds(lambda s: [s], st.sampled_from(STATEMENTS))
    ternary = st.builds(lambda t: [f"z = a if {t} else b"], tests)
    paren_ternary = st.builds(lambda t: [f"z = (\n    a\n    if {t}\n    else b\n)"], tests)
    flag = st.builds(lambda t: [f"_flag = get_bool_env_var(\"X\") and ({t})"], tests)
    comp = st.builds(lambda t: [f"items = [i for i in items if {t}]"], tests)
    loop = st.builds(lambda t: [f"while {t}:", "    break"], tests)
    check = st.builds(lambda t: [f"assert {t}, \"message\""], tests)
    options = [simple, ternary, paren_ternary, flag, comp, loop, check]
    if depth > 0:
        body = _blocks(with_predicates, depth - 1)

        def if_chain(branches, orelse, style, comment):
            lines = ["# choose a path"] if comment else []
            for i, (test, block) in enumerate(branches):
                lines.append(_header("if" if i == 0 else "elif", test, style))
                lines += _indent(block)
            if orelse is not None:
                lines.append("else:")
                lines += _indent(orelse)
            return lines

        options.append(st.builds(
            if_chain, st.lists(st.tuples(tests, body), min_size=1, max_size=3),
            st.none() | body, st.integers(0, 3), st.booleans()))
        package = st.sampled_from(["aiter", "torch_npu", "numpy"] if with_predicates else ["numpy", "triton"])
        options.append(st.builds(
            lambda pkg, block: ["try:", f"    import {pkg}  # noqa: F401", "except ImportError:"] + _indent(block),
            package, body))
    part = st.tuples(st.one_of(options), st.booleans())  # (lines, a blank line after them)
    return st.builds(lambda parts: [line for lines, blank in parts for line in lines + [""] * blank]
                     or ["pass"], st.lists(part, min_size=1, max_size=3))


def _class(with_predicates: bool) -> st.SearchStrategy[list[str]]:
    methods = ["forward_cuda", "forward_native"] + (["forward_npu", "forward_hip"] if with_predicates else [])

    def build(chosen: list[str], table: bool, body: list[str]) -> list[str]:
        lines = ["class Op(MultiPlatformOp):"]
        for name in chosen:
            lines += [f"    def {name}(self, x):", "        return x", ""]
        lines += ["    def forward(self, x):"] + _indent(body, "        ")
        if table:
            entries = ", ".join(f'"{m}": self.{m}' for m in chosen)
            lines += ["", "    def table(self):", f"        return {{{entries}}}"]
        return lines

    return st.builds(build, st.lists(st.sampled_from(methods), min_size=1, max_size=len(methods), unique=True),
                     st.booleans(), _blocks(with_predicates, 1))


def modules(with_predicates: bool) -> st.SearchStrategy[str]:
    """A whole module: imports, flags, a function, a class."""

    def build(func_body: list[str], cls: list[str]) -> str:
        lines = ["import torch", "", "from sglang.srt.utils import get_bool_env_var", ""]
        if with_predicates:
            lines += ["import aiter", "_is_hip = is_hip()", "_use_aiter = get_bool_env_var(\"SGLANG_USE_AITER\") and _is_hip", ""]
        lines += ["", "def run(self, x, items, a, b, device, page_size):"] + _indent(func_body) + ["    return x", "", ""]
        lines += cls
        return "\n".join(lines) + "\n"

    return st.builds(build, _blocks(with_predicates, 2), _class(with_predicates))
