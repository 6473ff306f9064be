"""The tracer's per-file facts: each import shape SGLang uses, recorded with where it stands."""

from shrinker.graph.parse import count_lines, parse_file, resolve_relative


def facts(src, module="pkg.mod", is_package=False):
    return parse_file(src, "python/pkg/mod.py", module, is_package)


def test_relative_imports_resolve_against_module_and_package():
    assert resolve_relative("pkg.a.b", False, 1, "c") == "pkg.a.c"
    assert resolve_relative("pkg.a.b", False, 2, "c") == "pkg.c"
    assert resolve_relative("pkg.a", True, 1, "c") == "pkg.a.c"
    assert resolve_relative("pkg.a.b", False, 1, "") == "pkg.a"
    f = facts("from ..x import y\nfrom . import z\n", module="pkg.sub.mod")
    assert [(i.target, i.names) for i in f.imports] == [("pkg.x", ["y"]), ("pkg.sub", ["z"])]


def test_scope_type_checking_and_try_import_are_recorded():
    src = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.hints import H\n"
        "try:\n    import fast\nexcept ImportError:\n    fast = None\n"
        "def f():\n    from pkg.lazy import g\n    return g\n"
        "class C:\n    import pkg.inclass\n"
    )
    f = facts(src)
    by = {i.target: i.where for i in f.imports}
    assert by["pkg.hints"].type_checking and not by["typing"].type_checking
    assert by["fast"].try_import
    assert by["pkg.lazy"].scope == "function" and by["pkg.lazy"].function == "f"
    assert by["pkg.inclass"].scope == "class"
    assert [i.line for i in f.imports] == [1, 3, 5, 9, 12]


def test_guards_carry_if_elif_else_conditions():
    src = (
        "if is_npu():\n    import a\n"
        "elif _is_hip:\n    import b\n"
        "else:\n    import c\n"
    )
    by = {i.target: i.where.guards for i in facts(src).imports}
    assert by["a"] == ["is_npu()"]
    assert by["b"] == ["not (is_npu())", "_is_hip"]
    assert by["c"] == ["not (is_npu())", "not (_is_hip)"]


def test_decorator_registry_keys_reach_the_imports_inside():
    src = '@register_backend("aiter")\ndef make(r):\n    from pkg.aiter_backend import B\n    return B\n'
    f = facts(src)
    assert f.imports[0].where.registry_keys == [["register_backend", "aiter"]]
    assert f.registry_defs == [["register_backend", "aiter", "make"]]


def test_a_decorated_class_registers_as_a_function_does():
    # 0.5.23's utils/hf_transformers/config.py: `@register_model_config_parser("mistral") class ...`
    src = ('@register_model_config_parser("mistral")\nclass MistralParser(Base):\n'
           '    def parse(self, model):\n        from pkg.mistral import load\n        return load(model)\n'
           'class Plain:\n    pass\n')
    f = facts(src)
    assert f.registry_defs == [["register_model_config_parser", "mistral", "MistralParser"]]
    assert f.imports[0].where.registry_keys == [["register_model_config_parser", "mistral"]]


def test_a_decorator_registers_under_each_leading_string():
    # 0.5.23's arg_groups/model_overrides: one function serves several architectures
    src = ('@_register_for("DeepseekV3ForCausalLM", "HYV4ForCausalLM", flag=True)\n'
           '@other(CONST, "late")\ndef overrides(args, cfg):\n    from pkg.hy import H\n')
    f = facts(src)
    assert f.registry_defs == [["_register_for", "DeepseekV3ForCausalLM", "overrides"],
                               ["_register_for", "HYV4ForCausalLM", "overrides"]]
    assert f.imports[0].where.registry_keys == [["_register_for", "DeepseekV3ForCausalLM"],
                                                ["_register_for", "HYV4ForCausalLM"]]


def test_strings_that_name_modules():
    src = (
        'from importlib import import_module\n'
        '_G = ("x", "y")\n'
        'for g in _G:\n    import_module(f"{__name__}.{g}")\n'
        'import_module("pkg.direct")\n'
        'H = "pkg.hooks:install"\n'
        'L = LazyImport("pkg.lazy_mod", "Cls")\n'
    )
    f = facts(src, module="pkg.ops", is_package=True)
    got = {(s.target, s.kind, s.attr) for s in f.strings}
    assert ("pkg.ops.x", "fstring", "") in got and ("pkg.ops.y", "fstring", "") in got
    assert ("pkg.direct", "import_module", "") in got
    assert ("pkg.hooks", "mod_attr", "install") in got
    assert ("pkg.lazy_mod", "lazy_import", "Cls") in got
    # The LazyImport argument is recorded once, not again as a plain string.
    assert sum(1 for s in f.strings if s.target == "pkg.lazy_mod") == 1


def test_a_module_and_name_pair_names_that_attribute():
    # 0.5.23 utils/common.py's unpickle allowlist: (module, name) pairs read as getattr(import_module(m), name)
    src = (
        "_SAFE = {\n"
        '    ("pkg.patch_torch", "_rebuild_cuda"),\n'
        '    ("pkg.patch_torch", "_rebuild_npu"),\n'
        '    ("pkg.runner", "LocalTensor"),\n'
        "}\n"
        'OTHER = ("pkg.a", "pkg.b")\n'  # two modules: each a plain module string
        'NAMES = ("pkg.c", "x", "y")\n'  # not a pair
    )
    got = {(s.target, s.kind, s.attr) for s in facts(src, module="pkg.common").strings}
    assert {("pkg.patch_torch", "mod_attr", "_rebuild_cuda"), ("pkg.patch_torch", "mod_attr", "_rebuild_npu"),
            ("pkg.runner", "mod_attr", "LocalTensor")} <= got
    assert not any(t in ("pkg.patch_torch", "pkg.runner") and k == "string" for t, k, _ in got)  # not read whole
    assert ("pkg.a", "string", "") in got and ("pkg.b", "string", "") in got and ("pkg.c", "string", "") in got


def test_a_module_string_records_its_call_s_other_keywords():
    # 0.5.23 kernels/ops/attention: the record's `capabilities` decide whether CUDA ever dispatches it
    src = ('register_kernel(KernelSpec(op="a.f", target="pkg.hip_mod:f",\n'
           '                            capabilities=frozenset({CapabilityRequirement.HIP})))\n'
           'H = "pkg.hooks:install"\n')
    f = facts(src, module="pkg.ops", is_package=True)
    keywords = {s.target: s.call_keywords for s in f.strings}
    assert keywords["pkg.hip_mod"] == {"op": '"a.f"', "capabilities": "frozenset({CapabilityRequirement.HIP})"}
    assert keywords["pkg.hooks"] == {}


def test_an_fstring_built_from_a_module_string_constant_names_a_module():
    # 0.5.23 kernels/ops/gemm: without this read kda_kernels/qwen3x_nvfp4_gemm.py looked unreachable, went,
    # and the kept `try_qwen3x_nvfp4_gemm` raised KeyError on its missing record
    src = ('_KDA = "pkg.kda"\n'
           'register_kernel(KernelSpec(op="gemm.q", target=f"{_KDA}.qgemm:try_q", impl="jit"))\n'
           'TWICE = "pkg.one"\nTWICE = "pkg.two"\n'
           'register_kernel(KernelSpec(op="gemm.t", target=f"{TWICE}.m:f"))\n'
           'register_kernel(KernelSpec(op="gemm.u", target=f"{unknown}.m:f"))\n')
    f = facts(src, module="pkg.ops", is_package=True)
    got = {(s.target, s.kind, s.attr): s.call_keywords for s in f.strings}
    assert got[("pkg.kda.qgemm", "mod_attr", "try_q")] == {"op": '"gemm.q"', "impl": '"jit"'}
    # a name bound twice is no constant, and an unknown name no module
    assert not any(s.target.endswith(".m") for s in f.strings)


def test_statements_that_start_alike_keep_their_own_lines():
    src = ('register_kernel(\n    KernelSpec(op="a", target="pkg.one:f")\n)\n'
           'register_kernel(\n    KernelSpec(op="b", target="pkg.two:f")\n)\n')
    f = facts(src, module="pkg.ops", is_package=True)
    assert {s.target: s.line for s in f.strings} == {"pkg.one": 1, "pkg.two": 4}


def test_registry_shapes_entry_class_and_dicts():
    src = (
        'EntryClass = [A, B]\n'
        'M = {"fp8": Fp8Config, "gguf": GGUF}\n'
        'class P:\n    Enum = {"deepseekv3": D}\n'
        'if is_npu():\n    M.update({"npu": N})\n'
    )
    f = facts(src)
    assert f.entry_class == ["A", "B"]
    dicts = {d.name: [(e.key, e.value) for e in d.entries] for d in f.dicts}
    assert dicts["M"] == [("npu", "N")] or ("fp8", "Fp8Config") in dicts["M"]
    assert dicts["P.Enum"] == [("deepseekv3", "D")]
    update = [d for d in f.dicts if d.guards]
    assert update and update[0].guards == ["is_npu()"]


def test_parse_error_is_recorded_not_raised():
    f = facts("def broken(:\n")
    assert f.parse_error and f.imports == []


def test_count_lines_skips_blank_lines():
    assert count_lines("a\n\n  \nb\n") == 2
