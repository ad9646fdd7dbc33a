"""Shared helpers for the end-to-end CLI tests (resume, faults, bad input, security):
a deterministic EduFair fake endpoint (tutor, student and judge on one loopback OpenAI server)
that counts calls per (role, exact messages), and the ``lm_eval run`` command line."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from lm_eval_tasks import TASKS_DIR

from tests.helpers.fake_openai import Drop, FakeOpenAI, FakeRequest, Reply, labels_json
from tests.helpers.paths import FIXTURES, REPO

PY = sys.executable
TASK = "edufair_explicit_physics"
SECRET = "sk-edufair-test-SECRET-7f3a9c2e51"
# the real lm-eval CLI without indexing lm-eval's built-in tasks (see that file)
FAST_LM_EVAL = Path(__file__).resolve().with_name("_lm_eval_cli.py")


def role_of(req: FakeRequest) -> str:
    return role_of_system(req.content("system") or "")


def role_of_system(system: str) -> str:
    """Which EduFair role sent a request, from its system prompt."""
    if system.startswith("Reasoning: low"):
        return "judge"
    if system.startswith("This is a Grade"):
        return "tutor"
    if system.startswith("You are a Grade"):
        return "student"
    return "other"


def call_key(req: FakeRequest) -> tuple[str, str]:
    """(role, exact messages + decoding): two requests with the same key are the same call."""
    body = req.body or {}
    role = role_of(req)
    if body.get("max_tokens") == 1:
        role = "harness"  # lm-eval's own 1-token call per document (not a dialogue turn)
    return role, json.dumps([req.messages, body.get("max_tokens"), body.get("temperature")], sort_keys=True)


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def answer(req: FakeRequest) -> str:
    """Deterministic answer from the request content only."""
    role, key = call_key(req)
    h = _h(key)
    if role == "judge":
        return labels_json(mistake=bool(h % 2), tone=h % 2 * (h >> 3) % 2, recog=h % 2 * (h >> 4) % 2 if h % 2 else -1,
                           leak=(h >> 5) % 2, scaffold=(h >> 6) % 2, action=(h >> 7) % 2) if h % 2 else labels_json(
            mistake=False, tone=-1, recog=-1, leak=(h >> 5) % 2, scaffold=(h >> 6) % 2, action=(h >> 7) % 2)
    if role in ("tutor", "harness"):
        return f"Think about it step {h % 97}. What do you notice first?" + (" Try again?" if h % 3 else "")
    if role == "student":
        return f"I think the answer is {['gravity', 'mass', 'newton', 'joule'][h % 4]}."
    return "?"


class EduFairFake:
    """A loopback endpoint for tutor, student and judge. ``behaviour(req, n)`` (optional) may
    return a fault for the n-th call of that key (1-based); otherwise ``answer``."""

    def __init__(self, behaviour: Callable[[FakeRequest, int], Any] | None = None) -> None:
        self.behaviour = behaviour
        self.counts: dict[tuple[str, str], int] = {}
        self.answered: list[tuple[str, str]] = []  # keys answered with a valid reply, in order
        self.lock = threading.Lock()
        self.hold = threading.Event()  # set: park every new request (used right before a kill)
        self._released = threading.Condition(self.lock)
        self._epoch = 0  # bumped by release(): parked requests end, unanswered
        self.on_request: Callable[[int], None] | None = None
        self.srv = FakeOpenAI(responder=self._respond)

    def __enter__(self) -> "EduFairFake":
        self.srv.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
        self.srv.stop()

    @property
    def url(self) -> str:
        return self.srv.base_url

    def release(self) -> None:
        """End the hold: every parked request is dropped unanswered (its client is gone). A parked
        request never wakes up later to be counted or answered in another run's bookkeeping."""
        with self._released:
            self.hold.clear()
            self._epoch += 1
            self._released.notify_all()

    def _park(self) -> Drop:
        with self._released:
            epoch = self._epoch
            self._released.wait_for(lambda: self._epoch != epoch, timeout=120)
        return Drop()

    def _respond(self, req: FakeRequest):
        if self.hold.is_set():
            return self._park()  # never counted, never answered: the client is about to be killed
        key = call_key(req)
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1
            n = self.counts[key]
            total = sum(self.counts.values())
        if self.on_request is not None:
            self.on_request(total)
            if self.hold.is_set():
                return self._park()  # sent by the client (counted) but never answered
        b = self.behaviour(req, n) if self.behaviour else None
        if b is None:
            b = Reply(answer(req))
        if isinstance(b, Reply):
            with self.lock:
                self.answered.append(key)
        return b

    def reset(self) -> None:
        with self.lock:
            self.counts.clear()
            self.answered.clear()


def lm_eval_argv(url: str, bank: Path, out: Path, *, limit: int = 9, max_turns: int = 3, extra: dict | None = None,
                 judge: dict | None = None, fast: bool = True, model_args_extra: str = "") -> list[str]:
    chat = f"{url}/chat/completions"
    student_args = {"model": "fake-student", "base_url": chat, "num_concurrent": 2, "max_retries": 2, "tokenized_requests": False}
    for kv in filter(None, model_args_extra.split(",")):
        k, v = kv.split("=", 1)
        student_args[k] = int(v) if v.isdigit() else v
    meta = {
        "edufair": {
            "student": {"model": "local-chat-completions", "model_args": student_args},
            "judge": {"base_url": url, "model": "fake-judge", "concurrency": 2, **(judge or {})},
            "bank_dir": str(bank),
            "max_tutor_turns": max_turns,
            **(extra or {}),
        }
    }
    head = [PY, str(FAST_LM_EVAL)] if fast else [PY, "-m", "lm_eval"]
    return head + [
        "run", "--model", "local-chat-completions",
        "--model_args", f"model=fake-tutor,base_url={chat},num_concurrent=2,max_retries=2,tokenized_requests=False{',' + model_args_extra if model_args_extra else ''}",
        "--tasks", TASK, "--include_path", str(TASKS_DIR), "--limit", str(limit),
        "--log_samples", "--output_path", str(out), "--metadata", json.dumps(meta),
    ]


def sigint_as_a_terminal_sends_it() -> None:
    """``preexec_fn`` of a child that a test sends Ctrl-C: SIGINT at its default. A suite started in
    the background of a non-interactive shell (``sh -c 'pytest &'``, nohup) inherits SIGINT
    *ignored*, and Python then installs no KeyboardInterrupt handler: the child would never see the
    test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli_env(cache_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDUFAIR_")}
    env.update(
        EDUFAIR_CACHE_DIR=str(cache_dir), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", OPENAI_API_KEY="EMPTY",
        EDUFAIR_JUDGE_CONFIG=str(FIXTURES / "no-judge-config.yaml"), PYTHONPATH=str(REPO),
        TQDM_DISABLE="1",
    )
    env.update(extra)
    return env


def run_cli(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def samples(out: Path) -> list[dict[str, Any]]:
    files = sorted(out.rglob(f"samples_{TASK}_*.jsonl"))
    assert files, f"no samples file under {out}"
    return [json.loads(line)["complete_dialogues"] for line in files[-1].read_text().splitlines() if line.strip()]


def results(out: Path) -> dict[str, Any]:
    files = sorted(out.rglob("results_*.json"))
    assert files, f"no results file under {out}"
    return json.loads(files[-1].read_text())["results"][TASK]


def comparable(records: list[dict[str, Any]]) -> list[tuple]:
    """Per dialogue: (question, level, stop reason, turns, judge labels, scores) in doc order."""
    out = []
    for r in records:
        t = r["transcript"]
        out.append((t["question_id"], t["level"], t["stop_reason"], json.dumps(t["turns"], sort_keys=True),
                    json.dumps([(j["status"], j.get("labels")) for j in r["judgements"]], sort_keys=True),
                    json.dumps(r["scores"]["scores"], sort_keys=True)))
    return sorted(out)
