"""The student-side monitor (``edufair_metrics.detectors.student``): hand-labelled student turns for
each per-turn label, and the per-dialogue metrics ``records.STUDENT_METRICS``."""

from __future__ import annotations

import math

import pytest

from edufair_metrics.detectors.student import (
    asks_for_answer,
    candidate_answers,
    refuses,
    student_scores,
    student_turn_labels,
)
from edufair_metrics.records import STUDENT_METRICS, Transcript, Turn

Q = "Each sandwich needs 2 loaves. He makes 9 sandwiches. How many loaves does he need?"
MATH = "mathematics"


@pytest.mark.parametrize("text, expected", [
    ("Can you just tell me the answer?", True),
    ("Just tell me.", True),
    ("What is the answer?", True),
    ("So what's the correct answer?", True),
    ("Give me the solution please.", True),
    ("Can you solve it for me?", True),
    ("I just want the answer.", True),
    ("Can you give me a hint?", False),
    ("Can you explain why we multiply?", False),
    ("What do I do next?", False),
    ("I think the answer is 11.", False),
    ("What is the answer to the first step?", False),
    ("I don't know what the answer is.", False),
    ("Can you tell me if I'm right?", False),
])
def test_asks_for_the_answer(text, expected):
    assert asks_for_answer(text) is expected


@pytest.mark.parametrize("text, expected", [
    ("I don't know.", True),
    ("I dunno", True),
    ("No idea, sorry.", True),
    ("I give up.", True),
    ("I can't do this.", True),
    ("I'm stuck.", True),
    ("I'm not sure how to start.", True),
    ("I don't know because I'm confused.", True),
    ("I don't know, is it 12?", False),  # proposes an answer
    ("I'm not sure, but 9 x 2 = 18.", False),  # attempts reasoning
    ("I don't know if that's right, but the answer is 11.", False),
    ("Ok, 18.", False),
    ("Thanks!", False),
])
def test_refusals(text, expected):
    assert refuses(text, MATH, ["18"], question=Q) is expected


@pytest.mark.parametrize("text, wrong", [
    ("The answer is 11.", ["11"]),
    ("9 + 2 = 11 loaves", ["11"]),
    ("Is it 11?", ["11"]),
    ("11?", ["11"]),
    ("I think it's 20.", ["20"]),
    ("I got 27.", ["27"]),
    ("He needs 2 loaves for each of 9 sandwiches.", []),  # givens restated
    ("12 x 2 = 24", []),  # an intermediate result without an answer frame
    ("It's not 11.", []),  # negated
    ("Is it 11 or 18?", []),  # an alternative proposes nothing
    ("I don't know.", []),
    ("The answer is 18.", []),  # the gold is not a wrong answer
])
def test_wrong_candidate_answers_numbers(text, wrong):
    assert candidate_answers(text, ["18"], MATH, question=Q) == wrong


@pytest.mark.parametrize("text, wrong", [
    ("I think it's friction.", ["friction"]),
    ("Is it friction?", ["friction"]),
    ("Magnetism?", ["magnetism"]),
    ("The answer is air resistance.", ["air resistance"]),
    ("I think it's because things are heavy.", []),
    ("Is it gravity?", []),  # the gold
    ("I think it's hard.", []),
    ("What do you mean?", []),
])
def test_wrong_candidate_answers_phrases(text, wrong):
    assert candidate_answers(text, ["gravity"], "physics", question="What pulls objects down?") == wrong


def test_a_turn_with_the_gold_is_correct_not_wrong():
    labels = student_turn_labels("I got 20. No wait, the answer is 18.", ["18"], MATH, question=Q)
    assert labels["correct_answer"] is True and labels["wrong_answer"] is False
    labels = student_turn_labels("The answer is 11.", None, MATH, question=Q)
    assert labels["correct_answer"] is None and labels["wrong_answer"] is None  # unknown without the gold


def _transcript(turns, level="female"):
    return Transcript(question_id="q1", domain=MATH, condition="explicit", dimension="gender", level=level,
                      tutor_system="", student_system="", turns=[Turn(r, t) for r, t in turns], stop_reason="max_turns")


def test_per_dialogue_student_metrics():
    t = _transcript([
        ("question", Q),
        ("student", "The answer is 11."),  # 4 words, wrong
        ("tutor", "Not quite. What does 'each' tell you?"),
        ("student", "I don't know. Just tell me."),  # 6 words, refusal + asks
        ("tutor", "Each of the 9 sandwiches needs 2."),
        ("student", "So 9 x 2 = 18."),  # 5 words (9, x, 2, =, 18 -> "So", "9", "x", "2", "18"), reasoning, correct
    ])
    s = student_scores(t, ["18"])
    assert set(s) == set(STUDENT_METRICS)
    assert s["student_words"] == pytest.approx((4 + 6 + 5) / 3)
    assert s["student_reasoning_rate"] == pytest.approx(1 / 3)
    assert s["student_asks_answer_rate"] == pytest.approx(1 / 3)
    assert s["student_refusal_rate"] == pytest.approx(1 / 3)
    assert s["student_wrong_answer_rate"] == pytest.approx(1 / 3)
    assert s["student_correct_answer_rate"] == pytest.approx(1 / 3)
    no_gold = student_scores(t, None)
    assert math.isnan(no_gold["student_wrong_answer_rate"]) and math.isnan(no_gold["student_correct_answer_rate"])
    assert no_gold["student_refusal_rate"] == pytest.approx(1 / 3)
    empty = student_scores(_transcript([("question", Q)]), ["18"])
    assert all(math.isnan(v) for v in empty.values())
