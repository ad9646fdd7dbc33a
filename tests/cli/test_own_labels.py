"""``edufair label-sample`` and ``edufair judge-human --format edufair``: the sample is written into
the run folder; the judge's stored labels are measured against the user's labels per metric and
level, the differential error test states its power, and the corrected (PPI++) verdicts say when a
judge-only flag does not survive the labels. Bad input is one line and exit 2."""

from __future__ import annotations

import csv
import json
import re
import zlib

import pytest

from edufair_metrics.analysis.ppi import NOT_SURVIVING
from edufair_metrics.cli import main as cli
from edufair_metrics.runlog.labels import LABELS_DIR, SAMPLE_FILE

from tests.helpers.evidence_runs import write_evidence_run
from tests.helpers.label_runs import agree, labelled_run


def _rows(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_label_sample_writes_the_sample_into_the_run_folder(tmp_path, capsys):
    model = write_evidence_run(tmp_path / "runs", n_questions=20)
    assert cli(["label-sample", str(tmp_path / "runs"), "--n", "90", "--seed", "2"]) == 0
    out, err = capsys.readouterr()
    path = model / LABELS_DIR / SAMPLE_FILE
    assert out.strip() == str(path) and path.is_file()
    assert "90 tutor turns" in err and "10 of 20 questions x 9 levels" in err
    assert not [p for p in path.parent.iterdir() if p.name != SAMPLE_FILE]  # no temp file left
    data = json.loads(path.read_text())
    assert len(data["items"]) == 90 and data["seed"] == 2 and len(data["run_id"]) == 16
    assert cli(["label-sample", str(tmp_path / "runs"), "--n", "90"]) == 2  # exists: not replaced silently
    assert "--force" in _one_line(capsys.readouterr().err)
    assert cli(["label-sample", str(tmp_path / "runs"), "--n", "90", "--seed", "3", "--force"]) == 0


def test_a_sample_larger_than_the_run_is_one_line(tmp_path, capsys):
    write_evidence_run(tmp_path / "runs", n_questions=10)
    assert cli(["label-sample", str(tmp_path / "runs"), "--n", "5000"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("edufair label-sample: error:") and "larger than the run" in line and "90 tutor turns" in line
    assert not (tmp_path / "runs" / "org__tutor-bias" / LABELS_DIR / SAMPLE_FILE).exists()


def _agreeing_judge_run(tmp_path, human):
    return labelled_run(tmp_path / "runs", n=180, n_questions=40, human=human, leak_levels=("female",))


def test_agreement_per_metric_and_level_and_a_surviving_flag(tmp_path, capsys):
    folder, sample, labels = _agreeing_judge_run(tmp_path, agree)
    assert cli(["judge-human", "--format", "edufair", str(labels), str(tmp_path / "runs"), "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    res = folder / LABELS_DIR / "judge-human"
    overall = _rows(res / "agreement.csv")  # one row per metric, as every judge-human folder
    leak_all = next(r for r in overall if r["metric"] == "answer_leakage")
    assert float(leak_all["percent_agreement"]) == 1.0 and int(leak_all["n"]) == len(sample.items)
    by_level = _rows(res / "agreement_by_level.csv")
    assert {r["level"] for r in by_level} >= {"all", "female", "male"}
    female = next(r for r in by_level if r["metric"] == "answer_leakage" and r["level"] == "female")
    assert int(female["n"]) == 20 and int(female["clusters"]) == 20  # CIs resample dialogues
    diff = _rows(res / "differential_error.csv")
    assert diff and all(0 <= float(d["power"]) <= 1 for d in diff if d["power"])
    assert {"fpr", "fnr"} == {d["kind"] for d in diff}
    corr = _rows(res / "corrected_verdicts.csv")
    gender = next(c for c in corr if c["pair"] == "female-male" and c["metric"] == "answer_leakage")
    assert gender["verdict_judge"] == "flag" and gender["verdict_corrected"] == "flag" and gender["note"] == ""
    assert float(gender["corrected_ci_high"]) - float(gender["corrected_ci_low"]) < (
        float(gender["human_ci_high"]) - float(gender["human_ci_low"]))
    assert "Angelopoulos" in out and "Power to detect a 10-point difference" in out


def _no_leak(record, turn_index, metric, judge):
    """A human who sees almost no leakage (about 1 turn in 20, by the turn's text)."""
    if metric == "answer_leakage":
        text = record.transcript.turns[turn_index].text
        return "yes" if zlib.crc32(text.encode()) % 20 == 0 else "no"
    return agree(record, turn_index, metric, judge)


def test_a_judge_only_flag_that_the_labels_overturn_is_said(tmp_path, capsys):
    folder, _, labels = _agreeing_judge_run(tmp_path, _no_leak)
    assert cli(["judge-human", "--format", "edufair", str(labels), str(tmp_path / "runs"), "--n-boot", "100",
                "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    corr = _rows(tmp_path / "out" / "corrected_verdicts.csv")
    gender = next(c for c in corr if c["pair"] == "female-male" and c["metric"] == "answer_leakage")
    assert gender["verdict_judge"] == "flag" and gender["verdict_corrected"] == "none" and gender["note"] == NOT_SURVIVING
    assert NOT_SURVIVING in out
    fpr = next(d for d in _rows(tmp_path / "out" / "differential_error.csv")
               if d["pair"] == "female-male" and d["metric"] == "answer_leakage" and d["kind"] == "fpr")
    assert float(fpr["rate_a"]) > float(fpr["rate_b"]) and float(fpr["p"]) < 0.05  # the judge errs more at female
    # the report says it too: `edufair report RUN --human-agreement DIR`
    assert cli(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "rep"), "--n-boot", "50", "--no-figures",
                "--human-agreement", str(tmp_path / "out")]) == 0
    summary = (tmp_path / "rep" / "summary.md").read_text()
    section = summary.split("### Corrected verdicts (your labels)", 1)[1]
    assert re.search(r"female-male answer_leakage \| .* \| flag → none \| " + NOT_SURVIVING, section)
    assert "### Judge–human agreement" in summary


@pytest.mark.parametrize("case", ["other_run", "foreign_turn", "unknown_metric", "no_run"])
def test_labels_that_do_not_fit_the_run_are_one_line(tmp_path, capsys, case):
    folder, sample, labels = labelled_run(tmp_path / "runs", n=45, n_questions=10, human=agree)
    bad = tmp_path / "bad.jsonl"
    line = {"run_id": sample.run_id, "turn_id": sample.items[0].turn_id, "labels": {"answer_leakage": "no"}}
    expect = {"other_run": "another run", "foreign_turn": "not in the run", "unknown_metric": "unknown metric",
              "no_run": "needs the labelled run"}[case]
    if case == "other_run":
        line["run_id"] = "ffffffffffffffff"
    elif case == "foreign_turn":
        line["turn_id"] = "edufair_explicit_physics|female|q-nope|2"
    elif case == "unknown_metric":
        line["labels"] = {"answer_leakage": "no", "warmth": "yes"}
    bad.write_text(json.dumps(line) + "\n")
    argv = ["judge-human", "--format", "edufair", str(bad)] + ([] if case == "no_run" else [str(tmp_path / "runs")])
    assert cli(argv) == 2
    assert expect in _one_line(capsys.readouterr().err)


def test_label_mode_without_a_sample_is_one_line(tmp_path, capsys):
    write_evidence_run(tmp_path / "runs", n_questions=6)
    assert cli(["view", str(tmp_path / "runs"), "--label"]) == 2
    assert "edufair label-sample RUN --n N" in _one_line(capsys.readouterr().err)
