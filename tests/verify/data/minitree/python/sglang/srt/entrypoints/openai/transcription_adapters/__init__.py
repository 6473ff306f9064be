from sglang.srt.entrypoints.openai.transcription_adapters.base import resolve_adapter  # noqa: F401
from sglang.srt.entrypoints.openai.transcription_adapters.whisper import WhisperAdapter  # noqa: F401
