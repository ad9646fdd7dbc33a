"""The stop rule (paper §3.2), applied after each tutor turn: the tutor revealed the gold answer,
or confirmed the student's correct answer, or T_max tutor turns were generated."""

from __future__ import annotations

import re

from edufair_metrics.dialogue.state import DialogueState
from edufair_metrics.protocol.answer_match import mentions_answer
from edufair_metrics.records import STOP_ANSWER_CONFIRMED, STOP_ANSWER_REVEALED, STOP_MAX_TURNS

# Words a tutor uses to confirm a student's answer (used only when the student's previous turn
# already stated the gold answer).
_CONFIRMATION = re.compile(
    r"\b(correct|exactly|that's right|that is right|you're right|you are right|right!|well done|"
    r"great job|good job|you got it|that's it|spot on|precisely|yes)\b",
    re.IGNORECASE,
)


def stop_after_tutor_turn(state: DialogueState, max_tutor_turns: int) -> str | None:
    """The stop rule, applied after each tutor turn: the tutor revealed the gold answer, or
    confirmed the student's correct answer, or T_max tutor turns were generated."""
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
