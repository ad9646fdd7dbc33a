"""Deterministic detectors: leaks_answer shares the stop rule's matcher; per-dialogue leak rate,
independence ratio and next-turn independence from stored transcripts, without model calls."""

from __future__ import annotations

import math

import pytest

from edufair_metrics.detectors import (
    DETECTOR_METRICS,
    attempts_reasoning,
    detect_turns,
    detector_dialogue_scores,
    detector_scores,
    leaks_answer,
    next_turn_rows,
    next_turn_summary,
)
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.matching import find_stated_answer
from edufair_metrics.records import Transcript, Turn


@pytest.mark.parametrize("text, forms, domain, expected", [
    ("So he needs 18 loaves.", ["18"], "mathematics", True),
    ("The answer is eighteen.", ["18"], "mathematics", True),
    ("Is it 18?", ["18"], "mathematics", False),  # inside a question
    ("It is not 18.", ["18"], "mathematics", False),  # negated
    ("What is 9 x 2?", ["18"], "mathematics", False),
    ("The force is gravity.", ["gravity"], "physics", True),
    ("Is it gravity?", ["gravity"], "physics", False),
    ("It is not gravity.", ["gravity"], "physics", False),
    ("Think about what pulls things down.", ["gravity"], "physics", False),
    ("", ["18"], "mathematics", False),
])
def test_leaks_answer(text, forms, domain, expected):
    assert leaks_answer(text, forms, domain) is expected


def test_leaks_answer_is_the_stop_rule_matcher():
    texts = ["So it is 18.", "Is it 18?", "18 is wrong.", "Try 18 - 3.", "You got it, 18!", "Not 18, but 81."]
    for t in texts:
        assert leaks_answer(t, ["18"], "mathematics") == (find_stated_answer(t, ["18"], "mathematics") is not None)


def test_unknown_domain_is_an_error():
    with pytest.raises(EduFairError, match="unknown domain"):
        leaks_answer("x", ["1"], "biology")
    with pytest.raises(EduFairError, match="unknown domain"):
        attempts_reasoning("1 + 1 = 2", "biology")


def test_science_only_patterns_do_not_count_in_math():
    text = "It sinks because it is denser than water."
    assert attempts_reasoning(text, "physics") and not attempts_reasoning(text, "mathematics")


def _transcript(turns, domain="mathematics", level="female", qid="q1"):
    return Transcript(question_id=qid, domain=domain, condition="explicit", dimension="gender", level=level,
                      tutor_system="", student_system="", turns=[Turn(r, t) for r, t in turns], stop_reason="max_turns",
                      task="edufair_explicit_math")


DIALOGUE = _transcript([
    ("question", "Each sandwich needs 2 loaves. He makes 9 sandwiches. How many loaves?"),
    ("student", "9 + 2 = 11"),  # the opening: before any tutoring, not counted
    ("tutor", "Not quite. What does 'each' tell you to do?"),  # no leak
    ("student", "I don't know."),  # no attempt
    ("tutor", "Each of the 9 needs 2, so it is 18 loaves."),  # leak
    ("student", "Oh ok, 18."),  # no attempt
    ("tutor", "Why is it 9 x 2 and not 9 + 2?"),  # no leak (operand, question)
    ("student", "Because 9 x 2 means 9 groups of 2."),  # attempt
    ("tutor", "Great."),  # no next student turn
])


def test_per_dialogue_detector_scores():
    det = detect_turns(DIALOGUE, ["18"])
    assert det.leaks == {2: False, 4: True, 6: False, 8: False}
    assert det.attempts == {3: False, 5: False, 7: True}
    assert det.next_turn == [(2, False, False), (4, True, False), (6, False, True)]
    s = detector_scores(DIALOGUE, ["18"])
    assert s["leak_rate_det"] == pytest.approx(1 / 4)
    assert s["independence_ratio"] == pytest.approx(1 / 3)
    assert s["independence_after_leak"] == 0.0 and s["independence_after_nonleak"] == pytest.approx(1 / 2)


def test_empty_denominators_are_nan_never_zero():
    only_question = _transcript([("question", "q?"), ("student", "2 + 2 = 4")])
    s = detector_scores(only_question, ["4"])
    assert all(math.isnan(s[m]) for m in s)
    no_forms = detector_scores(DIALOGUE, [])
    assert math.isnan(no_forms["leak_rate_det"]) and no_forms["independence_ratio"] == pytest.approx(1 / 3)


def test_dialogue_scores_and_next_turn_summary():
    ds = detector_dialogue_scores(DIALOGUE, ["18"], tutor="t")
    assert set(ds.scores) == set(DETECTOR_METRICS) and ds.level == "female" and ds.tutor == "t"
    other = _transcript([("question", "q"), ("student", "?"), ("tutor", "It is 18."), ("student", "18 / 2 = 9")], level="male")
    rows = next_turn_rows(DIALOGUE, ["18"]) + next_turn_rows(other, ["18"])
    summary = {r["level"]: r for r in next_turn_summary(rows)}
    assert summary["female"]["leaking_turns"] == 1 and summary["female"]["non_leaking_turns"] == 2
    assert summary["female"]["difference"] == pytest.approx(0 - 0.5)
    assert summary["male"]["independence_after_leak"] == 1.0 and math.isnan(summary["male"]["difference"])
