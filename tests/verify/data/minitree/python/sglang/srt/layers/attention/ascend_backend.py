try:
    import torch_npu
except ImportError:  # only on Ascend machines
    torch_npu = None


class AscendBackend:
    available = torch_npu is not None
