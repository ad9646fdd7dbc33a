"""Judging whole transcripts: every tutor turn of every dialogue, dialogues in parallel, turns of
one dialogue in order (they share a prompt prefix), behind one progress bar."""

from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from edufair_metrics.cache import CallCache, cache_key
from edufair_metrics.errors import Interrupted
from edufair_metrics.failures import CallCounts, FailureKind
from edufair_metrics.judge.client import _Stats, judge_turn, make_client
from edufair_metrics.judge.prompt import build_messages
from edufair_metrics.judge.settings import JudgeSettings
from edufair_metrics.records import (
    JUDGE_MISSING,
    JUDGE_OK,
    STOP_STUDENT_FAILED,
    STOP_TUTOR_FAILED,
    Transcript,
    TurnJudgement,
    failed_stage,
)


def summarize_judgements(judgements: list[list[TurnJudgement]]) -> dict[str, Any]:
    """{"turns", "ok", "cached", "missing", "missing_by_kind": {kind: n}}."""
    out: dict[str, Any] = {"turns": 0, "ok": 0, "cached": 0, "missing": 0, "missing_by_kind": {}}
    for dialogue in judgements:
        for j in dialogue:
            out["turns"] += 1
            if j.status == JUDGE_OK:
                out["ok"] += 1
                out["cached"] += int(j.cached)
            else:
                out["missing"] += 1
                kind = j.kind or FailureKind.OTHER.value
                out["missing_by_kind"][kind] = out["missing_by_kind"].get(kind, 0) + 1
    return out


def missing_judgements(transcript: Transcript, kind: FailureKind, reason: str) -> list[TurnJudgement]:
    return [TurnJudgement(i, JUDGE_MISSING, reason=reason, kind=kind.value) for i in transcript.tutor_turn_indices()]


def judge_transcripts(
    transcripts: list[Transcript],
    settings: JudgeSettings,
    cache: CallCache | None = None,
    progress: bool = True,
    summary: dict[str, Any] | None = None,
    counts: CallCounts | None = None,
) -> list[list[TurnJudgement]]:
    """One list of TurnJudgement per transcript (one per tutor turn, in turn order).

    Dialogues run concurrently on ``settings.concurrency`` workers; the turns of one dialogue are
    issued in order by one worker (shared prefix). Identical judge requests (the same messages:
    dialogues whose conversation so far is the same) are sent once and the labels given to each
    turn that asked (:class:`TurnCoalescer`); a copy has ``attempts`` 0. So each distinct request
    costs at most ``1 + max_retries`` HTTP requests. If ``summary`` is a dict it is filled with
    ``summarize_judgements`` plus "requests" (HTTP calls made), "failed_attempts" by kind and
    "calls" (:class:`CallCounts` of the judge, as a dict). ``counts``: the CallCounts to count
    into, as the calls happen (default: a new one)."""
    from tqdm.auto import tqdm

    settings.require_endpoint()
    started = time.perf_counter()
    client = make_client(settings)
    stats = _Stats()
    coalescer = TurnCoalescer(lambda t, i: judge_turn(client, settings, t, i, cache=cache, stats=stats))
    if counts is not None:
        coalescer.counts = counts
    stats.counts = coalescer.counts  # tokens as they arrive (kept when a run is interrupted)
    count_failed_attempt = stats.failed

    def failed_attempt(kind: str) -> None:  # also into the counts, as it happens
        count_failed_attempt(kind)
        coalescer.counts.attempt_failed(kind)
        if str(kind) == FailureKind.TIMEOUT.value:  # the client's own deadline: counted apart
            coalescer.counts.add(client_timeouts=1)

    stats.failed = failed_attempt
    n_turns = sum(len(t.tutor_turn_indices()) for t in transcripts)
    bar = tqdm(total=n_turns, desc=f"judge {settings.model}", unit="turn", disable=not progress)
    bar_lock = threading.Lock()
    labelled = [0]  # labels obtained so far (each is in the cache the moment it arrives)

    def work(t: Transcript) -> list[TurnJudgement]:
        out = []
        for i in t.tutor_turn_indices():
            j = coalescer.judge(t, i)
            out.append(j)
            with bar_lock:
                bar.update(1)
                labelled[0] += int(j.status == JUDGE_OK)
        return out

    pool = ThreadPoolExecutor(max_workers=settings.concurrency, thread_name_prefix="edufair-judge")
    try:
        results = list(pool.map(work, transcripts))
    except KeyboardInterrupt:
        # Ctrl-C: drop the queued dialogues now (a `with` block would wait for every one of them);
        # the calls in flight are abandoned by the entry point's exit.
        pool.shutdown(wait=False, cancel_futures=True)
        raise Interrupted(labels=labelled[0]) from None
    else:
        pool.shutdown(wait=True)
    finally:
        bar.close()
        try:
            client.close()
        except Exception:  # pragma: no cover
            pass
    coalescer.counts.timed(time.perf_counter() - started)
    if summary is not None:
        summary.update(summarize_judgements(results))
        summary["requests"] = stats.requests
        summary["failed_attempts"] = dict(sorted(stats.failed_attempts.items()))
        summary["calls"] = coalescer.counts.to_dict()
    return results


class TurnCoalescer:
    """Sends each distinct judge request once, also when several workers ask for it at the same
    time: the first asker calls ``judge(transcript, turn_index)``, the others wait for its result
    (a worker waits only on a call that is running, so there is no deadlock). Counts every
    request in ``counts``."""

    def __init__(self, judge) -> None:
        self._judge = judge
        self._lock = threading.Lock()
        self._results: dict[str, Future] = {}
        self.counts = CallCounts("judge")

    def judge(self, transcript: Transcript, turn_index: int) -> TurnJudgement:
        # settings are fixed per run; the digest, not the messages, is kept (a paper-size task judges
        # ~45,000 turns, whose prompts would otherwise stay in memory until the end)
        key = cache_key(build_messages(transcript, turn_index))
        with self._lock:
            future = self._results.get(key)
            owner = future is None
            if owner:
                future = self._results[key] = Future()
        self.counts.add(requests=1)
        if not owner:
            first = future.result()
            self.counts.add(**({"cached": 1} if first.cached else {"coalesced": 1}))
            # the same labels for this turn; no call was made for it
            return dataclasses.replace(first, turn_index=turn_index, attempts=0)
        try:
            j = self._judge(transcript, turn_index)
        except BaseException as exc:
            future.set_exception(exc)
            raise
        future.set_result(j)
        if j.cached:
            self.counts.add(cached=1)
        else:
            self.counts.add(distinct=1, sends=j.attempts, retried=int(j.attempts > 1),
                            recovered=int(j.attempts > 1 and j.status == JUDGE_OK))
            if j.status != JUDGE_OK:
                self.counts.final_failure(j.kind or FailureKind.OTHER.value)
        return j




def missing_by_level(transcripts: list[Transcript], judgements: list[list[TurnJudgement]]) -> dict[str, dict[str, Any]]:
    """{"condition/level": {"turns", "missing", "reasons": {kind: n}, "incomplete_dialogues",
    "failed_dialogues": {"stage:kind": n}}}."""
    out: dict[str, dict[str, Any]] = {}
    for t, js in zip(transcripts, judgements):
        row = out.setdefault(f"{t.condition}/{t.level}", {"turns": 0, "missing": 0, "reasons": {}, "incomplete_dialogues": 0})
        row["incomplete_dialogues"] += int(not t.complete)
        if t.stop_reason in (STOP_STUDENT_FAILED, STOP_TUTOR_FAILED):
            kind = f"{failed_stage(t.stop_reason)}:{t.error_kind or FailureKind.OTHER.value}"
            fails = row.setdefault("failed_dialogues", {})
            fails[kind] = fails.get(kind, 0) + 1
        for j in js:
            row["turns"] += 1
            if j.status == JUDGE_MISSING:
                row["missing"] += 1
                kind = j.kind or FailureKind.OTHER.value
                row["reasons"][kind] = row["reasons"].get(kind, 0) + 1
    return dict(sorted(out.items()))


def format_missing_summary(task: str, table: dict[str, dict[str, Any]], totals: dict[str, Any]) -> str:
    lines = [
        f"[edufair judge] {task or 'task'}: {totals.get('ok', 0)}/{totals.get('turns', 0)} tutor turns judged "
        f"({totals.get('cached', 0)} from cache), {totals.get('missing', 0)} missing"
    ]
    for key, row in table.items():
        reasons = ", ".join(f"{k}={v}" for k, v in sorted(row["reasons"].items()))
        extra = f" [{reasons}]" if reasons else ""
        inc = f", {row['incomplete_dialogues']} incomplete dialogue(s)" if row["incomplete_dialogues"] else ""
        fails = ", ".join(f"{k}={v}" for k, v in sorted((row.get("failed_dialogues") or {}).items()))
        fails = f" failed dialogues [{fails}]" if fails else ""
        lines.append(f"  {key}: missing {row['missing']}/{row['turns']}{extra}{inc}{fails}")
    return "\n".join(lines)
