"""Benchmark (prints figures; not a test): wall time per dialogue turn of the turn loop, sequential
vs overlapped, against two latency-simulating OpenAI-compatible servers (tutor and student).

Each server answers every request after a fixed latency and serves at most ``--concurrency``
requests at a time (the rest queue, like a real inference server with a bounded batch), so a call
over N requests takes about ceil(N / concurrency) * latency. Both models are lm-eval's
``local-chat-completions`` behind EduFair's ``HarnessModel``; the tutor runs on the main thread,
the student in the loop's worker thread. Goal: overlapped <= 0.6 x sequential with
equal tutor and student latency.

    .venv/bin/python -m tests.dialogue.bench_overlap [--dialogues 64] [--turns 10] [--latency 0.05]
        [--concurrency 8] [--tutor http|inprocess]
"""

from __future__ import annotations

import os

os.environ.setdefault("TQDM_DISABLE", "1")  # before tqdm is imported: the loop's bar is noise here

import argparse
import functools
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


def reply(role: str, body: dict) -> tuple[int, str]:
    n = len(body["messages"])
    # deterministic, never states the gold: every dialogue runs to max_tutor_turns
    return 200, f"{role} says turn {n}: let us think about step {n % 7}."


class LatencyServer(ChatServer):
    """The benchmark server of one role (``tests/helpers/aio_chat.py``): answers every request
    after ``latency_s``, at most ``concurrency`` requests at a time."""

    def __init__(self, role: str, latency_s: float, concurrency: int) -> None:
        super().__init__(functools.partial(reply, role), latency_s=latency_s, concurrency=concurrency)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> "LatencyServer":
        super().__enter__()
        return self


def docs(n: int) -> list[dict]:
    return [{"question_id": f"q{i}", "domain": "mathematics", "condition": "explicit", "dimension": "gender",
             "level": "L", "question": f"How many apples are in basket {i}?", "answer": "12345",
             "answer_forms": ["12345"], "tutor_system": f"You are a tutor ({i}).",
             "student_system": f"You are a student ({i})."} for i in range(n)]


def generator(srv: LatencyServer, role: str, clients: int) -> CachedGenerator:
    from lm_eval.models.openai_completions import LocalChatCompletion

    lm = LocalChatCompletion(model=f"fake-{role}", base_url=srv.base_url + "/chat/completions",
                             tokenized_requests=False, num_concurrent=clients, max_retries=1)
    return CachedGenerator(HarnessModel(lm), role, model_identity("local-chat-completions", {"model": role}), None)


class InProcessTutor(JsonChatModel):
    """A stand-in for an in-process tutor (vLLM on the main thread): a call over N prompts blocks
    for ceil(N / concurrency) * latency, releasing the GIL like a GPU wait does."""

    def __init__(self, latency_s: float, concurrency: int) -> None:
        self.latency_s, self.concurrency = latency_s, concurrency

    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        time.sleep(-(-len(contexts) // self.concurrency) * self.latency_s)
        outs = []
        for ctx in contexts:
            n = len(json.loads(ctx))
            outs.append(f"tutor says turn {n}: let us think about step {n % 7}.")
            if on_answer:
                on_answer(ctx, outs[-1])
        return outs


def timed_run(n: int, turns: int, latency: float, concurrency: int, overlap: bool, tutor_kind: str) -> tuple[float, str]:
    with LatencyServer("tutor", latency, concurrency) as t_srv, LatencyServer("student", latency, concurrency) as s_srv:
        student = generator(s_srv, "student", 2 * concurrency)
        if tutor_kind == "http":
            tutor = generator(t_srv, "tutor", 2 * concurrency)
        else:
            tutor = CachedGenerator(InProcessTutor(latency, concurrency), "tutor", {"kind": "in-process"}, None)
        states = [DialogueState(doc=d) for d in docs(n)]
        start = time.perf_counter()
        with quiet_request_bars():
            run_dialogues(tutor, student, states, max_tutor_turns=turns, tutor_gen_kwargs=GEN,
                          student_gen_kwargs=GEN, overlap=overlap, label="bench")
        wall = time.perf_counter() - start
    transcripts = json.dumps([s.to_transcript().to_dict() for s in states], sort_keys=True)
    return wall, transcripts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialogues", type=int, default=64)
    ap.add_argument("--turns", type=int, default=10, help="max tutor turns")
    ap.add_argument("--latency", type=float, default=0.05, help="seconds per request, both servers")
    ap.add_argument("--concurrency", type=int, default=8, help="requests each server works on at a time")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--tutor", choices=("http", "inprocess"), default="http",
                    help="the tutor: an HTTP server like the student, or an in-process model on the main thread")
    args = ap.parse_args()
    logging.getLogger("edufair").setLevel(logging.ERROR)
    logging.getLogger("lm-eval").setLevel(logging.ERROR)
    logging.getLogger("lm_eval").setLevel(logging.ERROR)

    best: dict[bool, float] = {}
    texts: dict[bool, str] = {}
    for _ in range(args.repeats):
        for overlap in (False, True):
            wall, texts[overlap] = timed_run(args.dialogues, args.turns, args.latency, args.concurrency, overlap,
                                               args.tutor)
            best[overlap] = min(best.get(overlap, wall), wall)
    ideal = -(-args.dialogues // args.concurrency) * args.latency  # one full call
    print(f"{args.tutor} tutor, {args.dialogues} dialogues x {args.turns} tutor turns; latency {args.latency * 1000:.0f} ms per request, "
          f"{args.concurrency} requests at a time per server (a full call ~{ideal * 1000:.0f} ms); best of {args.repeats}")
    for overlap in (False, True):
        print(f"  {'overlapped' if overlap else 'sequential':<10}  {best[overlap]:.2f} s  "
              f"{best[overlap] / args.turns * 1000:7.1f} ms per turn")
    print(f"  ratio overlapped / sequential: {best[True] / best[False]:.2f}  (goal <= 0.6)")
    print(f"  transcripts identical: {texts[True] == texts[False]}")


if __name__ == "__main__":
    main()
