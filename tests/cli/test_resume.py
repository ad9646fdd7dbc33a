"""Resume after a crash: SIGKILL the real lm_eval CLI at a seeded random request, rerun
the same command, and check that it finishes, repeats no call whose answer had reached the client,
and produces exactly the records and statistics of an uninterrupted run with a fresh cache."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time

import pytest

from tests.helpers.bank import write_bank
from tests.helpers.edufair_cli import TASK, EduFairFake, call_key, cli_env, comparable, lm_eval_argv, results, run_cli, samples
from tests.helpers.fake_openai import HTTPError

pytestmark = pytest.mark.slow

# One question x 9 explicit levels x 3 tutor turns: 27 student + 27 tutor... ~95 requests in all.
SEED = 7


def _run_killed(fake: EduFairFake, argv, env, cwd, kill_at: int) -> None:
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def trigger(total: int) -> None:
        if total >= kill_at and not fake.hold.is_set():
            fake.hold.set()  # answer nothing more; give the client time to store what it got
            def kill():
                time.sleep(1.0)
                os.kill(proc.pid, signal.SIGKILL)
            threading.Thread(target=kill, daemon=True).start()

    fake.on_request = trigger
    proc.wait(timeout=120)
    fake.on_request = None
    fake.release()  # the parked requests end now, unanswered (not later, inside the next run)
    assert proc.returncode == -signal.SIGKILL, "the run finished before the kill point"


def test_sigkill_then_rerun_repeats_nothing_and_matches_uninterrupted(tmp_path):
    bank = write_bank(tmp_path / "bank", n=1)
    with EduFairFake() as fake:
        # Reference: an uninterrupted run, fresh cache.
        ref_out = tmp_path / "ref"
        r = run_cli(lm_eval_argv(fake.url, bank, ref_out), cli_env(tmp_path / "cache-ref"), tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        total = sum(fake.counts.values())
        assert total > 60
        rng = random.Random(SEED)
        # Two seeded kill points: one during the dialogues, one during judging (last ~27 calls).
        for phase, kill_at in (("dialogues", rng.randint(5, total - 40)), ("judge", rng.randint(total - 20, total - 3))):
            fake.reset()
            cache, out = tmp_path / f"cache-{phase}", tmp_path / f"out-{phase}"
            argv, env = lm_eval_argv(fake.url, bank, out), cli_env(cache)
            _run_killed(fake, argv, env, tmp_path, kill_at)
            done_before = set(fake.answered)
            assert done_before, phase
            fake.reset()
            r = run_cli(argv, env, tmp_path)
            assert r.returncode == 0, r.stderr[-3000:]
            repeated = [k for k in fake.counts if k in done_before and k[0] != "harness"]
            assert not repeated, f"{phase}: {len(repeated)} completed calls sent again, e.g. {repeated[0][0]}"
            assert comparable(samples(out)) == comparable(samples(ref_out)), phase
            got, ref = results(out), results(ref_out)
            # failed_call_attempts counts the work of both processes (the killed one's sends, a resume's
            # cache hits): it differs by design; every result metric must match
            same = lambda res: {k: v for k, v in res.items() if "stderr" not in k and not k.startswith("failed_call_attempts")}  # noqa: E731
            assert same(got) == pytest.approx(same(ref), nan_ok=True), phase
            calls = json.loads(sorted(out.rglob("results_*.json"))[-1].read_text())["configs"][TASK]["metadata"]["edufair_calls"]
            assert calls["tutor"]["cached"] + calls["student"]["cached"] > 0, phase  # the resume used the cache


def test_call_counts_after_a_resume_cover_every_process(tmp_path):
    """The killed process's failed attempts and sends are in the resumed run's edufair_calls (the
    counts are kept in the call cache while a run goes on); a later complete rerun starts afresh."""
    bank = write_bank(tmp_path / "bank", n=1)
    faults = {"n": 0, "on": True}

    def behaviour(req, n):  # the first attempt of each of the first 8 dialogue requests fails once
        role = call_key(req)[0]
        if faults["on"] and role in ("tutor", "student") and n == 1 and faults["n"] < 8:
            faults["n"] += 1
            return HTTPError(500)
        return None

    with EduFairFake(behaviour=behaviour) as fake:
        ref = tmp_path / "ref"
        faults["on"] = False
        r = run_cli(lm_eval_argv(fake.url, bank, ref), cli_env(tmp_path / "cache-ref"), tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        total = sum(fake.counts.values())
        ref_calls = _calls(ref)
        fake.reset()
        faults["on"] = True
        out, cache = tmp_path / "out", tmp_path / "cache"
        argv, env = lm_eval_argv(fake.url, bank, out), cli_env(cache)
        _run_killed(fake, argv, env, tmp_path, kill_at=total // 2)
        assert faults["n"] == 8
        faults["on"] = False
        r = run_cli(argv, env, tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "resumed 1 interrupted process" in r.stderr
        calls = _calls(out)
        http_5xx = sum((calls[role].get("http_failed_by_kind") or {}).get("http_5xx", 0) for role in ("tutor", "student"))
        assert http_5xx == 8  # every one of them was served before the kill, none after it
        for role in ("tutor", "student"):
            # the whole work: the killed process's sends plus the resume's, at least the uninterrupted run's
            assert calls[role]["sends"] >= ref_calls[role]["sends"], role
            assert calls[role]["requests"] == ref_calls[role]["requests"], role  # the final pass, not a sum
        # a complete rerun is a new run of its own: everything from the cache, nothing failed
        r = run_cli(lm_eval_argv(fake.url, bank, tmp_path / "again"), env, tmp_path)
        assert r.returncode == 0 and "interrupted process" not in r.stderr
        again = _calls(tmp_path / "again")
        assert all(again[role]["sends"] == 0 and not again[role].get("http_failed_by_kind") for role in ("tutor", "student"))


def _calls(out):
    return json.loads(sorted(out.rglob("results_*.json"))[-1].read_text())["configs"][TASK]["metadata"]["edufair_calls"]
