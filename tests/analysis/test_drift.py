"""Student drift (``analysis.drift``): a flagged student unit marks the tutor-side verdicts of the
same tutor × domain × condition × contrast; planted drift is caught, a steady student is not; the
student metrics never count toward the tutor's headline, leaderboard or CI gate."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from edufair_metrics.analysis.compare import compare_frames
from edufair_metrics.analysis.drift import student_cued
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.params import StatParams, analyse
from edufair_metrics.report.leaderboard import leaderboard_table
from edufair_metrics.report.write import headline_table
from tests.helpers.synthetic_runs import make_scores

PARAMS = StatParams(n_boot=100)


def with_student(scores, *, drift=None, seed=0):
    """Add two student metrics to every dialogue: words per turn ~ 20 ± 4 shared by a question's
    levels (the same student) plus noise, and a correct-answer rate; ``drift`` maps (condition,
    level) -> shift of the student's words."""
    rng = np.random.default_rng(seed)
    base: dict[str, float] = {}
    out = []
    for s in scores:
        q = base.setdefault(f"{s.domain}/{s.question_id}", float(rng.normal(20, 4)))
        shift = (drift or {}).get((s.condition, s.level), 0.0)
        words = q + rng.normal(0, 1.5) + shift
        correct = float(np.clip(round(rng.random() * 4) / 4, 0, 1))
        out.append(dataclasses.replace(s, scores={**s.scores, "student_words": words,
                                                   "student_correct_answer_rate": correct}))
    return out


def _scores(n=60, **kw):
    return make_scores(tutor="t", domains=("mathematics",), conditions=("explicit", "opposite"), n_questions=n, **kw)


def test_which_contrasts_cue_the_student():
    assert not student_cued("explicit", "Gender") and not student_cued("implicit", "Gender")
    for contrast in ("Correct", "Wrong", "Student effect"):  # the student is told its gender
        assert student_cued("opposite", contrast), contrast
    for contrast in ("Tutor effect", "S×T interaction"):  # both sides hold the same student genders
        assert not student_cued("opposite", contrast), contrast
    assert not student_cued("opposite", "No such contrast") and not student_cued("nowhere", "Gender")


def test_planted_drift_marks_the_tutor_side_verdicts_of_its_contrast():
    scores = with_student(_scores(), drift={("explicit", "female"): 4.0}, seed=1)
    _, grid, units = analyse(scores, PARAMS)
    stu = units[(units["metric"] == "student_words") & (units["condition"] == "explicit")].set_index("contrast")
    assert stu.loc["Gender", "verdict"] == "flag" and stu.loc["Immigration", "verdict"] != "flag"
    g = grid[(grid["condition"] == "explicit") & (grid["contrast"] == "Gender")]
    tutor_side = g[g["metric_kind"].isin(["pedagogical", "conversation"])]
    assert len(tutor_side) == 9 and tutor_side["student_drift"].all()
    assert (tutor_side["drift_metrics"] == "student_words").all() and not tutor_side["drift_by_design"].any()
    assert tutor_side["caveats"].str.contains("student drift: student_words").all()
    assert not g[g["metric_kind"] == "student"]["student_drift"].any()  # the monitor itself carries no mark
    other = grid[(grid["condition"] == "explicit") & (grid["contrast"] != "Gender")]
    assert not other["student_drift"].any()
    u = units[(units["contrast"] == "Gender") & (units["condition"] == "explicit") & (units["metric"] == "actionability")]
    assert u["student_drift"].iloc[0] and "student drift" in u["caveats"].iloc[0]


def test_drift_where_the_student_is_told_its_gender_is_part_of_the_design():
    scores = with_student(_scores(), drift={("opposite", "s_female_t_female"): 4.0, ("opposite", "s_female_t_male"): 4.0},
                          seed=1)
    _, grid, _ = analyse(scores, PARAMS)
    g = grid[(grid["condition"] == "opposite") & grid["metric_kind"].isin(["pedagogical"])]
    correct = g[g["contrast"] == "Correct"]
    assert correct["student_drift"].all() and correct["drift_by_design"].all()
    assert correct["caveats"].str.endswith("part of the design").all()
    assert not g[g["contrast"] == "Tutor effect"]["student_drift"].any()  # the student's words do not differ there


def test_a_steady_student_marks_nothing():
    marked = 0
    for seed in range(6):
        _, grid, _ = analyse(with_student(_scores(seed=seed), seed=seed), PARAMS)
        marked += int(grid["student_drift"].any())
    assert marked <= 1


def test_student_metrics_never_count_toward_headline_leaderboard_or_gate():
    plain = _scores(seed=3)
    drifted = with_student(plain, drift={("explicit", "female"): 6.0, ("explicit", "immigrant"): 6.0})
    df0, _, units0 = analyse(plain, PARAMS)
    df1, grid1, units1 = analyse(drifted, PARAMS)
    assert (units1[units1["metric_kind"] == "student"]["verdict"] == "flag").sum() >= 2
    pd.testing.assert_frame_equal(headline_table(units0), headline_table(units1))
    cols = [c for c in leaderboard_table(df0, units0).columns if not c.startswith(tuple("0123456789"))]
    pd.testing.assert_frame_equal(leaderboard_table(df0, units0)[cols], leaderboard_table(df1, units1)[cols])
    other = make_scores(tutor="t", domains=("mathematics",), conditions=("explicit", "opposite"), n_questions=60, seed=4)
    base = scores_frame(other)
    gate0 = compare_frames(base, df0, n_boot=100)
    gate1 = compare_frames(base, df1, n_boot=100)
    assert gate0.headline == pytest.approx(gate1.headline, nan_ok=True)
    assert (gate0.status, gate0.failed) == (gate1.status, gate1.failed)


def test_report_shows_the_student_table_block_and_marks(tmp_path):
    """The report on a run whose student drifts under Explicit Gender: table_student (both views),
    summary.md's student block with the drift marks, the caveats in grid.csv / units.csv and the
    HTML data (student units, caveats on the grid rows)."""
    import json
    import re

    from edufair_metrics.report.write import read_report_inputs, write_report
    from tests.helpers.synthetic_runs import write_run

    bias = {("explicit", "female", "actionability"): 0.3}
    scores = with_student(make_scores(tutor="org/t", domains=("mathematics",), conditions=("explicit",), n_questions=60,
                                      bias=bias), drift={("explicit", "female"): 4.0}, seed=1)
    write_run(tmp_path / "runs", "org/t", scores=scores)
    inputs = read_report_inputs([tmp_path / "runs"], evidence=False)
    # turn-less synthetic records: the reader recomputes the student metrics from the (empty)
    # transcripts, so the planted student scores are put back on the loaded run
    (run,) = inputs.runs
    run.scores = [dataclasses.replace(s, tutor=run.label) for s in scores]
    write_report(inputs, tmp_path / "rep", PARAMS, figures=False)
    rep = tmp_path / "rep"
    for stem in ("table_student", "table_student_paper"):
        assert (rep / f"{stem}.md").is_file(), stem
    table = (rep / "table_student.md").read_text()
    assert "Student-side monitor" in table and "S words" in table
    summary = (rep / "summary.md").read_text()
    block = summary.split("## Student-side monitor (student drift)")[1]
    assert "Flagged student units" in block and "student_words" in block and "What to conclude" in block
    assert "Flagged tutor-side verdicts with student drift" in block
    flagged = summary.split("Flagged units")[1].split("###")[0]
    line = next(x for x in flagged.splitlines() if "| Gender | actionability |" in x)
    assert "student drift: " in line and "student_words" in line  # beside the verdict in the flagged list
    assert "| student_words |" not in flagged  # the student's own units: in the monitor's section only
    units = pd.read_csv(rep / "units.csv")
    u = units[(units["contrast"] == "Gender") & (units["metric"] == "actionability")].iloc[0]
    assert u["verdict"] == "flag" and u["student_drift"] and "student drift" in u["caveats"]
    cols = list(units.columns)
    assert cols.index("caveats") == cols.index("verdict") + 1
    html = (rep / "index.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r"EF\.data = (\{.*?\});\n</script>", html, re.S).group(1))
    assert data["student_units"]["rows"]
    rows = [dict(zip(data["grid"]["cols"], r)) for r in data["grid"]["rows"]]
    hit = [r for r in rows if r["contrast"] == "Gender" and r["metric"] == "actionability"]
    assert hit and hit[0]["student_drift"] and "student drift" in hit[0]["caveats"]
    assert "studentSection" in html and "caveat-box" in html
