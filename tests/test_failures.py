"""``failures``: one vocabulary for what can fail. ``classify`` maps the exceptions of the OpenAI
client, of aiohttp (lm-eval's API models) and of EduFair itself to a :class:`FailureKind`."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json

import aiohttp
import openai
import pytest
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from edufair_metrics.failures import CallCounts, CallFailure, FailureKind, classify, describe, kind_for_status
from edufair_metrics.report.failures import call_counts_markdown

# the HTTP library of the installed openai client (openai>=3 ships it as httpx2)
httpx = importlib.import_module("httpx2" if importlib.util.find_spec("httpx2") else "httpx")

URL_ = "http://127.0.0.1:9/v1/chat/completions"


def _request():
    return httpx.Request("POST", URL_)


def status_error(code: int) -> openai.APIStatusError:
    return openai.APIStatusError(f"Error code: {code}", response=httpx.Response(code, request=_request()), body=None)


def aiohttp_error(code: int) -> aiohttp.ClientResponseError:
    info = aiohttp.RequestInfo(URL(URL_), "POST", CIMultiDictProxy(CIMultiDict()))
    return aiohttp.ClientResponseError(info, (), status=code, message="from the server")


STATUS_KINDS = [
    (400, FailureKind.HTTP_4XX),
    (404, FailureKind.HTTP_4XX),
    (408, FailureKind.HTTP_5XX),  # request timeout: transient
    (409, FailureKind.HTTP_5XX),  # conflict: transient
    (429, FailureKind.HTTP_429),
    (500, FailureKind.HTTP_5XX),
    (503, FailureKind.HTTP_5XX),
]


@pytest.mark.parametrize("code,kind", STATUS_KINDS)
def test_openai_status_errors_by_code(code, kind):
    assert classify(status_error(code)) is kind
    assert kind_for_status(code) is kind


def test_openai_timeout_is_not_a_connection_error():
    # APITimeoutError subclasses APIConnectionError: the order of the checks matters
    assert classify(openai.APITimeoutError(request=_request())) is FailureKind.TIMEOUT
    assert classify(openai.APIConnectionError(request=_request())) is FailureKind.CONNECTION


def test_openai_subclasses_keep_their_status():
    err = openai.RateLimitError("slow down", response=httpx.Response(429, request=_request()), body=None)
    assert classify(err) is FailureKind.HTTP_429
    err = openai.InternalServerError("oops", response=httpx.Response(502, request=_request()), body=None)
    assert classify(err) is FailureKind.HTTP_5XX


def test_openai_response_validation_is_a_bad_body():
    err = openai.APIResponseValidationError(httpx.Response(200, request=_request()), body={"no": "choices"})
    assert classify(err) is FailureKind.BAD_BODY


@pytest.mark.parametrize("code,kind", [(429, FailureKind.HTTP_429), (502, FailureKind.HTTP_5XX),
                                       (401, FailureKind.HTTP_4XX)])
def test_aiohttp_response_errors_by_status(code, kind):
    err = aiohttp_error(code)
    assert classify(err) is kind
    assert str(code) in describe(err) and describe(err).startswith("ClientResponseError: ")


def test_json_decode_error_is_a_bad_body():
    try:
        json.loads("<html>502 Bad Gateway</html>")
    except json.JSONDecodeError as exc:
        assert classify(exc) is FailureKind.BAD_BODY
    else:  # pragma: no cover
        pytest.fail("not a JSON error")


@pytest.mark.parametrize(
    "exc,kind",
    [
        (TimeoutError(), FailureKind.TIMEOUT),
        (asyncio.TimeoutError(), FailureKind.TIMEOUT),
        (ConnectionResetError(104, "Connection reset by peer"), FailureKind.CONNECTION),
        (ConnectionRefusedError(111, "Connection refused"), FailureKind.CONNECTION),
        (BrokenPipeError(), FailureKind.CONNECTION),
        (aiohttp.ServerDisconnectedError(), FailureKind.CONNECTION),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v),
)
def test_builtin_transport_errors(exc, kind):
    assert classify(exc) is kind


@pytest.mark.parametrize(
    "text,kind",
    [
        # lm-eval re-raises aiohttp errors after its retries, sometimes only as text
        ("ClientResponseError: 503, message='Service Unavailable', url='http://x/v1'", FailureKind.HTTP_5XX),
        ("ClientResponseError: 429, message='Too Many Requests'", FailureKind.HTTP_429),
        ("ClientResponseError: 404, message='Not Found'", FailureKind.HTTP_4XX),
        ("APIStatusError: 400 bad request", FailureKind.HTTP_4XX),
        ("request failed with status=502", FailureKind.HTTP_5XX),
        ("Request timed out after 120 s", FailureKind.TIMEOUT),
        ("Server disconnected", FailureKind.CONNECTION),
        ("Cannot connect to host 127.0.0.1:9 [Connection refused]", FailureKind.CONNECTION),
        ("Expecting value: line 1 column 1 (char 0)", FailureKind.BAD_BODY),
        ("Attempt to decode JSON with unexpected mimetype: text/html (ContentTypeError)", FailureKind.BAD_BODY),
        ("'choices'", FailureKind.BAD_BODY),
        ("something nobody expected", FailureKind.OTHER),
        ("answer 503 times", FailureKind.OTHER),  # a bare number is not a status code
    ],
)
def test_text_only_fallbacks(text, kind):
    assert classify(RuntimeError(text)) is kind


def test_edufair_own_failures_pass_through():
    failure = CallFailure(FailureKind.PROMPT_TOO_LONG, "prompt of 9000 tokens")
    assert classify(failure) is FailureKind.PROMPT_TOO_LONG
    assert describe(failure) == "prompt of 9000 tokens"
    assert str(failure) == "prompt_too_long: prompt of 9000 tokens"

    class Tagged(RuntimeError):
        failure_kind = FailureKind.EMPTY_OUTPUT

    assert classify(Tagged("Connection reset")) is FailureKind.EMPTY_OUTPUT  # the tag wins over the text
    assert classify(None) is None


def test_describe_is_one_short_line():
    text = describe(ValueError("x" * 2000))
    assert text.startswith("ValueError: xxx") and len(text) == 500
    assert describe(CallFailure(FailureKind.OTHER, "y" * 900)) == "y" * 500


@pytest.mark.parametrize(
    "kind,retryable",
    [
        (FailureKind.TIMEOUT, True),
        (FailureKind.CONNECTION, True),
        (FailureKind.HTTP_429, True),
        (FailureKind.HTTP_5XX, True),
        (FailureKind.BAD_BODY, True),
        (FailureKind.EMPTY_OUTPUT, True),
        (FailureKind.INVALID_JSON, True),
        (FailureKind.WRONG_FIELDS, True),
        (FailureKind.OTHER, True),
        (FailureKind.HTTP_4XX, False),  # the request itself is wrong
        (FailureKind.PROMPT_TOO_LONG, False),  # it only gets longer
        (FailureKind.JUDGE_DISABLED, False),  # on purpose
    ],
)
def test_retryable(kind, retryable):
    assert kind.retryable is retryable


def test_parse_stored_values():
    assert FailureKind.parse(None) is None
    assert FailureKind.parse("http_429") is FailureKind.HTTP_429
    assert FailureKind.parse(FailureKind.TIMEOUT) is FailureKind.TIMEOUT
    assert FailureKind.parse("no_such_kind") is FailureKind.OTHER
    assert FailureKind.parse("") is FailureKind.OTHER
    assert FailureKind.parse("HTTP_429") is FailureKind.OTHER  # stored values are lower case
    # records store the plain value
    assert str(FailureKind.HTTP_5XX) == "http_5xx" and json.dumps(FailureKind.HTTP_5XX) == '"http_5xx"'
    assert all(FailureKind.parse(k.value) is k for k in FailureKind)


def test_empty_visible_turn_is_its_own_retryable_kind():
    kind = FailureKind.parse("empty_visible_turn")
    assert kind is FailureKind.EMPTY_VISIBLE_TURN and kind is not FailureKind.EMPTY_OUTPUT and kind.retryable


def _counts(role: str, **kw) -> CallCounts:
    c = CallCounts(role)
    c.add(**kw)
    return c


def test_call_counts_round_trip_merge_and_kinds():
    a = _counts("tutor", requests=10, cached=2, coalesced=3, distinct=5, sends=7, retried=2, recovered=1)
    a.attempt_failed(FailureKind.HTTP_5XX)
    a.attempt_failed("empty_output")
    a.attempt_failed(FailureKind.HTTP_5XX)
    a.final_failure(FailureKind.HTTP_5XX)
    d = a.to_dict()
    assert d["failed"] == 1 and d["failed_by_kind"] == {"http_5xx": 1}
    assert d["failed_attempts_by_kind"] == {"empty_output": 1, "http_5xx": 2}
    assert CallCounts.from_dict(json.loads(json.dumps(d))).to_dict() == d
    b = _counts("tutor", requests=1, distinct=1, sends=3, retried=1)
    b.final_failure("bad_body")
    m = a.merged(b).to_dict()
    assert (m["requests"], m["distinct"], m["sends"], m["retried"], m["failed"]) == (11, 6, 10, 3, 2)
    assert m["failed_by_kind"] == {"bad_body": 1, "http_5xx": 1}
    assert a.to_dict() == d  # merging does not change its inputs


def test_call_counts_are_safe_to_count_from_threads():
    import threading

    c = CallCounts("judge")

    def work():
        for _ in range(2000):
            c.add(requests=1)
            c.attempt_failed("timeout")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert c.requests == 8000 and c.failed_attempts_by_kind == {"timeout": 8000}


def test_call_counts_markdown_sums_per_role_in_role_order():
    tutor1 = _counts("tutor", requests=4, distinct=4, sends=5, retried=1, recovered=1)
    tutor1.attempt_failed("empty_output")
    tutor1.add(http_attempts=5)
    tutor2 = _counts("tutor", requests=2, cached=2)
    tutor2.add(http_attempts=2)
    tutor2.http_attempt_failed("http_5xx")  # an lm-eval retry inside one send: seen only here
    judge = _counts("judge", requests=3, coalesced=1, distinct=2, sends=2)
    judge.final_failure("invalid_json")
    student = {"role": "student", "requests": 9, "coalesced": 8, "distinct": 1, "sends": 1}
    md = call_counts_markdown([judge, tutor1, student, tutor2])
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and not ln.startswith("| role")]
    assert [r.split("|")[1].strip() for r in rows] == ["tutor", "student", "judge"]
    assert rows[0] == "| tutor | 6 | 2 | 0 | 4 | 5 | 1 | 1 | 0 | - | empty_output=1 | 7 | http_5xx=1 | 0 | 0 |"
    assert rows[2] == "| judge | 3 | 0 | 1 | 2 | 2 | 0 | 0 | 1 | invalid_json=1 | - | - | - | 0 | 0 |"
    assert md.startswith("## Model calls per role")
    assert "(no calls recorded)" in call_counts_markdown([])
