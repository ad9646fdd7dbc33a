"""Benchmark (prints figures; not a test): the tutor phase of the turn loop when 2% of the tutor's
requests always fail (HTTP 500 on every attempt), against a latency-simulating OpenAI-compatible
server, compared with the same run without failures.

The tutor is lm-eval's ``local-chat-completions`` behind EduFair's ``HarnessModel`` (lm-eval's own
retries included: ``max_retries`` attempts per send, exponential backoff from 1 s), with
``num_concurrent`` requests in flight; the server answers each request after ``--latency`` and works
on at most ``--concurrency`` at a time. The student is an in-process stand-in without latency, and
the loop runs sequentially (``overlap: false``), so the time measured is the tutor's. Failing
requests are chosen by a hash of the request's messages: the same request fails on every attempt,
and its dialogue ends as ``tutor_failed``.

    python -m tests.dialogue.bench_resends [--questions 50] [--turns 3] [--latency 0.5] [--rate 0.02] [--concurrency 16]

Both runs are measured side by side in one process (the clean run first); the tutor phase is the
wall time of the tutor's calls. The script also checks that every dialogue that did not fail has
the clean run's transcript.
"""

from __future__ import annotations

import os

os.environ.setdefault("TQDM_DISABLE", "1")

import argparse
import functools
import hashlib
import json
import logging
import time

from edufair_metrics.cache import model_identity
from edufair_metrics.dialogue.generation import CachedGenerator
from edufair_metrics.dialogue.loop import run_dialogues
from edufair_metrics.dialogue.state import DialogueState
from edufair_metrics.lmeval import quiet_request_bars
from edufair_metrics.lmeval.models import HarnessModel

from tests.helpers.aio_chat import ChatServer
from tests.helpers.fake_chat import JsonChatModel

GEN = {"temperature": 0, "max_gen_toks": 64, "until": []}


def failing(messages: list[dict], rate: float) -> bool:
    h = int(hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:8], 16) / 2**32
    return h < rate


def reply(rate: float, body: dict) -> tuple[int, str]:
    if failing(body["messages"], rate):
        return 500, "always failing"
    n = len(body["messages"])
    return 200, f"tutor says turn {n}: let us think about step {n % 7}."


class Student(JsonChatModel):
    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        outs = []
        for ctx in contexts:
            outs.append(f"student says turn {len(json.loads(ctx))}: maybe it is the mass?")
            if on_answer:
                on_answer(ctx, outs[-1])
        return outs


class Timed:
    """The tutor model with the wall time of its calls summed."""

    def __init__(self, inner) -> None:
        self.inner, self.seconds, self.calls = inner, 0.0, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def generate(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return self.inner.generate(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


def docs(n_questions: int, levels: int) -> list[dict]:
    return [{"question_id": f"q{i}", "domain": "physics", "condition": "explicit", "dimension": "gender",
             "level": f"L{j}", "question": f"Which force acts on body {i}?", "answer": "12345",
             "answer_forms": ["12345"], "tutor_system": f"You are a tutor ({j}).",
             "student_system": f"You are a student ({j})."} for i in range(n_questions) for j in range(levels)]


def run(args, rate: float) -> dict:
    from lm_eval.models.openai_completions import LocalChatCompletion

    with ChatServer(functools.partial(reply, rate), latency_s=args.latency, concurrency=args.concurrency) as port:
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        lm = LocalChatCompletion(model="fake-tutor", base_url=url, tokenized_requests=False,
                                 num_concurrent=args.concurrency, max_retries=3)
        model = Timed(HarnessModel(lm))
        tutor = CachedGenerator(model, "tutor", model_identity("local-chat-completions", {"model": "t"}), None)
        student = CachedGenerator(Student(), "student", {"kind": "stand-in"}, None)
        states = [DialogueState(doc=d) for d in docs(args.questions, args.levels)]
        start = time.perf_counter()
        with quiet_request_bars():
            run_dialogues(tutor, student, states, max_tutor_turns=args.turns, tutor_gen_kwargs=GEN,
                          student_gen_kwargs=GEN, overlap=False, label="bench")
        wall = time.perf_counter() - start
    counts = tutor.counts.to_dict()
    return {"wall_s": wall, "tutor_s": model.seconds, "tutor_calls": model.calls, "distinct": counts["distinct"],
            "sends": counts["sends"], "failed": counts["failed"], "http_attempts": counts["http_attempts"],
            "failed_dialogues": sum(s.stop_reason == "tutor_failed" for s in states),
            "transcripts": [None if s.stop_reason == "tutor_failed" else json.dumps(s.turns, default=repr)
                            for s in states]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument("--levels", type=int, default=9)
    ap.add_argument("--turns", type=int, default=3, help="max tutor turns")
    ap.add_argument("--latency", type=float, default=0.5, help="seconds per request")
    ap.add_argument("--concurrency", type=int, default=16, help="num_concurrent of the tutor and the server's slots")
    ap.add_argument("--rate", type=float, default=0.02, help="share of tutor requests that always fail")
    args = ap.parse_args()
    for name in ("edufair", "lm-eval", "lm_eval"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    base = run(args, 0.0)
    faulty = run(args, args.rate)
    n = args.questions * args.levels
    print(f"{n} dialogues x up to {args.turns} tutor turns; latency {args.latency:.2f} s, {args.concurrency} in flight, "
          f"lm-eval max_retries=3")
    for label, row in (("no failures", base), (f"{args.rate:.0%} always failing", faulty)):
        print(f"  {label:<20} tutor phase {row['tutor_s']:7.1f} s  (wall {row['wall_s']:.1f} s, {row['tutor_calls']} tutor "
              f"calls, {row['distinct']} distinct requests, {row['sends']} sends, {row['failed']} failed, "
              f"{row['failed_dialogues']} dialogues failed)")
    print(f"  ratio: {faulty['tutor_s'] / base['tutor_s']:.2f}x the tutor phase without failures")
    kept = [(a, b) for a, b in zip(base["transcripts"], faulty["transcripts"]) if b is not None]
    differ = sum(a != b for a, b in kept)
    print(f"  transcripts: {differ} of {len(kept)} dialogues that did not fail differ from the clean run")


if __name__ == "__main__":
    main()
