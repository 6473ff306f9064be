"""Valid and invalid examples of `runs_only_definitions` and `bases_watch` (graph/definitions_only.py)."""

from __future__ import annotations

import textwrap

import pytest

from shrinker.graph.definitions_only import bases_watch, runs_only_definitions, scanned_bases

DEFINES = [
    # 0.5.23's layers/n_gram_embedding.py: imports and one class
    "import torch\nfrom torch import nn\n\n\nclass NgramEmbedding(nn.Module):\n    def forward(self, x):\n        return x\n",
    # models/inkling_common/dense_mlp.py: a logger, a compiled function, properties, a staticmethod
    """
    import logging
    import torch
    logger = logging.getLogger(__name__)

    @torch.compile(fullgraph=True)
    def swiglu(x):
        return x

    class Strategy:
        KIND: str = "fp4"
        @property
        def name(self):
            return "s"
        @staticmethod
        def make():
            return Strategy()
    """,
    '"""doc"""\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a import B\n__all__ = ["C"]\n',
    "try:\n    import triton\nexcept ImportError:\n    triton = None\n",
    "from dataclasses import dataclass, field\n\n@dataclass(frozen=True)\nclass P:\n    xs: list = field(default_factory=list)\n",
]

RUNS = [
    "from reg import register\n\n@register('minimax')\nclass M:\n    pass\n",  # a registering decorator
    "REGISTRY = {}\nREGISTRY['m'] = 1\n",  # a statement that is no definition
    "from reg import make\nDEFAULT = make()\n",  # a call of the tree's
    "class M:\n    @eager_on_graph(capture_stub=_stub)\n    def forward(self):\n        pass\n",  # inside a class
    "from reg import Meta\n\nclass M(metaclass=Meta):\n    pass\n",  # a metaclass may register
    "def f(x=make()):\n    pass\n",  # a default runs at definition
    "if is_cuda():\n    X = 1\n",  # a test runs code
    "register_op()\n",
]


@pytest.mark.parametrize("code", DEFINES)
def test_modules_that_only_define(code: str) -> None:
    assert runs_only_definitions(textwrap.dedent(code))


@pytest.mark.parametrize("code", RUNS)
def test_modules_that_run_something(code: str) -> None:
    assert not runs_only_definitions(textwrap.dedent(code))


def _watch(text: str, tree: dict[str, str], scanned: frozenset[str] = frozenset()) -> bool:
    return bases_watch(text, "pkg.m", False, tree.get, scanned, lambda m: m == "pkg",
                       lambda m: m.partition(".")[0] == "pkg")


def test_a_base_that_sees_its_subclasses_keeps_the_module() -> None:
    hooked = {"pkg.base": "class Base:\n    def __init_subclass__(cls, **kw):\n        REG.append(cls)\n",
              "pkg.mid": "from pkg.base import Base\n\nclass Mid(Base):\n    pass\n",
              "pkg.plain": "import torch\n\nclass Plain(torch.nn.Module):\n    pass\n",
              "pkg": "from pkg.plain import Plain\n"}
    assert _watch("from pkg.mid import Mid\n\nclass M(Mid):\n    pass\n", hooked)  # two levels up
    assert not _watch("from pkg import Plain\n\nclass M(Plain):\n    pass\n", hooked)  # through a re-export
    assert not _watch("from torch import nn\n\nclass M(nn.Module):\n    pass\n", hooked)  # a library's base
    assert _watch("from pkg.gone import Gone\n\nclass M(Gone):\n    pass\n", hooked)  # not found: kept
    scanned = scanned_bases(["for cls in BaseReq.__subclasses__():\n    pass\n"])
    assert scanned == {"BaseReq"}
    assert _watch("from pkg.io import BaseReq\n\nclass M(BaseReq):\n    pass\n", hooked, scanned)
    assert _watch("from pkg.base import Base\n\nclass M(Base, metaclass=Meta):\n    pass\n", hooked)
