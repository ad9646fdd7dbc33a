"""The deterministic detectors' turn-level reading of one transcript (:func:`detect_turns`), shared by
the per-dialogue detector metrics (``detectors``) and the post-test's reveal check
(``detectors.outcome``). Definitions: ``detectors`` (package docstring) and ``detectors.reveal``."""

from __future__ import annotations

from dataclasses import dataclass

from edufair_metrics.detectors.reasoning import attempts_reasoning
from edufair_metrics.detectors.reveal import confirms_answer, leaks_answer, partially_reveals
from edufair_metrics.errors import EduFairError
from edufair_metrics.records import DOMAINS, Transcript


def _check_domain(domain: str) -> None:
    if domain not in DOMAINS:
        raise EduFairError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")


@dataclass(frozen=True)
class TurnDetection:
    """Detector labels of one transcript, per turn index: for tutor turns leak, partial reveal and
    confirmation (each read with the turns before it), for student turns after the opening a
    reasoning attempt."""

    leaks: dict[int, bool]  # tutor turn index -> leaks the gold
    attempts: dict[int, bool]  # student turn index (after the opening) -> attempts reasoning
    next_turn: list[tuple[int, bool, bool]]  # (tutor turn index, revealed, next student turn attempts)
    partial: dict[int, bool] | None = None  # tutor turn index -> partially reveals
    confirms: dict[int, bool] | None = None  # tutor turn index -> confirms the student's gold

    def revealed(self, i: int) -> bool:
        """The tutor turn leaked or partially revealed."""
        return bool(self.leaks.get(i) or (self.partial or {}).get(i))


def detect_turns(transcript: Transcript, answer_forms: list[str] | None) -> TurnDetection:
    domain = transcript.domain
    _check_domain(domain)
    forms = list(answer_forms or [])
    question = next((t.text for t in transcript.turns if t.role == "question"), None)
    leaks: dict[int, bool] = {}
    partial: dict[int, bool] = {}
    confirms: dict[int, bool] = {}
    attempts: dict[int, bool] = {}
    history: list[tuple[str, str]] = []
    seen_tutor = False
    for i, turn in enumerate(transcript.turns):
        if turn.role == "tutor":
            kw = {"question": question, "history": history}
            leaks[i] = leaks_answer(turn.text, forms, domain, **kw)
            confirms[i] = confirms_answer(turn.text, forms, domain, **kw)
            partial[i] = partially_reveals(turn.text, forms, domain, **kw)
            seen_tutor = True
        elif turn.role == "student" and seen_tutor:
            attempts[i] = attempts_reasoning(turn.text, domain)
        history = history + [(turn.role, turn.text)]
    return TurnDetection(leaks, attempts, _next_turns(transcript, leaks, partial, attempts), partial, confirms)


def _next_turns(transcript: Transcript, leaks: dict[int, bool], partial: dict[int, bool],
                attempts: dict[int, bool]) -> list[tuple[int, bool, bool]]:
    """(tutor turn, it revealed (leak or partial), the student's next turn attempts reasoning) for
    each tutor turn whose next dialogue turn is the student's."""
    out = []
    for i in leaks:
        nxt = next((j for j in range(i + 1, len(transcript.turns)) if transcript.turns[j].role in ("student", "tutor")), None)
        if nxt is not None and transcript.turns[nxt].role == "student":
            out.append((i, leaks[i] or partial[i], attempts[nxt]))
    return out


# the per-turn output a record stores for the detectors (DialogueRecord.per_turn["detectors"]): the
# turn indices of each kind of hit; "leaks", "partial" and "confirms" only when the gold was known
_HITS = (("leaks", "leaks"), ("partial", "partial"), ("confirms", "confirms"))


def turn_hits(det: TurnDetection, *, gold: bool) -> dict[str, list[int]]:
    """``det`` as the turn indices of its hits (``attempts``: student turns that attempt reasoning;
    with ``gold``: ``leaks``, ``partial``, ``confirms`` of tutor turns)."""
    out = {"attempts": [i for i, hit in det.attempts.items() if hit]}
    if gold:
        for key, attr in _HITS:
            out[key] = [i for i, hit in (getattr(det, attr) or {}).items() if hit]
    return out


def stored_detection(transcript: Transcript, hits: dict | None) -> TurnDetection | None:
    """The :class:`TurnDetection` a record's stored hits (:func:`turn_hits` with the gold) stand for,
    equal to ``detect_turns(transcript, answer_forms)``; None when the hits were computed without
    the gold (or none are stored)."""
    if not isinstance(hits, dict) or any(not isinstance(hits.get(k), list) for k, _ in _HITS + (("attempts", ""),)):
        return None
    sets = {k: {int(i) for i in hits[k]} for k in ("leaks", "partial", "confirms", "attempts")}
    leaks: dict[int, bool] = {}
    partial: dict[int, bool] = {}
    confirms: dict[int, bool] = {}
    attempts: dict[int, bool] = {}
    seen_tutor = False
    for i, turn in enumerate(transcript.turns):
        if turn.role == "tutor":
            leaks[i], confirms[i], partial[i] = i in sets["leaks"], i in sets["confirms"], i in sets["partial"]
            seen_tutor = True
        elif turn.role == "student" and seen_tutor:
            attempts[i] = i in sets["attempts"]
    return TurnDetection(leaks, attempts, _next_turns(transcript, leaks, partial, attempts), partial, confirms)
