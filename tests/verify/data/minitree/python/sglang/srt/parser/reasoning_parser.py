class DeepSeekR1Detector:
    def __init__(self, stream_reasoning=True, force_reasoning=True):
        self.in_reasoning, self.stream_reasoning, self._buffer = force_reasoning, stream_reasoning, ""

    def detect_and_parse(self, text):
        text = text.replace("<think>", "")
        if "</think>" not in text:
            return text, ""
        reasoning, _, normal = text.partition("</think>")
        return reasoning, normal

    def parse_streaming_increment(self, chunk):
        self._buffer += chunk
        if "</think>" in self._buffer or "<" not in self._buffer:
            done, self._buffer = self._buffer, ""
            if self.in_reasoning and "</think>" in done:
                self.in_reasoning = False
                reasoning, _, normal = done.replace("<think>", "").partition("</think>")
                return reasoning, normal
            return (done, "") if self.in_reasoning else ("", done)
        return "", ""


class Qwen3Detector(DeepSeekR1Detector):
    pass


class ReasoningParser:
    DetectorMap = {"deepseek-r1": DeepSeekR1Detector, "qwen3": Qwen3Detector}

    def __init__(self, model_type=None, stream_reasoning=True, force_reasoning=None, request=None):
        detector = self.DetectorMap.get((model_type or "").lower())
        if detector is None:
            raise ValueError(f"Unsupported model type: {model_type}")
        kwargs = {"stream_reasoning": stream_reasoning}
        if force_reasoning is not None:
            kwargs["force_reasoning"] = force_reasoning
        self.detector = detector(**kwargs)

    def parse_non_stream(self, text):
        return self.detector.detect_and_parse(text)

    def parse_stream_chunk(self, chunk):
        return self.detector.parse_streaming_increment(chunk)

    def parse_stream_end(self):
        rest, self.detector._buffer = self.detector._buffer, ""
        return (rest, "") if self.detector.in_reasoning else ("", rest)
