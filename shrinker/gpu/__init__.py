"""GPU verification: a tiny DeepSeek-V3 model, the device bundle, and the on-device runner.

Modules that run on the GPU machine (verify, cases, server, compare, jit, weights, install) use only
the standard library plus what the bundle installs there, so `python -m shrinker.gpu.verify` works
from a copy of the repository without shrinker's own dependencies.
"""
