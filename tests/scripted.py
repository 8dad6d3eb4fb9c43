"""A chat generator that replies from a script: a stand-in for an LLM, not for any Haystack part.

It is a real Haystack component, so pipelines, AnswerBuilder and Agent run unchanged around it.
"""

from typing import Any

from haystack import component
from haystack.dataclasses import ChatMessage


@component
class ScriptedChatGenerator:
    def __init__(self, replies: list[str], finish_reason: str = "stop") -> None:
        self.replies = replies
        self.finish_reason = finish_reason

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], tools: Any = None, **kwargs: Any) -> dict[str, Any]:
        return {
            "replies": [
                ChatMessage.from_assistant(reply, meta={"finish_reason": self.finish_reason}) for reply in self.replies
            ]
        }
