"""graph/module_reads.py: bare names a module loads, attributes read through module bindings."""

from __future__ import annotations

from shrinker.graph.module_reads import module_reads


def test_attributes_through_each_kind_of_module_binding() -> None:
    reads = module_reads(
        "import a.b.c\nimport x.y as xy\nfrom p import m\nfrom . import sib as s\n"
        "a.b.c.f()\nxy.g\nm.h(m.k)\ns.t\nprint(a.b.other)\n", "pkg.mod", False)
    assert reads is not None and not reads.dynamic
    assert reads.through == {"a.b.c": {"f"}, "x.y": {"g"}, "p.m": {"h", "k"}, "pkg.sib": {"t"}}
    assert {"a", "xy", "m", "s", "print"} <= reads.names


def test_a_binding_used_otherwise_may_give_away_anything() -> None:
    reads = module_reads("from p import m\nm.h()\nuse(m)\nimport q.r\nq.r\n", "pkg.mod", False)
    assert reads is not None and reads.through == {"p.m": None, "q.r": None}


def test_namespace_reads_make_a_module_dynamic() -> None:
    for source in ("globals()['x']\n", "import sys\nsys.modules[__name__]\n", "def __getattr__(name): ...\n",
                   "vars()\n", "x.__dict__\n"):
        reads = module_reads(source, "pkg.mod", False)
        assert reads is not None and reads.dynamic, source
    assert module_reads("def f(:\n", "pkg.mod", False) is None


def test_a_module_bound_in_a_class_body_is_a_class_attribute() -> None:
    """debug_utils/dumper.py: `class _SGLangPlugin: from sglang.srt import distributed as _dist`, read as
    self._dist.get_tp_group(): the attributes read through `._dist`, unless `._dist` is used otherwise."""
    source = ("class P:\n    try:\n        from pkg import dist as _dist\n    except ImportError:\n"
              "        pass\n    def f(self):\n        return self._dist.rank() + type(self)._dist.size\n")
    reads = module_reads(source, "pkg.mod", False)
    assert reads is not None and reads.through == {"pkg.dist": {"rank", "size"}}
    reads = module_reads(source + "    def g(self):\n        return use(self._dist)\n", "pkg.mod", False)
    assert reads is not None and reads.through == {"pkg.dist": None}
