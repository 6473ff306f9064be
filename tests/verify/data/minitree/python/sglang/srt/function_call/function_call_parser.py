from sglang.srt.function_call.deepseekv3_detector import DeepSeekV3Detector
from sglang.srt.function_call.qwen_detector import QwenDetector


class FunctionCallParser:
    ToolCallParserEnum = {
        "deepseekv3": DeepSeekV3Detector,
        "qwen": QwenDetector,
    }

    def __init__(self, tools, tool_call_parser):
        detector = self.ToolCallParserEnum.get(tool_call_parser)
        if detector is None:
            raise ValueError(f"Unsupported tool_call_parser: {tool_call_parser}")
        self.detector, self.tools = detector(), tools

    def has_tool_call(self, text):
        return self.detector.has_tool_call(text)

    def parse_non_stream(self, text):
        result = self.detector.detect_and_parse(text, self.tools)
        return result.normal_text, result.calls

    def parse_stream_chunk(self, chunk):
        result = self.detector.parse_streaming_increment(chunk, self.tools)
        return result.normal_text, result.calls
