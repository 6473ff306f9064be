"""Attributes whose value the tree decides: one of known literals (graph/returned_literals, Folder._literal_compare:
`self.chat_encoding_spec == "kimi_k3"` is False when the spec is one of "dsv41", "dsv4", "dsv32" or None), or
nothing at all (graph/unset_attributes: `getattr(self, "_kimi_split_gguf_kv_b", False)` is False)."""

from __future__ import annotations

import textwrap

from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.pipeline import transform_source
from shrinker.graph.returned_literals import LiteralTables
from shrinker.rules.load import load_rules

SPEC = frozenset({"dsv41", "dsv4", "dsv32", None})
CODEMODS = ["fold_platform", "remove_dead_imports", "remove_unused_names"]


def run(code: str, attributes: dict | None = None) -> str:
    tables = LiteralTables(attributes={"sglang.srt.x": {"chat_encoding_spec": SPEC} if attributes is None else attributes})
    inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(origins={}, imported={}),
                           single_file_words=frozenset(), returned_literals=tables)
    code = textwrap.dedent(code)
    result = transform_source(code, path="sglang/srt/x.py", module="sglang.srt.x", inputs=inputs, codemods=CODEMODS)
    assert result.status in ("success", "skip"), result.error
    again = transform_source(result.code, path="sglang/srt/x.py", module="sglang.srt.x", inputs=inputs,
                             codemods=CODEMODS)
    assert again.code == result.code, "not idempotent"
    assert not result.findings, result.findings
    return result.code


def test_a_literal_no_value_matches_folds_in_every_position() -> None:
    out = run('''
        class Chat:
            def render(self, messages, request):
                # Kimi K3 renders its own placeholders
                if self.chat_encoding_spec == "kimi_k3":
                    messages = neutralize(messages)
                build(request, handles_format=self.chat_encoding_spec == "kimi_k3")
                strict = True if self.chat_encoding_spec != "kimi_k3" else request.strict
                if self.chat_encoding_spec in ("inkling", "kimi_k3"):
                    return None
                collects_media = (
                    self._adapter.collects_media
                    if self._adapter is not None
                    else self.chat_encoding_spec == "kimi_k3"
                )
                return messages, collects_media
        ''')
    assert "kimi_k3" not in out and "inkling" not in out
    assert "build(request, handles_format=False)" in out
    assert "strict = True\n" in out and "return messages, collects_media" in out
    assert "else False\n" in out


def test_a_value_it_may_hold_stays_undecided() -> None:
    code = '''
        class Chat:
            def render(self, messages):
                if self.chat_encoding_spec == "dsv32":
                    return encode_v32(messages)
                if self.chat_encoding_spec is None:
                    return template(messages)
                return messages
        '''
    assert run(code) == textwrap.dedent(code)


def test_every_value_in_the_literals_decides_true() -> None:
    out = run('''
        class Chat:
            def render(self, messages):
                if self.mode in ("plain", "json"):
                    return messages
                return None
        ''', attributes={"mode": frozenset({"plain"})})
    assert out.strip().endswith("return messages") and "None" not in out


def test_not_self_or_not_in_the_table_stays() -> None:
    code = '''
        class Chat:
            def render(self, other):
                if other.chat_encoding_spec == "kimi_k3":
                    return 1
                if self.spec == "kimi_k3":
                    return 2
                return 3
        '''
    assert run(code) == textwrap.dedent(code)


def test_an_attribute_nothing_sets_reads_its_default() -> None:
    inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(origins={}, imported={}),
                           single_file_words=frozenset(), unset_attributes=frozenset({"_kimi_split_gguf_kv_b"}))
    code = textwrap.dedent('''
        class Attention:
            def absorb(self, q, other):
                # GGUF split kv_b (Kimi K3)
                if getattr(self, "_kimi_split_gguf_kv_b", False):
                    return gguf_bmm(q)
                elif hasattr(self, "_kimi_split_gguf_kv_b"):
                    return None
                if getattr(other, "_kimi_split_gguf_kv_b", False):
                    return other
                fused = not getattr(self, "_kimi_split_gguf_kv_b", True) and q.is_contiguous()
                return torch.bmm(q, self.w_kc), fused
        ''')
    result = transform_source(code, path="sglang/srt/x.py", module="sglang.srt.x", inputs=inputs, codemods=CODEMODS)
    assert result.status == "success" and not result.findings, result.findings
    assert "gguf_bmm" not in result.code and "return None" not in result.code
    assert 'getattr(other, "_kimi_split_gguf_kv_b", False)' in result.code  # another object: may carry it
    # `fused` is a local the fold decides (False): its one read takes the value and its binding goes
    assert "fused" not in result.code and "return torch.bmm(q, self.w_kc), False" in result.code
    again = transform_source(result.code, path="sglang/srt/x.py", module="sglang.srt.x", inputs=inputs,
                             codemods=CODEMODS)
    assert again.code == result.code


def test_an_attribute_that_holds_one_bool_folds_in_every_position_and_its_store_stays() -> None:
    out = run('''
        class Attention:
            def __init__(self, fp8):
                self.use_npu_mxfp8 = False
                quantize = fp8 or self.use_npu_mxfp8

            def forward(self, x):
                # NPU arch35 batches the wo_a GEMM
                if self.use_npu_mxfp8:
                    return npu(x)
                elif self.fp8:
                    return fp8(x)
                return x
        ''', attributes={"use_npu_mxfp8": frozenset({False})})
    assert "        self.use_npu_mxfp8 = False\n        quantize = fp8\n" in out
    assert "if self.fp8:\n            return fp8(x)" in out and "npu(x)" not in out
