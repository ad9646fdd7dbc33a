"""Identical judge requests (dialogues whose conversation so far is the same, e.g. the same
question at several condition levels) are sent once, also when workers ask concurrently, and every
request is counted per role (:class:`CallCounts`)."""

from __future__ import annotations

import threading
import time

import pytest

from edufair_metrics.cache import CallCache
from edufair_metrics.failures import CallCounts
from edufair_metrics.report.failures import call_counts_markdown
from edufair_metrics.judge import JudgeSettings, judge_transcripts
from edufair_metrics.judge.run import TurnCoalescer
from edufair_metrics.run import judge_and_build
from edufair_metrics.records import JUDGE_MISSING, JUDGE_OK

from tests.helpers.fake_openai import FakeOpenAI, HTTPError, labels_json
from tests.helpers.judge_env import JUDGE_ENV_VARS
from tests.judge.test_judge import make_transcript

LEVELS = ["female", "male", "low_income", "middle_class", "high_income", "english", "other_language",
          "immigrant", "native_born"]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for v in JUDGE_ENV_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "cache"))


def settings_for(srv, **kw) -> JudgeSettings:
    base = dict(base_url=srv.base_url, model="fake-judge", concurrency=6, max_retries=2, timeout_s=5.0,
                backoff_base_s=0.001, backoff_max_s=0.01)
    return JudgeSettings(**{**base, **kw})


def slow_labels(req):
    time.sleep(0.05)  # keep requests in flight so that workers really overlap
    return labels_json(mistake=False, tone=-1, recog=-1, leak=len(req.messages[-1]["content"]) % 2)


def nine_levels_and_one_other() -> list:
    return [make_transcript("q1", level=lv) for lv in LEVELS] + [make_transcript("q2", tutor_texts=("x?", "y?", "z?"))]


def test_identical_requests_of_concurrent_workers_are_sent_once():
    ts = nine_levels_and_one_other()
    with FakeOpenAI(responder=slow_labels) as srv:
        summary: dict = {}
        out = judge_transcripts(ts, settings_for(srv), progress=False, summary=summary)
        calls = srv.calls
    assert calls == 2 + 3  # distinct judge requests: 2 turns of q1, 3 of q2 (not 9 x 2 + 3)
    assert all(j.status == JUDGE_OK for d in out for j in d)
    # each copy is labelled for its own turn, with the labels of the one request
    for d in out[:9]:
        assert [j.turn_index for j in d] == [j.turn_index for j in out[0]]
        assert [j.labels for j in d] == [j.labels for j in out[0]]
    assert sum(j.attempts for d in out for j in d) == calls  # copies made no call
    c = summary["calls"]
    assert (c["requests"], c["coalesced"], c["distinct"], c["sends"], c["cached"], c["failed"]) == (21, 16, 5, 5, 0, 0)
    assert summary["requests"] == calls


def test_a_persistent_failure_is_sent_at_most_one_plus_max_retries_times_for_all_copies():
    ts = [make_transcript("q1", tutor_texts=("t?",), level=lv) for lv in LEVELS]
    with FakeOpenAI(responder=lambda req: HTTPError(503)) as srv:
        summary: dict = {}
        out = judge_transcripts(ts, settings_for(srv, max_retries=2), progress=False, summary=summary)
        calls = srv.calls
    assert calls == 1 + 2
    assert all(d[0].status == JUDGE_MISSING and d[0].kind == "http_5xx" and d[0].labels is None for d in out)
    c = summary["calls"]
    assert (c["requests"], c["coalesced"], c["distinct"], c["sends"], c["retried"], c["recovered"], c["failed"]) == (
        9, 8, 1, 3, 1, 0, 1)
    assert c["failed_by_kind"] == {"http_5xx": 1} and c["failed_attempts_by_kind"] == {"http_5xx": 3}
    assert summary["missing_by_kind"] == {"http_5xx": 9}  # every turn that asked is missing


def test_transient_failures_that_a_retry_recovered_are_counted():
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def flaky(req):
        key = req.messages[-1]["content"]
        with lock:
            seen[key] = seen.get(key, 0) + 1
            first = seen[key] == 1
        return HTTPError(500) if first else labels_json()

    ts = [make_transcript("q1"), make_transcript("q2")]
    with FakeOpenAI(responder=flaky) as srv:
        summary: dict = {}
        out = judge_transcripts(ts, settings_for(srv), progress=False, summary=summary)
    assert all(j.status == JUDGE_OK for d in out for j in d)
    c = summary["calls"]
    assert (c["distinct"], c["sends"], c["retried"], c["recovered"], c["failed"]) == (4, 8, 4, 4, 0)
    assert c["failed_attempts_by_kind"] == {"http_5xx": 4} and c["failed_by_kind"] == {}
    md = call_counts_markdown([CallCounts.from_dict(c)])
    assert "| judge | 4 | 0 | 0 | 4 | 8 | 4 | 4 | 0 | - | http_5xx=4 |" in md


def test_copies_of_a_cached_answer_count_as_cached(tmp_path):
    ts = [make_transcript("q1", level=lv) for lv in LEVELS[:3]]
    with FakeOpenAI(responder=slow_labels) as srv, CallCache(tmp_path / "c.sqlite") as cache:
        judge_transcripts(ts[:1], settings_for(srv), cache=cache, progress=False)
        summary: dict = {}
        judge_transcripts(ts, settings_for(srv), cache=cache, progress=False, summary=summary)
        assert srv.calls == 2
    c = summary["calls"]
    assert (c["requests"], c["cached"], c["coalesced"], c["distinct"]) == (6, 6, 0, 0)


def test_an_exception_reaches_every_waiting_copy():
    gate = threading.Event()

    def judge(t, i):
        gate.wait(5)
        raise RuntimeError("bug in the judge")

    coalescer = TurnCoalescer(judge)
    t = make_transcript("q1", tutor_texts=("t?",))
    i = t.tutor_turn_indices()[0]
    errors = []

    def ask():
        try:
            coalescer.judge(t, i)
        except RuntimeError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for th in threads:
        th.start()
    time.sleep(0.05)
    gate.set()
    for th in threads:
        th.join(5)
    assert errors == ["bug in the judge"] * 3


def test_disabled_judge_reports_zero_calls():
    summary: dict = {}
    judge_and_build([make_transcript()], judge=None, summary=summary)
    assert summary["calls"] == CallCounts("judge").to_dict()
