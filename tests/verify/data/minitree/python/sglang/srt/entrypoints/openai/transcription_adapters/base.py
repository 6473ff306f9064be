_ADAPTER_REGISTRY = {}
_DEFAULT_ADAPTER_KEY = "Whisper"


def register_transcription_adapter(key):
    def decorator(cls):
        _ADAPTER_REGISTRY[key] = cls
        return cls

    return decorator


def resolve_adapter(architectures):
    for arch in architectures or []:
        for key, adapter_cls in _ADAPTER_REGISTRY.items():
            if key in arch:
                return adapter_cls()
    default_cls = _ADAPTER_REGISTRY.get(_DEFAULT_ADAPTER_KEY)
    if default_cls is None:
        raise RuntimeError("No transcription adapters registered.")
    return default_cls()
