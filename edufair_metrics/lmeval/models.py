"""lm-eval models as the dialogue runner sees them: build the student through lm-eval's registry,
and wrap any harness LM (tutor or student) in :class:`HarnessModel`, the small interface of
``edufair_metrics.dialogue.generation.ChatModel``.

Contract tests: ``tests/lmeval/test_contracts.py``.
"""

from __future__ import annotations

import functools
import inspect
import json
from typing import Any, Callable

import lm_eval.models  # noqa: F401  (registers the built-in models before get_model)
from lm_eval.api.instance import Instance
from lm_eval.api.registry import get_model
from lm_eval.utils import simple_parse_args_string

from edufair_metrics.affinity import SESSION_HEADER, session_key_of
from edufair_metrics.cache import model_identity
from edufair_metrics.errors import EduFairError
from edufair_metrics.failures import CallFailure, FailureKind, classify, client_side, describe
from edufair_metrics.lmeval import quiet_request_bars
from edufair_metrics.lmeval.lm import is_api_model, is_api_model_class, prompt_text, unwrap


def parse_model_args(model_args: dict[str, Any] | str | None) -> dict[str, Any]:
    """``--model_args``-style ``a=1,b=x`` strings or mappings, as lm-eval parses them."""
    if isinstance(model_args, str):
        return simple_parse_args_string(model_args)
    return dict(model_args or {})


def identity(kind: str, model_args: dict[str, Any] | str | None) -> dict[str, Any]:
    return model_identity(kind, parse_model_args(model_args))


def model_class(name: str):
    """The lm-eval model class registered as ``name`` (raises a one-line error when unknown, or when
    its backend package is missing: lm-eval imports backends lazily)."""
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
    if not is_api_model_class(model_class(model_name)):
        return None
    url = parse_model_args(model_args).get("base_url")
    return str(url) if url else None


class HarnessModel:
    """One lm-eval LM (the harness's tutor, or the student) behind the runner's interface."""

    def __init__(self, lm, counts=None) -> None:
        self.lm = lm  # possibly lm-eval's CachingLM: calls go through it, so --use_cache keeps working
        self.real = unwrap(lm)
        # failures.CallCounts to record each HTTP attempt of an API model in (lm-eval retries
        # failed requests itself and reports none of it); set by whoever owns the counts.
        self.counts = counts

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

    @property
    def attempts_per_send(self) -> int:
        """HTTP attempts lm-eval makes per request and ``generate_until`` call: an API model
        retries on its own (tenacity ``stop_after_attempt(max_retries)``); others make one."""
        if not self.is_api:
            return 1
        return max(1, int(getattr(self.real, "max_retries", 1) or 1))

    @property
    def single_attempt_sends(self) -> bool:
        """Whether ``generate(..., single_attempt=True)`` makes one HTTP attempt per request (an
        API model: a failed attempt is the request's outcome at once, without lm-eval's retries)."""
        return self.is_api

    def generate(self, contexts: list, gen_kwargs: dict[str, Any], docs: list[dict[str, Any]],
                 on_answer: Callable[[str, str], None] | None = None, retry: bool = False,
                 single_attempt: bool = False) -> list[str]:
        """One batched ``generate_until``. For an API model, a request that still fails after
        lm-eval's retries (or whose response body has no choices) is a :class:`CallFailure` in its
        place and the others are answered (:class:`_IsolateFailures`); otherwise this raises for
        the whole batch when lm-eval does, after every answer that did arrive was passed to
        ``on_answer(prompt_text, answer)``, as soon as it arrived. ``retry``: a request sent again after a failed answer goes past
        lm-eval's CachingLM (``--use_cache``), which stores failed answers such as ``""`` too.
        ``single_attempt`` (API models): a request's first failed attempt is its outcome, without
        lm-eval's own retries (whose back-off sleeps and re-queueing behind the rest of the batch
        make the whole batch wait for one failing request); the caller re-sends it."""
        gen_kwargs = dict(gen_kwargs)
        if "seed" in gen_kwargs and _is_hflm(self.real):
            # HFLM passes generation kwargs to transformers' generate, which has no per-request
            # seed: seed torch's stream for this batch instead (the placebo replicate's sampling).
            import torch

            torch.manual_seed(int(gen_kwargs.pop("seed")))
        instances = [
            Instance("generate_until", doc, (ctx, dict(gen_kwargs)), 0, ("edufair", j, 1))
            for j, (ctx, doc) in enumerate(zip(contexts, docs))
        ]
        lm = self.real if retry else self.lm
        keys = {prompt_text(ctx): session_key_of(doc) for ctx, doc in zip(contexts, docs)}
        with _AnswerHook(self.real, on_answer), _BodyCheck(self.real, self.counts), _SessionHeader(self.real, keys), \
                _AttemptCounter(self.real, self.counts), _IsolateFailures(self.real, single_attempt), quiet_request_bars():
            outs = list(lm.generate_until(instances))
        outputs = [failure_in(out) or out for out in outs]
        self._count_tokens(contexts, outputs)
        return outputs

    def _count_tokens(self, contexts: list, outputs: list) -> None:
        """In-process backends (hf, vLLM) report no usage: count the prompt and answer tokens
        with the model's own tokenizer (API models' counts come from the response bodies,
        :class:`_BodyCheck`). Nothing is counted where the model has no tokenizer."""
        encode = getattr(self.real, "tok_encode", None)
        if self.counts is None or self.is_api or not callable(encode):
            return
        for ctx, out in zip(contexts, outputs):
            try:
                prompt, answer = len(encode(prompt_text(ctx))), len(encode(out)) if isinstance(out, str) else 0
            except Exception:  # noqa: BLE001 - a count is never worth failing a dialogue
                return
            self.counts.tokens(prompt, answer, "tokenizer")


def _is_hflm(real_lm) -> bool:
    """lm-eval's HFLM (or a subclass), without importing torch for other backends."""
    return any(c.__name__ == "HFLM" and c.__module__.startswith("lm_eval.") for c in type(real_lm).__mro__)


class _ShadowedCalls:
    """A wrapper that shadows an API model's ``amodel_call`` / ``model_call`` with instance
    attributes while active; leaving removes them, so the class's own methods are seen again."""

    real: object
    active: bool

    def __exit__(self, *exc) -> None:
        if self.active:
            self.real.__dict__.pop("amodel_call", None)
            self.real.__dict__.pop("model_call", None)


class _AttemptCounter(_ShadowedCalls):
    """Counts every HTTP attempt of an API model, and each failed one by kind, while EduFair's
    calls run: lm-eval wraps ``amodel_call`` / ``model_call`` in its own tenacity retry when a
    batch starts, so instance attributes installed here are what each attempt calls."""

    def __init__(self, real_lm, counts) -> None:
        self.real, self.counts = real_lm, counts
        self.active = counts is not None and is_api_model(real_lm)

    def _record(self, exc: BaseException | None) -> None:
        self.counts.add(http_attempts=1)
        if exc is None:
            return
        ended_by_client = client_side(exc)  # never counted as the endpoint's failure
        if ended_by_client == "cancelled":
            self.counts.add(cancelled=1)
        elif ended_by_client == "timeout":
            self.counts.add(client_timeouts=1)
        else:
            self.counts.http_attempt_failed(classify(exc) or FailureKind.OTHER)

    def __enter__(self):
        if not self.active:
            return self
        real_async, real_sync = self.real.amodel_call, self.real.model_call

        async def amodel_call(*args, **kwargs):
            try:
                out = await real_async(*args, **kwargs)
            except BaseException as exc:
                self._record(exc)
                raise
            self._record(None)
            return out

        def model_call(*args, **kwargs):
            try:
                out = real_sync(*args, **kwargs)
            except BaseException as exc:
                self._record(exc)
                raise
            self._record(None)
            return out

        self.real.amodel_call, self.real.model_call = amodel_call, model_call  # shadow the methods
        return self


class _SessionHeader(_ShadowedCalls):
    """While EduFair's calls run, each request of an API model carries its dialogue's routing key
    in the :data:`~edufair_metrics.affinity.SESSION_HEADER` header, so that a router keeps the
    dialogue on one replica (``edufair_metrics.affinity``). lm-eval sends a batched call's requests
    through one aiohttp session with the model's fixed ``header``: each attempt of ``amodel_call``
    (installed as an instance attribute, the innermost of EduFair's wrappers) gets that session
    wrapped so that its ``post`` adds the request's own key, found by the request's prompt. The
    sequential path (``num_concurrent`` 1: ``model_call``, one request per call) sends the key
    in the model's headers for that call. Headers only: no request body changes."""

    def __init__(self, real_lm, keys: dict[str, str | None]) -> None:
        self.real = real_lm
        self.keys = {p: k for p, k in keys.items() if k is not None}
        self.active = bool(self.keys) and is_api_model(real_lm) and hasattr(real_lm, "amodel_call")

    def _key(self, messages) -> str | None:
        try:
            return self.keys.get(prompt_text(messages[0])) if messages else None
        except (TypeError, IndexError, KeyError):
            return None

    def __enter__(self):
        if not self.active:
            return self
        real_async, real_sync = self.real.amodel_call, self.real.model_call
        real = self.real

        async def amodel_call(*args, **kwargs):
            key = self._key(kwargs.get("messages"))
            if key is not None and kwargs.get("session") is not None:
                kwargs["session"] = _KeyedSession(kwargs["session"], key)
            return await real_async(*args, **kwargs)

        def model_call(*args, **kwargs):
            key = self._key(kwargs.get("messages"))
            if key is None:
                return real_sync(*args, **kwargs)
            # TemplateAPI.header: a cached_property in lm-eval 0.4.13 (the instance's own entry
            # wins), a property over ``_header`` in older releases
            slot = "header" if isinstance(inspect.getattr_static(type(real), "header", None),
                                          functools.cached_property) else "_header"
            had, before = slot in real.__dict__, real.__dict__.get(slot)
            real.__dict__[slot] = {**real.header, SESSION_HEADER: key}
            try:
                return real_sync(*args, **kwargs)
            finally:
                if had:
                    real.__dict__[slot] = before
                else:
                    real.__dict__.pop(slot, None)

        self.real.amodel_call, self.real.model_call = amodel_call, model_call  # shadow the methods
        return self


class _KeyedSession:
    """An aiohttp ``ClientSession`` whose ``post`` adds one routing-key header; all else is the
    session's own."""

    def __init__(self, session, key: str) -> None:
        self._session, self._key = session, key

    def post(self, *args, headers=None, **kwargs):
        return self._session.post(*args, headers={**(headers or {}), SESSION_HEADER: self._key}, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._session, name)


# ---- one failed request of a batched API call fails only itself ---------------------------------
# lm-eval's API models send a batch's requests concurrently (asyncio.gather) and abort the whole
# batch when one request still fails after its retries, discarding the answers still in flight.
# _IsolateFailures answers such a request's LAST attempt with this mark instead of raising, so that
# the batch completes; HarnessModel.generate turns the mark back into the request's CallFailure. A
# mark can never be a real answer: it starts with a NUL byte, and answers with NUL bytes are
# rejected (bad_body) anyway.
FAILED_MARK = "\x00edufair-failed\x00"


def failure_mark(exc: BaseException) -> str:
    return f"{FAILED_MARK}{(classify(exc) or FailureKind.OTHER).value}\x00{describe(exc)}"


def failure_in(out: Any) -> CallFailure | None:
    """The CallFailure a batched call's output stands for (see :data:`FAILED_MARK`), or None."""
    if not (isinstance(out, str) and out.startswith(FAILED_MARK)):
        return None
    kind, _, detail = out[len(FAILED_MARK):].partition("\x00")
    return CallFailure(FailureKind.parse(kind) or FailureKind.OTHER, detail or "request failed")


_ABSENT = object()


class _IsolateFailures:
    """While EduFair's calls run, each request of an API model's batched call fails alone: lm-eval
    wraps ``amodel_call`` in its tenacity retry (``stop_after_attempt(max_retries)``) when a batch
    starts, so the instance attribute installed here is what each attempt calls. An attempt that
    raises is re-raised (lm-eval retries it) unless it is the request's last one, which returns
    :data:`FAILED_MARK` answers instead. Requests are told apart by their ``messages`` chunk, the
    same object on every attempt of one request."""

    def __init__(self, real_lm, single_attempt: bool = False) -> None:
        self.real = real_lm
        self.single_attempt = single_attempt  # the first failed attempt is the request's last
        self.active = is_api_model(real_lm) and hasattr(real_lm, "amodel_call")

    def __enter__(self):
        if not self.active:
            return self
        self.previous = self.real.__dict__.get("amodel_call", _ABSENT)
        inner = self.real.amodel_call
        last = 1 if self.single_attempt else max(1, int(getattr(self.real, "max_retries", 1) or 1))
        attempts: dict[int, int] = {}

        async def amodel_call(*args, **kwargs):
            messages = kwargs.get("messages")
            key = id(messages)
            attempts[key] = attempts.get(key, 0) + 1
            try:
                return await inner(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the request's own outcome (CancelledError passes)
                if attempts[key] < last:
                    raise
                return [failure_mark(exc)] * max(1, len(messages or ()))

        self.real.amodel_call = amodel_call  # instance attribute: shadows the method (or the counter's)
        return self

    def __exit__(self, *exc) -> None:
        if self.active:
            if self.previous is _ABSENT:
                self.real.__dict__.pop("amodel_call", None)
            else:
                self.real.amodel_call = self.previous


class _BodyCheck:
    """While EduFair's calls run, an API model's response bodies are checked before lm-eval parses
    them: lm-eval turns a body without ``choices`` (or with an empty or malformed list) into ``""``
    without raising, indistinguishable from a null answer. Here it raises a ``bad_body``
    :class:`CallFailure` instead, inside lm-eval's own retry loop (which sends it again), and the
    runner classifies what still fails as ``bad_body``, not ``empty_output``. Each body's OpenAI
    ``usage`` (prompt and completion tokens) is added to the role's counts on the way."""

    def __init__(self, real_lm, counts=None) -> None:
        self.real, self.counts = real_lm, counts
        self.active = callable(getattr(real_lm, "parse_generations", None)) and is_api_model(real_lm)

    def __enter__(self):
        if self.active:
            original = self.real.parse_generations

            def parse_generations(outputs, **kwargs):
                count_usage(outputs, self.counts)  # a body that is then refused still cost its tokens
                check_completion_body(outputs)
                return original(outputs=outputs, **kwargs)

            self.real.parse_generations = parse_generations  # instance attribute: shadows the method
        return self

    def __exit__(self, *exc) -> None:
        if self.active:
            self.real.__dict__.pop("parse_generations", None)


def count_usage(outputs: Any, counts) -> None:
    """Add the ``usage`` of each response body (OpenAI's ``prompt_tokens`` / ``completion_tokens``)
    to ``counts``; a body without it is not counted (its tokens are missing)."""
    if counts is None:
        return
    for body in outputs if isinstance(outputs, list) else [outputs]:
        usage = body.get("usage") if isinstance(body, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int) \
                and isinstance(usage.get("completion_tokens"), int):
            counts.tokens(usage["prompt_tokens"], usage["completion_tokens"], "usage")


def check_completion_body(outputs: Any) -> None:
    """Raise a ``bad_body`` CallFailure unless every body has a non-empty ``choices`` list of
    objects, each with a ``message`` object (chat) or a ``text`` (completions). A null
    ``message.content`` is not a bad body: it is an empty answer."""
    if outputs == []:
        raise CallFailure(FailureKind.BAD_BODY, "response body is an empty list, not a completion")
    for body in outputs if isinstance(outputs, list) else [outputs]:
        if not isinstance(body, dict):
            raise CallFailure(FailureKind.BAD_BODY, f"response body is {type(body).__name__}, not a JSON object")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            keys = ", ".join(sorted(map(str, body))[:8]) or "none"
            raise CallFailure(FailureKind.BAD_BODY, f"response body has no choices (keys: {keys})")
        for choice in choices:
            if not isinstance(choice, dict) or not (isinstance(choice.get("message"), dict) or "text" in choice):
                raise CallFailure(FailureKind.BAD_BODY, "response choice has neither a message nor a text")


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
