"""Benchmark (prints figures; not a test): EduFair's own CPU time per dialogue turn, with instant
fake models, through the real code paths: ``run_dialogues`` with ``CachedGenerator`` and a real
SQLite ``CallCache`` in a temporary folder (prompt building, templating, the stop rule, cache
lookups and writes), then ``judge.prompt.build_messages`` for every tutor turn, parsing a judge
answer per turn, and ``scores.score_dialogue``. Goal: <= 1 ms per dialogue turn.

    .venv/bin/python -m tests.dialogue.bench_orchestration [--dialogues 1000] [--turns 10] [--profile]

Documents are the shipped bank's mathematics and physics questions at every level of the
``explicit`` condition; the fakes answer at realistic lengths (tutor ~90 words with a question
and numbers that are not the gold, student ~35 words), so every dialogue runs all its turns.
"""

from __future__ import annotations

import os

os.environ.setdefault("TQDM_DISABLE", "1")  # before tqdm is imported: the loop's bar is noise here

import argparse
import cProfile
import itertools
import json
import pstats
import tempfile
import time
from pathlib import Path

from edufair_metrics.bank import load_bank
from edufair_metrics.cache import CallCache, model_identity
from edufair_metrics.dialogue.generation import CachedGenerator
from edufair_metrics.dialogue.loop import run_dialogues
from edufair_metrics.dialogue.state import DialogueState
from edufair_metrics.judge.parse import parse_judge_output
from edufair_metrics.judge.prompt import build_messages
from edufair_metrics.protocol.prompts import expand_documents
from edufair_metrics.records import JUDGE_OK, TurnJudgement
from edufair_metrics.scores import score_dialogue
from tests.helpers.fake_chat import JsonChatModel

TUTOR_GK = {"temperature": 0, "max_gen_toks": 1024, "until": []}
STUDENT_GK = {"temperature": 0, "max_gen_toks": 2048, "until": []}
JUDGE_ANSWER = json.dumps({"student_mistake_prev_turn": True, "correction_tone": 1, "mistake_recognize": 1,
                           "answer_leakage": 0, "scaffolding_guidance": 1, "actionability": 1})

TUTOR_TEXTS = [
    "<think>The student is unsure; I should not give the answer away but point at the first quantity.</think>"
    "Good start! Let's slow down and look at what the problem gives us. We know there are {a} items in the "
    "first group and {b} in the second. Before combining them, what do you think the question is really "
    "asking for: the total, the difference, or something else? Try writing the two numbers next to each "
    "other and tell me which operation connects them, and why you chose it.",
    "You're thinking about this the right way, but one step needs another look. When you multiplied {a} by "
    "{b}, which of those numbers was the rate and which was the amount of time? Units help here: write the "
    "unit next to each number, then check that the units of your result match what the question wants. "
    "What unit should the final answer have?",
    "Let's break it into smaller pieces. First, can you tell me what happens to the object at the start, "
    "before any force acts on it? Then think about what changes after {a} seconds. A quick sketch of the "
    "situation with arrows for each force often makes the next step obvious. What would you draw first?",
]
STUDENT_TEXTS = [
    "Hmm, I think we need to add them, so {a} plus {b}? I'm not totally sure that's what the question wants "
    "though, because it also says something about sharing equally.",
    "Okay, so the rate is {a} per hour and the time is {b} hours. I wrote the units down but I'm confused "
    "about which one goes on top.",
    "I would draw the object and an arrow pointing down for gravity. Maybe another arrow for friction? I'm "
    "not sure what happens after {a} seconds.",
]


class InstantChat(JsonChatModel):
    """A ChatModel that answers at once, rendering like lm-eval's API models (the JSON of the
    messages); answers vary with the call and request so every prompt is new (no cache hits)."""

    is_api = False  # keep the benchmark on one thread: this measures CPU, not overlap

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.counter = itertools.count()

    def system_survived(self, ctx, system):
        return system in ctx  # the shape of HarnessModel's check on a rendered string

    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        outs = []
        for ctx in contexts:
            i = next(self.counter)
            out = self.texts[i % len(self.texts)].format(a=9001 + i % 97, b=8001 + i % 89)
            if on_answer is not None:
                on_answer(ctx, out)
            outs.append(out)
        return outs


def documents(n: int) -> list[dict]:
    docs: list[dict] = []
    for domain in ("mathematics", "physics", "chemistry"):
        docs += expand_documents(load_bank(domain), "explicit")
        if len(docs) >= n:
            break
    if len(docs) < n:
        raise SystemExit(f"only {len(docs)} documents in the shipped bank")
    return docs[:n]


def judge_and_score(states: list[DialogueState]) -> int:
    requests = 0
    for i, s in enumerate(states):
        transcript = s.to_transcript(task="bench", doc_id=i)
        judgements = []
        for idx in transcript.tutor_turn_indices():
            build_messages(transcript, idx)
            labels = parse_judge_output(JUDGE_ANSWER)
            judgements.append(TurnJudgement(turn_index=idx, status=JUDGE_OK, labels=labels))
            requests += 1
        score_dialogue(transcript, judgements)
    return requests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialogues", type=int, default=1000)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--profile", action="store_true", help="print the top functions by cumulative CPU")
    args = ap.parse_args()

    docs = documents(args.dialogues)
    states = [DialogueState(doc=d) for d in docs]
    with tempfile.TemporaryDirectory() as tmp:
        cache = CallCache(Path(tmp) / "calls.sqlite")
        tutor = CachedGenerator(InstantChat(TUTOR_TEXTS), "tutor", model_identity("fake", {"m": "tutor"}), cache)
        student = CachedGenerator(InstantChat(STUDENT_TEXTS), "student", model_identity("fake", {"m": "student"}), cache)
        profiler = cProfile.Profile() if args.profile else None
        if profiler:
            profiler.enable()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        run_dialogues(tutor, student, states, max_tutor_turns=args.turns, tutor_gen_kwargs=TUTOR_GK,
                      student_gen_kwargs=STUDENT_GK, overlap=False, label="bench")
        cpu1 = time.process_time()
        judged = judge_and_score(states)
        cpu2, wall2 = time.process_time(), time.perf_counter()
        if profiler:
            profiler.disable()
        entries = cache.stats()["entries"]
        cache.close()

    turns = sum(s.tutor_turns for s in states)
    print(f"{len(states)} dialogues, {turns} tutor turns ({turns / len(states):.1f} per dialogue), "
          f"{entries} cache entries written, {judged} judge requests built")
    print(f"  runner (prompts, templating, stop rule, cache)   {(cpu1 - cpu0) / turns * 1000:.3f} ms CPU per turn")
    print(f"  judge requests + parsing + scores                 {(cpu2 - cpu1) / turns * 1000:.3f} ms CPU per turn")
    print(f"  total                                             {(cpu2 - cpu0) / turns * 1000:.3f} ms CPU per turn "
          f"(goal <= 1 ms); wall {wall2 - wall0:.1f} s")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
