"""self_attributes: a `self.X` read that no code of the tree sets X for. Each case runs twice: with
the code that provides X (no finding) and without it (the finding), so each can fail both ways."""

from __future__ import annotations

from pathlib import Path

import pytest

from shrinker.verify import verify_tree
from shrinker.checks.factcache import tree_facts
from shrinker.checks.static import collect
from shrinker.checks.tree import SourceTree

PYPROJECT = '[project]\nname = "pkg"\nversion = "0"\ndependencies = []\n'
USER = "from pkg.chat import Chat\n\n\ndef serve():\n    return Chat()\n"  # makes a Chat: it is checked


def make_tree(root: Path, files: dict[str, str]) -> Path:
    (root / "python" / "pkg").mkdir(parents=True)
    (root / "python" / "pyproject.toml").write_text(PYPROJECT)
    (root / "python" / "pkg" / "__init__.py").write_text("")
    for name, text in {"user.py": USER, **files}.items():
        (root / "python" / "pkg" / name).write_text(text)
    return root


def findings(root: Path, files: dict[str, str]) -> list[str]:
    tree = SourceTree.load(make_tree(root, files))
    found = collect(tree, tree_facts(tree, jobs=1), {})
    return [f.text for f in found.by_check["self_attributes"]]


CHAT = '''{imports}

class Chat({bases}):
{body}
    def __init__(self, config):
        self.config = config
{init}
    def handle(self, messages):
        return sort(messages, reorder=self.is_minimax_m3)
'''


def chat(provide: str = "", where: str = "init", imports: str = "", bases: str = "") -> str:
    body = f"    {provide}\n" if where == "body" and provide else ""
    init = f"        {provide}\n" if where == "init" and provide else ""
    return CHAT.format(imports=imports, bases=bases, body=body, init=init)


def both(tmp_path: Path, with_x: dict[str, str], without_x: dict[str, str]) -> tuple[list[str], list[str]]:
    return findings(tmp_path / "with", with_x), findings(tmp_path / "without", without_x)


def test_read_with_its_store_removed_is_a_finding(tmp_path):
    kept, removed = both(tmp_path, {"chat.py": chat("self.is_minimax_m3 = False")}, {"chat.py": chat()})
    assert kept == []
    assert removed == ["python/pkg/chat.py:9 Chat reads self.is_minimax_m3, which no code of the tree sets on Chat"]


@pytest.mark.parametrize("provide, where", [
    ("self.is_minimax_m3 = False", "init"),  # __init__
    ("self.is_minimax_m3: bool = False", "init"),
    ("self.is_minimax_m3 += 0", "init"),
    ("for self.is_minimax_m3 in (False,): pass", "init"),
    ("with ctx() as self.is_minimax_m3: pass", "init"),
    ("is_minimax_m3 = False", "body"),  # class attribute
    ("is_minimax_m3: bool", "body"),  # a dataclass / NamedTuple field
    ("__slots__ = ('is_minimax_m3',)", "body"),
    ("def is_minimax_m3(self): pass", "body"),  # method
    ("@property\n    def is_minimax_m3(self): return False", "body"),  # property
    ("class is_minimax_m3: pass", "body"),  # nested class
])
def test_each_way_of_setting_it(tmp_path, provide, where):
    kept, removed = both(tmp_path, {"chat.py": chat(provide, where)}, {"chat.py": chat()})
    assert kept == [] and len(removed) == 1


def test_set_in_another_method(tmp_path):
    other = chat() + "\n    def reset(self):\n        self.is_minimax_m3 = False\n"
    kept, removed = both(tmp_path, {"chat.py": other}, {"chat.py": chat()})
    assert kept == [] and len(removed) == 1


def test_set_by_a_base_class_of_the_tree_through_a_reexport(tmp_path):
    base = "from abc import ABC\n\n\nclass Base(ABC):\n    def __init__(self):\n        self.{x} = False\n"
    files = {"base.py": base, "api.py": "from pkg.base import Base as ServingBase\n",
             "chat.py": chat(imports="from pkg.api import ServingBase", bases="ServingBase")}
    kept, removed = both(tmp_path, {**files, "base.py": base.format(x="is_minimax_m3")},
                         {**files, "base.py": base.format(x="other")})
    assert kept == [] and len(removed) == 1  # ABC holds nothing: the check still runs through it


def test_set_by_a_subclass_that_mixes_it_in(tmp_path):
    sub = "from pkg.chat import Chat\n\n\nclass M3Chat(Chat):\n    def __init__(self):\n        self.{x} = True\n"
    user = "from pkg.sub import M3Chat\n\n\ndef serve():\n    return M3Chat()\n"  # only the subclass is made
    kept, removed = both(tmp_path, {"chat.py": chat(), "user.py": user, "sub.py": sub.format(x="is_minimax_m3")},
                         {"chat.py": chat(), "user.py": user, "sub.py": sub.format(x="other")})
    assert kept == []
    assert removed == ["python/pkg/chat.py:9 Chat reads self.is_minimax_m3, which no code of the tree sets on "
                       "pkg.sub.M3Chat"]


def test_set_from_outside_in_the_same_file(tmp_path):
    outside = chat() + "\n\ndef configure(chat):\n    chat.is_minimax_m3 = True\n"
    kept, removed = both(tmp_path, {"chat.py": outside}, {"chat.py": chat()})
    assert kept == [] and len(removed) == 1


@pytest.mark.parametrize("dynamic", [
    "setattr(self, name, value)", "self.__dict__.update(kw)", "vars(self).update(kw)",
    "object.__setattr__(self, 'x', 1)"])
def test_a_class_that_sets_attributes_dynamically_is_skipped(tmp_path, dynamic):
    kept, removed = both(tmp_path, {"chat.py": chat(dynamic)}, {"chat.py": chat("pass")})
    assert kept == [] and len(removed) == 1


def test_getattr_hook_and_guards(tmp_path):
    hook = chat("def __getattr__(self, name): return None", "body")
    guarded = chat().replace("return sort(", "if hasattr(self, 'is_minimax_m3'):\n            return sort(")
    caught = chat().replace("return sort(messages, reorder=self.is_minimax_m3)",
                            "try:\n            return self.is_minimax_m3\n        except AttributeError:\n"
                            "            return None")
    for variant in (hook, guarded, caught):
        assert findings(tmp_path / str(hash(variant)), {"chat.py": variant}) == []
    assert len(findings(tmp_path / "plain", {"chat.py": chat()})) == 1


@pytest.mark.parametrize("imports, bases", [
    ("import torch", "torch.nn.Module"), ("from enum import Enum", "Enum"), ("", "make_base()"),
    ("from pkg.missing import Gone", "Gone"), ("from abc import ABCMeta", "metaclass=Registry")])
def test_a_base_outside_the_tree_skips_the_class(tmp_path, imports, bases):
    kept, removed = both(tmp_path, {"chat.py": chat(imports=imports, bases=bases)},
                         {"chat.py": chat(imports=imports, bases="object")})
    assert kept == [] and len(removed) == 1


def test_a_mixin_the_tree_never_makes_is_skipped(tmp_path):
    never = "def serve():\n    return None\n"
    string = 'REGISTRY = {"chat": "pkg.chat:Chat"}\n'  # a registry string makes one by name
    assert findings(tmp_path / "never", {"chat.py": chat(), "user.py": never}) == []
    assert len(findings(tmp_path / "string", {"chat.py": chat(), "user.py": string})) == 1


def test_an_abstract_class_is_no_instance_its_concrete_subclass_is(tmp_path):
    abstract = chat(imports="from abc import ABC, abstractmethod", bases="ABC") + (
        "\n    @abstractmethod\n    def render(self): ...\n")
    sub = "from pkg.chat import Chat\n\n\nclass Impl(Chat):\n    def render(self):\n        return 1\n"
    user = "from pkg.chat import Chat\nfrom pkg.sub import Impl\n\n\ndef serve():\n    return Chat, Impl()\n"
    assert findings(tmp_path / "abstract", {"chat.py": abstract}) == []
    assert len(findings(tmp_path / "concrete", {"chat.py": abstract, "sub.py": sub, "user.py": user})) == 1


def test_only_a_regression_against_upstream_counts_and_what_failed_on_cuda_there_is_a_note(tmp_path, verify_rules):
    platform = chat("if not is_npu():\n            return\n        self.group = config", imports=(
        "from pkg.utils import is_npu")).replace("reorder=self.is_minimax_m3", "reorder=self.group")
    quant = ("from pkg.utils import is_npu\n\nif is_npu():\n    from npu_ops import fused\n\n\nclass Quant:\n"
             "    def run(self, w):\n        return self.quantize(w)\n\n    def quantize(self, w):\n"
             "        w = w.view(-1)\n        return fused(w)\n")
    upstream_files = {"chat.py": chat("self.is_minimax_m3 = False"), "npu.py": platform.replace("Chat", "Npu"),
                      "user.py": USER + "from pkg.npu import Npu\nfrom pkg.old import Old\nfrom pkg.quant import Quant"
                                        "\n\nNpu(None), Old(None), Quant()\n", "quant.py": quant,
                      "utils.py": "def is_npu():\n    return False\n", "old.py": chat().replace("Chat", "Old")}
    upstream = make_tree(tmp_path / "upstream", upstream_files)
    pruned = make_tree(tmp_path / "pruned", {
        **upstream_files, "chat.py": chat(),  # the codemod dropped the store, kept the read
        "npu.py": platform.replace("Chat", "Npu").replace("        self.group = config\n", ""),
        "quant.py": quant.split("\n\n    def quantize")[0] + "\n"})  # a method NameError ends upstream on CUDA
    result = verify_tree(pruned, upstream, checks=["self_attributes"], rules=verify_rules)
    check = result.check("self_attributes")
    assert not check.passed
    assert check.findings == [  # old.py's read fails upstream too: no regression
        "python/pkg/chat.py:9 Chat reads self.is_minimax_m3, which no code of the tree sets on Chat"]
    assert check.counts["upstream_findings"] == 1
    assert check.notes == ["python/pkg/npu.py:11 Npu reads self.group, which no code of the tree sets on Npu: "
                           "set upstream only in code dead on CUDA (AttributeError on CUDA there too)",
                           "python/pkg/quant.py:9 Quant reads self.quantize, which no code of the tree sets on Quant: "
                           "upstream's quantize() uses a name bound only on other platforms (NameError on CUDA there)"]


def test_class_facts_survive_the_cache_and_key_it(tmp_path, monkeypatch):
    import json

    from shrinker.checks import attributes, factcache
    from shrinker.checks.facts import FileFacts, extract

    facts = extract(chat().encode(), "pkg.chat", False, frozenset({"pkg"}))
    assert [c.name for c in facts.classes] == ["Chat"] and facts.classes[0].reads == [(9, "is_minimax_m3")]
    assert FileFacts.from_json(json.loads(json.dumps(facts.to_json()))) == facts
    before = factcache._version(frozenset({"pkg"}))
    changed = tmp_path / "attributes.py"
    changed.write_bytes(Path(attributes.__file__).read_bytes() + b"\n# changed\n")
    monkeypatch.setattr(attributes, "__file__", str(changed))
    assert factcache._version(frozenset({"pkg"})) != before  # attributes.py is part of the cache's key
