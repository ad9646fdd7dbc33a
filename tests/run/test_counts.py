"""Call counts kept in the call cache while a task runs (``run/counts.py``): what a resumed run adds
up from the processes before it, and what it takes from its own final pass."""

from __future__ import annotations

from edufair_metrics.cache import CallCache
from edufair_metrics.failures import CallCounts
from edufair_metrics.run.counts import CountsRecorder, combine, run_key


def _counts(**kw):
    c = CallCounts("tutor")
    c.add(**{k: v for k, v in kw.items() if isinstance(v, int)})
    for kind in kw.get("failed_attempts", ()):
        c.attempt_failed(kind)
    return {"tutor": c.to_dict()}


def test_combine_sums_the_work_and_keeps_the_final_pass():
    killed = _counts(requests=40, distinct=40, sends=45, retried=5, recovered=5, http_attempts=50,
                     failed_attempts=["http_5xx", "http_5xx"])
    killed["judge"] = {"role": "judge", "requests": 3, "sends": 3, "tokens_in": 120}  # any other count adds up
    last = _counts(requests=90, cached=40, distinct=50, sends=50, http_attempts=50)
    out = combine([killed], last)
    t = out["tutor"]
    assert (t["requests"], t["cached"], t["distinct"]) == (90, 40, 50)  # the final pass
    assert (t["sends"], t["retried"], t["recovered"], t["http_attempts"]) == (95, 5, 5, 100)
    assert t["failed_attempts_by_kind"] == {"http_5xx": 2}
    assert out["judge"]["sends"] == 3 and out["judge"]["tokens_in"] == 120 and "requests" not in out["judge"]


def test_a_resumed_process_adds_the_interrupted_ones_and_a_finished_run_starts_afresh(tmp_path):
    cache = CallCache(tmp_path / "c.sqlite")
    run = run_key(task="t", documents=[[0, "q1", "female"]])
    assert run != run_key(task="t", documents=[[0, "q1", "male"]])
    killed = CountsRecorder(cache, run, lambda: _counts(sends=7, failed_attempts=["timeout"]))
    killed._save()  # what the thread keeps while the process runs; then the process is killed
    resumed = CountsRecorder(cache, run, lambda: {})
    out = resumed.finish(_counts(requests=9, sends=2))
    assert resumed.earlier_processes == 1
    assert out["tutor"]["sends"] == 9 and out["tutor"]["failed_attempts_by_kind"] == {"timeout": 1}
    again = CountsRecorder(cache, run, lambda: {})
    assert again.finish(_counts(requests=9)) == _counts(requests=9) and again.earlier_processes == 0
    # without a cache the counts are the process's own
    assert CountsRecorder(None, run, lambda: {}).finish(_counts(sends=1)) == _counts(sends=1)


def test_the_recorder_keeps_the_counts_while_the_run_goes_on(tmp_path):
    cache = CallCache(tmp_path / "c.sqlite")
    counts = CallCounts("tutor")
    with CountsRecorder(cache, "r", lambda: {"tutor": counts.to_dict()}, interval_s=0.01):
        counts.add(sends=3)
        import time

        time.sleep(0.2)
    assert cache.earlier_run_counts("r", "another process")[0]["tutor"]["sends"] == 3
