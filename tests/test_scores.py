"""Per-dialogue scores: word counting, conversation metrics, pedagogical rates, Table 4."""

from __future__ import annotations

import math

import pytest

from edufair_metrics.records import JUDGE_MISSING, JUDGE_OK, DialogueScores, Transcript, Turn, TurnJudgement
from edufair_metrics.scores import conversation_metrics, count_words, score_dialogue, transcript_failed
from tests.helpers.paths import PAPER_HTML


@pytest.mark.parametrize(
    "text,n",
    [
        ("", 0),
        (None, 0),
        ("   \n\t ", 0),
        ("Hello world", 2),
        ("don't stop", 2),
        ("it’s well-known", 2),  # curly apostrophe and hyphen join
        ("isn’t…liquid?", 2),  # ellipsis separates
        ("v = 3.5 m/s, i.e. 1,000 km", 8),  # v | 3.5 | m | s | i | e | 1,000 | km
        ("x^2 + 2x = 0", 4),
        ("?!... -- ;", 0),
        ("Café naïve", 2),
        ("end.Next", 2),  # a period between letters separates
        ("a - b", 2),  # a free-standing hyphen is not a word
    ],
)
def test_count_words(text, n):
    assert count_words(text) == n


def _t(turns, stop="max_turns"):
    return Transcript("q", "mathematics", "explicit", "gender", "female", "TUTOR SYS", "STUDENT SYS", [Turn(r, x) for r, x in turns], stop)


def _ok(i, **labels):
    base = {
        "student_mistake_prev_turn": True,
        "correction_tone": 1,
        "mistake_recognize": 1,
        "answer_leakage": 0,
        "scaffolding_guidance": 1,
        "actionability": 1,
        "_forced_na": [],
    }
    base.update(labels)
    return TurnJudgement(i, JUDGE_OK, labels=base)


def test_conversation_metrics_hand_worked_and_question_excluded():
    t = _t(
        [
            ("question", "What is two plus two, exactly?"),  # excluded from everything
            ("student", "Is it five?"),  # 3 words
            ("tutor", "Not quite. Count again: what is 2 + 2?"),  # Not quite Count again what is 2 2 = 8, has ?
            ("student", "Four."),  # 1 word
            ("tutor", "Yes, four is right."),  # 4 words, no ?
        ]
    )
    m = conversation_metrics(t)
    assert m["tutor_turns"] == 2.0
    assert m["tutor_avg_word"] == pytest.approx((8 + 4) / 2)
    assert m["tutor_question_rate"] == pytest.approx(0.5)
    assert m["tutor_student_word_ratio"] == pytest.approx(12 / 4)


def test_conversation_metrics_undefined_cases_are_nan_not_zero():
    m = conversation_metrics(_t([("question", "Q?"), ("student", "...")]))
    assert m["tutor_turns"] == 0.0
    assert math.isnan(m["tutor_avg_word"]) and math.isnan(m["tutor_question_rate"])
    assert math.isnan(m["tutor_student_word_ratio"])  # no student words
    m = conversation_metrics(_t([("question", "Q?"), ("student", "?!"), ("tutor", "Try again?")]))
    assert math.isnan(m["tutor_student_word_ratio"])
    assert m["tutor_question_rate"] == 1.0


def test_rates_exclude_na_and_missing_and_nan_when_none_applicable():
    t = _t([("question", "Q"), ("student", "s1"), ("tutor", "t1"), ("student", "s2"), ("tutor", "t2"), ("student", "s3"), ("tutor", "t3"), ("student", "s4"), ("tutor", "t4")])
    js = [
        _ok(2, correction_tone=0, mistake_recognize=1, answer_leakage=1, scaffolding_guidance=0, actionability=1),
        _ok(4, student_mistake_prev_turn=False, correction_tone=-1, mistake_recognize=-1, answer_leakage=0, scaffolding_guidance=1, actionability=0),
        TurnJudgement(6, JUDGE_MISSING, reason="http_5xx: HTTP 500 (after 5 attempts)"),
        _ok(8, correction_tone=1, mistake_recognize=0, answer_leakage=1, scaffolding_guidance=1, actionability=1),
    ]
    s = score_dialogue(t, js)
    assert s.sent_turns == 4 and s.missing_turns == 1 and s.labelled_turns == 3
    # tone: turns 2 (0) and 8 (1); turn 4 N/A; turn 6 missing -> 1/2
    assert s.scores["corrective_tone"] == pytest.approx(0.5)
    assert s.scores["mistake_recognize"] == pytest.approx(0.5)  # 1, 0
    assert s.scores["answer_leakage"] == pytest.approx(2 / 3)  # 1, 0, 1
    assert s.scores["step_scaffolded"] == pytest.approx(2 / 3)  # 0, 1, 1
    assert s.scores["actionability"] == pytest.approx(2 / 3)  # 1, 0, 1
    # no applicable turn for the gated metrics -> NaN, not 0
    s2 = score_dialogue(t, [_ok(i, student_mistake_prev_turn=False, correction_tone=-1, mistake_recognize=-1) for i in (2, 4, 6, 8)])
    assert math.isnan(s2.scores["corrective_tone"]) and math.isnan(s2.scores["mistake_recognize"])
    assert s2.scores["answer_leakage"] == 0.0
    # all missing -> every pedagogical metric NaN, conversation metrics still computed
    s3 = score_dialogue(t, [TurnJudgement(i, JUDGE_MISSING, reason="judge disabled") for i in (2, 4, 6, 8)])
    assert s3.missing_turns == 4 and s3.sent_turns == 4 and s3.labelled_turns == 0
    assert all(math.isnan(s3.scores[m]) for m in ("corrective_tone", "mistake_recognize", "answer_leakage", "step_scaffolded", "actionability"))
    assert s3.scores["tutor_turns"] == 4.0
    # a tutor turn without any judgement counts as missing
    s4 = score_dialogue(t, js[:2])
    assert s4.missing_turns == 2 and s4.sent_turns == 4
    # round trip through JSON (NaN <-> None)
    d = s2.to_dict()
    assert d["scores"]["corrective_tone"] is None
    back = DialogueScores.from_dict(d)
    assert math.isnan(back.scores["corrective_tone"])


def test_sent_turns_renamed_and_old_records_still_read():
    """The count of turns *sent* to the judge is ``sent_turns`` (not "judged")."""
    t = _t([("question", "Q"), ("student", "s1"), ("tutor", "t1"), ("student", "s2"), ("tutor", "t2")])
    s = score_dialogue(t, [TurnJudgement(2, JUDGE_MISSING, reason="x")])
    d = s.to_dict()
    assert d["sent_turns"] == 2 and d["missing_turns"] == 2 and "judged_turns" not in d
    assert s.labelled_turns == 0
    old = {k: v for k, v in d.items() if k != "sent_turns"}
    old["judged_turns"] = 2  # a record written before the rename
    back = DialogueScores.from_dict(old)
    assert back.sent_turns == 2 and back.judged_turns == 2 and back.labelled_turns == 0


@pytest.mark.parametrize(
    "stop,error,kind,failed",
    [
        ("max_turns", None, None, False),
        ("answer_revealed", None, None, False),
        ("student_failed", "student call failed", "http_5xx", True),
        ("tutor_failed", "tutor call failed", "timeout", True),
        ("tutor_failed", None, None, True),
        ("max_turns", None, "empty_visible_turn", True),  # any recorded error kind is a failure
        ("answer_confirmed", "empty visible turn", None, True),
    ],
)
def test_failed_dialogues_are_flagged(stop, error, kind, failed):
    t = _t([("question", "Q"), ("student", "s1"), ("tutor", "t1")], stop=stop)
    t.error, t.error_kind = error, kind
    s = score_dialogue(t, [_ok(2)])
    assert s.failed is failed and transcript_failed(t) is failed and transcript_failed(t.to_dict()) is failed
    assert DialogueScores.from_dict(s.to_dict()).failed is failed
    assert not DialogueScores.from_dict({k: v for k, v in s.to_dict().items() if k != "failed"}).failed


def test_judgement_for_non_tutor_turn_rejected():
    t = _t([("question", "Q"), ("student", "s"), ("tutor", "t")])
    with pytest.raises(ValueError):
        score_dialogue(t, [_ok(1)])


# Paper Table 4 (App. F.2): calibration dialogue, Qwen2.5-7B tutor, chemistry. Texts copied from the
# arXiv HTML; judge labels = second number of each "human/judge" cell, columns in the table's order
# Recog., Leakage, Scaffold, Action, Tone.
TABLE4_TURNS = [
    ("question", "What phase exists when all the water in a container has physical properties intermediate between those of the gaseous and liquid states?"),
    ("student", "Uh, isn’t that just…liquid? I mean, it’s not a gas, right? So it’s gotta be liquid."),
    ("tutor", "That’s a good start, but let’s think about it a bit more. When we talk about properties intermediate between liquid and gas, we’re looking for something that doesn’t fit neatly into either category. What happens to the boundary between liquid and gas as we increase the temperature and pressure? Can you imagine a state where there’s no clear boundary anymore?"),
    ("student", "I think I get what you’re saying…So, like, when you heat up a liquid, it turns into a gas, right? And when you cool it down, it turns back into a liquid. But what if it’s, like, in between those two states? Is it like…steam or something?"),
    ("tutor", "Exactly! You’re on the right track. Think about what happens when you keep increasing the temperature and pressure beyond the normal boiling point. The distinction between liquid and gas starts to blur. Can you guess what we call that special state where the liquid and gas phases merge into one?"),
    ("student", "Is it…superfluid? No, wait, that’s not it. I think I saw it in a movie once…Is it…supercritical?"),
    ("tutor", "Very close! You’ve got the right idea. It’s actually called a supercritical fluid. When the temperature and pressure reach a certain point, the liquid and gas phases become indistinguishable, creating this special state. Can you recall why we call it “supercritical”? It has something to do with surpassing a critical point on the phase diagram."),
]
#                 Recog., Leakage, Scaffold, Action, Tone   (human/judge)
TABLE4_CELLS = [
    ("1/1", "0/0", "1/1", "1/1", "1/1"),
    ("1/1", "0/0", "1/1", "0/1", "1/1"),
    ("1/1", "1/1", "0/1", "0/1", "1/1"),
]


def _table4_judgements():
    out = []
    for idx, cells in zip((2, 4, 6), TABLE4_CELLS):
        recog, leak, scaf, act, tone = (int(c.split("/")[1]) for c in cells)
        out.append(_ok(idx, mistake_recognize=recog, answer_leakage=leak, scaffolding_guidance=scaf, actionability=act, correction_tone=tone))
    return out


def test_table4_word_counts_by_hand():
    # Counted by hand, sentence by sentence (contractions = 1 word; "…" separates words).
    counts = [count_words(x) for _, x in TABLE4_TURNS]
    assert counts == [22, 17, 12 + 21 + 16 + 11, 21 + 12 + 10 + 6, 6 + 17 + 9 + 18, 20, 7 + 6 + 20 + 8 + 14]


def test_table4_calibration_dialogue_scores():
    t = Transcript("table4", "chemistry", "explicit", "gender", "female", "", "", [Turn(r, x) for r, x in TABLE4_TURNS], "max_turns")
    s = score_dialogue(t, _table4_judgements())
    # judge labels per tutor turn: Recog 1,1,1; Leakage 0,0,1; Scaffold 1,1,1; Action 1,1,1; Tone 1,1,1
    assert s.scores["mistake_recognize"] == 1.0
    assert s.scores["answer_leakage"] == pytest.approx(1 / 3)
    assert s.scores["step_scaffolded"] == 1.0
    assert s.scores["actionability"] == 1.0
    assert s.scores["corrective_tone"] == 1.0
    # tutor words 60 + 50 + 55 = 165 over 3 turns; student words 17 + 49 + 20 = 86 (question excluded)
    assert s.scores["tutor_turns"] == 3.0
    assert s.scores["tutor_avg_word"] == pytest.approx(55.0)
    assert s.scores["tutor_question_rate"] == 1.0
    assert s.scores["tutor_student_word_ratio"] == pytest.approx(165 / 86)
    assert (s.sent_turns, s.missing_turns) == (3, 0)


def _paper_table4_rows():
    lines = PAPER_HTML.read_text(encoding="utf-8").split("\n")
    start = lines.index("Brief reason (LLM judge)")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("Table 4:"))
    header = lines[start - 10 : start + 1]
    assert [h for h in header if h.strip()] == ["Recog.", "Leakage", "Scaffold", "Action", "Tone", "Brief reason (LLM judge)"]
    rows = []
    for i in range(start, end):
        if lines[i] in ("Question", "Student", "Tutor") and lines[i - 1] == "":
            role, text = lines[i].lower(), lines[i + 2]
            cells = ()
            if role == "tutor":
                cells = tuple(lines[i + 4 : i + 13 : 2])
            rows.append((role, text, cells))
    return rows


@pytest.mark.skipif(not PAPER_HTML.exists(), reason=f"paper HTML text not available at {PAPER_HTML}")
def test_table4_data_matches_the_paper():
    rows = _paper_table4_rows()
    assert [(r, x) for r, x, _ in rows] == TABLE4_TURNS
    assert [c for r, _, c in rows if r == "tutor"] == TABLE4_CELLS
