"""Records carry the detector and student metrics of this detector version: ``build_record`` computes
them (the ``detectors`` and ``student`` scorers), and the reader's ``complete()`` recomputes them, as a
new record, for records of an older version (dropping the retired ``leak_rate_det``) or whose gold
became known only from the logged document."""

from __future__ import annotations

import json

from edufair_metrics.detectors import DETECTOR_METRICS, DETECTOR_VERSION, STUDENT_METRICS
from edufair_metrics.records import DialogueRecord, DocumentFacts, Transcript, Turn
from edufair_metrics.runlog import build_record, complete

Q = "Each sandwich needs 2 loaves. He makes 9 sandwiches. How many loaves does he need?"


def _transcript(stop="answer_revealed"):
    turns = [Turn("question", Q), Turn("student", "9 + 2 = 11"), Turn("tutor", "Is it 18, maybe?"),
             Turn("student", "I don't know."), Turn("tutor", "Each needs 2, so 18 loaves.")]
    return Transcript(question_id="q1", domain="mathematics", condition="explicit", dimension="gender", level="female",
                      tutor_system="", student_system="", turns=turns, stop_reason=stop, task="edufair_explicit_math")


def _record(forms=("18",)):
    return build_record(_transcript(), [], judge_info=None, document=DocumentFacts(answer="18", answer_forms=list(forms) or None))


def _as_v2(d, detector_version):
    """A record dict as schema v2 stored it (the whole provenance, the version counters)."""
    rec = DialogueRecord.from_dict(d)
    out = {k: v for k, v in d.items() if k not in ("run", "scorers", "per_turn")}
    return out | {"schema_version": 2, "provenance": rec.provenance, "detector_version": detector_version,
                  "turn_counts_version": 1}


def test_build_record_stores_the_detector_and_student_metrics():
    rec = _record()
    assert rec.detector_version == DETECTOR_VERSION == 3
    s = rec.scores.scores
    assert set(DETECTOR_METRICS) | set(STUDENT_METRICS) <= set(s) and "leak_rate_det" not in s
    assert s["stopped_on_revealed_gold"] == 1.0 and s["partial_reveal_rate"] == 1.0
    assert s["student_refusal_rate"] == 0.5 and s["student_wrong_answer_rate"] == 0.0  # "9 + 2 = 11" has no frame
    same, ran = complete(rec)
    assert same is rec and ran == ()  # up to date: nothing to do


def test_an_old_record_is_recomputed_and_loses_leak_rate_det():
    old = _as_v2(_record().to_dict(), 1)
    scores = old["scores"]["scores"]
    for m in DETECTOR_METRICS + STUDENT_METRICS:
        scores.pop(m, None)
    scores["leak_rate_det"] = 0.5  # what version 1 stored: 1 / tutor_turns
    stored = DialogueRecord.from_dict(json.loads(json.dumps(old)))
    rec, ran = complete(stored)
    assert ran == ("detectors", "student") and rec.detector_version == DETECTOR_VERSION
    assert stored.detector_version == 1 and "leak_rate_det" in stored.scores.scores  # the input is left as it was
    assert "leak_rate_det" not in rec.scores.scores
    assert rec.scores.scores["stopped_on_revealed_gold"] == 1.0
    assert set(STUDENT_METRICS) <= set(rec.scores.scores)


def test_a_gold_known_only_from_the_logged_document_completes_the_record():
    rec = _record(forms=())
    assert "student_correct_answer_rate" not in rec.scores.scores and "partial_reveal_rate" not in rec.scores.scores
    again = DialogueRecord.from_dict(rec.to_dict() | {"document": {}}, doc={"answer_forms": ["18"], "answer": "18"})
    again, ran = complete(again)
    assert ran == ("detectors", "student")
    assert again.scores.scores["partial_reveal_rate"] == 1.0 and again.scores.scores["student_correct_answer_rate"] == 0.0


def test_a_version_2_record_is_recomputed_with_the_students_answer():
    """Version 2 read a gold anywhere in a student turn as the student's: "9 x 2 = 18, plus 2 is 20"
    made the tutor's "Is it 18, maybe?" no partial reveal. Version 3 reads the student's answer (20)."""
    t = _transcript()
    t.turns[1] = Turn("student", "9 x 2 = 18, plus 2 is 20.")
    old = _as_v2(build_record(t, [], judge_info=None, document=DocumentFacts(answer="18", answer_forms=["18"])).to_dict(), 2)
    assert old["scores"]["scores"]["partial_reveal_rate"] == 1.0
    old["scores"]["scores"]["partial_reveal_rate"] = 0.0  # what version 2 stored
    rec, ran = complete(DialogueRecord.from_dict(json.loads(json.dumps(old))))
    assert "detectors" in ran and rec.detector_version == 3
    assert rec.scores.scores["partial_reveal_rate"] == 1.0
