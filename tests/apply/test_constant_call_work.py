"""apply/run._constant_call_work: which files the second round of a folding batch takes. Bool attributes and
constant parameters add files only in the plan's last folding batch."""

from __future__ import annotations

import textwrap
from pathlib import Path

from shrinker.apply.run import _constant_call_work
from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.rules.load import load_rules

FILES = {
    "python/pkg/__init__.py": "",
    "python/pkg/attention.py": '''
        class Attention:
            def __init__(self):
                self.use_npu_mxfp8 = False

            def forward(self, x):
                return npu(x) if self.use_npu_mxfp8 else x
        ''',
    "python/pkg/sizes.py": '''
        def weight_sizes(dim, is_aiter_moe):
            return dim + 1 if is_aiter_moe else dim
        ''',
    "python/pkg/user.py": '''
        from pkg.sizes import weight_sizes

        def build():
            return weight_sizes(4, is_aiter_moe=False)
        ''',
}
BATCH = {"codemods": [{"name": "fold_platform", "files": []}, {"name": "remove_dead_imports", "files": []}]}


def work(tmp_path: Path, last: bool) -> dict:
    for rel, code in FILES.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))
    inputs = CodemodInputs(rules=load_rules("deepseek"), removed=Removed())
    return _constant_call_work(BATCH, tmp_path, inputs, last)


def test_the_last_folding_batch_takes_bool_attributes_and_constant_parameters(tmp_path: Path) -> None:
    assert work(tmp_path, last=True) == {("fold_platform", "remove_dead_imports"):
                                         ["python/pkg/attention.py", "python/pkg/sizes.py"]}


def test_an_earlier_folding_batch_takes_neither(tmp_path: Path) -> None:
    assert work(tmp_path, last=False) == {}
