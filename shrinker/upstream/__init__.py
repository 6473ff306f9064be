"""Stage 0: get an upstream SGLang release into a git-ignored cache, laid out like the GitHub repo."""

from shrinker.upstream.fetch import Upstream, fetch, load

__all__ = ["Upstream", "fetch", "load"]
