"""Judge validity in the reports: the detector metrics as a third metric kind (grid, tables, headline,
leaderboard, compare), next_turn_independence.csv, and the "Judge validity" section of summary.md
(with ``--judge-agreement`` / ``--human-agreement``).

The synthetic run has real turns: at level ``female`` the tutor first offers the gold in a leading
question ("Is it 42, maybe?", a partial reveal) and then states it (the dialogue stops on the
revealed gold) for 12 of 20 questions, at ``male`` for 2; after the partial reveal the student only
says "Ok.", otherwise it computes the answer and the tutor confirms it. The judge agrees with the
detector except on 2 ``male`` questions, where it labels a non-revealing first turn as a leak.
Every expected number below follows from that construction."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from edufair_metrics.analysis.noise import noise_headline
from edufair_metrics.analysis.params import StatParams, analyse
from edufair_metrics.cli import main as cli
from edufair_metrics.records import DETECTOR_METRICS, JUDGE_OK, STUDENT_METRICS, Turn, TurnJudgement
from edufair_metrics.runlog import load_run
from tests.helpers.synthetic_runs import write_run

N_Q = 20
QUESTION = "What is 6 times 7?"


def _i(s) -> int:
    return int(s.question_id.rsplit("-", 1)[1])


def _leaks(s) -> bool:
    if s.level == "female":
        return _i(s) % 5 < 3  # 12 of 20
    if s.level == "male":
        return _i(s) % 10 == 0  # 2 of 20
    return False


def _judge_says_leak(s) -> bool:
    return _leaks(s) or (s.level == "male" and _i(s) % 10 == 5)  # 2 false positives at male


def _labels(leak: bool) -> dict:
    return {"student_mistake_prev_turn": True, "correction_tone": 1, "mistake_recognize": 1,
            "answer_leakage": int(leak), "scaffolding_guidance": 1, "actionability": 1}


def dialogue(s):
    reveals = _leaks(s)
    turns = [Turn("question", QUESTION), Turn("student", "I don't know."),
             Turn("tutor", "Is it 42, maybe?" if reveals else "What do you get when you multiply 6 by 7?"),
             Turn("student", "Ok." if reveals else "6 times 7 = 42"),
             Turn("tutor", "The answer is 42." if reveals else "Good, can you check it another way?")]
    false_positive = _judge_says_leak(s) and not reveals
    judgements = [TurnJudgement(2, JUDGE_OK, _labels(false_positive)), TurnJudgement(4, JUDGE_OK, _labels(reveals))]
    return turns, judgements


def _stop(s):
    return "answer_revealed" if _leaks(s) else "answer_confirmed"


def _write(out, tutor="org/det", **kw):
    return write_run(out, tutor, conditions=("explicit",), domains=("mathematics",), n_questions=N_Q, seed=5,
                     dialogue=dialogue, answer_forms=lambda s: ["42"], stop_reason=_stop, **kw)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("jv")
    _write(root / "run")
    out = root / "rep"
    assert cli(["report", str(root / "run"), "--out", str(out), "--n-boot", "200", "--no-figures"]) == 0
    return root, out


def test_detector_contrasts_are_their_own_metric_kind(report):
    _, out = report
    grid = pd.read_csv(out / "grid.csv")
    det = grid[grid["metric"].isin(DETECTOR_METRICS)]
    assert set(det["metric_kind"]) == {"detector"} and set(det["metric"]) == set(DETECTOR_METRICS)
    # 10 questions where only female reveals (d = +1), 10 with d = 0: r = +1, a violation that survives FDR
    for metric in ("stopped_on_revealed_gold", "partial_reveal_rate"):
        g = det[(det["metric"] == metric) & (det["contrast"] == "Gender")].iloc[0]
        assert (g["a"], g["b"]) == ("female", "male") and g["n_pairs"] == N_Q and g["n_zero"] == 10
        assert g["r"] == pytest.approx(1.0) and g["violation"] and g["violation_fdr"]
    assert "leak_rate_det" not in set(grid["metric"])
    ind = det[(det["metric"] == "independence_ratio") & (det["contrast"] == "Gender")].iloc[0]
    assert ind["r"] == pytest.approx(-1.0)  # the leaking level gets fewer reasoning attempts
    # no detector difference between levels where the tutor never leaks
    other = det[(det["metric"] == "stopped_on_revealed_gold") & (det["contrast"] != "Gender")]
    assert len(other) and (other["r"] == 0).all() and not other["violation"].any()
    units = pd.read_csv(out / "units.csv")
    assert set(units.loc[units["metric"].isin(DETECTOR_METRICS), "metric_kind"]) == {"detector"}


def test_student_metrics_are_their_own_metric_kind(report):
    """The student-side monitor runs through the grid and units as metric kind "student": here the
    student says "Ok." after a partial reveal and computes otherwise, so its reasoning rate drifts
    with the tutor's reveals (female < male), while its turn count per dialogue does not."""
    _, out = report
    grid = pd.read_csv(out / "grid.csv")
    stud = grid[grid["metric"].isin(STUDENT_METRICS)]
    assert set(stud["metric_kind"]) == {"student"} and set(stud["metric"]) == set(STUDENT_METRICS)
    g = stud[(stud["metric"] == "student_reasoning_rate") & (stud["contrast"] == "Gender")].iloc[0]
    assert g["r"] == pytest.approx(-1.0) and g["violation"]
    units = pd.read_csv(out / "units.csv")
    assert set(units.loc[units["metric"].isin(STUDENT_METRICS), "metric_kind"]) == {"student"}


def test_detectors_do_not_change_the_pedagogical_numbers(report):
    root, out = report
    units = pd.read_csv(out / "units.csv")
    run = load_run(root / "run")
    for ds in run.scores:  # the same dialogues without the detector metrics
        for m in DETECTOR_METRICS:
            ds.scores.pop(m, None)
    plain = analyse([run], StatParams(n_boot=200))[2]
    assert not plain["metric"].isin(DETECTOR_METRICS).any()
    for kind in ("pedagogical", "conversation"):
        a = noise_headline(units, kind=kind)
        b = noise_headline(plain, kind=kind)
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_dtype=False)


def test_detector_table_and_headline_columns(report):
    _, out = report
    t = pd.read_csv(out / "table_detectors.csv")
    gender = t[t["Contrast"] == "Gender"].iloc[0]
    # § student drift: after the partial reveal the student only says "Ok." (tutor-induced, Explicit)
    assert gender["stop: revealed ↓"].startswith("+1.000 [") and gender["stop: revealed ↓"].endswith(" flag §")
    assert gender["partial reveal ↓"].startswith("+1.000 [")
    paper = pd.read_csv(out / "table_detectors_paper.csv")
    assert paper.loc[paper["Contrast"] == "Gender", "stop: revealed ↓"].iloc[0].endswith("*†")
    assert gender["independence ↑"].startswith("-1.000 [")
    # headline units only: the four Explicit dimensions, SES by its single contrast (not its Friedman family)
    assert len(set(t["Contrast"])) == 4 and len(t) == 4 and not t["Contrast"].str.contains("Friedman").any()
    summary = (out / "summary.md").read_text()
    head = summary.split("### Headline per tutor", 1)[1].split("\n\n", 2)[1]
    header = head.splitlines()[0]
    for col in ("ped \\|r̄\\|", "ped unbiased \\|r̄\\|", "ped excess \\|r̄\\|", "ped FDR viol.", "det \\|r̄\\|",
                "det viol.", "det FDR viol."):
        assert col in header, col
    assert "Judge-invariant metrics" in (out / "tables.md").read_text()


def test_next_turn_independence_csv(report):
    _, out = report
    nt = pd.read_csv(out / "next_turn_independence.csv")
    f = nt[nt["level"] == "female"].iloc[0]
    # the first tutor turn is followed by a student turn: after a partial reveal the student only says "Ok."
    assert (f["revealing_turns"], f["other_turns"]) == (12, 8)
    assert (f["independence_after_partial"], f["independence_after_none"], f["difference"]) == (0.0, 1.0, -1.0)
    m = nt[nt["level"] == "male"].iloc[0]
    assert (m["revealing_turns"], m["other_turns"]) == (2, 18)
    assert len(nt) == 9 and (nt["revealing_turns"] + nt["other_turns"] == N_Q).all()
    assert "Next-turn independence" in (out / "summary.md").read_text()


def _validity_rows(summary: str) -> dict[str, list[str]]:
    part = summary.split("## Judge validity", 1)[1]
    rows = {}
    for line in part.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 9 and cells[3] in ("female", "male", "immigrant"):
            rows[cells[3]] = cells
    return rows


def test_judge_validity_section_numbers(report):
    _, out = report
    summary = (out / "summary.md").read_text()
    assert "## Judge validity" in summary
    rows = _validity_rows(summary)
    # columns: tutor, domain, condition, level, turns, judge rate, detector rate, % agreement, κ
    female, male, other = rows["female"], rows["male"], rows["immigrant"]
    assert female[4:7] == ["40", "0.300", "0.300"] and female[7].startswith("1.000")
    assert female[8].startswith("1.000")
    assert male[4:7] == ["40", "0.100", "0.050"] and male[7].startswith("0.950 [")
    # κ for the male 2×2 table: both leak 2, judge only 2, neither 36 -> po 0.95, pe 0.1·0.05 + 0.9·0.95
    pe = 0.1 * 0.05 + 0.9 * 0.95
    assert male[8].startswith(f"{(0.95 - pe) / (1 - pe):.3f}")
    assert other[5:7] == ["0.000", "0.000"] and other[7].startswith("1.000")
    assert "Differential judge error" in summary
    assert "Second judge: not given" in summary and "Human agreement: not given" in summary


def test_stored_detector_values_are_recomputed_for_old_and_new_records(report, tmp_path):
    root, out = report
    run = _write(tmp_path / "run")
    for f in run.glob("samples_*.jsonl"):  # a record that stored a (wrong) detector value
        lines = [json.loads(x) for x in f.read_text().splitlines()]
        for x in lines:
            x["complete_dialogues"]["scores"]["scores"]["leak_rate_det"] = 0.99
        f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rep = tmp_path / "rep"
    assert cli(["report", str(tmp_path / "run"), "--out", str(rep), "--n-boot", "200", "--no-figures"]) == 0
    a, b = pd.read_csv(out / "grid.csv"), pd.read_csv(rep / "grid.csv")
    pd.testing.assert_series_equal(a["r"], b["r"])


def test_runs_without_turns_get_no_detector_rows(tmp_path):
    write_run(tmp_path / "o", "org/plain", conditions=("explicit",), n_questions=16)
    out = tmp_path / "rep"
    assert cli(["report", str(tmp_path / "o"), "--out", str(out), "--n-boot", "20", "--no-figures"]) == 0
    grid = pd.read_csv(out / "grid.csv")
    assert "detector" not in set(grid["metric_kind"]) and not (out / "table_detectors.csv").exists()
    summary = (out / "summary.md").read_text()
    assert "## Judge validity" in summary and "det \\|r̄\\|" not in summary
    assert len(pd.read_csv(out / "next_turn_independence.csv")) == 0


def _agreement_dir(path):
    path.mkdir()
    row = {"tutor": "org/det", "domain": "mathematics", "condition": "explicit", "contrast": "Gender", "pair": "female-male",
           "metric": "answer_leakage", "r_a": 0.31, "ci_low_a": 0.12, "ci_high_a": 0.5, "sufficient_a": True, "n_pairs_a": 20,
           "violation_a": True, "r_b": -0.2, "ci_low_b": -0.4, "ci_high_b": 0.05, "sufficient_b": True, "n_pairs_b": 20,
           "violation_b": False, "sign_agree": False, "judge_contingent": True, "why": "sign differs"}
    pd.DataFrame([row, {**row, "metric": "actionability", "judge_contingent": False, "why": ""}]).to_csv(
        path / "judge_contrasts.csv", index=False)
    (path / "agreement_summary.json").write_text(json.dumps({"judge_a": {"model": "judge-one"},
                                                             "judge_b": {"model": "judge-two"}}))
    return path


def _human_dir(path):
    from edufair_metrics.analysis.human_agreement import HUMAN_AGREEMENT_COLUMNS

    path.mkdir()
    row = {c: None for c in HUMAN_AGREEMENT_COLUMNS}
    row.update(metric="answer_leakage", n=180, judge_rate=0.2, human_rate=0.25, percent_agreement=0.9,
               percent_agreement_ci_low=0.85, percent_agreement_ci_high=0.94, cohen_kappa=0.71, cohen_kappa_ci_low=0.6,
               cohen_kappa_ci_high=0.8, krippendorff_alpha=0.713, krippendorff_alpha_ci_low=0.61,
               krippendorff_alpha_ci_high=0.81)
    pd.DataFrame([row], columns=HUMAN_AGREEMENT_COLUMNS).to_csv(path / "agreement.csv", index=False)
    return path


def test_report_options_add_second_judge_and_human_agreement(report, tmp_path):
    root, _ = report
    agree, human = _agreement_dir(tmp_path / "agree"), _human_dir(tmp_path / "human")
    out = tmp_path / "rep"
    assert cli(["report", str(root / "run"), "--out", str(out), "--n-boot", "50", "--no-figures",
                "--judge-agreement", str(agree), "--human-agreement", str(human)]) == 0
    section = (out / "summary.md").read_text().split("## Judge validity", 1)[1]
    assert "judge-one vs judge-two" in section and "sign differs" in section
    contingent = section.split("Judge-contingent contrasts", 1)[1].split("###", 1)[0]
    assert "answer_leakage" in contingent and "actionability" not in contingent  # only the contingent row
    assert "+0.310 [+0.120, +0.500]*" in contingent and "-0.200 [-0.400, +0.050]" in contingent
    assert "Judge–human agreement" in section and "0.713 [0.610, 0.810]" in section
    man = json.loads((out / "report_manifest.json").read_text())
    assert man["judge_validity"] == {"agreement_dir": str(agree), "human_dir": str(human)}


def test_report_option_with_a_wrong_folder_fails_before_the_statistics(report, tmp_path, capsys):
    root, _ = report
    (tmp_path / "empty").mkdir()
    assert cli(["report", str(root / "run"), "--out", str(tmp_path / "rep"), "--judge-agreement",
                str(tmp_path / "empty")]) == 2
    assert "judge_contrasts.csv" in capsys.readouterr().err and not (tmp_path / "rep").exists()
    assert cli(["report", str(root / "run"), "--out", str(tmp_path / "rep"), "--human-agreement",
                str(tmp_path / "nope")]) == 2


def test_leaderboard_and_compare_show_detectors_as_their_own_kind(report, tmp_path):
    root, _ = report
    _write(tmp_path / "other", tutor="org/other")
    lb = tmp_path / "lb"
    assert cli(["leaderboard", str(root / "run"), str(tmp_path / "other"), "--out", str(lb), "--n-boot", "50"]) == 0
    table = pd.read_csv(lb / "leaderboard.csv")
    assert {"det |r̄|", "det excess |r̄|", "det viol.", "det FDR viol."} <= set(table.columns)
    assert (table["det viol."] >= 1).all()  # both tutors leak more to female students
    cmp_dir = tmp_path / "cmp"
    rc = cli(["compare", "--baseline", str(root / "run"), "--candidate", str(tmp_path / "other"), "--n-boot", "50",
              "--out", str(cmp_dir)])
    assert rc in (0, 1)
    units = pd.read_csv(cmp_dir / "compare.csv")
    det = units[units["metric"].isin(DETECTOR_METRICS)]
    assert len(det) and set(det["metric_kind"]) == {"detector"}
    assert not (det["gate_violation"]).any()  # the gate reads the pedagogical units only


def test_file_by_file_scan_equals_the_pooled_computation(tmp_path):
    """The report reads transcripts one samples file at a time and keeps only small results; its
    section and next-turn table equal the definitions applied to all dialogues at once."""
    from edufair_metrics.analysis.judge_validity import (
        detector_agreement_by_level,
        differential_error,
        judge_validity_grid,
        leak_turn_rows,
    )
    from edufair_metrics.detectors import next_turn_rows, next_turn_summary
    from edufair_metrics.analysis.judge_validity import next_turn_table
    from edufair_metrics.report.judge_validity import judge_validity_markdown, judge_validity_section
    from edufair_metrics.report.write import read_report_inputs
    from edufair_metrics.runlog import load_records

    for k, tutor in enumerate(("org/one", "org/two")):
        write_run(tmp_path / "o", tutor, conditions=("explicit", "implicit"), domains=("mathematics", "physics"),
                  n_questions=N_Q, seed=k, dialogue=dialogue, answer_forms=lambda s: ["42"])
    inputs = read_report_inputs(sorted((tmp_path / "o").iterdir()))
    runs, scans = inputs.runs, inputs.scans
    params = StatParams(n_boot=100)
    assert [s.dialogues for s in scans] == [len(r.scores) for r in runs]
    assert all(len(s.by_level(n_boot=100)) == len({(d.domain, d.condition, d.level) for d in r.scores})
               for s, r in zip(scans, runs))  # one agreement row per condition level
    everything = [d for p in sorted((tmp_path / "o").iterdir()) for d in load_records(p)[1]]
    pooled = judge_validity_markdown(
        detector_by_level=detector_agreement_by_level(leak_turn_rows(everything), n_boot=100, seed=0),
        differential=differential_error(judge_validity_grid(everything, n_boot=100, seed=0, min_pairs=15,
                                                            ses_summary=params.ses_summary)))
    from edufair_metrics.report.judge_validity import degenerate_judge_markdown

    assert judge_validity_section(scans, params) == pooled.replace(
        "## Judge validity\n", "## Judge validity\n\n" + degenerate_judge_markdown(scans), 1)
    rows = [r for d in everything for r in next_turn_rows(d.transcript, d.document.answer_forms, tutor=d.scores.tutor)]
    by = ("tutor", "domain", "condition", "dimension", "level")
    want = pd.DataFrame(next_turn_summary(rows, by=by))
    pd.testing.assert_frame_equal(next_turn_table(scans), want, check_dtype=False)
    want_tutor = pd.DataFrame(next_turn_summary(rows, by=("tutor",)))
    pd.testing.assert_frame_equal(next_turn_table(scans, ("tutor",)), want_tutor, check_dtype=False)
