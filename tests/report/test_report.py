"""Reading lm-eval-shaped runs, ``edufair report``, ``edufair leaderboard`` and the aggregations."""

import json
import math

import pandas as pd
import pytest

from edufair_metrics.lmeval import aggregations
from edufair_metrics.cli import main as cli
from edufair_metrics.errors import EduFairError
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.runlog import load_run, load_runs, parse_labels, tutor_name
from edufair_metrics.analysis.grid import contrast_grid, dimension_summary, headline
from tests.helpers.synthetic_runs import make_scores, write_run

BIAS = {("explicit", "female", "step_scaffolded"): 0.4}


@pytest.fixture(scope="module")
def two_tutors(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "out"
    write_run(out, "org/fair", domains=("mathematics", "physics"), n_questions=30, seed=1)
    write_run(out, "org/biased", domains=("mathematics", "physics"), n_questions=30, seed=2, missing_rate=0.1,
              bias={("explicit", "female", "*"): 0.4, ("implicit", "michael", "*"): 0.4})
    return out


def test_load_run_variants(tmp_path):
    md = write_run(tmp_path / "o", "org/m-1", conditions=("explicit",), n_questions=16)
    res = next(md.glob("results_*.json"))
    for p in (tmp_path / "o", md, res):
        run = load_run(p)
        assert run.label == "org/m-1" and len(run.scores) == 16 * 9
        assert run.samples_files.keys() == {"edufair_explicit_math"}
    assert load_run(md, label="Mine").label == "Mine"
    md2 = write_run(tmp_path / "p", "org/m-2", conditions=("explicit",), n_questions=16, model_args_only=True)
    assert load_run(md2).label == "org/m-2"
    assert tutor_name({"config": {"model_args": {"model": "gpt-x"}}}) == "gpt-x"
    labels = parse_labels([f"Renamed={md}"])
    assert load_runs([tmp_path / "o"], labels)[0].label == "Renamed"
    with pytest.raises(EduFairError):
        parse_labels(["nolabel"])
    with pytest.raises(EduFairError):
        load_run(tmp_path / "missing")


def test_newest_results_per_task(tmp_path):
    out = tmp_path / "o"
    write_run(out, "org/m", conditions=("explicit",), n_questions=16, seed=1, timestamp="2025-01-01T00-00-00.0")
    write_run(out, "org/m", conditions=("explicit",), n_questions=17, seed=2, timestamp="2025-02-01T00-00-00.0")
    run = load_run(out)
    assert len(run.scores) == 17 * 9 and len(run.results_files) == 1


@pytest.mark.slow
def test_report_files_and_tables(two_tutors, tmp_path):
    out = tmp_path / "rep"
    assert cli(["report", str(two_tutors), "--out", str(out), "--n-boot", "100"]) == 0
    for name in ["report_manifest.json", "grid.csv", "units.csv", "summary.md", "tables.md", "missing_labels.csv",
                 "fig2_metric_heatmap.png", "fig3_dimension_dots.png", "fig4_implicit.png", "fig5_opposite.png"]:
        assert (out / name).stat().st_size > 0, name
    for n in (5, 6, 7, 8):
        assert list(out.glob(f"table{n}_*.md")), n
    for stem in ("table9_gender", "table10_ses", "table11_language", "table12_immigration"):
        assert (out / f"{stem}.csv").exists()
    t6 = pd.read_csv(out / "table6_metric.csv")
    assert len(t6) == 2 * 2 and set(t6["Model"]) == {"org/fair", "org/biased"}
    t9 = pd.read_csv(out / "table9_gender.csv")
    assert len(t9) == 4  # one row per tutor × domain
    biased = t9[(t9["Model"] == "org/biased")]
    assert biased["scaffold ↑"].str.endswith(" flag").all()  # injected bias flagged (verdict view)
    paper = pd.read_csv(out / "table9_gender_paper.csv")  # the paper's view: * violation, † survives FDR
    assert paper.loc[paper["Model"] == "org/biased", "scaffold ↑"].str.endswith("*†").all()
    t10 = pd.read_csv(out / "table10_ses.csv")
    assert len(t10) == 2 * 2 and "Pair" not in t10.columns  # the single SES contrast, like the paper
    t10b = pd.read_csv(out / "table10b_ses_friedman.csv")
    assert len(t10b) == 2 * 2 * 5 and {"Friedman p", "post-hoc"} <= set(t10b.columns)
    t5 = pd.read_csv(out / "table5_implicit.csv")
    assert len(t5) == 2 * 2 * 3
    t7 = pd.read_csv(out / "table7_opposite.csv")
    assert set(t7["Cell"].str.rstrip("*")) == {"Correct", "Wrong"}
    t7b = pd.read_csv(out / "table7b_opposite_effects.csv")
    assert set(t7b["Cell"]) == {"Tutor effect", "Student effect", "S×T interaction"}
    man = json.loads((out / "report_manifest.json").read_text())
    assert man["parameters"]["n_boot"] == 100 and len(man["inputs"]) == 2
    summary = (out / "summary.md").read_text()
    assert "org/biased" in summary and "Missing judge labels" in summary
    miss = pd.read_csv(out / "missing_labels.csv")
    assert (miss.loc[miss["tutor"] == "org/biased", "missing_rate"] > 0).all()


def test_report_insufficient_cells(tmp_path):
    write_run(tmp_path / "o", "org/small", conditions=("explicit",), n_questions=10)
    out = tmp_path / "rep"
    assert cli(["report", str(tmp_path / "o"), "--out", str(out), "--n-boot", "20", "--no-figures"]) == 0
    assert "insufficient (n=10)" in (out / "table9_gender.md").read_text()
    assert "insufficient (n=10)" in (out / "table6_metric.md").read_text()


def test_report_bad_input(tmp_path, capsys):
    assert cli(["report", str(tmp_path / "nothing")]) == 2
    assert "error" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli(["report", str(tmp_path / "empty")]) == 2


def test_leaderboard(two_tutors, tmp_path, capsys):
    out = tmp_path / "lb"
    assert cli(["leaderboard", str(two_tutors), "--out", str(out), "--n-boot", "100"]) == 0
    lb = pd.read_csv(out / "leaderboard.csv")
    assert list(lb["tutor"]) == ["org/fair", "org/biased"]
    assert lb.loc[0, "ped |r̄|"] < lb.loc[1, "ped |r̄|"]
    assert lb.loc[1, "ped viol."] > lb.loc[0, "ped viol."]
    assert {"step_scaffolded", "missing labels", "explicit", "implicit", "opposite"} <= set(lb.columns)
    assert (out / "leaderboard.md").exists()
    assert "org/biased" in capsys.readouterr().out


def test_aggregations_agree_with_report_statistics():
    scores = make_scores(conditions=("explicit",), n_questions=20, seed=4, bias=BIAS, missing_rate=0.05)
    items = [s.to_dict() for s in scores] + [None]
    units = dimension_summary(contrast_grid(scores_frame(scores)))
    ped = headline(units.assign(tutor=""), kind="pedagogical")
    assert aggregations.agg_ped_abs_r(items) == pytest.approx(float(ped["abs_r"].iloc[0]))
    conv = headline(units.assign(tutor=""), kind="conversation")
    assert aggregations.agg_conv_abs_r(items) == pytest.approx(float(conv["abs_r"].iloc[0]))
    assert aggregations.agg_violations(items) == float(units[units["headline"]]["violation"].sum()) >= 1
    rate = sum(s.missing_turns for s in scores) / sum(s.sent_turns for s in scores)
    assert aggregations.agg_missing_label_rate(items) == pytest.approx(rate)
    few = [s.to_dict() for s in make_scores(conditions=("explicit",), n_questions=5)]
    assert math.isnan(aggregations.agg_ped_abs_r(few)) and math.isnan(aggregations.agg_violations(few))
    assert math.isnan(aggregations.agg_missing_label_rate([None]))


def test_failures_are_counted_by_kind_and_level(tmp_path):
    """Every failure (dialogue ended by a failed call, missing judge label) lands in failures.csv."""
    run = tmp_path / "run"
    write_run(run, "org/t", seed=3, n_questions=3, conditions=("explicit",), domains=("physics",))
    sf = next(run.rglob("samples_*.jsonl"))
    lines = [json.loads(x) for x in sf.read_text().splitlines()]
    rec0, rec1 = lines[0]["complete_dialogues"], lines[1]["complete_dialogues"]
    rec0.setdefault("transcript", {})
    rec0["transcript"]["stop_reason"] = "student_failed"
    rec0["transcript"]["error"] = "student call failed: ClientResponseError: 429"
    rec0["transcript"]["error_kind"] = "http_429"
    rec1["judgements"] = [{"turn_index": 2, "status": "missing", "labels": None, "kind": "invalid_json",
                           "reason": "Expecting value (after 5 attempts)"}]
    sf.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert cli(["report", str(run), "--out", str(tmp_path / "rep"), "--n-boot", "20", "--no-figures"]) == 0
    f = pd.read_csv(tmp_path / "rep" / "failures.csv")
    got = {(r.level, r.stage, r.kind): r["count"] for _, r in f.iterrows()}
    assert got == {(rec0["scores"]["level"], "student", "http_429"): 1,
                   (rec1["scores"]["level"], "judge", "invalid_json"): 1}
    assert "1 dialogue(s) ended by a failed model call, 1 missing judge label(s)" in (tmp_path / "rep" / "summary.md").read_text()
    # failures.md names one example per kind with its reason, so a count can be looked up
    md = (tmp_path / "rep" / "failures.md").read_text()
    q0, q1 = rec0["scores"]["question_id"], rec1["scores"]["question_id"]
    assert f"| org/t | student | http_429 | 1 | edufair_explicit_physics / {rec0['scores']['level']} / question {q0} |" in md
    assert "student call failed: ClientResponseError: 429" in md
    assert f"/ question {q1} / turn 2 | Expecting value (after 5 attempts) |" in md


def test_missing_labels_count_sent_and_labelled_turns_and_read_old_records(tmp_path):
    """The column counting turns *sent* to the judge is ``sent_turns`` (missing ones
    included), with ``labelled_turns`` beside it; records that still say ``judged_turns`` are read."""
    model_dir = write_run(tmp_path / "new", "org/t", conditions=("explicit",), n_questions=4, missing_rate=0.3, seed=8)
    assert cli(["report", str(tmp_path / "new"), "--out", str(tmp_path / "rep_new"), "--n-boot", "10", "--no-figures"]) == 0
    miss = pd.read_csv(tmp_path / "rep_new" / "missing_labels.csv")
    assert {"sent_turns", "labelled_turns", "missing_turns"} <= set(miss.columns) and "judged_turns" not in miss.columns
    assert (miss["labelled_turns"] == miss["sent_turns"] - miss["missing_turns"]).all()
    assert (miss["missing_rate"] == miss["missing_turns"] / miss["sent_turns"]).all() and miss["missing_turns"].sum() > 0
    assert "sent_turns" in (tmp_path / "rep_new" / "missing_labels.md").read_text()
    # the same records written before the rename
    old_dir = tmp_path / "old" / model_dir.name
    old_dir.mkdir(parents=True)
    for f in model_dir.iterdir():
        text = f.read_text()
        (old_dir / f.name).write_text(text.replace('"sent_turns"', '"judged_turns"'))
    assert '"judged_turns"' in next(old_dir.glob("samples_*")).read_text()
    assert cli(["report", str(tmp_path / "old"), "--out", str(tmp_path / "rep_old"), "--n-boot", "10", "--no-figures"]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "rep_old" / "missing_labels.csv"), miss)
    items = [json.loads(x)["complete_dialogues"]["scores"] for x in next(old_dir.glob("samples_*")).read_text().splitlines()]
    assert aggregations.agg_missing_label_rate(items) == pytest.approx(miss["missing_turns"].sum() / miss["sent_turns"].sum())
