from sglang.srt.entrypoints.openai.transcription_adapters.base import register_transcription_adapter


@register_transcription_adapter("Whisper")
class WhisperAdapter:
    pass
