"""Keep/remove decisions on the mini tree: one assertion per mechanism the planner must judge."""

from pathlib import Path

import pytest

from shrinker.errors import ShrinkError


def P(rel):
    return f"python/pkg/{rel}"


def test_roots_and_their_imports_are_kept(mini_plan):
    d = mini_plan["decisions"]
    assert d[P("server.py")].keep and d[P("server.py")].code == "root"
    assert d[P("layers/attention_registry.py")].keep
    assert "imported by pkg.server" in d[P("layers/attention_registry.py")].reason


def test_type_checking_import_keeps_nothing(mini_plan):
    d = mini_plan["decisions"][P("typing_only.py")]
    assert not d.keep and "TYPE_CHECKING" in d.reason


def test_try_import_is_followed(mini_plan):
    assert mini_plan["decisions"][P("optional_fast.py")].keep


def test_platform_guarded_imports(mini_plan):
    d = mini_plan["decisions"]
    assert not d[P("rocm_only.py")].keep and d[P("rocm_only.py")].code == "platform_guard"
    assert d[P("cuda_graph.py")].keep  # the else branch is the CUDA path
    npu = d[P("npu/graph_runner.py")]
    assert not npu.keep and npu.code == "rule" and "NPU backend" in npu.reason


def test_model_registry_keeps_only_kept_architectures(mini_plan):
    d = mini_plan["decisions"]
    assert d[P("models/deepseek.py")].keep
    llama = d[P("models/llama.py")]
    assert not llama.keep and "LlamaForCausalLM" in llama.reason and llama.rule == "registry:models"
    # A helper only the removed model used goes in the same batch as that model.
    assert mini_plan["category"]["pkg.models.llama_helper"] == "registry:models"
    assert d[P("configs/deepseek_config.py")].keep  # relative import from a namespace package


def test_decorator_registry_drops_removed_keys(mini_plan):
    d = mini_plan["decisions"]
    assert d[P("layers/attention/triton_backend.py")].keep
    ascend = d[P("layers/attention/ascend_backend.py")]
    assert not ascend.keep and "'ascend'" in ascend.reason
    assert mini_plan["reach"].registries.removed_keys["attention_backends"] == {"ascend"}


def test_dict_registry_drops_imports_of_removed_keys(mini_plan):
    d = mini_plan["decisions"]
    assert d[P("quant_fp8.py")].keep
    assert not d[P("quant_gguf.py")].keep and "quantization" in d[P("quant_gguf.py")].reason


def test_strings_keep_their_modules(mini_plan):
    d = mini_plan["decisions"]
    assert d[P("hooks.py")].keep  # "pkg.hooks:install"
    assert d[P("backends_lazy.py")].keep  # LazyImport
    assert d[P("kernels/ops/norm.py")].keep and d[P("kernels/ops/rope.py")].keep  # f-string import_module
    assert not d[P("kernels/ops/orphan.py")].keep


def test_unreachable_and_data_files(mini_plan):
    d = mini_plan["decisions"]
    assert not d[P("unused_helper.py")].keep and d[P("unused_helper.py")].code == "unreachable"
    cfg = d[P("kernels/ops/configs/E=8.json")]
    assert cfg.keep and "pkg.kernels.ops" in cfg.reason
    assert d["python/pyproject.toml"].keep


def test_parse_error_file_is_kept_as_is(mini_plan):
    d = mini_plan["decisions"][P("broken.py")]
    assert d.keep and d.code == "parse_error"


def test_cut_imports_are_listed_for_the_codemods(mini_plan):
    # Nothing kept imports pkg.npu unguarded: the only import is under `if is_npu()`.
    assert all(v != "pkg.npu.graph_runner" for _, v, _, _ in mini_plan["reach"].cuts)


def test_batches_take_removals_in_rule_order(mini_plan):
    b = {x.name: x for x in mini_plan["batches"]}
    assert P("models/llama.py") in b["other models"].delete
    assert P("npu/graph_runner.py") in b["platforms"].delete
    assert P("unused_helper.py") in b["rest"].delete
    assert P("server.py") in b["platforms"].codemods["fold_platform"]
    every = [p for x in mini_plan["batches"] for p in x.delete]
    assert len(every) == len(set(every))
    assert all(not mini_plan["decisions"][p].keep for p in every)


def test_why_gives_chain_from_a_root(mini_plan):
    from shrinker.plan.why import explain

    ans = explain(mini_plan["graph"], mini_plan["reach"], list(mini_plan["decisions"].values()),
                  "pkg/layers/attention/triton_backend.py")
    assert ans.kept
    assert [m for m, _, _ in ans.chain] == ["pkg.server", "pkg.layers.attention_registry",
                                             "pkg.layers.attention.triton_backend"]
    assert ans.chain[0][2] > 0  # the line of the import in the root
    gone = explain(mini_plan["graph"], mini_plan["reach"], list(mini_plan["decisions"].values()), "pkg.models.llama")
    assert not gone.kept and gone.chain == []


@pytest.mark.parametrize("edit, message", [
    (("pkg.server", "pkg.servr"), "unknown root 'pkg.servr' (closest: pkg.server"),
    (('keep = ["triton"]', 'keep = ["trition"]'), "unknown key 'trition' (closest: triton"),
    (('keep = ["DeepseekForCausalLM"]', 'keep = ["DeepSeekForCausalLM"]'), "unknown architecture"),
])
def test_bad_rules_are_one_line_errors_naming_the_closest(mini_plan, tmp_path, edit, message):
    from shrinker.plan.reach import compute_reach
    from shrinker.rules.load import load_rules
    from tests.conftest import MINITREE

    text = (MINITREE / "rules.toml").read_text().replace(*edit)
    path = tmp_path / "rules.toml"
    path.write_text(text)
    with pytest.raises(ShrinkError) as err:
        compute_reach(mini_plan["graph"], load_rules(path=path))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_schema_errors_name_the_field(tmp_path):
    from shrinker.rules.load import load_rules
    from tests.conftest import MINITREE

    path = tmp_path / "rules.toml"
    path.write_text((MINITREE / "rules.toml").read_text().replace('risk = "low"', 'risk = "tiny"'))
    with pytest.raises(ShrinkError, match=r"batches\.0\.risk"):
        load_rules(path=path)


@pytest.mark.parametrize("pattern, module, expected", [
    ("a.b.**", "a.b", True), ("a.b.**", "a.b.c.d", True), ("a.b.**", "a.bc", False),
    ("a.*.c", "a.x.c", True), ("a.*.c", "a.x.y.c", False), ("a.**.c", "a.x.y.c", True),
    ("a.**.*_cpu", "a.x.awq_cpu", True), ("a.**.*_cpu", "a.x.awq_cpux", False), ("a.b", "a.bc", False),
])
def test_module_patterns(pattern, module, expected):
    from shrinker.plan.reach import pattern_matches

    assert pattern_matches(pattern, module) is expected


def test_an_import_only_for_a_removed_architecture_is_dead():
    # 0.5.18 startup_weight_load: `if architecture == "Qwen2ForCausalLM": from ..models.qwen2 import ...`
    from shrinker.plan.reach import arch_table, record_dead
    from shrinker.plan.registries import RegistryView
    from shrinker.rules.load import load_rules

    rules = load_rules("deepseek")
    view = RegistryView(removed_keys={"models": {"Qwen2ForCausalLM", "LlamaForCausalLM"}})
    archs = arch_table(rules, view)
    table = archs.__class__(rules.platform)

    def why(guard):
        record = {"guards": [guard], "function": "canonical", "scope": "function"}
        return record_dead(record, "pkg.load", view, table, rules, architectures=archs)

    assert why('architecture == "Qwen2ForCausalLM"').code == "architecture_guard"
    assert why('arch in ("LlamaForCausalLM", "Qwen2ForCausalLM")').code == "architecture_guard"
    assert why('architecture == "DeepseekV3ForCausalLM"') is None
    assert why('"Qwen2ForCausalLM" in supported') is None
    assert record_dead({"guards": ['architecture == "Qwen2ForCausalLM"']}, "pkg.load", view, table, rules) is None


def test_a_factory_registered_under_several_keys_dies_only_with_all_of_them():
    from shrinker.plan.reach import record_dead
    from shrinker.plan.registries import RegistryView
    from shrinker.rules.load import load_rules
    from shrinker.rules.predicates import PredicateTable

    rules = load_rules("deepseek")
    view = RegistryView(removed_keys={"attention_backends": {"aiter", "wave"}})
    table = PredicateTable(rules.platform)

    def why(*keys):
        record = {"registry_keys": [["register_attention_backend", k] for k in keys], "scope": "function"}
        return record_dead(record, "pkg.registry", view, table, rules)

    assert why("aiter", "wave").code == "registry"
    assert why("aiter", "triton") is None  # still registered for a kept key
    assert why("triton") is None


def test_a_string_edge_from_a_record_for_other_devices_only_is_dead():
    # 0.5.23: `KernelSpec(target="sglang.kernels.kda_kernels.kda_decode_gfx950:...", capabilities=
    # frozenset({CapabilityRequirement.HIP}))` keeps nothing alive on CUDA
    from shrinker.plan.reach import record_dead
    from shrinker.plan.registries import RegistryView
    from shrinker.rules.load import load_rules
    from shrinker.rules.predicates import PredicateTable

    rules = load_rules("deepseek")
    table, view = PredicateTable(rules.platform), RegistryView()

    def why(capabilities):
        record = {"scope": "module", "call_keywords": {"capabilities": capabilities}}
        return record_dead(record, "sglang.kernels.ops.attention", view, table, rules)

    assert why("frozenset({CapabilityRequirement.HIP})").code == "platform_guard"
    assert why("frozenset({CapabilityRequirement.CUDA, CapabilityRequirement.HIP})") is None
    assert why("frozenset({_device})") is None


def test_a_kept_key_upstream_dropped_is_a_warning_a_typo_an_error(mini_plan, tmp_path):
    # 0.5.20 dropped the cutlass_mla backend the keep list names: nothing left to keep, no stop
    from shrinker.plan.reach import compute_reach
    from shrinker.rules.load import load_rules
    from tests.conftest import MINITREE

    path = tmp_path / "rules.toml"
    path.write_text((MINITREE / "rules.toml").read_text().replace('keep = ["triton"]', 'keep = ["triton", "cutlass_mla"]'))
    reach = compute_reach(mini_plan["graph"], load_rules(path=path))
    assert any("kept key 'cutlass_mla' is not registered upstream" in w for w in reach.rule_warnings)


def test_an_import_inside_a_platform_class_or_method_names_the_codemod_that_removes_it():
    # 0.5.19: awq_moe's AWQAscendMoEScheme imports NPU kernels an earlier batch deletes; make_batches
    # runs remove_platform_classes on the file in that batch (remove_platform_methods for a method)
    from shrinker.plan.reach import record_dead
    from shrinker.plan.registries import RegistryView
    from shrinker.rules.load import load_rules
    from shrinker.rules.predicates import PredicateTable

    rules = load_rules("deepseek")
    table, view = PredicateTable(rules.platform), RegistryView()

    def why(function):
        return record_dead({"function": function, "scope": "function"}, "pkg.awq_moe", view, table, rules)

    assert why("AWQAscendMoEScheme.create_moe_runner").codemod == "remove_platform_classes"
    assert why("RMSNorm.forward_npu").codemod == "remove_platform_methods"
    assert why("RMSNorm.forward_cuda") is None
    guarded = record_dead({"guards": ["_is_npu"], "scope": "function"}, "pkg.awq_moe", view, table, rules)
    assert guarded.code == "platform_guard" and guarded.codemod == ""  # a guard: fold_platform takes it


def test_only_imports_that_run_on_import_pull_a_deletion_forward():
    # 0.5.19: npu/utils imports multimodal_gen inside init_npu_backend; deleting multimodal_gen in batch 2
    # leaves npu/utils importable, so it stays in the platform batch; an importer at module level moves
    import networkx as nx

    from shrinker.graph.build import ImportGraph
    from shrinker.plan.batches import BatchPlan, _pull_dependents_forward
    from shrinker.graph.records import Decision

    graph = nx.DiGraph()
    graph.add_edge("npu.utils", "mm", imports=[{"scope": "function", "function": "init_npu_backend"}])
    graph.add_edge("npu.moe", "npu.utils", imports=[{"scope": "module"}])
    graph.add_edge("mm_tests", "mm", imports=[{"scope": "module"}])
    modules = {"mm": "mm.py", "npu.utils": "npu/utils.py", "npu.moe": "npu/moe.py", "mm_tests": "mm_tests.py"}
    g = ImportGraph(tree=Path("."), files=[], facts={}, graph=graph, module_path=modules)
    batches = [BatchPlan(1, "multimodal", "low", "", delete=["mm.py"]),
               BatchPlan(2, "platforms", "medium", "", delete=["npu/utils.py", "npu/moe.py", "mm_tests.py"])]
    deleted_in = {"mm": 0, "npu.utils": 1, "npu.moe": 1, "mm_tests": 1}
    decisions = [Decision(p, False, "rule", "r") for p in modules.values()]
    _pull_dependents_forward(g, batches, deleted_in, decisions)
    assert sorted(batches[0].delete) == ["mm.py", "mm_tests.py"]
    assert sorted(batches[1].delete) == ["npu/moe.py", "npu/utils.py"]


def test_package_of_per_architecture_registrations_keeps_modules_naming_a_kept_one(mini_plan):
    d = mini_plan["decisions"]
    assert d[P("overrides/deepseek.py")].keep
    assert d[P("overrides/shared_moe.py")].keep  # registers a kept architecture beside a removed one
    assert d[P("overrides/helpers.py")].keep  # registers nothing: not a key this registry judges
    llama = d[P("overrides/llama.py")]
    assert not llama.keep and "'llama'" in llama.reason and llama.rule == "registry:overrides"
    assert mini_plan["reach"].registries.removed_keys["overrides"] == {"llama"}
