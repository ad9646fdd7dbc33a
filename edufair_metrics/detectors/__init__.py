"""Deterministic, judge-invariant detectors (after the helpfulness-vs-pedagogy audit, App. B.2/B.3):
computed from stored transcripts alone, without model calls, so old runs can be re-scored.

Turn level (the definitions are in :mod:`edufair_metrics.detectors.reveal`)
    ``leaks_answer(text, answer_forms, domain, *, question=None, history=None)``: the tutor text
        states the gold *as an answer* and the student's latest answer is not the gold (a gold
        that is only a step of the student's working is not the student's). The matcher is
        :func:`edufair_metrics.protocol.matching.find_stated_answer`, the stop rule's: string-level
        and conservative (a gold inside a question, negated, hypothetical or used as an operand
        does not count; paraphrased reveals are missed by design, so rates are lower bounds).
        ``history``: the earlier turns as ``(role, text)`` pairs; without it every stated gold is
        a leak (the stop rule's reading).
    ``confirms_answer(...)``: the tutor states a gold that is the student's latest answer (a
        confirmation, not a leak).
    ``partially_reveals(...)`` / ``partial_reveal(...)``: the tutor gives the gold away without
        stating it: offers it in a leading question or for checking, or states the decisive
        intermediate result (mathematics).
    ``attempts_reasoning(text, domain)``: the (student) text shows a reasoning step of its own
        (see :mod:`edufair_metrics.detectors.reasoning`).

Per dialogue (:func:`detector_scores`; NaN when the denominator is empty, never 0)
    ``stopped_on_revealed_gold``  1 when the dialogue ended because the tutor stated the gold
                             (stop reason ``answer_revealed``), 0 when it ended otherwise
                             (``answer_confirmed``, ``max_turns``); NaN for a failed dialogue, an
                             unknown stop reason or no tutor turn. A stop reason, not a rate of leaking turns: every
                             leaking turn ends the dialogue, so a leak rate over turns would only
                             re-express dialogue length.
    ``partial_reveal_rate``  share of the tutor turns before the final one that partially reveal
                             (NaN with fewer than two tutor turns or without gold forms)
    ``independence_ratio``   share of student turns after the opening that attempt reasoning. The
                             opening is the student's answer to the question, given before any
                             tutoring, so only student turns that follow a tutor turn count.
    ``independence_after_partial`` / ``independence_after_none``: next-turn independence, the share
                             of tutor turns that revealed (a partial reveal; a leak too, although in
                             a stopped dialogue no student turn follows one) / that revealed
                             nothing (neither) whose next student turn attempts reasoning. Only tutor turns followed by a
                             student turn count.

Per turn (:func:`next_turn_rows`): one row per tutor turn followed by a student turn, with whether
it revealed and whether the next student turn attempts reasoning.

The student-side monitor (``records.STUDENT_METRICS``) is :mod:`edufair_metrics.detectors.student`.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from edufair_metrics.detectors.reasoning import attempts_reasoning
from edufair_metrics.detectors.reveal import (
    PartialReveal,
    confirms_answer,
    decisive_values,
    leaks_answer,
    partial_reveal,
    partially_reveals,
)
from edufair_metrics.detectors.student import student_output, student_scores
from edufair_metrics.detectors.turns import TurnDetection, detect_turns, stored_detection, turn_hits

# The per-dialogue detector and student metrics that get contrasts in the grid (metric kinds
# "detector" and "student"); defined in records next to the other metric vocabularies.
from edufair_metrics.records import (
    DETECTOR_METRICS,
    STOP_ANSWER_CONFIRMED,
    STOP_ANSWER_REVEALED,
    STOP_MAX_TURNS,
    STUDENT_METRICS,
    DialogueScores,
    Transcript,
    transcript_failed,
)

# The version of the detectors' definitions: a stored record whose detector metrics come from
# another version is completed (recomputed) when it is read (the "detectors" scorer, edufair_metrics.runlog.scorers).
# 2: stopped_on_revealed_gold replaces leak_rate_det; partial_reveal_rate; history-aware leaks;
# next-turn independence after a partial reveal; the student metrics.
# 3: the history reads the student's latest answer (a gold that is only a step of the student's
# working is no confirmation); contrastive negation and counted nouns in the stop rule's matcher.
DETECTOR_VERSION = 3
# Per-dialogue extras (too sparse for paired contrasts; reported as turn-level summaries).
NEXT_TURN_METRICS = ("independence_after_partial", "independence_after_none")
# Detector metrics of earlier versions: dropped from a record when its metrics are recomputed.
RETIRED_DETECTOR_METRICS = ("leak_rate_det",)
# What a record's scores store (the "detectors" and "student" scorers of runlog.scorers).
STORED_METRICS = DETECTOR_METRICS + STUDENT_METRICS

NAN = float("nan")


def _mean(values: Iterable[bool]) -> float:
    vals = [float(v) for v in values]
    return sum(vals) / len(vals) if vals else NAN


def stopped_on_revealed_gold(transcript: Transcript) -> float:
    """1.0 when the dialogue ended because the tutor stated the gold (``answer_revealed``), 0.0
    when it ended otherwise (``answer_confirmed``, ``max_turns``), NaN for a failed dialogue, an
    unknown stop reason or a transcript without a tutor turn (a record that stored only scores)."""
    if transcript_failed(transcript) or not any(t.role == "tutor" for t in transcript.turns):
        return NAN
    if transcript.stop_reason == STOP_ANSWER_REVEALED:
        return 1.0
    if transcript.stop_reason in (STOP_ANSWER_CONFIRMED, STOP_MAX_TURNS):
        return 0.0
    return NAN


def detector_scores(transcript: Transcript, answer_forms: list[str] | None) -> dict[str, float]:
    """The per-dialogue detector metrics (DETECTOR_METRICS + NEXT_TURN_METRICS). Without gold
    forms the gold-based ones are NaN (unknown); stopped_on_revealed_gold and independence_ratio
    are still computed."""
    return detector_output(transcript, answer_forms)[0]


def detector_output(transcript: Transcript, answer_forms: list[str] | None) -> tuple[dict[str, float], dict[str, Any]]:
    """:func:`detector_scores` and the turn-level hits they come from (:func:`turn_hits`: what a
    record stores as its detectors' per-turn output)."""
    stop = stopped_on_revealed_gold(transcript)
    if not answer_forms:
        det = detect_turns(transcript, [])
        return ({"stopped_on_revealed_gold": stop, "partial_reveal_rate": NAN,
                 "independence_ratio": _mean(det.attempts.values()),
                 "independence_after_partial": NAN, "independence_after_none": NAN}, turn_hits(det, gold=False))
    det = detect_turns(transcript, answer_forms)
    tutor = sorted(det.leaks)
    before_final = tutor[:-1]
    partial = det.partial or {}
    return {
        "stopped_on_revealed_gold": stop,
        "partial_reveal_rate": _mean(partial[i] for i in before_final),
        "independence_ratio": _mean(det.attempts.values()),
        "independence_after_partial": _mean(a for _, revealed, a in det.next_turn if revealed),
        "independence_after_none": _mean(a for _, revealed, a in det.next_turn if not revealed),
    }, turn_hits(det, gold=True)


def record_detection(record: Any) -> TurnDetection | None:
    """The turn-level detector labels of a record (a ``DialogueRecord``): its stored per-turn output
    (``per_turn["detectors"]``, written by the ``detectors`` scorer) when it has it, else
    :func:`detect_turns` of its transcript; None without gold forms or turns."""
    forms = record.document.answer_forms
    if not forms or not record.transcript.turns:
        return None
    stored = stored_detection(record.transcript, record.per_turn.get("detectors"))
    return stored if stored is not None else detect_turns(record.transcript, forms)


def all_scores(transcript: Transcript, answer_forms: list[str] | None) -> dict[str, float]:
    """The detector and student metrics of one transcript (``DETECTOR_METRICS`` +
    ``NEXT_TURN_METRICS`` + ``STUDENT_METRICS``): what a record's scores get."""
    return {**detector_scores(transcript, answer_forms), **student_scores(transcript, answer_forms)}


def detector_dialogue_scores(transcript: Transcript, answer_forms: list[str] | None, *, tutor: str = "",
                             metrics: tuple[str, ...] = DETECTOR_METRICS) -> DialogueScores:
    """A DialogueScores holding only the detector metrics of one transcript (same keys as the
    judged scores, so the statistics pair it like any other metric); ``metrics`` may name
    student metrics too."""
    scores = all_scores(transcript, answer_forms)
    return DialogueScores(
        question_id=transcript.question_id, domain=transcript.domain, condition=transcript.condition,
        dimension=transcript.dimension, level=transcript.level, scores={m: scores[m] for m in metrics},
        tutor=tutor, task=transcript.task, failed=transcript_failed(transcript), replicate=transcript.replicate,
    )


def next_turn_rows(transcript: Transcript, answer_forms: list[str], **meta: Any) -> list[dict[str, Any]]:
    """Turn-level next-turn independence: one row per tutor turn followed by a student turn, with
    ``revealed`` (leak or partial reveal) and ``next_attempts``."""
    det = detect_turns(transcript, answer_forms)
    base = {"question_id": transcript.question_id, "domain": transcript.domain, "condition": transcript.condition,
            "dimension": transcript.dimension, "level": transcript.level, **meta}
    return [{**base, "turn_index": i, "revealed": revealed, "next_attempts": nxt} for i, revealed, nxt in det.next_turn]


def next_turn_summary(rows: list[dict[str, Any]], by: tuple[str, ...] = ("condition", "level")) -> list[dict[str, Any]]:
    """Per group: tutor turns that revealed (partial reveal or leak) / did not, and the share of
    each followed by a reasoning attempt, with the difference (after a reveal − after none; NaN
    when a side is empty)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in by), []).append(r)
    out = []
    for key, rs in sorted(groups.items()):
        rev = [r["next_attempts"] for r in rs if r["revealed"]]
        non = [r["next_attempts"] for r in rs if not r["revealed"]]
        a, b = _mean(rev), _mean(non)
        out.append({**dict(zip(by, key)), "revealing_turns": len(rev), "independence_after_partial": a,
                    "other_turns": len(non), "independence_after_none": b,
                    "difference": a - b if not (math.isnan(a) or math.isnan(b)) else NAN})
    return out


__all__ = [
    "DETECTOR_METRICS", "DETECTOR_VERSION", "NEXT_TURN_METRICS", "PartialReveal", "RETIRED_DETECTOR_METRICS",
    "STORED_METRICS", "STUDENT_METRICS", "TurnDetection", "all_scores", "attempts_reasoning", "confirms_answer", "decisive_values",
    "detect_turns", "detector_dialogue_scores", "detector_output", "detector_scores", "leaks_answer", "next_turn_rows",
    "next_turn_summary", "partial_reveal", "partially_reveals", "record_detection", "stopped_on_revealed_gold",
    "stored_detection",
    "student_output", "student_scores", "turn_hits",
]
