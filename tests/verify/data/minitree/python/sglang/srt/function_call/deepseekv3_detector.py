import json

from sglang.srt.function_call.core_types import StreamingParseResult, ToolCallItem

BEGIN, SEP, END = "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>"


class DeepSeekV3Detector:
    def __init__(self):
        self._buffer = ""

    def has_tool_call(self, text):
        return BEGIN in text

    def detect_and_parse(self, text, tools):
        normal, _, rest = text.partition(BEGIN)
        calls = []
        while rest:
            body, _, rest = rest.partition(END)
            name, _, args = body.partition(SEP)
            calls.append(ToolCallItem(tool_index=len(calls), name=name, parameters=json.dumps(json.loads(args))))
            _, _, rest = rest.partition(BEGIN)
        return StreamingParseResult(normal_text=normal, calls=calls)

    def parse_streaming_increment(self, chunk, tools):
        self._buffer += chunk
        if BEGIN not in self._buffer:
            text, self._buffer = self._buffer, ""
            return StreamingParseResult(normal_text=text)
        if END not in self._buffer:
            return StreamingParseResult()
        result, self._buffer = self.detect_and_parse(self._buffer, tools), ""
        return result
