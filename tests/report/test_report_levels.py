"""The descriptive view of ``edufair report`` (levels.csv / levels.md / fig_levels.png), the
all-insufficient summary line, and the figures' ``insuff. (n=K)`` labels."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from edufair_metrics.report import figures
from edufair_metrics.cli import main as cli
from edufair_metrics.records import DialogueScores
from tests.helpers.synthetic_runs import write_run

NAN = float("nan")
M = ["mistake_recognize", "answer_leakage", "step_scaffolded", "actionability", "corrective_tone",
     "tutor_turns", "tutor_avg_word", "tutor_question_rate", "tutor_student_word_ratio"]

# (level, question, stop_reason, nine scores); q2 and q3 have no "male" dialogue (unpaired)
ROWS = [
    ("female", "q0", "answer_revealed", [1.0, 0.0, 0.5, 1.0, NAN, 3, 20.0, 0.5, 2.0]),
    ("female", "q3", "max_turns", [0.0, 1.0, 0.5, 0.0, NAN, 5, 40.0, 0.0, 4.0]),
    ("female", "q1", "answer_confirmed", [1.0, NAN, 0.0, 1.0, NAN, 2, 30.0, 1.0, 3.0]),
    ("female", "q2", "student_failed", [NAN, NAN, NAN, NAN, NAN, 1, 10.0, 0.0, 1.0]),
    ("male", "q0", "max_turns", [0.0, 0.0, 1.0, 0.5, 1.0, 4, 25.0, 0.25, 2.5]),
    ("male", "q1", "tutor_failed", [1.0, 1.0, 0.0, 0.5, 0.0, 6, 35.0, 0.75, 1.5]),
]


def _tiny_run(root: Path) -> Path:
    scores, stops = [], {}
    for level, q, stop, vals in ROWS:
        ds = DialogueScores(question_id=q, domain="mathematics", condition="explicit", dimension="gender",
                            level=level, scores=dict(zip(M, map(float, vals))), task="edufair_explicit_math",
                            sent_turns=3)
        stops[id(ds)] = stop
        scores.append(ds)
    write_run(root, "org/tiny", scores=scores, stop_reason=lambda s: stops[id(s)])
    return root


@pytest.fixture()
def tiny_report(tmp_path):
    out = tmp_path / "rep"
    assert cli(["report", str(_tiny_run(tmp_path / "o")), "--out", str(out), "--n-boot", "10"]) == 0
    return out


def test_levels_numbers_match_hand_computation(tiny_report):
    out = tiny_report
    for name in ("levels.csv", "levels.md", "fig_levels.png"):
        assert (out / name).stat().st_size > 0, name
    assert {"levels.csv", "levels.md", "fig_levels.png"} <= set(json.loads((out / "report_manifest.json").read_text())["files"])
    lv = pd.read_csv(out / "levels.csv")
    assert list(lv["level"]) == ["female", "male"]  # protocol order
    f = lv.set_index("level").loc["female"]
    m = lv.set_index("level").loc["male"]
    assert (f["dialogues"], f["questions"], m["dialogues"], m["questions"]) == (4, 4, 2, 2)
    # stop reasons; failures = student_failed + tutor_failed
    assert [f[c] for c in ("answer_revealed", "answer_confirmed", "max_turns", "failures")] == [1, 1, 1, 1]
    assert [m[c] for c in ("answer_revealed", "answer_confirmed", "max_turns", "failures")] == [0, 0, 1, 1]
    assert "stop_unknown" not in lv.columns
    # NaN-aware means over the dialogues that have a value (by hand)
    assert f["mistake_recognize"] == pytest.approx((1 + 0 + 1) / 3)
    assert f["answer_leakage"] == pytest.approx((0 + 1) / 2)
    assert f["step_scaffolded"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert f["actionability"] == pytest.approx(2 / 3)
    assert math.isnan(f["corrective_tone"])  # no female dialogue has a value
    assert f["tutor_turns"] == pytest.approx((3 + 5 + 2 + 1) / 4)
    assert f["tutor_avg_word"] == pytest.approx(25.0)
    assert f["tutor_question_rate"] == pytest.approx(1.5 / 4)
    assert f["tutor_student_word_ratio"] == pytest.approx(2.5)
    assert [m[c] for c in M] == pytest.approx([0.5, 0.5, 0.5, 0.5, 0.5, 5.0, 30.0, 0.5, 2.0])
    md = (out / "levels.md").read_text()
    assert "| org/tiny | mathematics (GSM8K proxy) | explicit | gender | female | 4 | 4 | 1 | 1 | 1 | 1 |" in md
    assert "| org/tiny | mathematics (GSM8K proxy) | explicit | gender | female | 4 | 0.667 | 0.500 | 0.333 | 0.667 | — |" in md


def test_summary_says_no_statistic_when_all_insufficient(tiny_report, tmp_path):
    summary = (tiny_report / "summary.md").read_text()
    assert "n pairs < min pairs" in summary and "no bias statistic computed; see levels.md for descriptive rates" in summary
    assert "levels.md" in summary and "fig_levels.png" in summary
    # with enough pairs the sentence goes away, the pointer to levels.md stays
    write_run(tmp_path / "big", "org/big", conditions=("explicit",), n_questions=16, stop_reason=lambda s: "max_turns")
    out = tmp_path / "rep_big"
    assert cli(["report", str(tmp_path / "big"), "--out", str(out), "--n-boot", "10", "--no-figures"]) == 0
    summary = (out / "summary.md").read_text()
    assert "no bias statistic computed" not in summary and "levels.md" in summary
    lv = pd.read_csv(out / "levels.csv")
    assert len(lv) == 9 and (lv["dialogues"] == 16).all() and (lv["max_turns"] == 16).all()
    assert not (out / "fig_levels.png").exists()


def test_stop_unknown_column_when_records_lack_a_stop_reason(tmp_path):
    write_run(tmp_path / "o", "org/old", conditions=("explicit",), n_questions=3)
    out = tmp_path / "rep"
    assert cli(["report", str(tmp_path / "o"), "--out", str(out), "--n-boot", "10", "--no-figures"]) == 0
    lv = pd.read_csv(out / "levels.csv")
    assert (lv["stop_unknown"] == 3).all() and (lv[["answer_revealed", "max_turns", "failures"]] == 0).all().all()


def test_cell_label():
    assert figures.cell_label(NAN, False, 3.0) == "insuff. (n=3)"
    assert figures.cell_label(NAN, np.False_, 7) == "insuff. (n=7)"
    assert figures.cell_label(NAN, True, 20) == "n/a"  # enough pairs but r undefined
    assert figures.cell_label(NAN, NAN, NAN) == "n/a"  # no unit at all (pivot hole)
    assert figures.cell_label(0.1234, True, 20) == "0.12"


@pytest.mark.slow
def test_figures_label_insufficient_cells(tmp_path, monkeypatch):
    texts: dict[str, list[str]] = {}
    save = figures._save

    def spy(fig, path):
        texts[Path(path).name] = [t.get_text().replace("\n", " ") for t in fig.findobj(lambda o: hasattr(o, "get_text"))]
        return save(fig, path)

    monkeypatch.setattr(figures, "_save", spy)
    write_run(tmp_path / "o", "org/small", n_questions=6)  # all three conditions, 6 < 15 pairs
    out = tmp_path / "rep"
    assert cli(["report", str(tmp_path / "o"), "--out", str(out), "--n-boot", "10"]) == 0
    assert set(texts) == {"fig2_metric_heatmap.png", "fig3_dimension_dots.png", "fig4_implicit.png",
                          "fig5_opposite.png", "fig_levels.png"}
    for name in ("fig2_metric_heatmap.png", "fig3_dimension_dots.png", "fig4_implicit.png", "fig5_opposite.png"):
        assert "insuff. (n=6)" in texts[name], name
        assert "n/a" not in texts[name], name
    assert texts["fig2_metric_heatmap.png"].count("insuff. (n=6)") == 9  # one per metric cell
    assert texts["fig3_dimension_dots.png"].count("insuff. (n=6)") == 4  # one per dimension
