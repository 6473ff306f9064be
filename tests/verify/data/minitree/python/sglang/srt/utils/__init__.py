from sglang.srt.utils.common import *
