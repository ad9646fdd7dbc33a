"""Call counts that survive a resume: while a task runs, each process keeps its per-role call counts
(``failures.CallCounts``) in the call cache's SQLite file, next to the answers, twice a second and
at the end. A process that finishes adds the counts that earlier, interrupted processes of the
same run left (a kill -9, Ctrl-C, a crash) to its own, so that a resumed run reports the calls of
the whole work, not only of its last process.

What adds up, and what does not: the *work* (sends, retries, recoveries, failed attempts by kind,
HTTP attempts, and any other count a role's counts hold) is summed over the processes; the
*request side* (requests, cached, coalesced, distinct, final failures) describes the last process,
the one whose pass produced the results (a resume replays every dialogue, its requests answered
from the cache). A run is identified by what determines its work: the task, the models'
identities and decoding, the judge, T_max and the documents (see :func:`run_key`). A run that
finished starts afresh the next time; without a call cache the counts are the process's own.
Counts of the last half second before a kill may be lost.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from typing import Any, Callable, Mapping, Sequence

from edufair_metrics.cache import CallCache, cache_key

log = logging.getLogger("edufair")

# Fields of a role's counts that describe the final pass over the requests (not summed over processes).
FINAL_PASS_FIELDS = frozenset({"role", "requests", "cached", "coalesced", "distinct", "failed", "failed_by_kind"})
FLUSH_INTERVAL_S = 0.5

Counts = dict[str, dict[str, Any]]  # role -> CallCounts.to_dict()


def run_key(**identity: Any) -> str:
    """The key of one task run: a hash of everything that determines its work (JSON data)."""
    return cache_key({"namespace": "run_counts", **identity})


def combine(earlier: Sequence[Mapping[str, Any]], final: Mapping[str, Any]) -> Counts:
    """``final`` (the last process's counts, role -> counts) with the work counts of ``earlier``
    processes added (see the module doc)."""
    out: Counts = {role: dict(c) for role, c in final.items() if isinstance(c, Mapping)}
    for counts in earlier:
        for role, c in counts.items():
            if not isinstance(c, Mapping):
                continue
            mine = out.setdefault(role, {"role": role})
            for name, value in c.items():
                if name in FINAL_PASS_FIELDS:
                    continue
                if isinstance(value, bool):
                    continue
                if isinstance(value, (int, float)):
                    mine[name] = mine.get(name, 0) + value
                elif isinstance(value, Mapping):
                    merged = dict(mine.get(name) or {})
                    for kind, n in value.items():
                        if isinstance(n, (int, float)) and not isinstance(n, bool):
                            merged[kind] = merged.get(kind, 0) + n
                    mine[name] = dict(sorted(merged.items()))
    return out


class CountsRecorder:
    """Keeps one process's counts of a run in ``cache`` while it runs (a daemon thread, every
    ``interval_s``), and combines them with those of earlier interrupted processes at the end.
    ``snapshot()`` returns the counts so far (role -> counts dict); it is called from the thread."""

    def __init__(self, cache: CallCache | None, run: str, snapshot: Callable[[], Counts],
                 interval_s: float = FLUSH_INTERVAL_S) -> None:
        self.cache, self.run, self.snapshot, self.interval_s = cache, run, snapshot, interval_s
        self.process = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.earlier_processes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "CountsRecorder":
        if self.cache is not None:
            self._thread = threading.Thread(target=self._loop, name="edufair-counts", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._save()

    def _save(self) -> None:
        try:
            self.cache.save_run_counts(self.run, self.process, self.snapshot())
        except Exception as exc:  # noqa: BLE001 - bookkeeping must never end a run
            log.warning("edufair: could not keep the call counts in the cache (%s)", exc)

    def finish(self, final: Counts) -> Counts:
        """The counts of the whole run: ``final`` plus the work of earlier, interrupted processes
        of the same run; recorded as finished."""
        if self.cache is None:
            return final
        try:
            earlier = self.cache.earlier_run_counts(self.run, self.process)
            self.earlier_processes = len(earlier)
            combined = combine(earlier, final) if earlier else final
            self.cache.finish_run_counts(self.run, self.process, combined)
        except Exception as exc:  # noqa: BLE001 - bookkeeping must never end a run
            log.warning("edufair: could not combine the call counts with earlier processes' (%s)", exc)
            return final
        return combined
