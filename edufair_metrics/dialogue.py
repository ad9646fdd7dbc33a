"""Dialogue protocol (paper §3.2): message views for each party, reasoning stripping and the stop
rule. Pure functions; the runner in ``lm_eval_tasks.task`` drives models with them.

The dialogue opens with the question posed to the student; the student answers first, then tutor
and student alternate, up to ``max_tutor_turns`` generated tutor turns. The tutor "initiates with
the question", so in the tutor's view the question is its own (assistant) message; in the student's
view it is the first user message, so the student's view always starts with a user message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .records import (
    STOP_ANSWER_CONFIRMED,
    STOP_ANSWER_REVEALED,
    STOP_MAX_TURNS,
    Transcript,
    Turn,
)

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_END = re.compile(r"</think>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)


def strip_reasoning(raw: str) -> str:
    """Remove ``<think>…</think>`` reasoning before the other party or the judge sees a turn.

    A closing tag without an opening one (templates that put ``<think>`` in the prompt) drops
    everything before it; an unclosed ``<think>`` (reasoning cut off by the token limit) drops
    everything after it, since none of it was meant for the student.
    """
    text = _THINK_BLOCK.sub("", raw or "")
    if _THINK_END.search(text):
        text = _THINK_END.split(text)[-1]
    if _THINK_OPEN.search(text):
        text = _THINK_OPEN.split(text)[0]
    return text.strip()


# Words a tutor uses to confirm a student's answer (used only when the student's previous turn
# already stated the gold answer).
_CONFIRMATION = re.compile(
    r"\b(correct|exactly|that's right|that is right|you're right|you are right|right!|well done|"
    r"great job|good job|you got it|that's it|spot on|precisely|yes)\b",
    re.IGNORECASE,
)


@dataclass
class DialogueState:
    """A dialogue in progress. ``turns[0]`` is the opening question."""

    doc: dict[str, Any]
    turns: list[Turn] = field(default_factory=list)
    stop_reason: str | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if not self.turns:
            self.turns = [Turn(role="question", text=self.doc["question"], raw=None)]

    @property
    def done(self) -> bool:
        return self.stop_reason is not None

    @property
    def tutor_turns(self) -> int:
        return sum(1 for t in self.turns if t.role == "tutor")

    def add(self, role: str, raw: str) -> Turn:
        turn = Turn(role=role, text=strip_reasoning(raw), raw=raw)
        self.turns.append(turn)
        return turn

    def tutor_messages(self, system_instruction: str | None = None) -> list[dict[str, str]]:
        system = self.doc["tutor_system"]
        if system_instruction:
            # --system_instruction is the harness's; it goes before the protocol prompt.
            system = f"{system_instruction}\n\n{system}"
        msgs = [{"role": "system", "content": system}]
        for t in self.turns:
            role = "user" if t.role == "student" else "assistant"  # question and tutor turns are the tutor's
            msgs.append({"role": role, "content": t.text})
        return msgs

    def student_messages(self) -> list[dict[str, str]]:
        msgs = [{"role": "system", "content": self.doc["student_system"]}]
        for t in self.turns:
            role = "assistant" if t.role == "student" else "user"
            msgs.append({"role": role, "content": t.text})
        return msgs

    def to_transcript(self, task: str = "", doc_id: int = -1) -> Transcript:
        d = self.doc
        return Transcript(
            question_id=d["question_id"],
            domain=d["domain"],
            condition=d["condition"],
            dimension=d["dimension"],
            level=d["level"],
            tutor_system=d["tutor_system"],
            student_system=d["student_system"],
            turns=list(self.turns),
            stop_reason=self.stop_reason or "unfinished",
            task=task,
            doc_id=doc_id,
            error=self.error,
        )


def stop_after_tutor_turn(state: DialogueState, max_tutor_turns: int) -> str | None:
    """The stop rule, applied after each tutor turn: the tutor revealed the gold answer, or
    confirmed the student's correct answer, or T_max tutor turns were generated."""
    from .answer_match import mentions_answer

    doc = state.doc
    tutor = state.turns[-1]
    previous_student = next((t for t in reversed(state.turns[:-1]) if t.role == "student"), None)
    student_had_it = previous_student is not None and mentions_answer(
        previous_student.text, doc["answer_forms"], doc["domain"]
    )
    if mentions_answer(tutor.text, doc["answer_forms"], doc["domain"]):
        return STOP_ANSWER_CONFIRMED if student_had_it else STOP_ANSWER_REVEALED
    if student_had_it and _CONFIRMATION.search(tutor.text):
        return STOP_ANSWER_CONFIRMED
    if state.tutor_turns >= max_tutor_turns:
        return STOP_MAX_TURNS
    return None
