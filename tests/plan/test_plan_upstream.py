"""Integration: the plan on the pinned SGLang release (downloaded once by the tests, cached)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.upstream


@pytest.fixture(scope="module")
def plan(real_upstream, tmp_path_factory):
    from shrinker.plan.manifests import summarize, write_manifests
    from shrinker.plan.run import analyse, plan_extra
    from shrinker.rules.load import load_rules

    rules = load_rules("deepseek")
    graph, reach, decisions, batches = analyse(real_upstream, rules)
    out = tmp_path_factory.mktemp("manifests")
    summary = summarize(decisions, real_upstream.spec, real_upstream.version, "deepseek")
    write_manifests(out, decisions, batches, summary, plan_extra(reach, real_upstream.root, rules, version=real_upstream.version))
    (out / "kernels.txt").write_text(reach.kernels.text())
    return {"graph": graph, "reach": reach, "decisions": {d.path: d for d in decisions}, "out": out,
            "summary": summary, "rules": rules}


def test_every_deepseek_model_module_is_kept(plan):
    paths = [p for p in plan["decisions"] if p.startswith("python/sglang/srt/models/deepseek")
             and "deepseek_v4" not in p and "vl" not in p.split("/")[-1] and "janus" not in p and "ocr" not in p
             and "/amd/" not in p]  # deepseek_common/amd is the ROCm part: removed on purpose
    assert len(paths) >= 8  # deepseek_v2, deepseek_nextn, deepseek, deepseek_common/...
    # a ROCm-only helper (0.5.23's triton_qk_rmsnorm, imported under `if _use_aiter...`) goes on purpose
    missing = [p for p in paths if not plan["decisions"][p].keep and "False on CUDA" not in plan["decisions"][p].reason]
    assert missing == []


def test_launch_server_import_time_closure_is_kept(plan):
    """Every module sglang.launch_server runs at import on CUDA (module-level, live edges) stays."""
    from shrinker.plan.reach import record_dead
    from shrinker.rules.predicates import PredicateTable

    g, reach, rules = plan["graph"], plan["reach"], plan["rules"]
    table = PredicateTable(rules.platform)
    seen, stack = set(), ["sglang.launch_server"]
    while stack:
        m = stack.pop()
        if m in seen:
            continue
        seen.add(m)
        for target, data in g.graph.adj[m].items():
            if target in reach.cut_by_rule:
                continue
            live = [r for r in data["imports"] if r["scope"] == "module" and not r["try_import"]
                    and record_dead(r, m, reach.registries, table, rules) is None]
            if live:
                stack.append(target)
    assert len(seen) > 300
    not_kept = sorted(m for m in seen if g.module_path.get(m) and m not in reach.kept)
    assert not_kept == []


# llama (LoRA's inkling path subclasses LlamaMLP) and DeepSeek V4 are kept by explicit rules.
@pytest.mark.parametrize("name", ["qwen2", "qwen3_moe", "gemma3_causal", "mixtral", "glm4", "minicpm"])
def test_other_models_are_removed(plan, name):
    d = plan["decisions"][f"python/sglang/srt/models/{name}.py"]
    assert not d.keep and "not a kept architecture" in d.reason


@pytest.mark.parametrize("folder", ["srt/hardware_backend/npu", "srt/hardware_backend/xpu", "srt/hardware_backend/musa",
                                    "srt/hardware_backend/mlx", "srt/hardware_backend/cpu", "multimodal_gen"])
def test_other_platforms_and_multimodal_gen_are_removed(plan, folder):
    files = [p for p in plan["decisions"] if p.startswith(f"python/sglang/{folder}/")]
    assert files
    # Only an explicit [[keep]] rule (with its reason) may pin a file there (npu/dsv4/dsv4_common_hooks).
    kept = [p for p in files if plan["decisions"][p].keep]
    assert [p for p in kept if plan["decisions"][p].code != "pinned"] == []
    assert len(kept) <= 1


def test_why_topk_qwen2_and_llama(plan):
    from shrinker.plan.why import explain

    decisions = list(plan["decisions"].values())
    topk = explain(plan["graph"], plan["reach"], decisions, "sglang/srt/layers/moe/topk.py")
    roots = {r.module for r in plan["rules"].roots}
    assert topk.kept and topk.chain[0][0] in roots and topk.chain[-1][0] == "sglang.srt.layers.moe.topk"
    qwen = explain(plan["graph"], plan["reach"], decisions, "sglang/srt/models/qwen2.py")
    assert not qwen.kept and "Qwen2ForCausalLM" in qwen.reason
    llama = explain(plan["graph"], plan["reach"], decisions, "sglang/srt/models/llama.py")
    assert llama.kept and "rule keep" in llama.reason  # pinned, with the rule's reason


def test_committed_manifests_regenerate_byte_for_byte(plan):
    from shrinker import paths

    committed = paths.manifests_dir("deepseek", plan["summary"]["version"])
    if not committed.exists():
        pytest.skip("no committed manifests yet")
    for name in ("keep.txt", "remove.txt", "batches.json", "summary.json", "kernels.txt"):
        assert (plan["out"] / name).read_bytes() == (committed / name).read_bytes(), name


def test_kernel_manifest(plan):
    """DeepSeek's kernels stay, the removed features' go: op, wrapper, binary and JIT source alike."""
    entries = {(e.kind, e.name): e for e in plan["reach"].kernels.entries}
    kernel = "sgl-kernel/python/sgl_kernel"
    assert entries[("op", "rmsnorm")].keep and f"{kernel}/sm90/common_ops.abi3.so" in entries[("op", "rmsnorm")].where
    assert entries[("binary", f"{kernel}/sm90/common_ops.abi3.so")].keep
    assert entries[("binary", f"{kernel}/flash_ops.abi3.so")].keep  # FA3 (LARGE_FILES.json): fwd is kept
    assert not entries[("wrapper", "sgl_kernel.mamba:causal_conv1d_fwd")].keep
    assert not entries[("op", "causal_conv1d_fwd")].keep
    version = plan["summary"]["version"]
    if version == "0.5.23":  # FlashMLA moved to the flash_mla package; MiniCPM's InfLLM-V2 goes with MiniCPM
        for so in ("flashmla_ops.abi3.so", "infllm_ops.cpython-310-x86_64-linux-gnu.so"):
            assert not entries[("binary", f"{kernel}/{so}")].keep
            assert not plan["decisions"][f"{kernel}/{so}"].keep
    jit = [e for (kind, _), e in entries.items() if kind == "jit"]
    assert any(e.keep for e in jit) and any(not e.keep for e in jit)
