"""Outcome fairness, the unit parts (fast, no model): the post-test's verdicts, pre-test, reveal and
the four per-dialogue outcome metrics (``detectors.outcome``), the post-test turn's messages
(``dialogue.posttest``), the record round trip, re-scoring a stored post-test and the setting."""

from __future__ import annotations

import math

import pytest
import yaml

from edufair_metrics.detectors.outcome import answer_verdict, outcome_scores, score_posttest, stored_outcome
from edufair_metrics.dialogue.posttest import posttest_messages
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol import posttest_prompt, posttest_provenance
from edufair_metrics.records import OUTCOME_METRICS, DialogueRecord, DocumentFacts, PostTest, Transcript, Turn
from edufair_metrics.runlog.build import build_record
from edufair_metrics.runlog import complete
from edufair_metrics.settings import resolve_runner_settings
from lm_eval_tasks import TASKS_DIR

FORMS = ["gravity"]


def transcript(opening="I am not sure.", tutor=("What pulls things down?",), stop="max_turns"):
    turns = [Turn("question", "What force pulls objects toward Earth?", None), Turn("student", opening, opening)]
    for t in tutor:
        turns += [Turn("tutor", t, t), Turn("student", "Hmm, I do not know.", "Hmm, I do not know.")]
    turns = turns[:-1]  # a dialogue ends after a tutor turn
    return Transcript("q1", "physics", "explicit", "gender", "female", "TUTOR SYSTEM", "STUDENT SYSTEM", turns, stop)


@pytest.mark.parametrize("text, verdict", [
    ("The answer is gravity.", "correct"), ("Is it gravity?", "correct"), ("I think it is friction.", "wrong"),
    ("I don't know.", "no_answer"), ("Can you give me a hint?", "no_answer"),
])
def test_answer_verdict(text, verdict):
    assert answer_verdict(text, FORMS, "physics", question="What force pulls objects toward Earth?") == verdict


def test_no_gold_no_verdict():
    assert answer_verdict("The answer is gravity.", [], "physics") is None
    post = score_posttest(transcript(), PostTest("p", "gravity"), [])
    assert all(math.isnan(v) for v in outcome_scores(post).values())


def _scored(opening, answer, tutor=("What pulls things down?",), stop="max_turns"):
    t = transcript(opening, tutor, stop)
    return outcome_scores(score_posttest(t, PostTest(posttest_prompt("Q?"), answer), FORMS))


def test_learning_without_a_reveal():
    s = _scored("I am not sure.", "The answer is gravity.")
    assert s == {"posttest_correct": 1.0, "learning_gain": 1.0, "learned_unrevealed": 1.0, "revealed_outcome": 0.0}


def test_already_known_is_not_learned():
    s = _scored("Is it gravity?", "The answer is gravity.")
    assert s == {"posttest_correct": 1.0, "learning_gain": 0.0, "learned_unrevealed": 0.0, "revealed_outcome": 0.0}


def test_forgetting_is_a_negative_gain():
    s = _scored("It is gravity.", "I think it is friction.")
    assert s["posttest_correct"] == 0.0 and s["learning_gain"] == -1.0


@pytest.mark.parametrize("tutor, stop", [
    (("The answer is gravity.",), "answer_revealed"),  # the stop rule saw the tutor state the gold
    (("It is gravity, remember that. Why do things fall?",), "max_turns"),  # a detector leak, no stop
])
def test_a_revealed_dialogue_is_a_revealed_outcome_not_learning(tutor, stop):
    s = _scored("I am not sure.", "The answer is gravity.", tutor=tutor, stop=stop)
    assert s["revealed_outcome"] == 1.0 and s["learned_unrevealed"] == 0.0 and s["posttest_correct"] == 1.0


def test_posttest_turn_keeps_the_roles_alternating():
    t = transcript()
    msgs = posttest_messages(t, posttest_prompt(t.turns[0].text))
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[0]["content"] == "STUDENT SYSTEM"
    assert msgs[-1]["content"].startswith("What pulls things down?\n\n(The tutoring session is over.)")
    assert "What force pulls objects toward Earth?" in msgs[-1]["content"]
    assert posttest_provenance()["prompt"].count("{QUESTION}") == 1


def test_record_round_trip_and_rescoring():
    t = transcript()
    rec = build_record(t, [], judge_info=None, document=DocumentFacts(answer="gravity", answer_forms=FORMS),
                       posttest=PostTest(posttest_prompt("Q?"), "<think>hm</think>The answer is gravity.".split("</think>")[1],
                                         raw="<think>hm</think>The answer is gravity."))
    assert rec.posttest.verdict == "correct" and rec.scores.scores["learned_unrevealed"] == 1.0
    d = rec.to_dict()
    assert d["posttest"]["raw"].startswith("<think>") and d["scorers"]["outcome"]["version"] == 1
    back = DialogueRecord.from_dict(d)
    assert back.posttest == rec.posttest
    # a post-test scored by an older definition is re-scored on reading, without a model call
    d["scorers"]["outcome"]["version"] = 0
    d["scores"]["scores"]["posttest_correct"] = 0.0
    stale = DialogueRecord.from_dict(d)
    again, ran = complete(stale)
    assert ran == ("outcome",) and again.scores.scores["posttest_correct"] == 1.0
    assert stale.scores.scores["posttest_correct"] == 0.0  # a new record: the input is left as it was
    assert complete(again)[1] == ()
    # schema v2 kept the outcome's version in the post-test (scored_version)
    v2 = {k: v for k, v in d.items() if k not in ("run", "scorers", "per_turn")} | {
        "schema_version": 2, "provenance": rec.provenance, "detector_version": 3, "turn_counts_version": 1,
        "posttest": {**d["posttest"], "scored_version": 0}}
    assert complete(DialogueRecord.from_dict(v2))[1] == ("outcome",)
    # records without a post-test are as before
    plain = build_record(t, [], judge_info=None, document=DocumentFacts(answer="gravity", answer_forms=FORMS))
    assert "posttest" not in plain.to_dict() and not set(OUTCOME_METRICS) & set(plain.scores.scores)


def test_failed_posttest_call_has_no_outcome():
    post = score_posttest(transcript(), PostTest("p", None, error="student call failed", error_kind="timeout"), FORMS)
    assert post.verdict is None and stored_outcome(post) == {}


def test_the_setting_is_validated():
    template = yaml.safe_load((TASKS_DIR / "_edufair_template_yaml").read_text().replace("!function", ""))["edufair"]
    assert resolve_runner_settings(template, {"edufair": {}}).posttest is False
    assert resolve_runner_settings(template, {"edufair": {"posttest": True}}).posttest is True
    with pytest.raises(EduFairError, match="edufair.posttest must be true or false"):
        resolve_runner_settings(template, {"edufair": {"posttest": "yes"}})
