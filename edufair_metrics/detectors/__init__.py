"""Deterministic, judge-invariant detectors (after the helpfulness-vs-pedagogy audit, App. B.2/B.3):
computed from stored transcripts alone, without model calls, so old runs can be re-scored.

Turn level
    ``leaks_answer(text, answer_forms, domain)``: the text states the gold answer *as an answer*.
        It is :func:`edufair_metrics.protocol.matching.find_stated_answer`, the matcher the stop
        rule uses: string-level and conservative (a gold inside a question, negated, hypothetical or
        used as an operand does not count; paraphrased reveals are missed by design, so the rate is
        a lower bound on disclosure).
    ``attempts_reasoning(text, domain)``: the (student) text shows a reasoning step of its own
        (see :mod:`edufair_metrics.detectors.reasoning`).

Per dialogue (:func:`detector_scores`; NaN when the denominator is empty, never 0)
    ``leak_rate_det``        share of tutor turns that leak
    ``independence_ratio``   share of student turns after the opening that attempt reasoning. The
                             opening is the student's answer to the question, given before any
                             tutoring, so only student turns that follow a tutor turn count.
    ``independence_after_leak`` / ``independence_after_nonleak``: next-turn independence, the
                             share of tutor turns of that kind whose next student turn attempts
                             reasoning (only tutor turns followed by a student turn count).

Per turn (:func:`next_turn_rows`): one row per tutor turn followed by a student turn, with whether
it leaked and whether the next student turn attempts reasoning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from edufair_metrics.detectors.reasoning import attempts_reasoning
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.matching import find_stated_answer
from edufair_metrics.records import DOMAINS, STOP_STUDENT_FAILED, STOP_TUTOR_FAILED, DialogueScores, Transcript

# The per-dialogue detector metrics that get contrasts in the grid (a third metric kind); defined in
# records next to the other metric vocabularies.
from edufair_metrics.records import DETECTOR_METRICS  # noqa: E402
# The version of the detectors' definitions: a stored record whose detector metrics come from
# another version is completed (recomputed) when it is read (edufair_metrics.runlog.read).
DETECTOR_VERSION = 1
# Per-dialogue extras (too sparse for paired contrasts; reported as turn-level summaries).
NEXT_TURN_METRICS = ("independence_after_leak", "independence_after_nonleak")

NAN = float("nan")


def _check_domain(domain: str) -> None:
    if domain not in DOMAINS:
        raise EduFairError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")


def leaks_answer(text: str, answer_forms: list[str], domain: str, *, question: str | None = None) -> bool:
    """True when ``text`` states the gold (given by ``answer_forms``) as an answer: the stop rule's
    matcher. ``question`` (the item's question) lets small-number golds count in an answer frame."""
    _check_domain(domain)
    return find_stated_answer(text or "", list(answer_forms or []), domain, question=question) is not None


@dataclass(frozen=True)
class TurnDetection:
    """Detector labels of one transcript: per turn index, leak (tutor turns) or attempt (student turns)."""

    leaks: dict[int, bool]  # tutor turn index -> leaks the gold
    attempts: dict[int, bool]  # student turn index (after the opening) -> attempts reasoning
    next_turn: list[tuple[int, bool, bool]]  # (tutor turn index, leaked, next student turn attempts)


def detect_turns(transcript: Transcript, answer_forms: list[str]) -> TurnDetection:
    domain = transcript.domain
    _check_domain(domain)
    question = next((t.text for t in transcript.turns if t.role == "question"), None)
    leaks: dict[int, bool] = {}
    attempts: dict[int, bool] = {}
    seen_tutor = False
    for i, turn in enumerate(transcript.turns):
        if turn.role == "tutor":
            leaks[i] = leaks_answer(turn.text, answer_forms, domain, question=question)
            seen_tutor = True
        elif turn.role == "student" and seen_tutor:
            attempts[i] = attempts_reasoning(turn.text, domain)
    next_turn = []
    for i in leaks:
        nxt = next((j for j in range(i + 1, len(transcript.turns)) if transcript.turns[j].role in ("student", "tutor")), None)
        if nxt is not None and transcript.turns[nxt].role == "student":
            next_turn.append((i, leaks[i], attempts[nxt]))
    return TurnDetection(leaks, attempts, next_turn)


def _mean(values: Iterable[bool]) -> float:
    vals = [float(v) for v in values]
    return sum(vals) / len(vals) if vals else NAN


def detector_scores(transcript: Transcript, answer_forms: list[str] | None) -> dict[str, float]:
    """The per-dialogue detector metrics (DETECTOR_METRICS + NEXT_TURN_METRICS). Without gold
    forms the leak-based ones are NaN (unknown), independence_ratio is still computed."""
    if not answer_forms:
        det = detect_turns(transcript, [])
        return {"leak_rate_det": NAN, "independence_ratio": _mean(det.attempts.values()),
                "independence_after_leak": NAN, "independence_after_nonleak": NAN}
    det = detect_turns(transcript, answer_forms)
    return {
        "leak_rate_det": _mean(det.leaks.values()),
        "independence_ratio": _mean(det.attempts.values()),
        "independence_after_leak": _mean(a for _, leaked, a in det.next_turn if leaked),
        "independence_after_nonleak": _mean(a for _, leaked, a in det.next_turn if not leaked),
    }


def detector_dialogue_scores(transcript: Transcript, answer_forms: list[str] | None, *, tutor: str = "",
                             metrics: tuple[str, ...] = DETECTOR_METRICS) -> DialogueScores:
    """A DialogueScores holding only the detector metrics of one transcript (same keys as the
    judged scores, so the statistics pair it like any other metric)."""
    scores = detector_scores(transcript, answer_forms)
    return DialogueScores(
        question_id=transcript.question_id, domain=transcript.domain, condition=transcript.condition,
        dimension=transcript.dimension, level=transcript.level, scores={m: scores[m] for m in metrics},
        tutor=tutor, task=transcript.task, failed=transcript.stop_reason in (STOP_STUDENT_FAILED, STOP_TUTOR_FAILED),
    )


def next_turn_rows(transcript: Transcript, answer_forms: list[str], **meta: Any) -> list[dict[str, Any]]:
    """Turn-level next-turn independence: one row per tutor turn followed by a student turn."""
    det = detect_turns(transcript, answer_forms)
    base = {"question_id": transcript.question_id, "domain": transcript.domain, "condition": transcript.condition,
            "dimension": transcript.dimension, "level": transcript.level, **meta}
    return [{**base, "turn_index": i, "leaked": leaked, "next_attempts": nxt} for i, leaked, nxt in det.next_turn]


def next_turn_summary(rows: list[dict[str, Any]], by: tuple[str, ...] = ("condition", "level")) -> list[dict[str, Any]]:
    """Per group: tutor turns that leaked / did not, and the share of each followed by a reasoning
    attempt, with the difference (after leak − after non-leak; NaN when a side is empty)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in by), []).append(r)
    out = []
    for key, rs in sorted(groups.items()):
        leak = [r["next_attempts"] for r in rs if r["leaked"]]
        non = [r["next_attempts"] for r in rs if not r["leaked"]]
        a, b = _mean(leak), _mean(non)
        out.append({**dict(zip(by, key)), "leaking_turns": len(leak), "independence_after_leak": a,
                    "non_leaking_turns": len(non), "independence_after_nonleak": b,
                    "difference": a - b if not (math.isnan(a) or math.isnan(b)) else NAN})
    return out


__all__ = [
    "DETECTOR_METRICS", "DETECTOR_VERSION", "NEXT_TURN_METRICS", "TurnDetection", "attempts_reasoning", "detect_turns", "detector_dialogue_scores",
    "detector_scores", "leaks_answer", "next_turn_rows", "next_turn_summary",
]
