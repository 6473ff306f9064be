import os

__all__ = ["get_device", "is_cuda"]


def is_cuda():
    return os.environ.get("FIXTURE_DEVICE", "cuda") == "cuda"


def get_device():
    return "cuda" if is_cuda() else "cpu"


def _private_helper():
    return 1
