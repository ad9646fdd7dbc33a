"""The run card: two runs that differ only in the tutor's temperature can be told apart
from their reports; the card names every role's model and decoding, T_max, protocol and seeds, and
never an endpoint URL."""

from __future__ import annotations

from edufair_metrics.analysis.tallies import run_card
from edufair_metrics.report.sections.run_card import run_card_table
from edufair_metrics.report.write import read_report_inputs

from tests.helpers.synthetic_runs import JUDGE_URL, STUDENT_URL, write_run


def test_two_runs_that_differ_only_in_the_tutor_temperature_have_different_cards(tmp_path):
    for name, temp in (("a", 0.1), ("b", 0.7)):
        write_run(tmp_path / name, "org/tutor", conditions=("explicit",), n_questions=3,
                  provenance={"decoding": {"tutor": {"temperature": temp}}})
    cards = []
    for name in ("a", "b"):
        inputs = read_report_inputs([tmp_path / name], evidence=False)
        cards.append(run_card(inputs.runs, inputs.provenance).iloc[0])
    assert cards[0]["tutor decoding"] != cards[1]["tutor decoding"]
    assert "temperature=0.1" in cards[0]["tutor decoding"] and "temperature=0.7" in cards[1]["tutor decoding"]
    for col in ("tutor model", "student model", "judge model", "student decoding", "judge decoding", "T_max",
                "protocol", "seeds"):
        assert cards[0][col] == cards[1][col] and cards[0][col] != "—", col
    assert "org/tutor" in cards[0]["tutor model"] and cards[0]["T_max"] == "10"
    text = " ".join(map(str, cards[0].to_dict().values()))
    assert STUDENT_URL not in text and JUDGE_URL not in text and "127.0.0.1" not in text


def test_a_setting_that_differs_between_tasks_is_shown_not_hidden(tmp_path):
    write_run(tmp_path / "x", "org/tutor", conditions=("explicit",), n_questions=2,
              provenance={"decoding": {"tutor": {"temperature": 0.1}}})
    write_run(tmp_path / "x", "org/tutor", conditions=("implicit",), n_questions=2,
              provenance={"decoding": {"tutor": {"temperature": 0.9}}}, timestamp="2025-01-02T00-00-00.000000")
    inputs = read_report_inputs([tmp_path / "x"], evidence=False)
    card = run_card(inputs.runs, inputs.provenance)
    assert " | " in card.iloc[0]["tutor decoding"]
    table = run_card_table(card)
    assert list(table.columns) == ["fact", "org/tutor"] and "tutor decoding" in set(table["fact"])
