"""SocraTeach loader and the four paper filters, on a fixture written in the reconstructed schema
(``bank/socrateach.py``'s docstring)."""

from __future__ import annotations

import json

import pytest

from edufair_metrics.bank import load_bank
from edufair_metrics.bank import socrateach as st
from edufair_metrics.bank.build import build_bank
from edufair_metrics.errors import EduFairError
from tests.helpers.paths import FIXTURES

FIXTURE = FIXTURES / "socrateach_multi.json"


@pytest.fixture(scope="module")
def problems() -> dict:
    data, desc, sha = st.load_socrateach(FIXTURE)
    assert desc == str(FIXTURE) and len(sha) == 64
    return data


def _check(problems, pid, k=0):
    p = problems[pid]
    turns = p["dialogues"][f"{pid}_{k}"]
    forms = st.numeric_answer_forms(st.parse_answer(p["answer"]))
    return st.check_dialogue(turns, p["question"], forms)


def test_user_type_classes():
    assert st.classify_user_type("incorrect") == st.ERROR
    assert st.classify_user_type("Wrong answer") == st.ERROR
    assert st.classify_user_type("partially correct") == st.PARTIAL
    assert st.classify_user_type("correct") == st.CORRECT
    assert st.classify_user_type("question") == st.OTHER
    assert st.classify_user_type(None) == st.OTHER


def test_passing_dialogue(problems):
    c = _check(problems, "GSM8K_train_1")
    assert (c.exchanges, c.errors, c.correct_after_last_error, c.disclosure) == (5, 2, 2, False)
    assert c.passes


def test_criterion_i_min_exchanges(problems):
    c = _check(problems, "GSM8K_train_2")
    assert c.exchanges == 3 and c.errors >= 2 and c.correct_after_last_error >= 1 and not c.disclosure
    assert not c.passes


def test_criterion_ii_min_errors(problems):
    c = _check(problems, "GSM8K_train_3")
    assert c.exchanges >= 4 and c.errors == 1 and not c.disclosure
    assert not c.passes


def test_criterion_iii_correct_after_last_error(problems):
    c = _check(problems, "GSM8K_train_4")
    assert c.exchanges >= 4 and c.errors == 2 and c.correct_after_last_error == 0 and not c.disclosure
    assert not c.passes


def test_criterion_iv_tutor_disclosure(problems):
    c = _check(problems, "GSM8K_train_5")
    assert c.exchanges >= 4 and c.errors == 2 and c.correct_after_last_error >= 1
    assert c.disclosure and not c.passes


def test_partial_counts_and_restated_problem_is_not_disclosure(problems):
    c = _check(problems, "MAWPS_train_6")
    assert c.passes
    # the opening teacher turn quotes the problem, whose text contains the gold 8
    p = problems["MAWPS_train_6"]
    first = p["dialogues"]["MAWPS_train_6_0"][:1]
    assert not st.tutor_discloses(first, p["question"], ["8"])
    assert st.tutor_discloses(first, "", ["8"])


def test_confirming_the_students_answer_is_not_disclosure():
    turns = [{"system": "What is 3 x 6?", "user": "18", "user_type": "correct"}, {"system": "Yes, 18!", "END": True}]
    assert not st.tutor_discloses(turns, "q", ["18"])
    turns = [{"system": "It is 18.", "user": "ok", "user_type": "other"}]
    assert st.tutor_discloses(turns, "q", ["18"])


def test_parse_answer():
    assert st.parse_answer("The answer is 8") == "8"
    assert st.parse_answer("1,200") == "1200"
    assert st.parse_answer(42) == "42"
    with pytest.raises(EduFairError):
        st.parse_answer("no number")


def test_build_keeps_problems_with_a_passing_dialogue(problems):
    result = st.build_socrateach(problems, cap=None, seed=0)
    assert [it.meta["socrateach_id"] for it in result.items] == ["GSM8K_train_1", "MAWPS_train_6"]
    assert result.stats["dialogues"] == 7 and result.stats["problems_kept"] == 2
    first = result.items[0]
    assert first.source == "socrateach" and first.grade == 9 and first.answer == "14"
    assert first.meta["dialogues_passing"] == 1 and first.meta["dialogues_total"] == 2
    assert st.build_socrateach(problems, cap=1, seed=0).stats["sampled"] == 1


def test_build_bank_with_socrateach_replaces_the_proxy(tmp_path):
    manifest = build_bank(tmp_path, domains=["mathematics"], socrateach_path=FIXTURE)
    entry = manifest["files"]["mathematics.jsonl"]
    assert entry["source"] == "socrateach" and entry["count"] == 2
    assert entry["license"]["name"] == "CC BY-NC 4.0"
    assert all(it.source == "socrateach" for it in load_bank("mathematics", tmp_path))
    assert (tmp_path / "LICENSE-SocraTeach.txt").is_file()


def test_malformed_socrateach_names_file_and_line(tmp_path):
    bad = tmp_path / "SocraTeach_multi.json"
    bad.write_text('{\n "p1": {"question": "q",\n  "answer": }\n}\n')
    with pytest.raises(EduFairError, match=r"SocraTeach_multi\.json:3:\d+: malformed JSON"):
        st.load_socrateach(tmp_path)  # a folder holding the file is accepted


def test_structurally_wrong_socrateach(tmp_path):
    bad = tmp_path / "s.json"
    bad.write_text(json.dumps({"p1": {"question": "q", "answer": "1", "dialogues": {"d": "not a list"}}}))
    with pytest.raises(EduFairError, match=r"problem 'p1' dialogue 'd'"):
        st.load_socrateach(bad)
    bad.write_text(json.dumps([1, 2]))
    with pytest.raises(EduFairError, match="keyed by problem id"):
        st.load_socrateach(bad)
    with pytest.raises(EduFairError, match="not found"):
        st.load_socrateach(tmp_path / "missing.json")
