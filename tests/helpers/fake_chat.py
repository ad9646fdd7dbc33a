"""The shared base of the runner tests' in-process fakes of ``dialogue.generation.ChatModel``:
prompts are the JSON of the messages (like lm-eval's API models), nothing overflows, the system
prompt always survives. Subclasses define ``generate`` and override what they test."""

from __future__ import annotations

import json


class JsonChatModel:
    is_api = False

    def render(self, messages):
        return json.dumps(messages, ensure_ascii=False)

    def prompt_text(self, ctx) -> str:
        return ctx

    def system_survived(self, ctx, system: str) -> bool:
        return True

    def context_overflow(self, ctx, gen_kwargs):
        return None
