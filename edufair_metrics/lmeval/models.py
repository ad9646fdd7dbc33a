"""lm-eval models as the dialogue runner sees them: build the student through lm-eval's registry,
and wrap any harness LM (tutor or student) in :class:`HarnessModel`, the small interface of
``edufair_metrics.dialogue.generation.ChatModel``.

Contract tests: ``tests/lmeval/test_contracts.py``.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from edufair_metrics.cache import model_identity
from edufair_metrics.errors import EduFairError
from edufair_metrics.lmeval import quiet_request_bars
from edufair_metrics.lmeval.harness import is_api_model, unwrap


def parse_model_args(model_args: dict[str, Any] | str | None) -> dict[str, Any]:
    """``--model_args``-style ``a=1,b=x`` strings or mappings, as lm-eval parses them."""
    if isinstance(model_args, str):
        from lm_eval.utils import simple_parse_args_string

        return simple_parse_args_string(model_args)
    return dict(model_args or {})


def identity(kind: str, model_args: dict[str, Any] | str | None) -> dict[str, Any]:
    return model_identity(kind, parse_model_args(model_args))


def model_class(name: str):
    """The lm-eval model class registered as ``name`` (raises a one-line error when unknown, or when
    its backend package is missing: lm-eval imports backends lazily)."""
    import lm_eval.models  # noqa: F401  (registers the built-in models before get_model)
    from lm_eval.api.registry import get_model

    try:
        return get_model(name)
    except (KeyError, ValueError) as exc:
        raise EduFairError(f"edufair.student.model: unknown lm-eval model '{name}'") from exc
    except ImportError as exc:
        raise EduFairError(f"edufair.student.model: lm-eval model '{name}' needs a package that is not installed ({exc})") from exc


def build_student(cfg: dict[str, Any]):
    """The simulated student, built with lm-eval's registry like any ``--model``."""
    cls = model_class(cfg["model"])
    args = cfg.get("model_args") or {}
    extra = {"batch_size": cfg.get("batch_size", "auto")}
    if isinstance(args, str):
        return cls.create_from_arg_string(args, extra)
    return cls.create_from_arg_obj(dict(args), extra)


def endpoint_of(model_name: str, model_args: dict[str, Any] | str | None) -> str | None:
    """The ``base_url`` of an lm-eval API model (local-chat-completions, ...); None for others."""
    from lm_eval.models.api_models import TemplateAPI

    cls = model_class(model_name)
    if not (isinstance(cls, type) and issubclass(cls, TemplateAPI)):
        return None
    url = parse_model_args(model_args).get("base_url")
    return str(url) if url else None


def prompt_text(ctx) -> str:
    """The rendered prompt as text: a chat string (hf, vllm) or the JSON messages of an API model
    (lm-eval's JsonChatStr, whose ``str()`` is a repr with escapes)."""
    return ctx.prompt if hasattr(ctx, "prompt") else str(ctx)


class HarnessModel:
    """One lm-eval LM (the harness's tutor, or the student) behind the runner's interface."""

    def __init__(self, lm) -> None:
        self.lm = lm  # possibly lm-eval's CachingLM: calls go through it, so --use_cache keeps working
        self.real = unwrap(lm)

    @property
    def is_api(self) -> bool:
        return is_api_model(self.real)

    def render(self, messages: list[dict[str, str]]):
        return self.lm.apply_chat_template(messages, add_generation_prompt=True)

    def prompt_text(self, ctx) -> str:
        return prompt_text(ctx)

    def system_survived(self, ctx, system: str) -> bool:
        """hf/vLLM drop a system message silently when the chat template rejects it."""
        if hasattr(ctx, "prompt"):
            try:
                msgs = json.loads(ctx.prompt)
                return any(m.get("role") == "system" and system in m.get("content", "") for m in msgs)
            except (ValueError, AttributeError, TypeError):
                pass
        return system in prompt_text(ctx)

    def context_overflow(self, ctx, gen_kwargs: dict[str, Any]) -> tuple[int, int, int] | None:
        """(prompt tokens, context length, max_gen_toks) when a local backend (hf, vLLM) would cut
        this prompt from the LEFT, silently dropping the system prompt; None when it fits or the
        backend cannot tell (API servers reject over-long prompts themselves)."""
        if not isinstance(ctx, str) or not hasattr(self.real, "tok_encode"):
            return None
        try:
            max_length = int(self.real.max_length)
        except (AttributeError, TypeError, ValueError):
            return None
        max_gen = int(gen_kwargs.get("max_gen_toks", getattr(self.real, "max_gen_toks", 256)))
        n_tokens = len(self.real.tok_encode(ctx))
        return None if n_tokens <= max_length - max_gen else (n_tokens, max_length, max_gen)

    def generate(self, contexts: list, gen_kwargs: dict[str, Any], docs: list[dict[str, Any]],
                 on_answer: Callable[[str, str], None] | None = None) -> list[str]:
        """One batched ``generate_until``. Raises for the whole batch when lm-eval does (an API
        model whose request failed after its retries); every answer that did arrive was passed to
        ``on_answer(prompt_text, answer)`` first, as soon as it arrived."""
        from lm_eval.api.instance import Instance

        instances = [
            Instance("generate_until", doc, (ctx, dict(gen_kwargs)), 0, ("edufair", j, 1))
            for j, (ctx, doc) in enumerate(zip(contexts, docs))
        ]
        with _AnswerHook(self.real, on_answer), quiet_request_bars():
            return list(self.lm.generate_until(instances))


class _AnswerHook:
    """Temporarily replaces the LM's ``cache_hook`` to see every successful answer (lm-eval
    reports each one there) while still forwarding it, so ``--use_cache`` keeps working."""

    def __init__(self, real_lm, on_answer: Callable[[str, str], None] | None) -> None:
        self.real = real_lm
        self.on_answer = on_answer
        self.orig = None

    def add_partial(self, attr, req, res) -> None:
        if attr == "generate_until" and isinstance(res, str) and self.on_answer is not None:
            try:
                self.on_answer(prompt_text(req[0]), res)
            except (TypeError, IndexError):
                pass
        if self.orig is not None:
            self.orig.add_partial(attr, req, res)

    def __enter__(self):
        self.orig = getattr(self.real, "cache_hook", None)
        self._set(self)
        return self

    def __exit__(self, *exc) -> None:
        self._set(self.orig)

    def _set(self, hook) -> None:
        try:
            self.real.set_cache_hook(hook)
        except AttributeError:  # not an lm-eval LM subclass
            pass
