"""Dialogue protocol (paper §3.2): the state of one dialogue, each party's view of it, and reasoning
stripping. Pure; ``edufair_metrics.dialogue.loop`` drives models with them.

The dialogue opens with the question posed to the student; the student answers first, then tutor
and student alternate, up to ``max_tutor_turns`` generated tutor turns. The tutor "initiates with
the question", so in the tutor's view the question is its own (assistant) message; in the student's
view it is the first user message, so the student's view always starts with a user message.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from edufair_metrics.failures import FailureKind
from edufair_metrics.protocol.replicates import doc_replicate
from edufair_metrics.records import Transcript, Turn

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


@dataclass(frozen=True)
class StopEvidence:
    """Why the stop rule fired, so that every stop can be audited from the transcript.

    ``rule``: ``tutor_states_gold`` (the tutor stated the gold as an answer), ``tutor_affirms_student``
    (the student stated it and the tutor affirmed) or ``max_turns``. ``span``: the matched text in
    turn ``turn_index`` (the gold as stated, or the affirmation; None for max_turns);
    ``student_span`` / ``student_turn_index``: where the previous student turn stated the gold,
    when it did."""

    rule: str
    turn_index: int
    span: str | None = None
    student_span: str | None = None
    student_turn_index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "StopEvidence":
        return cls(**{k: data[k] for k in ("rule", "turn_index", "span", "student_span", "student_turn_index")
                      if k in data})


@dataclass
class DialogueState:
    """A dialogue in progress. ``turns[0]`` is the opening question."""

    doc: dict[str, Any]
    turns: list[Turn] = field(default_factory=list)
    stop_reason: str | None = None
    error: str | None = None  # what went wrong, when a model call ended the dialogue
    error_kind: FailureKind | None = None
    stop_evidence: StopEvidence | None = None  # set by the stop rule with the stop reason

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
        replicate, seed = doc_replicate(d)
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
            error_kind=self.error_kind.value if self.error_kind else None,
            stop_evidence=self.stop_evidence.to_dict() if self.stop_evidence else None,
            replicate=replicate,
            tutor_seed=seed,
        )
