"""The parse cache is unpickled once per process while its file is unchanged (graph/cache.py)."""

from __future__ import annotations

import os
import pickle

from shrinker.graph import cache as cache_module
from shrinker.graph.cache import FactsCache


def test_a_second_open_reuses_what_this_process_loaded_until_the_file_changes(tmp_path, monkeypatch):
    path = tmp_path / "facts.pickle"
    first = FactsCache(path)
    first.put("a", "facts of a")  # any picklable value will do for the cache itself
    first.save()
    loads = []
    real_load = pickle.load
    monkeypatch.setattr(cache_module.pickle, "load", lambda f: loads.append(1) or real_load(f))
    assert FactsCache(path).entries == {"a": "facts of a"} and loads == []  # saved here: known
    second = FactsCache(path)
    second.put("b", "facts of b")  # an instance's puts stay its own until saved
    assert FactsCache(path).entries == {"a": "facts of a"}
    # another process rewrites the file: it is read again
    with path.open("wb") as f:
        pickle.dump({"c": "facts of c"}, f)
    os.utime(path, ns=(1, 1))
    assert FactsCache(path).entries == {"c": "facts of c"} and loads == [1]
