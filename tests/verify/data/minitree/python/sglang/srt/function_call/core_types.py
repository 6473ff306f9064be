from typing import List, Optional

from pydantic import BaseModel


class ToolCallItem(BaseModel):
    tool_index: int
    name: Optional[str] = None
    parameters: str


class StreamingParseResult(BaseModel):
    normal_text: str = ""
    calls: List[ToolCallItem] = []
