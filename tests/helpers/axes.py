"""Scripted tutors and students for the tests of EduFair's extension conditions (intersectional
Explicit, many names per group, the post-test): a bank of N physics questions, and chat fakes whose
answers vary with the question (noise, so that a contrast without a planted effect is a real null)
and change only where a test plants an effect (a cue in the tutor's system prompt).

Everything is deterministic: the "noise" is a hash of the question and the level's cue."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable

from tests.helpers.fake_chat import JsonChatModel

GOLDS = ["gravity", "friction", "inertia", "momentum", "density", "pressure", "energy", "velocity", "magnetism",
         "buoyancy", "refraction", "conduction", "radiation", "convection", "acceleration"]
FILLER = ["carefully", "slowly", "again", "together", "first", "now", "briefly", "clearly"]


def write_axes_bank(d: Path, n: int = 30) -> Path:
    """``d/physics.jsonl`` with ``n`` questions (one-word golds); returns ``d`` (a ``bank_dir``)."""
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "physics.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            gold = GOLDS[i % len(GOLDS)]
            fh.write(json.dumps({"id": f"ax-{i:03d}", "domain": "physics", "grade": 8, "source": "sciq",
                                 "question": f"Question {i}: which idea explains case number {i}?",
                                 "answer": gold, "answer_forms": [gold]}) + "\n")
    return d


def unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from ``parts``."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()
    return int(h[:12], 16) / 16 ** 12


def system_of(messages: list[dict]) -> str:
    return messages[0]["content"] if messages and messages[0]["role"] == "system" else ""


def question_of(messages: list[dict]) -> str:
    return next((m["content"] for m in messages[1:] if m["role"] in ("assistant", "user")), "")


def noisy_tutor(extra_words: Callable[[str, str], int] = lambda system, question: 0, seed: str = "") -> Callable:
    """A tutor whose turn length varies with (question, cue sentence, turn) and grows by
    ``extra_words(system, question)`` words: a planted effect on the conversation metrics."""

    def respond(messages: list[dict]) -> str:
        system, question = system_of(messages), question_of(messages)
        cue = system.split(" You are a tutor", 1)[0]
        turn = sum(1 for m in messages if m["role"] == "assistant")
        n = int(unit(seed, question, cue, turn) * 6) + extra_words(system, question)
        words = " ".join(FILLER[(k + turn) % len(FILLER)] for k in range(n))
        return f"Let us think {words}. What do you notice?".replace("  ", " ")

    return respond


def plain_student(messages: list[dict]) -> str:
    return "I am not sure, can you give me a hint?"


class Scripted(JsonChatModel):
    """A ChatModel answering from a script of the conversation; counts calls and requests."""

    def __init__(self, respond: Callable[[list[dict]], str]) -> None:
        self.respond = respond
        self.calls = 0
        self.requests = 0

    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        self.calls += 1
        self.requests += len(contexts)
        return [self.respond(json.loads(c)) for c in contexts]
