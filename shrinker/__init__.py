"""shrinker: turn upstream SGLang into a DeepSeek-only, CUDA-only tree, verified after every step."""

__version__ = "0.1.0"
