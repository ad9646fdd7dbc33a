"""Deterministic detectors: leaks_answer shares the stop rule's matcher and reads the dialogue so
far (a gold the student stated is a confirmation), partial reveals, the per-dialogue stop reason
``stopped_on_revealed_gold``, ``partial_reveal_rate``, the independence ratio and next-turn
independence after a partial reveal, from stored transcripts without model calls."""

from __future__ import annotations

import math

import pytest

from edufair_metrics.detectors import (
    DETECTOR_METRICS,
    attempts_reasoning,
    confirms_answer,
    decisive_values,
    detect_turns,
    detector_dialogue_scores,
    detector_scores,
    leaks_answer,
    next_turn_rows,
    next_turn_summary,
    partial_reveal,
    partially_reveals,
    stopped_on_revealed_gold,
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


def test_leaks_answer_without_history_is_the_stop_rule_matcher():
    texts = ["So it is 18.", "Is it 18?", "18 is wrong.", "Try 18 - 3.", "You got it, 18!", "Not 18, but 81."]
    for t in texts:
        assert leaks_answer(t, ["18"], "mathematics") == (find_stated_answer(t, ["18"], "mathematics") is not None)
    # except a value offered for checking, which the stop rule reads as stated
    assert find_stated_answer("Try 18 and see.", ["18"], "mathematics") is not None
    assert not leaks_answer("Try 18 and see.", ["18"], "mathematics")
    assert partially_reveals("Try 18 and see.", ["18"], "mathematics")


Q = "Each sandwich needs 2 loaves. He makes 9 sandwiches. How many loaves does he need?"


def test_a_gold_the_student_stated_is_a_confirmation_not_a_leak():
    said = [("question", Q), ("student", "Is it 18?")]
    tutor = "Yes, 18 loaves. Well done."
    assert leaks_answer(tutor, ["18"], "mathematics")  # no history: every stated gold leaks
    assert not leaks_answer(tutor, ["18"], "mathematics", history=said)
    assert confirms_answer(tutor, ["18"], "mathematics", history=said)
    # a wrong student answer, or a gold the student only negated, changes nothing
    for student in ("I think it's 20.", "It's not 18.", "18 - 2 = 16"):
        h = [("question", Q), ("student", student)]
        assert leaks_answer(tutor, ["18"], "mathematics", history=h), student
        assert not confirms_answer(tutor, ["18"], "mathematics", history=h), student
    # the student's latest answer counts (not any earlier one), unless the tutor points back to the
    # student's earlier answer; the tutor's own turns do not count
    long = [("question", Q), ("student", "18?"), ("tutor", "How did you get that?"), ("student", "maybe 20")]
    assert leaks_answer("No: 9 x 2 = 18.", ["18"], "mathematics", history=long)
    assert not leaks_answer("You had 18 before: 9 x 2 = 18.", ["18"], "mathematics", history=long)
    assert confirms_answer("Your first answer was right: 9 x 2 = 18.", ["18"], "mathematics", history=long)
    explained = long[:3] + [("student", "I did 9 times 2.")]  # no answer in the latest turn: 18 stands
    assert not leaks_answer("Yes: 9 x 2 = 18.", ["18"], "mathematics", history=explained)
    # pointing back confirms only an earlier *answer*, not a step of the working
    step = [("question", Q), ("student", "9 x 2 = 18, plus 2 is 20.")]
    assert leaks_answer("You were right at first: 9 x 2 = 18.", ["18"], "mathematics", history=step)
    tutor_only = [("question", Q), ("student", "11"), ("tutor", "So it is 18.")]
    assert leaks_answer("Yes, 18.", ["18"], "mathematics", history=tutor_only)
    # science phrase golds; Turn objects are accepted as history too
    turns = [Turn("question", "What pulls objects down?"), Turn("student", "gravity?")]
    assert not leaks_answer("Gravity, yes. Why?", ["gravity"], "physics", history=turns)
    assert leaks_answer("Gravity, yes. Why?", ["gravity"], "physics", history=[("student", "friction")])


TRIP = ("Mia walks 30 minutes on Monday, 15 on Tuesday and 45 on Wednesday. How many minutes does she walk from "
        "Monday to Wednesday?")


@pytest.mark.parametrize("student, leak", [
    # the gold as a step of the working, then another answer: the tutor's statement reveals it
    ("30 + 15 + 45 = 90, and 90 + 45 = 135. The answer is 135.", True),
    ("First I get 30 + 15 + 45 = 90, then I add Thursday, so 135.", True),
    ("30 + 15 = 45, 45 + 45 = 90, 90 x 2 = 180 minutes.", True),  # a wrong computation containing it
    ("Wait, no. 30 + 15 + 45 = 90, 90 x 2 = 180.", True),
    ("I think it's 135. Oh wait, 30 + 15 + 45 = 90.", False),  # a revision: the latest sentence counts
    # the gold as the answer: the tutor confirms it
    ("30 + 15 + 45 = 90.", False),
    ("The answer is 90, because 30 + 15 = 45 and 45 + 45 = 90.", False),
    ("The answer is 90. First 30 + 15 = 45, then I add 45.", False),
    ("90 minutes?", False),
    ("It's not 90, it's 135.", True),
])
def test_the_history_reads_the_students_answer_not_every_number(student, leak):
    history = [("question", TRIP), ("student", student)]
    tutor = "So the total should be 30 + 15 + 45 = 90."
    assert leaks_answer(tutor, ["90"], "mathematics", history=history) is leak
    assert confirms_answer(tutor, ["90"], "mathematics", history=history) is (not leak)


def test_a_quantity_of_the_question_is_an_answer_only_when_computed():
    shares = "Eva has 48 candies and shares them among 6 friends. How many candies does each friend get?"
    tutor = "Each friend gets 48 / 6 = 8 candies."
    read_off = [("question", shares), ("student", "48 / 6 = 8. There are 6 friends.")]
    assert not leaks_answer(tutor, ["8"], "mathematics", history=read_off)  # 6 read off the problem
    computed = [("question", shares), ("student", "48 / 6 = 8, then 8 - 2 = 6 candies.")]
    assert leaks_answer(tutor, ["8"], "mathematics", history=computed)  # 6 computed: the student's answer


@pytest.mark.parametrize("text, rule", [
    ("So would 18 be the answer, then?", "offered"),
    ("Is it 18 — can you check?", "offered"),
    ("Isn't it 18?", "offered"),
    ("Does 9 × 2 = 18 help you here?", "offered"),
    ("What about 18?", "offered"),
    ("Try 18 and see whether every sandwich gets 2 loaves.", "offered"),
    ("Each of the 9 sandwiches needs 2 loaves. Could it be 18 loaves?", "offered"),
    ("Is it 18 or 11?", None),  # one side of an alternative
    ("How did you get 18?", None),  # a wh-question asks, it does not offer
    ("Is 18 too many?", None),  # a negative predicate
    ("If he made 18 sandwiches, how many loaves would he need?", None),  # a conditional given
    ("What is 9 times 2?", None),
    ("So he needs 18 loaves.", None),  # a leak, not a partial reveal
])
def test_partial_reveal_offered(text, rule):
    got = partial_reveal(text, ["18"], "mathematics", question=Q)
    assert (got.rule if got else None) == rule


def test_partial_reveal_decisive_intermediate():
    shirt = "A shirt costs $20 and is on sale for 25% off. What is the sale price of the shirt?"
    assert "5" in decisive_values(shirt, ["15"]) and "0.75" in decisive_values(shirt, ["15"])
    assert "20" not in decisive_values(shirt, ["15"]) and "0.25" not in decisive_values(shirt, ["15"])  # givens
    got = partial_reveal("The discount is $5. What do you pay?", ["15"], "mathematics", question=shirt)
    assert got is not None and (got.rule, got.value, got.sentence) == ("intermediate", "5", "The discount is $5.")
    assert partially_reveals("You pay 75% of the price.", ["15"], "mathematics", question=shirt)
    for text in ("What is 25% of $20?", "25% means 0.25.", "What's 20 minus 5?", "Is the discount $5?"):
        assert not partially_reveals(text, ["15"], "mathematics", question=shirt), text
    # not when the student already has the value, nor without the question, nor in science
    assert not partially_reveals("The discount is $5.", ["15"], "mathematics",
                                 history=[("question", shirt), ("student", "The discount is 5 dollars.")])
    assert not partially_reveals("The discount is $5.", ["15"], "mathematics")
    assert partially_reveals("The discount is $5.", ["15"], "mathematics", history=[("question", shirt)])


def test_nothing_is_partially_revealed_once_the_student_stated_the_gold():
    h = [("question", Q), ("student", "I think it's 18 loaves.")]
    assert partially_reveals("Is 18 right? Walk me through it.", ["18"], "mathematics", question=Q)
    assert not partially_reveals("Is 18 right? Walk me through it.", ["18"], "mathematics", history=h)



def test_unknown_domain_is_an_error():
    with pytest.raises(EduFairError, match="unknown domain"):
        leaks_answer("x", ["1"], "biology")
    with pytest.raises(EduFairError, match="unknown domain"):
        attempts_reasoning("1 + 1 = 2", "biology")


def test_science_only_patterns_do_not_count_in_math():
    text = "It sinks because it is denser than water."
    assert attempts_reasoning(text, "physics") and not attempts_reasoning(text, "mathematics")


def _transcript(turns, domain="mathematics", level="female", qid="q1", stop="max_turns"):
    return Transcript(question_id=qid, domain=domain, condition="explicit", dimension="gender", level=level,
                      tutor_system="", student_system="", turns=[Turn(r, t) for r, t in turns], stop_reason=stop,
                      task="edufair_explicit_math")


# A dialogue as the runner makes them: it ends on the tutor's confirmation of the student's answer.
DIALOGUE = _transcript([
    ("question", Q),
    ("student", "9 + 2 = 11"),  # the opening: before any tutoring, not counted
    ("tutor", "Not quite. Is it 18, maybe?"),  # a partial reveal (the gold offered)
    ("student", "Why 18?"),  # no attempt
    ("tutor", "Each of the 9 sandwiches needs 2 loaves. What operation gives the total?"),  # nothing revealed
    ("student", "9 x 2 = 18"),  # attempt, states the gold
    ("tutor", "Yes, 18 loaves!"),  # a confirmation: the student stated 18
], stop="answer_confirmed")


def test_per_dialogue_detector_scores():
    det = detect_turns(DIALOGUE, ["18"])
    assert det.leaks == {2: False, 4: False, 6: False}
    assert det.partial == {2: True, 4: False, 6: False} and det.confirms == {2: False, 4: False, 6: True}
    assert det.attempts == {3: False, 5: True}
    assert det.next_turn == [(2, True, False), (4, False, True)]
    s = detector_scores(DIALOGUE, ["18"])
    assert s["stopped_on_revealed_gold"] == 0.0  # ended on a confirmation
    assert s["partial_reveal_rate"] == pytest.approx(1 / 2)  # turns 2 and 4, before the final one
    assert s["independence_ratio"] == pytest.approx(1 / 2)
    assert s["independence_after_partial"] == 0.0 and s["independence_after_none"] == 1.0
    assert "leak_rate_det" not in s


def test_stopped_on_revealed_gold_is_the_stop_reason():
    turns = [("question", Q), ("student", "11"), ("tutor", "It is 18 loaves.")]
    assert stopped_on_revealed_gold(_transcript(turns, stop="answer_revealed")) == 1.0
    for stop in ("answer_confirmed", "max_turns"):
        assert stopped_on_revealed_gold(_transcript(turns, stop=stop)) == 0.0
    for stop in ("tutor_failed", "student_failed", ""):  # failed or unknown
        assert math.isnan(stopped_on_revealed_gold(_transcript(turns, stop=stop)))
    failed = _transcript(turns, stop="max_turns")
    failed.error_kind = "empty_visible_turn"
    assert math.isnan(stopped_on_revealed_gold(failed))
    assert math.isnan(stopped_on_revealed_gold(_transcript([("question", Q), ("student", "11")], stop="max_turns")))
    # one value per dialogue, whatever its length (the old leak rate was 1 / tutor turns)
    long = turns[:2] + [("tutor", "Hmm?"), ("student", "12"), ("tutor", "Hmm?"), ("student", "13"), ("tutor", "It is 18.")]
    assert detector_scores(_transcript(long, stop="answer_revealed"), ["18"])["stopped_on_revealed_gold"] == 1.0


def test_empty_denominators_are_nan_never_zero():
    only_question = _transcript([("question", "q?"), ("student", "2 + 2 = 4")])
    s = detector_scores(only_question, ["4"])
    assert all(math.isnan(s[m]) for m in s)
    one_turn = _transcript([("question", Q), ("student", "11"), ("tutor", "Is it 18?")])
    assert math.isnan(detector_scores(one_turn, ["18"])["partial_reveal_rate"])  # no turn before the final one
    no_forms = detector_scores(DIALOGUE, [])
    assert math.isnan(no_forms["partial_reveal_rate"]) and no_forms["independence_ratio"] == pytest.approx(1 / 2)
    assert no_forms["stopped_on_revealed_gold"] == 0.0  # a stop reason needs no gold


def test_next_turn_independence_can_occur_after_a_partial_reveal():
    """The old next-turn measure was defined after a leak, which ends the dialogue: it never occurred."""
    rows = next_turn_rows(DIALOGUE, ["18"])
    assert [(r["turn_index"], r["revealed"], r["next_attempts"]) for r in rows] == [(2, True, False), (4, False, True)]


def test_dialogue_scores_and_next_turn_summary():
    ds = detector_dialogue_scores(DIALOGUE, ["18"], tutor="t")
    assert set(ds.scores) == set(DETECTOR_METRICS) and ds.level == "female" and ds.tutor == "t"
    other = _transcript([("question", Q), ("student", "?"), ("tutor", "Would 18 work?"), ("student", "18 / 2 = 9"),
                         ("tutor", "Yes, 18.")], level="male", stop="answer_confirmed")
    rows = next_turn_rows(DIALOGUE, ["18"]) + next_turn_rows(other, ["18"])
    summary = {r["level"]: r for r in next_turn_summary(rows)}
    assert summary["female"]["revealing_turns"] == 1 and summary["female"]["other_turns"] == 1
    assert summary["female"]["difference"] == pytest.approx(0 - 1)
    assert summary["male"]["independence_after_partial"] == 1.0 and math.isnan(summary["male"]["difference"])
