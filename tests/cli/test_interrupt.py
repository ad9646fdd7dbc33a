"""The first Ctrl-C of a run stops it at once, in any phase: one line saying what is cached, exit
status 130, no traceback, no wait for queued work. Sent as a real SIGINT to a real ``lm_eval``
process (and to ``edufair judge``) against a slow loopback endpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

from tests.helpers.bank import write_bank
from tests.helpers.edufair_cli import PY, EduFairFake, cli_env, lm_eval_argv, role_of, sigint_as_a_terminal_sends_it

pytestmark = pytest.mark.slow



def _interrupt_when(fake: EduFairFake, argv, env, cwd, phase: str):
    """Start ``argv``; send SIGINT once the endpoint has seen a few requests of ``phase``
    (tutor/student or judge); return (exit code, stderr, seconds from the signal to the exit)."""
    seen = {"n": 0}
    sent = threading.Event()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_as_a_terminal_sends_it)

    def slow(req, n):
        role = role_of(req)
        if (phase == "judge") == (role == "judge") and role != "other":
            seen["n"] += 1
            if seen["n"] == 3 and not sent.is_set():
                sent.set()
                sent.at = time.monotonic()
                os.kill(proc.pid, signal.SIGINT)
        time.sleep(0.4)  # every request is slow: plenty of work stays queued
        return None

    fake.behaviour = slow
    _, err = proc.communicate(timeout=120)
    assert sent.is_set(), f"the run ended before the {phase} phase was interrupted:\n{err[-2000:]}"
    return proc.returncode, err, time.monotonic() - sent.at


@pytest.mark.parametrize("phase", ["dialogues", "judge"])
def test_first_ctrl_c_stops_lm_eval_with_one_line(tmp_path, phase):
    bank = write_bank(tmp_path / "bank", n=2)
    with EduFairFake() as fake:
        argv = lm_eval_argv(fake.url, bank, tmp_path / "out", limit=18, max_turns=3)
        code, err, took = _interrupt_when(fake, argv, cli_env(tmp_path / "cache"), tmp_path, phase)
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert code == 130, err[-2000:]
    assert "Traceback" not in err, err[-3000:]
    assert lines[-1].startswith("edufair: interrupted: ") and lines[-1].endswith(
        "are cached; rerun the same command to resume"), lines[-1]
    if phase == "judge":  # all dialogues ran; some labels arrived
        assert lines[-1].startswith("edufair: interrupted: 18 dialogues and "), lines[-1]
    else:
        assert lines[-1].endswith("and 0 labels are cached; rerun the same command to resume")
    assert took < 5, f"{took:.1f} s from Ctrl-C to exit"
    assert not list((tmp_path / "out").rglob("results_*.json"))  # nothing half-written


def test_first_ctrl_c_stops_edufair_judge(tmp_path):
    bank = write_bank(tmp_path / "bank", n=2)
    with EduFairFake() as fake:
        out = tmp_path / "out"
        env = cli_env(tmp_path / "cache")
        r = subprocess.run(lm_eval_argv(fake.url, bank, out, limit=18, max_turns=3), env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        argv = [PY, "-m", "edufair_metrics.cli", "judge", str(out), "--judge-base-url", fake.url, "--judge-model", "other",
                "--out", str(tmp_path / "rejudged"), "--cache", str(tmp_path / "judge-cache.sqlite"), "--no-progress"]
        code, err, took = _interrupt_when(fake, argv, env, tmp_path, "judge")
    assert code == 130 and "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines()[-1].startswith("edufair judge: interrupted: 18 dialogues and "), err[-500:]
    assert took < 5
    assert not (tmp_path / "rejudged").exists()
