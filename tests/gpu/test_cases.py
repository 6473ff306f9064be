"""cases.toml: launches per part, fixed prompts, request bodies (greedy, DeepSeek parsers)."""

from __future__ import annotations

from shrinker.gpu.cases import generate_requests, load_cases, prompts
from shrinker.gpu.tiny_model import BASE_CONFIG


def test_launches_cover_backends_graphs_fp8_mtp():
    cases = load_cases()
    names = {launch.name: launch for launch in cases.launches}
    flags = {n: " ".join(launch.flags) for n, launch in names.items()}
    assert any("triton" in f and "--disable-cuda-graph" in f for f in flags.values())
    assert any("triton" in f and "--disable-cuda-graph" not in f for f in flags.values())
    assert any("flashinfer" in f and "--disable-cuda-graph" in f for f in flags.values())
    assert any("flashinfer" in f and "--disable-cuda-graph" not in f for f in flags.values())
    assert any("--speculative-algorithm" in f for f in flags.values())
    assert any(cases.model(launch.model)["dir"] == "tiny-fp8" for launch in cases.launches)
    assert {launch.part for launch in cases.launches} == {1, 2, 3, 5, 6, 7}
    assert cases.timing["part"] == 4 and cases.parts() == [1, 2, 3, 4, 5, 6, 7]
    # FA3 (our slim flash_ops): eager, CUDA graphs, NextN, and V3 with no --attention-backend (upstream's
    # Hopper default for MLA is fa3)
    assert any("--attention-backend fa3" in f and "--disable-cuda-graph" in f for f in flags.values())
    assert any("--attention-backend fa3" in f and "--disable-cuda-graph" not in f for f in flags.values())
    assert any("--attention-backend fa3" in f and "--speculative-algorithm EAGLE" in f for f in flags.values())
    assert any(cases.model(names[n].model)["dir"] == "tiny" and "--attention-backend" not in f
               for n, f in flags.items())
    assert any("chat" in launch.groups for launch in cases.launches)
    assert "--random-seed" in cases.server_flags
    # DeepSeek's parsers: tool calls everywhere, R1 reasoning on some launches, and one launch with the
    # tool parser alone (with deepseek-r1 every answer is reasoning, so tool calls would never parse)
    v3 = {n: f for n, f in flags.items() if cases.model(names[n].model)["dir"] in ("tiny", "tiny-fp8")}
    assert all("--tool-call-parser deepseekv3" in f for f in v3.values())
    # V3.2 and V4: their own parsers, and no --attention-backend (upstream picks for the hardware)
    other = {n: f for n, f in flags.items() if n not in v3}
    assert any("deepseekv32" in f for f in other.values())
    assert any("--tool-call-parser deepseekv4 --reasoning-parser deepseek-v4" in f for f in other.values())
    assert other and not any("--attention-backend" in f for f in other.values())
    assert any("--reasoning-parser deepseek-r1" in f for f in flags.values())
    assert any("--reasoning-parser" not in f and "chat" in names[n].groups for n, f in flags.items())
    for launch in cases.launches:
        assert cases.model(launch.model)  # every launch names a defined model


def test_prompts_are_fixed_and_avoid_special_tokens():
    spec = load_cases().raw["generate"]
    a, b = prompts(spec), prompts(spec)
    assert a == b and [len(p) for p in a] == spec["lengths"]
    assert all(spec["first_id"] <= t <= spec["last_id"] < BASE_CONFIG["vocab_size"] for p in a for t in p)


def test_generate_requests_are_greedy_with_several_batch_sizes():
    reqs = generate_requests(load_cases().raw["generate"])
    assert all(r.body["sampling_params"]["temperature"] == 0.0 for r in reqs)
    batch_sizes = {len(r.body["input_ids"]) if isinstance(r.body["input_ids"][0], list) else 1 for r in reqs}
    assert {1, 3, 8} <= batch_sizes


def test_chat_requests_are_greedy_and_use_tools_and_reasoning():
    reqs = load_cases().requests("chat")
    by = {r.name: r for r in reqs}
    assert all(r.body["temperature"] == 0.0 and r.endpoint == "/v1/chat/completions" for r in reqs)
    assert by["chat-tools-required"].body["tool_choice"] == "required" and by["chat-tools-required"].body["tools"]
    assert by["chat-reasoning"].body["chat_template_kwargs"] == {"thinking": True}
    assert by["chat-reasoning-stream"].stream and by["chat-reasoning-stream"].body["stream"] is True
    assert "tools" not in by["chat-plain"].body


def test_two_gpu_launches_are_a_part_of_their_own():
    """--tp-size 2 and expert parallelism: part 5 alone, 2 GPUs, integer-exact weights (any machine's bytes)."""
    cases = load_cases()
    multi = [launch for launch in cases.launches if launch.gpus > 1]
    assert {launch.part for launch in multi} == {5}
    assert all(launch.gpus == 1 for launch in cases.launches if launch.part != 5)
    flags = {launch.name: launch.flags for launch in multi}
    assert any(f[f.index("--tp-size") + 1] == "2" and "--ep-size" not in f for f in flags.values())
    assert any(f[f.index("--tp-size") + 1] == "2" and "--ep-size" in f and f[f.index("--ep-size") + 1] == "2"
               for f in flags.values())
    for launch in multi:
        assert cases.model(launch.model).get("exact") is True


def test_multi_gpu_flags_exist_in_upstream_server_args():
    """The flags part 5 passes are v0.5.16's own (canonical names, not guessed aliases)."""
    import pytest

    from shrinker import paths

    server_args = paths.project_root() / "upstream/cache/trees/pypi-sglang-0.5.16/python/sglang/srt/server_args.py"
    if not server_args.is_file():
        pytest.skip("upstream v0.5.16 not fetched")
    text = server_args.read_text()
    for field in ("tp_size", "ep_size"):  # fields become --tp-size / --ep-size (arg_utils: name.replace("_", "-"))
        assert f"    {field}: A[" in text


def test_blackwell_paths_are_listed_as_not_run():
    not_run = load_cases().raw["not_run"]
    blackwell = " ".join(n["name"] for n in not_run if n.get("hardware") == "blackwell")
    for path in ("NVFP4", "modelopt_fp4", "trtllm_mla", "cutlass_mla", "sm100"):
        assert path in blackwell


def test_every_generate_request_asks_for_top5_logprobs():
    reqs = generate_requests(load_cases().raw["generate"])
    assert reqs and all(r.body["return_logprob"] is True and r.body["top_logprobs_num"] == 5 for r in reqs)
    singles = [r for r in reqs if r.name.startswith("gen-single")]
    assert singles and all(r.body["logprob_start_len"] == 0 for r in singles)
    assert load_cases().raw["generate"]["repeat"] is True


def test_a_launch_env_holds_only_compile_knobs(tmp_path):
    import pytest

    cases = load_cases()
    assert cases.launch("v4-seeded").env == {"SGLANG_JIT_DEEPGEMM_PRECOMPILE": "0"}
    assert cases.launch("fp8-flashinfer-graph").env == {"SGLANG_JIT_DEEPGEMM_PRECOMPILE": "0"}
    assert all(not launch.env for launch in cases.launches if launch.name not in ("v4-seeded", "fp8-flashinfer-graph"))
    bad = tmp_path / "cases.toml"
    bad.write_text('[[launch]]\nname = "x"\npart = 1\nmodel = "m"\nflags = []\ngroups = []\n'
                   'env = { SGLANG_ENABLE_DETERMINISTIC_INFERENCE = "1" }\n')
    with pytest.raises(ValueError, match="SGLANG_ENABLE_DETERMINISTIC_INFERENCE is not a compile-only knob"):
        load_cases(bad)
