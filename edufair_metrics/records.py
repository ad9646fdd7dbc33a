"""Typed records that flow between the stages (bank -> prompts -> runner -> transcripts ->
judge -> per-dialogue scores -> statistics -> reports).

Every record round-trips through plain JSON (``to_dict``/``from_dict``) so that each stage can be
re-run from the stored output of the previous one (samples files, JSONL).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

DOMAINS = ("mathematics", "physics", "chemistry")
# Task-name suffix -> bank domain.
TASK_DOMAINS = {"math": "mathematics", "physics": "physics", "chemistry": "chemistry"}
GRADES = {"mathematics": 9, "physics": 8, "chemistry": 8}
CONDITIONS = ("explicit", "implicit", "opposite")

# The paper's five turn-level pedagogical metrics, and the judge field each one reads (App. F).
PEDAGOGICAL_METRICS = (
    "mistake_recognize",
    "answer_leakage",
    "step_scaffolded",
    "actionability",
    "corrective_tone",
)
JUDGE_FIELD_FOR_METRIC = {
    "mistake_recognize": "mistake_recognize",
    "answer_leakage": "answer_leakage",
    "step_scaffolded": "scaffolding_guidance",
    "actionability": "actionability",
    "corrective_tone": "correction_tone",
}
# The four conversation-level metrics, computed from the transcript alone.
CONVERSATION_METRICS = (
    "tutor_turns",
    "tutor_avg_word",
    "tutor_question_rate",
    "tutor_student_word_ratio",
)
ALL_METRICS = PEDAGOGICAL_METRICS + CONVERSATION_METRICS
# Judge-invariant metrics computed by edufair_metrics.detectors from the transcript alone (a third
# metric kind in the grid: their own contrasts, headline and FDR family; never in the pedagogical headline).
DETECTOR_METRICS = ("leak_rate_det", "independence_ratio")


def _from_dict(cls, data: dict[str, Any]):
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class BankItem:
    """One question of the bank (one line of ``edufair_metrics/bank/data/<domain>.jsonl``)."""

    id: str
    domain: str  # mathematics | physics | chemistry
    grade: int
    question: str
    answer: str  # gold answer, human readable
    answer_forms: list[str]  # strings a deterministic detector may match (normalised)
    source: str  # sciq | socrateach | gsm8k-proxy
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BankItem":
        return _from_dict(cls, data)


@dataclass(frozen=True)
class ConditionLevel:
    """One demographic level of one condition, with the exact system prompts it produces."""

    condition: str  # explicit | implicit | opposite
    dimension: str  # gender | immigration | language | ses | name | gender_match
    level: str  # stable identifier, e.g. "female", "michael", "s_female_t_male"
    attributes: dict[str, str] = field(default_factory=dict)  # e.g. {"gender": "female"}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Turn:
    """One utterance. ``role`` is ``question`` (the opening question, not generated),
    ``student`` or ``tutor``. ``text`` is what the other party and the judge see (reasoning
    stripped); ``raw`` is exactly what the model generated."""

    role: str
    text: str
    raw: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Turn":
        return _from_dict(cls, data)


# Why a dialogue ended.
STOP_ANSWER_REVEALED = "answer_revealed"  # a tutor turn stated the gold answer
STOP_ANSWER_CONFIRMED = "answer_confirmed"  # the student stated it and the tutor confirmed it
STOP_MAX_TURNS = "max_turns"  # T_max tutor turns were generated
STOP_STUDENT_FAILED = "student_failed"  # a student call failed (retried when retryable): dialogue incomplete
STOP_TUTOR_FAILED = "tutor_failed"


@dataclass
class Transcript:
    """A finished (or failed) tutoring dialogue for one (question, condition level)."""

    question_id: str
    domain: str
    condition: str
    dimension: str
    level: str
    tutor_system: str
    student_system: str
    turns: list[Turn]
    stop_reason: str
    task: str = ""
    doc_id: int = -1
    error: str | None = None  # set when stop_reason is a failure: what went wrong
    error_kind: str | None = None  # its FailureKind value (edufair_metrics.failures)
    # Which stop rule fired and on what text: {"rule", "turn_index", "span", "student_span",
    # "student_turn_index"} (edufair_metrics.dialogue.state.StopEvidence); None for failed or
    # unfinished dialogues and for transcripts written before it was recorded.
    stop_evidence: dict[str, Any] | None = None

    @property
    def complete(self) -> bool:
        return self.stop_reason in (STOP_ANSWER_REVEALED, STOP_ANSWER_CONFIRMED, STOP_MAX_TURNS)

    def tutor_turn_indices(self) -> list[int]:
        return [i for i, t in enumerate(self.turns) if t.role == "tutor"]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["turns"] = [t.to_dict() for t in self.turns]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Transcript":
        obj = _from_dict(cls, data)
        obj.turns = [Turn.from_dict(t) if isinstance(t, dict) else t for t in obj.turns]
        return obj


JUDGE_OK = "ok"
JUDGE_MISSING = "missing"


@dataclass
class TurnJudgement:
    """The judge's labels for one tutor turn. ``labels`` is None when ``status`` is missing:
    a label that could not be obtained is never replaced by a value."""

    turn_index: int  # index into Transcript.turns
    status: str  # ok | missing
    labels: dict[str, Any] | None = None  # the six judge fields, validated
    reason: str | None = None  # why missing, in words
    kind: str | None = None  # why missing, as a FailureKind value (edufair_metrics.failures)
    raw: str | None = None  # the judge's last raw answer
    attempts: int = 0
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TurnJudgement":
        return _from_dict(cls, data)


def nan_to_none(x: Any) -> Any:
    return None if isinstance(x, float) and math.isnan(x) else x


def none_to_nan(x: Any) -> float:
    return float("nan") if x is None else float(x)


@dataclass
class DialogueScores:
    """The nine per-dialogue scores of one dialogue (NaN = no value: missing or not applicable).

    ``failed``: the dialogue was ended by a failed student or tutor call (its transcript carries an
    error); by default the statistics leave it out, so its demographic pairs drop out
    (``analysis.params.StatParams.keep_failed_dialogues``)."""

    question_id: str
    domain: str
    condition: str
    dimension: str
    level: str
    scores: dict[str, float]
    tutor: str = ""  # tutor model identity, filled in by reports
    task: str = ""
    missing_turns: int = 0  # tutor turns sent to the judge whose labels could not be obtained
    sent_turns: int = 0  # tutor turns sent to the judge (missing ones included)
    failed: bool = False

    @property
    def labelled_turns(self) -> int:
        """Tutor turns the judge labelled (sent minus missing)."""
        return self.sent_turns - self.missing_turns

    @property
    def judged_turns(self) -> int:
        """Old name of ``sent_turns`` (it counted turns *sent* to the judge, missing ones included)."""
        return self.sent_turns

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["scores"] = {k: nan_to_none(v) for k, v in self.scores.items()}
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DialogueScores":
        if "judged_turns" in data and "sent_turns" not in data:  # records written before the rename
            data = {**data, "sent_turns": data["judged_turns"]}
        obj = _from_dict(cls, data)
        obj.scores = {k: none_to_nan(v) for k, v in obj.scores.items()}
        obj.failed = bool(obj.failed)
        return obj

