"""Attribute constants (shrinker/codemods/attribute_constants.py): `self.X` set once in `__init__` to a value
the fold decides, read only in that class, folds at every read (fold_platform), and its store goes."""

from __future__ import annotations

import textwrap

from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.pipeline import transform_source
from shrinker.rules.load import load_rules

# 0.5.23 layers/attention/dsa/dsa_indexer.py and entrypoints/openai/serving_chat.py, cut down.
BEFORE = '''\
from sglang.srt.utils import is_hip

_is_hip = is_hip()


class Indexer:
    def __init__(self, cfg, model_config):
        self.cfg = cfg
        if _is_hip:
            self.use_aiter_fused_fp8_writer = cfg.fused
        else:
            self.use_aiter_fused_fp8_writer = False
        self.is_gpt_oss = (
            hasattr(model_config, "hf_config")
            and model_config.hf_config.model_type == "gpt_oss"
        )
        self.use_gfx950_fused_indexer = False  # set on MI355 only
        self._gfx950_fused = None

    def forward(self, x):
        if self.use_aiter_fused_fp8_writer:
            x = self.write_fp8(x)
        if self.is_gpt_oss and x:
            return None
        if self._gfx950_fused is not None:
            return self._gfx950_fused(x)
        return x if not self.use_gfx950_fused_indexer else None
'''

AFTER = '''\
from sglang.srt.utils import is_hip


class Indexer:
    def __init__(self, cfg, model_config):
        self.cfg = cfg

    def forward(self, x):
        return x
'''


def inputs(words: frozenset[str] | None) -> CodemodInputs:
    return CodemodInputs(rules=load_rules("deepseek"), removed=Removed(), single_file_words=words)


ALL_HERE = frozenset({"use_aiter_fused_fp8_writer", "is_gpt_oss", "use_gfx950_fused_indexer", "_gfx950_fused"})


def run(code: str, words: frozenset[str] | None) -> str:
    result = transform_source(code, path="sglang/srt/x.py", module="sglang.srt.x", inputs=inputs(words),
                              codemods=["fold_platform", "remove_unused_names"])
    assert result.status in ("success", "skip"), result.error
    return result.code


def test_reads_fold_and_top_level_stores_go() -> None:
    out = run(BEFORE, ALL_HERE)
    assert out == AFTER
    assert run(out, ALL_HERE) == out  # idempotent


def test_a_name_another_file_mentions_stays() -> None:
    out = run(BEFORE, ALL_HERE - {"is_gpt_oss"})
    assert "self.is_gpt_oss = False" in out and "if self.is_gpt_oss and x:" in out


def test_without_the_tree_wide_count_nothing_folds() -> None:
    out = run(BEFORE, None)
    # (`self.use_aiter_*` reads fold anyway: the vocabulary makes `use_aiter_*` a platform predicate)
    assert "if self.is_gpt_oss and x:" in out and "self._gfx950_fused(x)" in out


def _unchanged_reads(snippet: str) -> None:
    code = textwrap.dedent(snippet)
    out = run(code, frozenset({"gpt_oss_mode"}))
    assert out.count("self.gpt_oss_mode") == code.count("self.gpt_oss_mode"), out


def test_what_keeps_an_attribute_variable() -> None:
    # written outside __init__
    _unchanged_reads('''
        class A:
            def __init__(self):
                self.gpt_oss_mode = False

            def enable(self):
                self.gpt_oss_mode = True

            def f(self):
                return 1 if self.gpt_oss_mode else 2
        ''')
    # set under a test the fold cannot decide, or in a loop
    _unchanged_reads('''
        class A:
            def __init__(self, on):
                if on:
                    self.gpt_oss_mode = False
                for _ in range(1):
                    pass

            def f(self):
                return 1 if self.gpt_oss_mode else 2
        ''')
    # read before it is set (upstream raises), or __init__ may return first
    _unchanged_reads('''
        class A:
            def __init__(self):
                print(self.gpt_oss_mode)
                self.gpt_oss_mode = False

            def f(self):
                return 1 if self.gpt_oss_mode else 2
        ''')
    _unchanged_reads('''
        class A:
            def __init__(self, early):
                if early:
                    return
                self.gpt_oss_mode = False

            def f(self):
                return 1 if self.gpt_oss_mode else 2
        ''')
    # named in a string (getattr), by another class, in a nested function, or written by name
    _unchanged_reads('''
        class A:
            def __init__(self):
                self.gpt_oss_mode = False

            def f(self):
                return getattr(self, "gpt_oss_mode")
        ''')
    _unchanged_reads('''
        class A:
            def __init__(self):
                self.gpt_oss_mode = False

            def f(self):
                def g():
                    return self.gpt_oss_mode
                return g()
        ''')
    _unchanged_reads('''
        class A:
            def __init__(self, **kw):
                self.gpt_oss_mode = False
                for k, v in kw.items():
                    setattr(self, k, v)

            def f(self):
                return 1 if self.gpt_oss_mode else 2
        ''')
    # a value that is not a constant, and a name outside the vocabularies
    _unchanged_reads('''
        class A:
            def __init__(self, cfg):
                self.gpt_oss_mode = cfg.fused

            def f(self):
                return 1 if self.gpt_oss_mode else 2
        ''')
    code = textwrap.dedent('''
        class A:
            def __init__(self):
                self.fused = False

            def f(self):
                return 1 if self.fused else 2
        ''')
    assert run(code, frozenset({"fused"})) == code


def test_dead_branches_alone_decides_tests_but_keeps_the_store_for_other_reads() -> None:
    # 0.5.23's serving_chat: `self.is_minimax_m3` is read in `if` tests and as an argument; remove_dead_branches
    # (which runs without fold_platform before remove_dead_imports) takes the branches, not the store
    code = textwrap.dedent('''\
        from sglang.srt.utils import is_hip


        class Chat:
            def __init__(self, model_config):
                self.is_minimax_m3 = model_config.hf_config.model_type == "minimax_m3_vl"
                if is_hip():
                    self.rocm = True

            def handle(self, messages):
                if self.is_minimax_m3:
                    messages = []
                return sort(messages, by_position=self.is_minimax_m3)
        ''')
    result = transform_source(code, path="sglang/srt/x.py", module="sglang.srt.x",
                              inputs=inputs(frozenset({"is_minimax_m3"})), codemods=["remove_dead_branches"])
    assert result.status == "success", result.error
    assert "if self.is_minimax_m3:" not in result.code
    assert 'self.is_minimax_m3 = model_config.hf_config.model_type == "minimax_m3_vl"' in result.code
    assert "by_position=self.is_minimax_m3" in result.code
    # with every read in an `if` test decided, the store goes too
    only_tests = code.replace("return sort(messages, by_position=self.is_minimax_m3)", "return messages")
    result = transform_source(only_tests, path="sglang/srt/x.py", module="sglang.srt.x",
                              inputs=inputs(frozenset({"is_minimax_m3"})), codemods=["remove_dead_branches"])
    assert "is_minimax_m3" not in result.code, result.code


def test_an_annotated_store_made_again_with_the_same_constant() -> None:
    # 0.5.23 quantization/unquant.py: `self._aiter_runner: Optional[MoeRunner] = None` in __init__ and again at the
    # end of create_moe_runner; every read folds, both stores go
    code = textwrap.dedent('''\
        class Method:
            def __init__(self):
                self.runner: Optional[MoeRunner] = None
                self._aiter_runner: Optional[MoeRunner] = None

            def create_moe_runner(self, cfg):
                self.runner = MoeRunner(cfg)
                # aiter CK fused-MoE only supports some shapes
                self._aiter_runner: Optional[MoeRunner] = None

            def backend(self):
                runner = self._aiter_runner if self._aiter_runner is not None else self.runner
                return runner.backend

            def apply(self, x):
                if self._aiter_runner is not None:
                    return self._aiter_runner.run(x)
                return self.runner.run(x)
        ''')
    out = run(code, frozenset({"_aiter_runner"}))
    assert "_aiter_runner" not in out, out
    assert "runner = self.runner\n" in out and "return self.runner.run(x)" in out
    assert run(out, frozenset({"_aiter_runner"})) == out
    # a second store of another value keeps the attribute a variable
    _unchanged_reads('''
        class A:
            def __init__(self):
                self.gpt_oss_mode: bool = False

            def enable(self):
                self.gpt_oss_mode: bool = True

            def f(self):
                return 1 if self.gpt_oss_mode else 2
        ''')


def test_stores_nothing_can_read_go() -> None:
    # 0.5.23 models/deepseek_v2.py and deepseek_v4.py: `self.use_fused_clamp_act_mul = False` once its read folded
    # in an earlier run, `self.use_npu_arch35_mxfp8_wo_a = False` that nothing in the tree reads
    code = textwrap.dedent('''\
        class MLP:
            def __init__(self, hidden_act):
                self.act_fn = SiluAndMul()
                self.use_fused_clamp_act_mul = False
                # NPU arch35 runs wo_a as a batched MXFP8 GEMM (use_npu_arch35_mxfp8_wo_a)
                self.use_npu_arch35_mxfp8_wo_a = False
                self.use_aiter_fp8_per_token = envs.SGLANG_USE_AITER_FP8_PER_TOKEN.get()
                self.use_aiter_runner = build_runner(hidden_act)

            def forward(self, x):
                return self.act_fn(x)
        ''')
    words = frozenset({"use_fused_clamp_act_mul", "use_npu_arch35_mxfp8_wo_a", "use_aiter_fp8_per_token",
                       "use_aiter_runner"})
    out = run(code, words)
    assert "self.use_fused_clamp_act_mul" not in out and "self.use_npu_arch35_mxfp8_wo_a = False" not in out, out
    assert "self.use_aiter_fp8_per_token" not in out  # an environment read is pure
    assert "self.use_aiter_runner = build_runner(hidden_act)" in out  # a call may do something: it stays
    assert run(out, words) == out
    # named by another file, read by name, or read through another object: kept
    assert "self.use_fused_clamp_act_mul = False" in run(code, words - {"use_fused_clamp_act_mul"})
    by_name = code + "\n    def get(self, k):\n        return getattr(self, k)\n"
    assert "self.use_fused_clamp_act_mul = False" in run(by_name, words)
    assert "self.use_fused_clamp_act_mul = False" in run(code + "\n    def d(self):\n        return vars(self)\n", words)
    # any lookup call of graph/bindings with a computed name reads by name too (`operator.methodcaller(k)`)
    caller = code + "\n    def call(self, k):\n        return operator.methodcaller(k)(self)\n"
    assert "self.use_fused_clamp_act_mul = False" in run(caller, words)
    getter = code + '\n    def get(self):\n        return operator.attrgetter("act_fn")(self)\n'
    assert "self.use_fused_clamp_act_mul" not in run(getter, words)  # a literal path names what it reads
    # a getattr with a literal name reads that name only (0.5.23's deepseek_v2 has 29 such calls)
    literal = code + '\n    def get(self):\n        return getattr(self, "act_fn", None)\n'
    assert "self.use_fused_clamp_act_mul" not in run(literal, words)
    named = code + '\n    def get(self):\n        return getattr(self, "use_fused_clamp_act_mul", False)\n'
    assert "self.use_fused_clamp_act_mul = False" in run(named, words)
    # (a predicate's or the vocabulary's name folds wherever it is read; a family's name is read as written)
    family = textwrap.dedent('''\
        class Chat:
            def __init__(self):
                self.gpt_oss_mode = False
                if is_hip():
                    self.rocm = True

        def f(chat):
            return chat.gpt_oss_mode
        ''')
    assert "self.gpt_oss_mode = False" in run(family, frozenset({"gpt_oss_mode"}))
    assert "self.gpt_oss_mode" not in run(family.split("\ndef f")[0], frozenset({"gpt_oss_mode"}))
