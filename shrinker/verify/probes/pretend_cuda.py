"""Pretend an NVIDIA GPU so a CUDA-only tree *imports* on a CPU machine (verify env; stdlib + torch).

    import pretend_cuda; pretend_cuda.install(spec)   # import workers, cli_probe, serverargs_probe

SPEC (rules/<profile>-verify.toml [pretend]):
    {"gpu": {"name", "capability": [major, minor], "memory_bytes", "count", "sm_count", "cuda_version"},
     "import_first": [third-party packages imported on the real CPU build first],
     "stub_modules": [compiled-ops modules and CUDA-only packages, stubbed when absent],
     "op_namespaces": [torch.ops namespaces the kernel package registers],
     "cuda_only_bindings": [the CUDA build's `torch._C` bindings modules bind at import, absent on CPU]}

The pruned tree folds its platform checks to "CUDA", so on CPU its modules call torch.cuda and load
the kernel package's compiled ops at import where upstream takes its CPU branch. Both trees are
imported under this same pretence, which keeps the comparison differential:
- torch.cuda answers as the GPU in SPEC (availability, count, name, capability, properties, memory);
  CUDA's lazy init is skipped, so objects such as streams and events can be *named*, and so can the
  CUDA build's `torch._C` bindings the CPU build lacks (`cuda_only_bindings`);
- compiled extensions under ROOTS (sgl_kernel's .so files) and the `stub_modules` load as stub
  modules, and torch.ops.<op_namespaces>.<op> resolves; every attribute of those is a MagicMock,
  so nothing compiled is loaded and nothing is computed for real (a call returns another mock).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from types import SimpleNamespace
from unittest import mock


class StubModule(types.ModuleType):
    """A compiled-ops module: any public attribute is a MagicMock (import-only)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = mock.MagicMock(name=f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return StubModule(spec.name)

    def exec_module(self, module) -> None:
        pass


class StubFinder(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: a listed module the environment lacks imports as a stub."""

    def __init__(self, names: list[str]) -> None:
        self.names = set(names)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names:
            return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)
        return None


def _pretend_torch_cuda(gpu: dict, cuda_only_bindings: list[str]) -> None:
    import torch

    major, minor = gpu["capability"]
    memory = gpu["memory_bytes"]
    props = SimpleNamespace(name=gpu["name"], major=major, minor=minor, total_memory=memory,
                            multi_processor_count=gpu.get("sm_count", 132), L2_cache_size=50 * 2**20,
                            warp_size=32, max_shared_memory_per_block_optin=232448,
                            gcnArchName="", uuid="00000000-0000-0000-0000-000000000000", is_integrated=False)
    answers = {
        "is_available": lambda: True,
        "device_count": lambda: gpu.get("count", 1),
        "current_device": lambda: 0,
        "set_device": lambda *a, **k: None,
        "get_device_name": lambda *a, **k: gpu["name"],
        "get_device_capability": lambda *a, **k: (major, minor),
        "get_device_properties": lambda *a, **k: props,
        "mem_get_info": lambda *a, **k: (memory - 2**30, memory),
        "is_bf16_supported": lambda *a, **k: True,
        "_lazy_init": lambda: None,  # CPU torch has no CUDA runtime to initialise
    }
    for name, value in answers.items():
        mock.patch.object(torch.cuda, name, value).start()
    mock.patch.object(torch.version, "cuda", gpu.get("cuda_version", "12.9")).start()
    # The CUDA build's own bindings that the CPU build lacks, which modules bind at import
    # (`_get_current_stream_raw = torch._C._cuda_getCurrentRawStream`): named, never called here.
    for name in cuda_only_bindings:
        if not hasattr(torch._C, name):
            mock.patch.object(torch._C, name, mock.MagicMock(name=f"torch._C.{name}"), create=True).start()


def _stub_ops(namespaces: list[str], roots: list[str]) -> None:
    import torch
    import torch._ops

    get_op = torch._ops._OpNamespace.__getattr__

    def op_or_stub(self, op_name: str):
        try:
            return get_op(self, op_name)
        except AttributeError:
            if self.name in namespaces and not op_name.startswith("__"):
                return mock.MagicMock(name=f"torch.ops.{self.name}.{op_name}")
            raise

    mock.patch.object(torch._ops._OpNamespace, "__getattr__", op_or_stub).start()
    register_fake = torch.library.register_fake

    def fake_or_skip(op, func=None, /, *args, **kwargs):
        """A fake for a stubbed op has no real op to attach to: keep the function, register nothing."""
        if isinstance(op, str) and op.partition("::")[0] in namespaces:
            namespace, _, name = op.partition("::")
            if isinstance(getattr(getattr(torch.ops, namespace), name, None), mock.MagicMock):
                return func if func is not None else (lambda f: f)
        return register_fake(op, func, *args, **kwargs)

    mock.patch.object(torch.library, "register_fake", fake_or_skip).start()
    mock.patch.object(torch.ops, "load_library", lambda path: None).start()

    # sgl_kernel loads its .so files by path (spec_from_file_location): stub those under the roots.
    roots = [os.path.join(os.path.abspath(r), "") for r in roots]
    loader = importlib.machinery.ExtensionFileLoader
    create, execute = loader.create_module, loader.exec_module

    def ours(self) -> bool:
        return any(os.path.abspath(self.path).startswith(r) for r in roots)

    mock.patch.object(loader, "create_module",
                      lambda self, spec: StubModule(spec.name) if ours(self) else create(self, spec)).start()
    mock.patch.object(loader, "exec_module",
                      lambda self, module: None if ours(self) else execute(self, module)).start()


def install(spec: dict, roots: list[str] | None = None) -> None:
    """Pretend the GPU in SPEC; ROOTS (default: $PYTHONPATH, the tree's import roots): folders whose
    compiled extensions load as stubs."""
    for name in spec.get("import_first", []):
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # absent here: whoever needs it fails alike in both trees
    _pretend_torch_cuda(spec["gpu"], spec.get("cuda_only_bindings", []))
    if roots is None:
        roots = [r for r in os.environ.get("PYTHONPATH", "").split(os.pathsep) if r]
    _stub_ops(spec.get("op_namespaces", []), roots)
    sys.meta_path.append(StubFinder(spec.get("stub_modules", [])))
