"""``python tests/scale/_ceiling_probe.py OUT.json <lm_eval CLI arguments>``: the real lm-eval CLI
(``tests/helpers/_lm_eval_cli.py``: built-in task index skipped) in this process, with the CPU each
role's calls take measured on the thread that makes them, for ``bench_client_ceiling.py``.

- tutor and student: ``time.thread_time()`` around each ``CachedGenerator.generate`` (the tutor's
  calls run on the main thread, the student's in the turn loop's worker thread; lm-eval's asyncio
  loop, aiohttp, JSON and EduFair's wrappers and call cache are all inside it);
- judge: the same around each ``judge_turn`` (its worker threads: the openai client, httpx,
  parsing, the call cache);
- ``loop`` (the turn loop outside the calls: rendering prompts, stop rules) and ``records`` (the
  judging phase outside the judge calls: scores, detectors, records) are the phases' process CPU
  less the calls' CPU (the openai client is imported before, at start-up: a one-time cost).

Writes {role: {"cpu_s", "http"}, "phases": {...}, "process_cpu_s", "wall_s"} to OUT.json at exit."""

from __future__ import annotations

import atexit
import json
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

# imported before the phases are timed: the judge imports the openai client when judging starts,
# a one-time ~1 s of CPU here that would otherwise be spread over the judging phase's requests
# (it stays in ``all-in`` and ``process_cpu_s``)
import openai  # noqa: E402,F401

from edufair_metrics.dialogue import generation  # noqa: E402
from edufair_metrics.judge import run as judge_run  # noqa: E402
from edufair_metrics.run import task as run_task_mod  # noqa: E402

OUT = Path(sys.argv.pop(1))
_lock = threading.Lock()
cpu: dict[str, float] = {"tutor": 0.0, "student": 0.0, "judge": 0.0}
phases: dict[str, dict[str, float]] = {}
counts: dict[str, dict] = {}
_start_wall, _start_cpu = time.perf_counter(), time.process_time()


def _timed(role_of, fn):
    def wrapper(*args, **kwargs):
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            dt = time.thread_time() - t0
            with _lock:
                cpu[role_of(args)] += dt
    return wrapper


def _phase(name, fn):
    def wrapper(*args, **kwargs):
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            p = phases.setdefault(name, {"cpu_s": 0.0, "wall_s": 0.0})
            p["cpu_s"] += time.process_time() - c0
            p["wall_s"] += time.perf_counter() - w0
    return wrapper


generation.CachedGenerator.generate = _timed(lambda a: a[0].role, generation.CachedGenerator.generate)
judge_run.judge_turn = _timed(lambda a: "judge", judge_run.judge_turn)
run_task_mod.run_dialogues = _phase("dialogues", run_task_mod.run_dialogues)
run_task_mod.judge_and_build = _phase("judging", run_task_mod.judge_and_build)
_run_task = run_task_mod.run_task


def _run_task_counted(*args, **kwargs):
    result = _run_task(*args, **kwargs)
    for role, c in result.call_counts.items():
        mine = counts.setdefault(role, {"http": 0, "requests": 0, "distinct": 0})
        # tutor/student: every HTTP attempt lm-eval made; judge: its sends (one HTTP request each)
        mine["http"] += int(c.get("http_attempts") or 0) if role != "judge" else int(c.get("sends") or 0)
        mine["requests"] += int(c.get("requests") or 0)
        mine["distinct"] += int(c.get("distinct") or 0)
    return result


run_task_mod.run_task = _run_task_counted
# lmeval/task.py imported run_task by name
from edufair_metrics.lmeval import task as lmeval_task  # noqa: E402

if getattr(lmeval_task, "run_task", None) is _run_task:
    lmeval_task.run_task = _run_task_counted


@atexit.register
def _write() -> None:
    out = {role: {"cpu_s": cpu[role], **counts.get(role, {})} for role in cpu}
    out["phases"] = phases
    out["process_cpu_s"] = time.process_time() - _start_cpu
    out["wall_s"] = time.perf_counter() - _start_wall
    OUT.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    import runpy

    sys.argv[0] = "lm_eval"
    runpy.run_path(str(REPO / "tests" / "helpers" / "_lm_eval_cli.py"), run_name="__main__")
