"""The dialogue scorers: every value a record's scores hold comes from one of them, each with a name,
a version, the metrics it writes and its per-turn output (kept in the record, so that no reader
computes it again). All are pure (no model call): the judge's labels are inputs here, like the
transcript and the gold.

    judge         the five pedagogical rates, the judge bookkeeping (sent / missing turns), the per-metric
                  turn counts and per-position masks, from the stored judgements (``scores``)
    conversation  the four conversation metrics, from the transcript (``scores``)
    detectors     the judge-invariant detector metrics; per turn: leak, partial-reveal, confirmation
                  and reasoning-attempt hits (``detectors``)
    student       the student-side monitor; per turn: each student turn's labels (``detectors.student``)
    outcome       the post-test's verdicts and the outcome metrics (``detectors.outcome``)

A record stores a :class:`~edufair_metrics.records.ScorerStamp` per scorer (its version, and whether it
had the gold). :func:`complete` is the one loop that brings a stored record up to date: a scorer whose
stamp is missing or of another version, or that ran without a gold that is known now, scores the
record again (what an older stored record gets: :attr:`DialogueScorer.upgrade`); it returns a NEW
record and leaves its input as it was. :func:`score_record` runs every scorer on a record just made
(``runlog.build``). Bump a scorer's version when its definition changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from edufair_metrics.detectors import DETECTOR_VERSION, RETIRED_DETECTOR_METRICS, detector_output, student_output
from edufair_metrics.detectors.outcome import OUTCOME_VERSION, score_posttest, stored_outcome
from edufair_metrics.records import (
    CONVERSATION_METRICS,
    DETECTOR_METRICS,
    OUTCOME_METRICS,
    PEDAGOGICAL_METRICS,
    STUDENT_METRICS,
    DialogueRecord,
    DialogueScores,
    ScorerStamp,
)
from edufair_metrics.scores import TURN_COUNTS_VERSION, conversation_metrics, pedagogical_counts, score_dialogue

# The student monitor was versioned with the detectors (DETECTOR_VERSION) until each scorer got its own
# stamp (record schema v3); it starts at that count so that older records map onto it.
STUDENT_MONITOR_VERSION = 3
CONVERSATION_VERSION = 1


@dataclass(frozen=True)
class Scored:
    """What one scorer gives one record: metric values to store (a NaN value of a scorer with
    ``drop_nan`` is left out), other :class:`DialogueScores` fields it sets, its per-turn output
    (None: none) and, for the outcome, the scored post-test."""

    metrics: dict[str, float] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)
    per_turn: dict[str, Any] | None = None
    posttest: Any = None
    replaces: bool = True  # the scorer's stored metrics are replaced by ``metrics`` (False: only ``fields`` set)


@dataclass(frozen=True)
class DialogueScorer:
    """One registered dialogue scorer. ``score``: the values of a record just made; ``upgrade``: what
    a stored record gets when its stamp is stale (None: ``score``); ``applies``: whether the record has
    what the scorer reads (else it is left alone, unstamped); ``reads_gold``: its values depend on the
    gold answer forms; ``drop_nan``: NaN values are not stored; ``retired``: metrics of earlier
    versions removed when it scores again."""

    name: str
    version: int
    metrics: tuple[str, ...]
    score: Callable[[DialogueRecord], Scored]
    upgrade: Callable[[DialogueRecord], Scored] | None = None
    applies: Callable[[DialogueRecord], bool] = lambda record: True
    reads_gold: bool = False
    drop_nan: bool = False
    retired: tuple[str, ...] = ()

    def stamp(self, record: DialogueRecord) -> ScorerStamp:
        return ScorerStamp(self.version, bool(record.document.answer_forms) if self.reads_gold else None)

    def stale(self, record: DialogueRecord) -> bool:
        """Whether ``record``'s values of this scorer must be computed (again)."""
        stamp = record.scorers.get(self.name)
        if stamp is None or stamp.version != self.version:
            return True
        return bool(self.reads_gold and stamp.gold is False and record.document.answer_forms)


def _judge(record: DialogueRecord) -> Scored:
    s = score_dialogue(record.transcript, record.judgements)
    return Scored({m: s.scores[m] for m in PEDAGOGICAL_METRICS},
                  {"missing_turns": s.missing_turns, "sent_turns": s.sent_turns, "turn_counts": s.turn_counts,
                   "turn_masks": s.turn_masks})


def _judge_upgrade(record: DialogueRecord) -> Scored:
    # a stored record keeps its rates and bookkeeping (one definition since version 1); it gets the turn
    # counts of its stored judgements, which records written before them lack
    return Scored(fields={"turn_counts": pedagogical_counts(record.judgements)}, replaces=False)


def _conversation(record: DialogueRecord) -> Scored:
    return Scored(conversation_metrics(record.transcript))


def _detectors(record: DialogueRecord) -> Scored:
    values, hits = detector_output(record.transcript, record.document.answer_forms)
    return Scored({m: values[m] for m in DETECTOR_METRICS}, per_turn=hits)


def _student(record: DialogueRecord) -> Scored:
    values, labels = student_output(record.transcript, record.document.answer_forms)
    return Scored({m: values[m] for m in STUDENT_METRICS}, per_turn=labels)


def _outcome(record: DialogueRecord) -> Scored:
    post = score_posttest(record.transcript, record.posttest, record.document.answer_forms)
    return Scored(stored_outcome(post), posttest=post)


def _outcome_stale(record: DialogueRecord) -> bool:
    # a post-test scored without a verdict gets one when the gold is known now and it has an answer
    stamp = record.scorers.get("outcome")
    if stamp is None or stamp.version != OUTCOME_VERSION:
        return True
    post = record.posttest
    return post.verdict is None and bool(record.document.answer_forms) and post.answer is not None


SCORERS: tuple[DialogueScorer, ...] = (
    DialogueScorer("judge", TURN_COUNTS_VERSION, PEDAGOGICAL_METRICS, _judge, upgrade=_judge_upgrade,
                   applies=lambda r: bool(r.judgements) or not r.scorers),
    DialogueScorer("conversation", CONVERSATION_VERSION, CONVERSATION_METRICS, _conversation),
    DialogueScorer("detectors", DETECTOR_VERSION, DETECTOR_METRICS, _detectors, reads_gold=True, drop_nan=True,
                   retired=RETIRED_DETECTOR_METRICS),
    DialogueScorer("student", STUDENT_MONITOR_VERSION, STUDENT_METRICS, _student, reads_gold=True, drop_nan=True),
    DialogueScorer("outcome", OUTCOME_VERSION, OUTCOME_METRICS, _outcome, applies=lambda r: r.posttest is not None,
                   reads_gold=True),
)
SCORER_NAMES = tuple(s.name for s in SCORERS)


def scorer(name: str) -> DialogueScorer:
    for s in SCORERS:
        if s.name == name:
            return s
    raise KeyError(f"no dialogue scorer {name!r}; the scorers are {', '.join(SCORER_NAMES)}")


def _stale(s: DialogueScorer, record: DialogueRecord) -> bool:
    if s.name == "outcome":
        return _outcome_stale(record)
    if s.name == "judge" and not record.scores.turn_counts:
        return True  # a record stored without turn counts gets them from its judgements
    return s.stale(record)


def _apply(s: DialogueScorer, record: DialogueRecord, out: Scored, *, values: dict[str, float],
           fields: dict[str, Any], per_turn: dict[str, Any], stamps: dict[str, Any]) -> Any:
    for m in (s.metrics if out.replaces else ()) + s.retired:
        values.pop(m, None)  # replaced, never mixed with a recomputed one
    values.update({m: v for m, v in out.metrics.items() if not (s.drop_nan and math.isnan(v))})
    fields.update(out.fields)
    if out.per_turn is not None:
        per_turn[s.name] = out.per_turn
    stamps[s.name] = s.stamp(record)
    return out.posttest


def complete(record: DialogueRecord, *, only_stale: bool = True) -> tuple[DialogueRecord, tuple[str, ...]]:
    """``record`` with every stale scorer's values computed again (module docstring), as a new record,
    and the names of the scorers that scored. ``only_stale`` False: every scorer that applies scores
    the record from scratch (``score``, not ``upgrade``: a record just made). A stored record whose
    stamps are current is returned as it is (one stored before the per-turn output existed has none:
    its readers detect again, ``detectors.record_detection``)."""
    values = dict(record.scores.scores)
    fields: dict[str, Any] = {}
    per_turn = dict(record.per_turn)
    stamps = dict(record.scorers)
    posttest = record.posttest
    ran: list[str] = []
    for s in SCORERS:
        if not s.applies(record):
            continue
        if not only_stale:
            post = _apply(s, record, s.score(record), values=values, fields=fields, per_turn=per_turn, stamps=stamps)
        elif _stale(s, record):
            fn = s.upgrade or s.score
            post = _apply(s, record, fn(record), values=values, fields=fields, per_turn=per_turn, stamps=stamps)
        else:
            continue
        ran.append(s.name)
        if post is not None:
            posttest = post
    if not ran:
        return record, ()
    scores: DialogueScores = replace(record.scores, scores=values, **fields)
    return replace(record, scores=scores, scorers=stamps, per_turn=per_turn, posttest=posttest), tuple(ran)


def score_record(record: DialogueRecord) -> DialogueRecord:
    """A record just made, scored by every scorer that applies (``runlog.build``)."""
    return complete(record, only_stale=False)[0]


__all__ = ["CONVERSATION_VERSION", "DialogueScorer", "SCORERS", "SCORER_NAMES", "STUDENT_MONITOR_VERSION", "Scored",
           "complete", "score_record", "scorer"]
