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


def is_hflm_class(cls) -> bool:
    """lm-eval's HFLM (``--model hf``) or a subclass, without importing torch for other backends."""
    return isinstance(cls, type) and any(c.__name__ == "HFLM" and c.__module__.startswith("lm_eval.") for c in cls.__mro__)


def batch_size_of(lm) -> str | None:
    """The batch size an LM runs with, as given: ``"8"``, ``"auto"``, ``"auto:4"`` (HFLM keeps
    ``auto:N`` as ``batch_size_per_gpu="auto"`` and ``batch_schedule=N``); None when unknown."""
    real = unwrap(lm)
    size = getattr(real, "batch_size_per_gpu", None)
    if size is None:
        size = getattr(real, "batch_size", None)
    if size is None:
        return None
    text = str(size)
    schedule = getattr(real, "batch_schedule", 1)
    if text == "auto" and schedule not in (None, 1, 1.0):
        text = f"auto:{int(schedule) if float(schedule).is_integer() else schedule}"
    return text


def is_auto_batch(batch_size: object) -> bool:
    """``auto`` / ``auto:N``: HFLM then measures the batch size with a collective across processes."""
    return str(batch_size).strip().lower().startswith("auto")
