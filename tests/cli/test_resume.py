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
from tests.helpers.edufair_cli import TASK, EduFairFake, cli_env, comparable, lm_eval_argv, results, run_cli, samples

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
            # edufair_calls describes this process's calls (a resume serves many from the cache):
            # it differs by design; every result metric must match
            same = lambda res: {k: v for k, v in res.items() if "stderr" not in k and not k.startswith("edufair_calls")}  # noqa: E731
            assert same(got) == pytest.approx(same(ref), nan_ok=True), phase
            calls = json.loads(sorted(out.rglob("results_*.json"))[-1].read_text())["configs"][TASK]["metadata"]["edufair_calls"]
            assert calls["tutor"]["cached"] + calls["student"]["cached"] > 0, phase  # the resume used the cache
