"""Call counts that do not blame the endpoint for the client: an HTTP attempt the client
cancelled (Ctrl-C, the run's shutdown) or ended at its own deadline is counted apart
(``cancelled``, ``client_timeouts``), never among the endpoint's failures
(``http_failed_by_kind``, ``failed_call_attempts``), also after a resume adds up the processes."""

from __future__ import annotations

import asyncio

import pytest

from edufair_metrics.failures import CallCounts, CallFailure, FailureKind, client_side
from edufair_metrics.lmeval.aggregations import failed_attempts
from edufair_metrics.lmeval.models import _AttemptCounter
from edufair_metrics.report.failures import call_counts_markdown
from edufair_metrics.run.counts import combine


class _Status(Exception):
    status = 503


@pytest.mark.parametrize("exc,side", [
    (asyncio.CancelledError(), "cancelled"),
    (KeyboardInterrupt(), "cancelled"),
    (asyncio.TimeoutError(), "timeout"),
    (TimeoutError("read timed out"), "timeout"),
    (CallFailure(FailureKind.TIMEOUT, "client timeout after 2 s"), "timeout"),
    (_Status("Service Unavailable"), None),
    (ConnectionResetError("reset by peer"), None),
])
def test_which_attempts_the_client_ended(exc, side):
    assert client_side(exc) == side


def _counter() -> _AttemptCounter:
    counter = _AttemptCounter.__new__(_AttemptCounter)
    counter.counts = CallCounts("tutor")
    return counter


def test_cancelled_and_timed_out_attempts_are_not_the_endpoints_failures():
    counter = _counter()
    for exc in (None, None, asyncio.CancelledError(), asyncio.CancelledError(), asyncio.TimeoutError(), _Status()):
        counter._record(exc)
    c = counter.counts.to_dict()
    assert c["http_attempts"] == 6
    assert c["http_failed_by_kind"] == {"http_5xx": 1}  # the endpoint's only failure
    assert c["cancelled"] == 2 and c["client_timeouts"] == 1
    assert failed_attempts(c) == 1


def test_a_resume_keeps_cancellations_apart_from_endpoint_failures():
    """The interrupted process left 5 cancelled attempts (Ctrl-C); the resumed one none: the whole
    run's counts hold 5 cancellations and no endpoint failure."""
    interrupted = _counter()
    for _ in range(5):
        interrupted._record(asyncio.CancelledError())
    final = CallCounts("tutor")
    final.add(http_attempts=20)
    out = combine([{"tutor": interrupted.counts.to_dict()}], {"tutor": final.to_dict()})["tutor"]
    assert out["cancelled"] == 5 and out["http_failed_by_kind"] == {}
    assert failed_attempts(out) == 0
    table = call_counts_markdown([out])
    assert "| client timeouts | cancelled |" in table and table.rstrip().endswith("| 0 | 5 |")


def test_the_judges_timeouts_are_counted_apart_from_its_endpoint_failures():
    c = CallCounts("judge")
    for kind in ("timeout", "timeout", "http_5xx"):
        c.attempt_failed(kind)
    c.add(client_timeouts=2)
    assert failed_attempts(c.to_dict()) == 1
