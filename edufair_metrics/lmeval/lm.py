"""Facts about an lm-eval LM object that both the harness glue and the model adapter need: the
model inside lm-eval's CachingLM, whether it is an HTTP API model, and a rendered prompt as text.

Contract tests: ``tests/lmeval/test_contracts.py``.
"""

from __future__ import annotations

from lm_eval.api.model import CachingLM
from lm_eval.models.api_models import TemplateAPI


def unwrap(lm):
    """The model inside lm-eval's CachingLM (``--use_cache``), or ``lm`` itself."""
    return lm.lm if isinstance(lm, CachingLM) else lm


def is_api_model(lm) -> bool:
    """An lm-eval HTTP API model (TemplateAPI: local-chat-completions, openai-chat-completions, ...)."""
    return isinstance(unwrap(lm), TemplateAPI)


def is_api_model_class(cls) -> bool:
    return isinstance(cls, type) and issubclass(cls, TemplateAPI)


def prompt_text(ctx) -> str:
    """The rendered prompt as text: a chat string (hf, vllm) or the JSON messages of an API model
    (lm-eval's JsonChatStr, whose ``str()`` is a repr with escapes)."""
    return ctx.prompt if hasattr(ctx, "prompt") else str(ctx)
