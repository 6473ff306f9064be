from typing import Dict, List, Optional

from pydantic import BaseModel


class Function(BaseModel):
    name: str
    description: Optional[str] = None
    parameters: Optional[Dict] = None


class Tool(BaseModel):
    type: str = "function"
    function: Function


class ChatCompletionRequest(BaseModel):
    model: str
    messages: List[Dict]
    temperature: float = 1.0
