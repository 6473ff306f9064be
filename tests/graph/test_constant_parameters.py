"""graph/constant_parameters: parameters named for another platform that every call passes one bool."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from shrinker.graph.constant_parameters import ConstantParameter, constant_parameters

WANTED = re.compile(r"(?:^|_)(?:hip|npu|aiter|cpu)(?=_|$)")


def found(tmp_path: Path, files: dict[str, str]) -> dict[str, tuple[ConstantParameter, ...]]:
    for rel, code in files.items():
        path = tmp_path / "python" / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))
    return constant_parameters(tmp_path, lambda name: WANTED.search(name) is not None).by_function


SIZES = '''
def weight_sizes(inter_dim, is_concat, is_aiter_moe, *, on_hip: bool = False, use_npu=True):
    if is_aiter_moe:
        inter_dim += 1
    return inter_dim, on_hip, use_npu


class Pool:
    def dedup(self, is_npu, is_cpu, topk):
        return not is_npu and topk


def build(pool):
    pool.dedup(False, False, 1)
    return weight_sizes(4, True, False, on_hip=False)
'''


def test_keyword_positional_and_default_bindings(tmp_path: Path) -> None:
    table = found(tmp_path, {"__init__.py": "", "sizes.py": SIZES, "user.py": '''
        from pkg.sizes import weight_sizes

        def other():
            return weight_sizes(8, False, is_aiter_moe=False, use_npu=True)
        '''})
    sizes = {p.name: p for p in table["pkg.sizes:weight_sizes"]}
    assert sizes["is_aiter_moe"] == ConstantParameter("is_aiter_moe", False, 2, True)
    assert sizes["on_hip"] == ConstantParameter("on_hip", False, None, True)  # one call leaves the default
    assert sizes["use_npu"].value is True
    pool = {p.name: p for p in table["pkg.sizes:Pool.dedup"]}
    assert pool["is_npu"] == ConstantParameter("is_npu", False, 0, True)  # `self` is not a caller's position
    assert pool["is_cpu"].read is False


def test_calls_that_disagree_or_are_not_literals_leave_it(tmp_path: Path) -> None:
    table = found(tmp_path, {"__init__.py": "", "sizes.py": SIZES, "user.py": '''
        from pkg.sizes import weight_sizes

        def other(flag, kwargs):
            weight_sizes(8, False, True)
            weight_sizes(8, False, False, on_hip=flag)
            weight_sizes(8, False, False, **kwargs)
        '''})
    assert "pkg.sizes:weight_sizes" not in table


def test_a_use_that_is_not_a_call_leaves_the_function(tmp_path: Path) -> None:
    for use in ("from pkg.sizes import weight_sizes as ws\nws(1, True, False)",
                "from pkg.sizes import weight_sizes\nREGISTRY = [weight_sizes]",
                "import functools\nfrom pkg import sizes\nf = functools.partial(sizes.weight_sizes, 1)",
                "from pkg import sizes\nf = getattr(sizes, 'weight_sizes')",
                "from pkg.sizes import Pool\nPool.dedup(object(), True, True, 1)"):
        table = found(tmp_path, {"__init__.py": "", "sizes.py": SIZES, "user.py": use})
        victim = "Pool.dedup" if "Pool" in use else "weight_sizes"
        assert f"pkg.sizes:{victim}" not in table, use


def test_an_override_a_decorator_or_a_rebinding_leaves_it(tmp_path: Path) -> None:
    override = found(tmp_path / "a", {"__init__.py": "", "sizes.py": SIZES + '''
class FastPool(Pool):
    def dedup(self, is_npu, is_cpu, topk):
        return topk
'''})
    assert "pkg.sizes:Pool.dedup" not in override
    decorated = found(tmp_path / "b", {"__init__.py": "", "sizes.py": SIZES.replace(
        "def weight_sizes", "@register('sizes')\ndef weight_sizes")})
    assert "pkg.sizes:weight_sizes" not in decorated
    rebound = found(tmp_path / "c", {"__init__.py": "", "sizes.py": SIZES.replace(
        "        inter_dim += 1", "        is_aiter_moe = inter_dim > 2")})
    assert "is_aiter_moe" not in {p.name for p in rebound.get("pkg.sizes:weight_sizes", ())}


def test_only_wanted_names(tmp_path: Path) -> None:
    table = found(tmp_path, {"__init__.py": "", "sizes.py": SIZES})
    assert "is_concat" not in {p.name for p in table["pkg.sizes:weight_sizes"]}  # always True, but not a platform's


PADDING = '''
def get_padding(is_aiter_moe):
    return 128 if is_aiter_moe else 0
'''
UPDATE = '''
def get_padding(weight_block_size):
    return 0 if weight_block_size is None else weight_block_size[0]


def adjust(weight_block_size):
    return get_padding(weight_block_size)
'''


def test_homonyms_resolve_through_the_caller_s_bindings(tmp_path: Path) -> None:
    """0.5.23: layers/moe/utils' `get_moe_padding_size(is_aiter_moe)` is called with False by every importer;
    configs/update_config defines and calls its own `get_moe_padding_size(weight_block_size)`."""
    caller = '''
        from pkg.moe_utils import get_padding

        padding = get_padding(False)


        def load():
            return get_padding(is_aiter_moe=False)
        '''
    files = {"__init__.py": "", "moe_utils.py": PADDING, "update.py": UPDATE, "kernels.py": caller}
    table = found(tmp_path / "a", files)
    assert table["pkg.moe_utils:get_padding"] == (ConstantParameter("is_aiter_moe", False, 0, True),)
    assert constant_parameters(tmp_path / "a", lambda n: WANTED.search(n) is not None).homonyms == {"get_padding"}
    # a call that names neither definition (`x.get_padding`, a re-export, a relative import) leaves both
    for n, (rel, code) in enumerate([
            ("other.py", "import pkg.moe_utils as m\n\nm.get_padding(False)\n"),
            ("reexport.py", "from pkg.kernels import get_padding\n\nget_padding(False)\n"),
            ("relative.py", "from .moe_utils import get_padding\n\nget_padding(False)\n")]):
        assert "pkg.moe_utils:get_padding" not in found(tmp_path / f"b{n}", {**files, rel: code})
    # a second definition that is no module-level function (a method) leaves it: a call cannot tell them apart
    method = UPDATE + "\n\nclass Config:\n    def get_padding(self, is_aiter_moe):\n        return 0\n"
    assert "pkg.moe_utils:get_padding" not in found(tmp_path / "c", {**files, "update.py": method})
    # another value passed to the homonym of the same name does not count against it
    assert "pkg.update:get_padding" not in table
