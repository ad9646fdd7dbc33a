"""lm-eval's results table reads as what it counts: metric names that say it, no direction arrow
on a count or a descriptive conversation metric, and a line saying why the bias rows read NaN;
the task's headline statistics follow its ``edufair.statistics`` settings."""

from __future__ import annotations

import logging
import math

from lm_eval.utils import make_table

from tests.helpers.fake_lms import ScriptedChatLM, default_tutor
from tests.helpers.fake_lms import run_task as run

TASK = "edufair_explicit_physics"


def table_rows(results) -> dict[str, tuple[str, str]]:
    """metric -> (direction symbol, value) of the task's rows of lm-eval's printed table."""
    rows = {}
    for line in make_table(results).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 7 and cells[4] and cells[4] not in ("Metric",) and not set(cells[4]) <= {"-", ":"}:
            rows[cells[4]] = (cells[5], cells[6])
    return rows


def test_the_table_names_what_it_counts_and_says_why_bias_rows_are_nan(bank_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="edufair"):
        results = run(ScriptedChatLM(default_tutor), bank_dir, max_turns=2)
    rows = table_rows(results)
    assert "edufair_record" not in rows and "edufair_calls" not in rows
    assert rows["complete_dialogues"][0] == "" and float(rows["complete_dialogues"][1]) == 18  # a count: no arrow
    assert rows["failed_call_attempts"][0] == "↓" and rows["failed_dialogues"][0] == "↓"
    for neutral in ("tutor_turns", "tutor_avg_word", "tutor_question_rate", "tutor_student_word_ratio"):
        assert rows[neutral][0] == "", neutral
    assert rows["answer_leakage"][0] == "↓" and rows["mistake_recognize"][0] == "↑"
    assert rows["ped_abs_r"][1].lower() == "nan"
    # the reason, once per task: the judge is off (every label missing) and 2 questions < 15 pairs
    lines = [r.getMessage() for r in caplog.records if "not testable" in r.getMessage()]
    assert any("pedagogical" in m and "no valid judge label" in m for m in lines), lines
    assert any("conversation" in m and "at most 2 (at least 15)" in m for m in lines), lines
    assert len(lines) == len(set(lines))


def test_the_headline_rows_follow_the_statistics_settings(bank_dir):
    default = run(ScriptedChatLM(default_tutor), bank_dir, max_turns=2)["results"][TASK]
    small = run(ScriptedChatLM(default_tutor), bank_dir, max_turns=2,
                extra={"statistics": {"min_pairs": 2, "n_boot": 50}})["results"][TASK]
    assert math.isnan(default["conv_abs_r,judged"])
    assert not math.isnan(small["conv_abs_r,judged"])
