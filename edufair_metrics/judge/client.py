"""Calling the judge endpoint for one tutor turn: the OpenAI client, bounded retries with
backoff and jitter, the call cache, and a missing label (with its failure kind) when all fails."""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any

import tenacity

from edufair_metrics.affinity import SESSION_HEADER, session_key_of
from edufair_metrics.cache import CallCache, storable_excerpt, unstorable_text
from edufair_metrics.failures import CallFailure, FailureKind, classify, describe
from edufair_metrics.judge.parse import JudgeOutputError, parse_judge_output
from edufair_metrics.judge.prompt import build_messages
from edufair_metrics.judge.settings import JudgeSettings, judge_api_key
from edufair_metrics.records import JUDGE_MISSING, JUDGE_OK, Transcript, TurnJudgement

log = logging.getLogger("edufair_metrics.judge")

class _Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.failed_attempts: dict[str, int] = {}
        # token counts from the responses' ``usage`` (every answered request, also one whose
        # answer did not parse: it cost tokens), and how many responses carried it
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.token_calls = 0
        self.counts = None  # the judge's CallCounts, counted into as each response arrives

    def request(self) -> None:
        with self.lock:
            self.requests += 1

    def usage(self, resp) -> None:
        usage = getattr(resp, "usage", None)
        prompt, completion = getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
        if not isinstance(prompt, int) or not isinstance(completion, int):
            return  # the server reported no usage: counted as missing
        with self.lock:
            self.prompt_tokens += prompt
            self.completion_tokens += completion
            self.token_calls += 1
        if self.counts is not None:
            self.counts.tokens(prompt, completion, "usage")

    def failed(self, kind: str) -> None:
        with self.lock:
            self.failed_attempts[kind] = self.failed_attempts.get(kind, 0) + 1


def _call_once(client, settings: JudgeSettings, messages: list[dict[str, str]],
               stats: _Stats | None = None, session: str | None = None) -> tuple[str, str | None]:
    """One HTTP attempt. ``session``: the dialogue's routing key, sent as a header (a router keeps
    the dialogue's judge requests, which share their prefix, on one replica; edufair_metrics.affinity)."""
    kwargs: dict[str, Any] = {
        "model": settings.model,
        # The messages travel in ``extra_body``: the client's typed transform of every message
        # (about a third of its CPU per call) is skipped, and the JSON body on the wire is the
        # same -- "messages" keeps its place and takes extra_body's value (tests/judge/test_judge_body.py).
        "messages": [],
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
    }
    rf = settings.response_format()
    if rf is not None:
        kwargs["response_format"] = rf
    if settings.reasoning_effort is not None:
        kwargs["reasoning_effort"] = settings.reasoning_effort
    kwargs["extra_body"] = {"messages": messages, **(settings.extra_body or {})}
    if session is not None:
        kwargs["extra_headers"] = {SESSION_HEADER: session}
    try:
        resp = client.chat.completions.create(**kwargs)
    except Exception as exc:  # noqa: BLE001 - classified, retried or reported
        kind = classify(exc) or FailureKind.OTHER
        detail = f"HTTP {exc.status_code}" if hasattr(exc, "status_code") else describe(exc)
        raise CallFailure(kind, detail) from exc
    if stats is not None:
        stats.usage(resp)
    choices = getattr(resp, "choices", None)
    if not choices:
        raise CallFailure(FailureKind.BAD_BODY, "no choices in the response")
    choice = choices[0]
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None) if message is not None else None
    return content if isinstance(content, str) else "", getattr(choice, "finish_reason", None)


def judge_turn(
    client,
    settings: JudgeSettings,
    transcript: Transcript,
    turn_index: int,
    cache: CallCache | None = None,
    stats: _Stats | None = None,
    sleep=time.sleep,
) -> TurnJudgement:
    """Label one tutor turn: cache, then up to 1 + max_retries attempts with backoff."""
    messages = build_messages(transcript, turn_index)
    session = session_key_of(transcript)
    key_obj = {"namespace": "judge", **settings.output_identity(), "messages": messages}
    if cache is not None:
        hit = cache.get(key_obj)
        if isinstance(hit, dict) and isinstance(hit.get("content"), str):
            try:
                labels = parse_judge_output(hit["content"])
                return TurnJudgement(turn_index, JUDGE_OK, labels=labels, raw=hit["content"], attempts=0, cached=True)
            except JudgeOutputError:
                pass  # parser changed since: call again
    attempt_count = {"n": 0}
    last_raw: dict[str, str | None] = {"raw": None}

    def attempt() -> tuple[str, str | None, dict[str, Any]]:
        attempt_count["n"] += 1
        if stats:
            stats.request()
        try:
            content, finish = _call_once(client, settings, messages, stats, session)
            unstorable = unstorable_text(content)
            if unstorable is not None:  # a lone surrogate, NUL bytes, megabytes: a bad body, retried
                last_raw["raw"] = storable_excerpt(content)
                raise CallFailure(FailureKind.BAD_BODY, unstorable, raw=last_raw["raw"])
            last_raw["raw"] = content
            try:
                return content, finish, parse_judge_output(content)
            except JudgeOutputError as exc:
                suffix = f" (finish_reason={finish})" if finish not in (None, "stop") else ""
                raise CallFailure(exc.kind, exc.detail + suffix, raw=content) from None
        except CallFailure as err:
            if stats:
                stats.failed(err.kind.value)
            raise

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(1 + settings.max_retries),
        # exponential backoff base * 2^(n-1), capped, with "equal jitter" (half fixed, half random)
        wait=_EqualJitter(settings.backoff_base_s, settings.backoff_max_s),
        retry=tenacity.retry_if_exception(lambda e: isinstance(e, CallFailure) and e.kind.retryable),
        sleep=sleep,
        reraise=True,
    )
    try:
        content, finish, labels = retrying(attempt)
    except CallFailure as last:
        n = attempt_count["n"]
        return TurnJudgement(
            turn_index,
            JUDGE_MISSING,
            labels=None,
            reason=f"{last.detail} (after {n} attempt{'s' if n != 1 else ''})",
            kind=last.kind.value,
            raw=last_raw["raw"],
            attempts=n,
        )
    if cache is not None:
        cache.put(key_obj, {"content": content, "finish_reason": finish})
    return TurnJudgement(turn_index, JUDGE_OK, labels=labels, raw=content, attempts=attempt_count["n"])


class _EqualJitter(tenacity.wait.wait_base):
    """Wait ``d/2 + U(0, d/2)`` before attempt n+1, with ``d = min(max_s, base_s * 2^(n-1))``."""

    def __init__(self, base_s: float, max_s: float) -> None:
        self.base_s, self.max_s = base_s, max_s

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        delay = min(self.max_s, self.base_s * (2 ** (retry_state.attempt_number - 1)))
        return random.uniform(delay / 2, delay)


def make_client(settings: JudgeSettings):
    import openai

    return openai.OpenAI(base_url=settings.base_url, api_key=judge_api_key(), max_retries=0, timeout=settings.timeout_s)
