"""apply.md's count of code lines that still name another platform (apply/platform_references.py)."""

from __future__ import annotations

from shrinker.apply.platform_references import model_references, platform_references
from shrinker.rules.load import load_rules


def _tree(root, text: str):
    """A work tree of one module, python/sglang/a.py, holding `text`."""
    (root / "python/sglang").mkdir(parents=True)
    (root / "python/sglang/a.py").write_text(text)
    return root


def test_code_lines_count_comments_and_cuda_apart(tmp_path):
    _tree(tmp_path,
        '"""Runs on NPU and CUDA."""\n'
        "from sglang.srt.utils import is_cuda, is_npu\n"
        "_is_npu = is_npu()  # Ascend\n"
        "# on ROCm the aiter kernels are used\n"
        "x = 1 if input_.is_cpu else 2\n"
        'if device == "npu":\n'
        "    y = is_cuda()\n"
        "backend = AttnForwardMethod.MHA_NPU\n"
        "z = use_aiter_moe(layer)\n")
    (tmp_path / "python/sglang/b.py").write_text("import torch\n")
    refs = platform_references(tmp_path, load_rules("deepseek"))
    assert [line for _, line, _ in refs.code] == [2, 3, 6, 8, 9]
    assert refs.files == 1 and refs.comment_lines == 2  # "# Ascend" and the ROCm line; the docstring is no code
    assert refs.to_json() == {"code_lines": 5, "files": 1, "comment_lines": 2, "prose_lines": 0}


def test_predicate_names_count_as_whole_identifier_parts(tmp_path):
    _tree(tmp_path,
        "def _update_handshake_waiters(self):\n"
        '    ENCODER_ONLY = "encoder_only"\n'
        "    descending = sorted(x)\n"
        "    if self.encoder_only:\n"
        "        return aiter_ops.run(_use_ascend_fuseep, is_gfx95_supported())\n"
        "    return _use_aiter\n")
    refs = platform_references(tmp_path, load_rules("deepseek"))
    assert [line for _, line, _ in refs.code] == [4, 5, 6]


def test_model_family_lines_count_words_and_camel_case_starts(tmp_path):
    _tree(tmp_path,
        '"""Qwen3 and Llama."""\n'
        'if arch == "Qwen2ForCausalLM":\n'
        "    pass\n"
        "class M(LlamaMLP): ...\n"
        "ok = is_qwen3_next(cfg) or model_type == 'gpt-oss'\n"
        "x = Qwenlike + cllama + DeepseekV2ForCausalLM  # a llama comment\n"
        "clip = torch.clip(x)\n")
    refs = model_references(tmp_path, load_rules("deepseek"))
    assert [line for _, line, _ in refs.code] == [2, 4, 5]
    assert refs.comment_lines == 1


def _allowing(section: str, files: str, pattern: str, reason: str):
    """The deepseek rules with one `[[<section>.allowed]]` rule."""
    from shrinker.rules.schema import AllowedReference

    rules = load_rules("deepseek")
    allowed = AllowedReference(files=[files], pattern=pattern, reason=reason)
    return rules.model_copy(update={section: getattr(rules, section).model_copy(update={"allowed": [allowed]})})


def test_lines_a_rule_allows_count_apart_under_its_reason(tmp_path):
    _tree(tmp_path, "x = is_npu()\n")
    (tmp_path / "python/sglang/kernels").mkdir()
    (tmp_path / "python/sglang/kernels/spec.py").write_text('HIP = "hip"\nNPU = "npu"\nx = is_hip()\n')
    rules = _allowing("platform", "python/sglang/kernels/*.py", r'^[A-Z]+ = "', "vocabulary")
    refs = platform_references(tmp_path, rules)
    assert [(path, line) for path, line, _ in refs.code] == [("python/sglang/a.py", 1),
                                                             ("python/sglang/kernels/spec.py", 3)]
    assert {reason: [line for _, line, _ in found] for reason, found in refs.allowed.items()} == {"vocabulary": [1, 2]}
    assert refs.to_json()["allowed"] == {"vocabulary": 2}


def test_a_served_model_type_named_for_a_family_is_not_that_family(tmp_path):
    # Kimi K2 is a DeepSeek-V3 checkpoint ([architectures].model_types "kimi_k2"): its parser serves a kept
    # model, however it is spelled; Kimi K2.5 and Kimi-Linear are other models
    _tree(tmp_path,
        'if parser == "kimi_k2":\n'
        "    d = KimiK2Detector()\n"
        'name = "kimi-k2"\n'
        'other = "kimi_k25"\n'
        "linear = KimiLinearConfig\n")
    refs = model_references(tmp_path, load_rules("deepseek"))
    assert [line for _, line, _ in refs.code] == [4, 5]


def test_family_lines_a_rule_allows_count_apart(tmp_path):
    _tree(tmp_path, 'if arch == "Qwen2ForCausalLM":\n    pass\n')
    (tmp_path / "python/sglang/chat_template.py").write_text('register(name="qwen")\nis_qwen = True\n')
    rules = _allowing("architectures", "python/sglang/chat_template.py", r"register\(", "templates")
    refs = model_references(tmp_path, rules)
    assert [(path, line) for path, line, _ in refs.code] == [("python/sglang/a.py", 1),
                                                             ("python/sglang/chat_template.py", 2)]
    assert refs.to_json()["allowed"] == {"templates": 1}


def test_lines_naming_one_only_in_prose_count_apart(tmp_path):
    # a help text or message names a platform in words; a choice string and an f-string's field are code
    _tree(tmp_path,
        'help_text = "Options: auto (DeepGEMM on CUDA, aiter on ROCm)"\n'
        'choices = ["flashinfer", "npu_memcache"]\n'
        'msg = f"aiter exports it={_HAS_OP}, gfx95={is_gfx95_supported()}"\n'
        'other = f"requires {x} or gfx950 GPUs"\n'
        'joined = f"{x}_aiter"\n'
        'raise ValueError("MXFP8 requires SM100 or ROCm gfx95 "\n'
        '                 "(gfx942 converts it).")\n')
    refs = platform_references(tmp_path, load_rules("deepseek"))
    assert [line for _, line, _ in refs.code] == [2, 3, 5]
    assert refs.prose_lines == 4



def test_the_profile_allows_torch_profiler_names_not_platform_option_reads(tmp_path):
    """The deepseek rules allow torch's XPU profiler activity and its sort key (torch's vocabulary, offered by
    --profile-activities on every device); a server option named for another platform stays counted, its
    declaration as its reads (0.5.17's dead-symbol batch removes such options when nothing reads them)."""
    fields = tmp_path / "python/sglang/srt/arg_groups/fields"
    fields.mkdir(parents=True)
    (fields / "exec_.py").write_text(
        "class ExecFields:\n"
        "    enable_aiter_allreduce_fusion: A[\n"
        '        bool, Arg(help="Enable Aiter AllReduce Fusion.")\n'
        "    ] = False\n")
    profiler = tmp_path / "python/sglang/srt/managers/scheduler_components"
    profiler.mkdir(parents=True)
    (profiler / "profiler_manager.py").write_text(
        'activity_map["XPU"] = torch.profiler.ProfilerActivity.XPU\n'
        'sort_by = "self_xpu_time_total"\n'
        "use_npu = _is_npu\n")
    refs = platform_references(tmp_path, load_rules("deepseek"))
    assert sorted((path.rpartition("/")[2], line) for path, line, _ in refs.code) == [
        ("exec_.py", 2), ("profiler_manager.py", 3)]
    assert [len(lines) for reason, lines in refs.allowed.items() if "profiler" in reason] == [2]
