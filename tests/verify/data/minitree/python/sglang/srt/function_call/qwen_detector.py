from sglang.srt.function_call.deepseekv3_detector import DeepSeekV3Detector


class QwenDetector(DeepSeekV3Detector):
    pass
