"""One vocabulary for everything that can fail: a model call of the dialogue runner (tutor,
student), a judge call, or the judge's answer. Transcripts carry it as ``error_kind``, judgements
as ``kind``; summaries and reports count these fields and never parse text back."""

from __future__ import annotations

import json
import re
from enum import Enum


class FailureKind(str, Enum):
    """Why a call or a label failed. The values are what records store."""

    # transport: the request did not produce a usable response
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    HTTP_429 = "http_429"
    HTTP_5XX = "http_5xx"  # also 408 and 409, which HTTP defines as transient
    HTTP_4XX = "http_4xx"  # the request itself is wrong: never retried
    BAD_BODY = "bad_body"  # the response is not a valid completion (malformed JSON, no choices)
    # the model answered, but not with something usable
    EMPTY_OUTPUT = "empty_output"  # null or blank message content
    PROMPT_TOO_LONG = "prompt_too_long"  # the conversation no longer fits the model's context
    INVALID_JSON = "invalid_json"  # judge: not exactly one JSON object
    WRONG_FIELDS = "wrong_fields"  # judge: missing or extra fields
    WRONG_TYPE = "wrong_type"  # judge: a field of the wrong JSON type
    BAD_VALUE = "bad_value"  # judge: a value outside its allowed set
    INCONSISTENT = "inconsistent"  # judge: N/A where the gate says a mistake was made
    # not a failure of the call
    JUDGE_DISABLED = "judge_disabled"  # every label recorded missing on purpose (--predict_only)
    OTHER = "other"

    def __str__(self) -> str:
        return self.value

    @property
    def retryable(self) -> bool:
        return self not in _NOT_RETRYABLE

    @classmethod
    def parse(cls, value: "str | FailureKind | None") -> "FailureKind | None":
        """A stored value back to the enum (None stays None; an unknown value is OTHER)."""
        if value is None or isinstance(value, cls):
            return value
        try:
            return cls(value)
        except ValueError:
            return cls.OTHER


_NOT_RETRYABLE = frozenset({FailureKind.HTTP_4XX, FailureKind.PROMPT_TOO_LONG, FailureKind.JUDGE_DISABLED})


class CallFailure(Exception):
    """A failed call with its kind; ``detail`` is a short human-readable explanation."""

    def __init__(self, kind: FailureKind, detail: str, raw: str | None = None) -> None:
        super().__init__(f"{kind.value}: {detail}")
        self.kind, self.detail, self.raw = kind, detail, raw


def kind_for_status(code: int) -> FailureKind:
    if code == 429:
        return FailureKind.HTTP_429
    if code >= 500 or code in (408, 409):  # request timeout / conflict: transient by HTTP semantics
        return FailureKind.HTTP_5XX
    return FailureKind.HTTP_4XX


_STATUS_IN_TEXT = re.compile(r"(?:ResponseError|StatusError|status)[:= ]+([45]\d\d)\b")


def classify(exc: BaseException | None) -> FailureKind | None:
    """The kind of an exception raised by a model call: the OpenAI client's, aiohttp's (lm-eval's
    API models), or EduFair's own. By type and status code first; lm-eval re-raises aiohttp
    errors after its retries, sometimes only as text, so the message is the last resort."""
    if exc is None:
        return None
    if isinstance(exc, CallFailure):
        return exc.kind
    kind = getattr(exc, "failure_kind", None)
    if isinstance(kind, FailureKind):
        return kind
    try:
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return FailureKind.TIMEOUT
        if isinstance(exc, openai.APIConnectionError):
            return FailureKind.CONNECTION
        if isinstance(exc, openai.APIStatusError):
            return kind_for_status(exc.status_code)
        if isinstance(exc, openai.APIResponseValidationError):
            return FailureKind.BAD_BODY
    except ImportError:  # pragma: no cover - openai is a dependency
        pass
    if isinstance(exc, json.JSONDecodeError):
        return FailureKind.BAD_BODY
    status = getattr(exc, "status", None)  # aiohttp.ClientResponseError
    if isinstance(status, int) and status >= 400:
        return kind_for_status(status)
    if isinstance(exc, TimeoutError):  # asyncio.TimeoutError is TimeoutError since 3.11
        return FailureKind.TIMEOUT
    name = type(exc).__name__.lower()
    text = f"{name}: {exc}"
    low = text.lower()
    if "timeout" in low or "timed out" in low:
        return FailureKind.TIMEOUT
    m = _STATUS_IN_TEXT.search(text)
    if m:
        return kind_for_status(int(m.group(1)))
    if isinstance(exc, (ConnectionError, OSError)) or any(
        w in low for w in ("disconnect", "connection", "reset by peer", "broken pipe")
    ):
        return FailureKind.CONNECTION
    if any(w in low for w in ("jsondecode", "contenttype", "expecting value", "unterminated", "payload", "choices")):
        return FailureKind.BAD_BODY
    return FailureKind.OTHER


def describe(exc: BaseException) -> str:
    """A short one-line description for records and logs."""
    if isinstance(exc, CallFailure):
        return exc.detail[:500]
    return f"{type(exc).__name__}: {exc}"[:500]
