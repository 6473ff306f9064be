"""verify facts: undefined names Python never evaluates are not counted (the codemods leave them)."""

from __future__ import annotations

from shrinker.checks.facts import extract

SOURCE = b'''from __future__ import annotations
from typing import TYPE_CHECKING


def attach(cache: HiMambaRadixCache, n: int) -> Result:
    if TYPE_CHECKING:
        assert isinstance(cache, (HiRadixCache, DeepseekV4HipRadixBackend))
    local: Pool = make_pool(n)
    return local
'''


def test_annotations_and_type_checking_bodies_are_not_undefined_uses() -> None:
    assert extract(SOURCE, "m", False, frozenset()).undefined == [(8, "UndefinedName", "make_pool")]


def test_without_future_annotations_a_parameter_annotation_counts() -> None:
    source = b"def attach(cache: HiMambaRadixCache):\n    x: Pool = 1\n    return x\n"
    assert extract(source, "m", False, frozenset()).undefined == [(1, "UndefinedName", "HiMambaRadixCache")]


def test_string_annotations_are_not_evaluated() -> None:
    source = b'class S:\n    runner: "Decode | CPUGraphRunner | None"\n    x = Missing\n'
    assert extract(source, "m", False, frozenset()).undefined == [(3, "UndefinedName", "Missing")]


def test_a_string_inside_an_annotation_is_a_forward_reference() -> None:
    # 0.5.22's deepseek_v4_fused_mhc: HcCoefficients comes from a TYPE_CHECKING import of a HIP module
    source = (b'def hc_boundary(x) -> Tuple[Tensor, "HcCoefficients"]:\n    return x\n\n\n'
              b'def f(c: Dict[str, "Coefficients"], d=Missing): pass\n')
    assert extract(source, "m", False, frozenset()).undefined == [
        (1, "UndefinedName", "Tuple"), (1, "UndefinedName", "Tensor"), (5, "UndefinedName", "Dict"),
        (5, "UndefinedName", "Missing")]


def test_certain_imports_are_module_level_outside_every_branch() -> None:
    source = b'''import a
from b import c
if flag:
    import d
try:
    import e
except ImportError:
    pass
for _ in ():
    import f
with ctx:
    import g


def later():
    import h


class K:
    import i
'''
    refs = {r.module: r.certain for r in extract(source, "m", False, frozenset()).imports}
    assert refs == {"a": True, "b": True, "d": False, "e": False, "f": False, "g": False, "h": False, "i": True}



def test_fstring_built_from_a_module_string_constant_names_its_module() -> None:
    source = (b'_KDA = "sglang.kernels.kda"\n_TWICE = "sglang.a"\n_TWICE = "sglang.b"\n'
              b'register_kernel(KernelSpec(op="gemm.q", target=f"{_KDA}.qgemm:try_q"))\n'
              b'register_kernel(KernelSpec(op="gemm.t", target=f"{_TWICE}.m:f"))\n')
    strings = extract(source, "sglang.kernels.ops.gemm", True, frozenset({"sglang"})).strings
    # the literal would name its module; a name bound twice is no constant
    assert (4, "sglang.kernels.kda.qgemm:try_q") in strings
    assert not any(text.endswith(".m:f") for _, text in strings)
