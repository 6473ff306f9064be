from sglang.version import __version__
