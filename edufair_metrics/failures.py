"""One vocabulary for everything that can fail: a model call of the dialogue runner (tutor,
student), a judge call, or the judge's answer. Transcripts carry it as ``error_kind``, judgements
as ``kind``; summaries and reports count these fields and never parse text back."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, Mapping


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
    EMPTY_VISIBLE_TURN = "empty_visible_turn"  # only reasoning (e.g. a <think> block cut off by the token limit)
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


def client_side(exc: BaseException) -> str | None:
    """``"cancelled"`` when the client cancelled the attempt (asyncio cancellation, Ctrl-C, the
    interpreter shutting down), ``"timeout"`` when its own deadline ended it, else None (the
    endpoint's outcome)."""
    import asyncio
    import concurrent.futures

    if isinstance(exc, (asyncio.CancelledError, concurrent.futures.CancelledError, KeyboardInterrupt, GeneratorExit)):
        return "cancelled"
    if not isinstance(exc, Exception):
        return "cancelled"  # SystemExit and the like: the process is ending
    return "timeout" if classify(exc) is FailureKind.TIMEOUT else None


def describe(exc: BaseException) -> str:
    """A short one-line description for records and logs."""
    if isinstance(exc, CallFailure):
        return exc.detail[:500]
    return f"{type(exc).__name__}: {exc}"[:500]


# ---- per-role call counts ----------------------------------------------------------------------

ROLES = ("tutor", "student", "judge")


@dataclass
class CallCounts:
    """How one role's calls went in a run, so a reader can see how flaky the endpoints were, also
    when every failure was absorbed by a retry. A *request* is what one dialogue (or, for the
    judge, one tutor turn) asked for; identical requests of the same turn are sent once as one
    *distinct* request and its answer fanned out (the others are *coalesced*).

    - ``requests`` = ``cached`` + ``coalesced`` + ``distinct``;
    - ``sends``: how often distinct requests were sent (EduFair's attempts; each may hide lm-eval's
      own HTTP retries for the tutor and student, which lm-eval does not report);
    - ``retried``: distinct requests sent again after a failed attempt, ``recovered`` of them
      finally answered;
    - ``failed``: distinct requests that finally failed (``failed_by_kind``), including those never
      sent because they cannot succeed (``prompt_too_long``);
    - ``failed_attempts_by_kind``: every failed attempt, including those a retry recovered;
    - ``http_failed_by_kind``: the endpoint's failed HTTP attempts (API models); the attempts the
      client ended itself are ``client_timeouts`` and ``cancelled``, never the endpoint's failures.

    Cost (where the backend tells it): ``prompt_tokens`` / ``completion_tokens`` summed over the
    ``token_calls`` model answers whose token counts are known, from ``token_source``: ``usage``
    (the response's OpenAI ``usage``: the judge, lm-eval's API models), ``tokenizer`` (counted by
    EduFair with the model's own tokenizer: hf, vLLM) or ``mixed``; ``None`` when no answer had
    them. ``wall_s``: seconds this role's calls were in flight (batched calls count once; the
    judge's concurrent requests as the wall time of the judging). Cached and coalesced requests
    cost nothing. Counts written before these fields existed read as 0 / None (unknown).
    """

    role: str
    requests: int = 0
    cached: int = 0
    coalesced: int = 0
    distinct: int = 0
    sends: int = 0
    retried: int = 0
    recovered: int = 0
    failed: int = 0
    failed_by_kind: dict[str, int] = field(default_factory=dict)
    failed_attempts_by_kind: dict[str, int] = field(default_factory=dict)
    # API models only: every HTTP attempt, including lm-eval's own silent retries inside a send;
    # the failed ones by kind are the endpoint's failures (an error status, a dropped connection, a
    # bad body). Attempts the client itself ended are counted apart: ``client_timeouts`` (its own
    # deadline passed: a slow server or a CPU-starved client, which no count can tell apart) and
    # ``cancelled`` (Ctrl-C, the run's shutdown: never the endpoint's failure)
    http_attempts: int = 0
    http_failed_by_kind: dict[str, int] = field(default_factory=dict)
    client_timeouts: int = 0
    cancelled: int = 0
    # cost: tokens where the backend reports them, and the time the role's calls took
    prompt_tokens: int = 0
    completion_tokens: int = 0
    token_calls: int = 0
    token_source: str | None = None
    wall_s: float = 0.0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()  # the judge counts from several worker threads

    def add(self, **deltas: int) -> None:
        with self._lock:
            for name, n in deltas.items():
                setattr(self, name, getattr(self, name) + n)

    def attempt_failed(self, kind: "FailureKind | str") -> None:
        with self._lock:
            _bump(self.failed_attempts_by_kind, str(kind))

    def http_attempt_failed(self, kind: "FailureKind | str") -> None:
        with self._lock:
            _bump(self.http_failed_by_kind, str(getattr(kind, "value", kind)))

    def tokens(self, prompt: int, completion: int, source: str) -> None:
        """One model answer's token counts (``source``: usage | tokenizer)."""
        with self._lock:
            self.prompt_tokens += int(prompt)
            self.completion_tokens += int(completion)
            self.token_calls += 1
            self.token_source = _merge_source(self.token_source, source)

    def timed(self, seconds: float) -> None:
        with self._lock:
            self.wall_s += float(seconds)

    def final_failure(self, kind: "FailureKind | str") -> None:
        with self._lock:
            self.failed += 1
            _bump(self.failed_by_kind, str(kind))

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "role": self.role, "requests": self.requests, "cached": self.cached, "coalesced": self.coalesced,
                "distinct": self.distinct, "sends": self.sends, "retried": self.retried,
                "recovered": self.recovered, "failed": self.failed,
                "failed_by_kind": dict(sorted(self.failed_by_kind.items())),
                "failed_attempts_by_kind": dict(sorted(self.failed_attempts_by_kind.items())),
                "http_attempts": self.http_attempts,
                "http_failed_by_kind": dict(sorted(self.http_failed_by_kind.items())),
                "client_timeouts": self.client_timeouts, "cancelled": self.cancelled,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "token_calls": self.token_calls, "token_source": self.token_source,
                "wall_s": round(self.wall_s, 3),
            }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CallCounts":
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        out = cls(**known)
        out.failed_by_kind = dict(out.failed_by_kind)
        out.failed_attempts_by_kind = dict(out.failed_attempts_by_kind)
        out.http_failed_by_kind = dict(out.http_failed_by_kind)
        out.wall_s = float(out.wall_s or 0.0)
        return out

    def merged(self, other: "CallCounts") -> "CallCounts":
        """The sum of two counts of the same role (e.g. over the tasks of a run)."""
        a, b = self.to_dict(), other.to_dict()
        out = {k: a[k] + b[k] for k in a if isinstance(a[k], int)}
        out["role"] = self.role
        out["wall_s"] = a["wall_s"] + b["wall_s"]
        out["token_source"] = _merge_source(a["token_source"], b["token_source"])
        for name in ("failed_by_kind", "failed_attempts_by_kind", "http_failed_by_kind"):
            merged = dict(a[name])
            for kind, n in b[name].items():
                merged[kind] = merged.get(kind, 0) + n
            out[name] = dict(sorted(merged.items()))
        return CallCounts.from_dict(out)


def _merge_source(a: str | None, b: str | None) -> str | None:
    return a if b is None or a == b else b if a is None else "mixed"


def _bump(counts: dict[str, int], key: str, n: int = 1) -> None:
    counts[key] = counts.get(key, 0) + n


def sum_call_counts(counts: Iterable["CallCounts | Mapping[str, Any]"]) -> list[CallCounts]:
    """One CallCounts per role (tutor, student, judge first, then any other), summed."""
    by_role: dict[str, CallCounts] = {}
    for c in counts:
        c = c if isinstance(c, CallCounts) else CallCounts.from_dict(c)
        by_role[c.role] = by_role[c.role].merged(c) if c.role in by_role else CallCounts.from_dict(c.to_dict())
    order = [r for r in ROLES if r in by_role] + sorted(r for r in by_role if r not in ROLES)
    return [by_role[r] for r in order]
