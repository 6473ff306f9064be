"""Calls of constant functions (codemods/constant_calls, Folder._fold_constant_call): `is_kimi_k3(cfg)` whose
body is `return _hf_arch(config) in ()` is False wherever it is called, in its module and in importers."""

from __future__ import annotations

import textwrap

from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.pipeline import transform_source
from shrinker.graph.constant_functions import ConstantReturn
from shrinker.rules.load import load_rules

CONFIG = "sglang.srt.configs.model_config"
TABLE = {
    CONFIG: {"is_kimi_k3": ConstantReturn(False, False), "arch_matches": ConstantReturn(False, False),
             "uses_plain_path": ConstantReturn(True, True)},
    "sglang.srt.x": {"aiter_on": ConstantReturn(False, True), "Indexer._fused_active": ConstantReturn(False, True)},
}


def run(code: str, *, words: frozenset[str] = frozenset(), table=None, origins=None, called=None) -> str:
    inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(origins=origins or {}, imported={}),
                           single_file_words=words, constant_functions=TABLE if table is None else table,
                           called_methods=called)
    code = textwrap.dedent(code)
    result = transform_source(code, path="sglang/srt/x.py", module="sglang.srt.x", inputs=inputs,
                              codemods=["fold_platform", "remove_dead_imports", "remove_unused_names"])
    assert result.status in ("success", "skip"), result.error
    again = transform_source(result.code, path="sglang/srt/x.py", module="sglang.srt.x", inputs=inputs,
                             codemods=["fold_platform", "remove_dead_imports", "remove_unused_names"])
    assert again.code == result.code, "not idempotent"
    assert not result.findings, result.findings
    return result.code


def test_an_imported_constant_call_decides_its_branch() -> None:
    out = run('''
        from sglang.srt.configs.model_config import is_kimi_k3


        def pick(model_config):
            # Kimi K3 needs the split path
            if is_kimi_k3(model_config.hf_config):
                return "split"
            return "fused"
        ''')
    assert out.strip() == 'def pick(model_config):\n    return "fused"'


def test_a_module_function_and_a_method_fold_in_every_position() -> None:
    out = run('''
        def aiter_on():
            return False


        class Indexer:
            def _fused_active(self, batch):
                return False

            def forward(self, batch, x):
                run(x, fused=self._fused_active(batch), aiter=aiter_on())
                return x if not aiter_on() else None
        ''', words=frozenset({"_fused_active"}))
    assert "run(x, fused=False, aiter=False)" in out and "return x\n" in out


def test_a_method_named_in_another_file_stays() -> None:
    code = '''
        class Indexer:
            def _fused_active(self, batch):
                return False

            def forward(self, batch, x):
                return run(x, fused=self._fused_active(batch))
        '''
    assert "fused=self._fused_active(batch)" in run(code, words=frozenset())


def test_a_called_method_folds_through_any_object() -> None:
    # graph/constant_functions.called_methods vouches for the name across the tree: one def, every use a call
    out = run('''
        def prefill(indexer, batch, x):
            if indexer._fused_active(batch):
                return indexer.fused(x)
            return x
        ''', called={"_fused_active": ConstantReturn(False, True)})
    assert out.strip() == "def prefill(indexer, batch, x):\n    return x"
    code = '''
        def prefill(indexer, x):
            return indexer.make()._fused_active(x)  # a receiver that runs code
        '''
    assert run(code, called={"_fused_active": ConstantReturn(False, True)}) == textwrap.dedent(code)


def test_through_a_re_export() -> None:
    out = run('''
        from sglang.srt.configs import is_kimi_k3

        def f(cfg):
            return 1 if is_kimi_k3(cfg) else 2
        ''', origins={"sglang.srt.configs": {"is_kimi_k3": CONFIG}})
    assert out.strip() == "def f(cfg):\n    return 2"


def test_what_stays() -> None:
    code = '''
        from sglang.srt.configs.model_config import arch_matches, is_kimi_k3, uses_plain_path

        def f(cfg):
            if arch_matches(cfg):  # its body calls a function the rules do not call pure
                return 1
            if is_kimi_k3(load(cfg)):  # an argument that runs code
                return 2
            return 3


        def g(uses_plain_path):  # a parameter of that name is another binding
            return uses_plain_path(4)
        '''
    assert run(code) == textwrap.dedent(code)


def test_without_the_table_nothing_folds() -> None:
    code = '''
        from sglang.srt.configs.model_config import is_kimi_k3

        def f(cfg):
            return 1 if is_kimi_k3(cfg) else 2
        '''
    assert run(code, table={}) == textwrap.dedent(code)


NONE_TABLE = {
    "sglang.srt.x": {"maybe_create_store": ConstantReturn(False, True, none=True),
                     "try_fused": ConstantReturn(False, True, none=True),
                     "logs_first": ConstantReturn(False, False, none=True)},
}


def test_a_function_that_always_returns_none() -> None:
    # 0.5.23 disagg_service.maybe_create_ascend_config_store (docstring, `return`) and deepseek_v4_fused_mhc's
    # try_aiter_fused_mhc_post_pre (`global ...; return None`): a statement calling one runs nothing; a local
    # bound to its value holds None, so `is not None` is False and the fall-back path is all that is left;
    # the `global` nothing binds goes too
    out = run('''
        def maybe_create_store(transfer_backend):
            """Ascend only."""
            return


        def try_fused(x, residual, fn):
            global _DISABLED
            return None


        def start(backend, server):
            server.start()
            maybe_create_store(transfer_backend=backend)
            return server


        def boundary(x, residual, fn, transpose):
            result = try_fused(x, residual, fn)
            if result is not None:
                return result
            fn = fn.T if transpose else fn
            return fallback(x, fn)


        def value(x):
            # a return passes the None on; a test reads its truth
            if try_fused(x, x, x):
                return 1
            return try_fused(x, x, x)
        ''', table=NONE_TABLE)
    assert out == textwrap.dedent('''
        def maybe_create_store(transfer_backend):
            """Ascend only."""
            return


        def try_fused(x, residual, fn):
            return None


        def start(backend, server):
            server.start()
            return server


        def boundary(x, residual, fn, transpose):
            fn = fn.T if transpose else fn
            return fallback(x, fn)


        def value(x):
            return None
        ''')


def test_a_none_call_that_may_do_something_stays() -> None:
    code = '''
        def logs_first(backend):
            log(backend)
            return


        def maybe_create_store(transfer_backend):
            """Ascend only."""
            return


        def try_fused(x, residual, fn):
            return None


        def start(backend, server):
            logs_first(backend)
            maybe_create_store(transfer_backend=server.pick())
            return server
        '''
    # an impure body (no pure-call rule for it), or an argument that calls something: both stay
    assert run(code, table=NONE_TABLE) == textwrap.dedent(code)


def test_a_folding_batch_takes_no_file_into_its_second_round_for_a_none_function() -> None:
    # apply/run._constant_call_work: 0.5.23's None functions are called from 270 files, whose platform codemods
    # must wait for the platform batch; the symbol batch's refold folds those calls
    from shrinker.codemods.constant_calls import constant_words

    inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed(), single_file_words=frozenset(),
                           constant_functions={**TABLE, "sglang.srt.x": {**TABLE["sglang.srt.x"], **NONE_TABLE["sglang.srt.x"]}})
    assert "maybe_create_store" in constant_words(inputs)
    assert "maybe_create_store" not in constant_words(inputs, none=False)
    assert "aiter_on" in constant_words(inputs, none=False)
