"""``analysis.own_labels``: the corrected verdicts use, per contrast pair, the questions labelled at
that pair's levels (a partly labelled sample still counts where it can), and a human who agrees
with the judge everywhere gives a corrected estimate equal to the judge's own paired difference."""

from __future__ import annotations

import pytest

from edufair_metrics.analysis.own_labels import corrected_rows
from edufair_metrics.runlog import load_records
from edufair_metrics.runlog.labels import read_labels

from tests.helpers.label_runs import agree, labelled_run


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    root = tmp_path_factory.mktemp("own") / "runs"
    _, sample, path = labelled_run(root, n=135, n_questions=30, human=agree)
    records = load_records(root)[1]
    return records, sample, read_labels(path, run_id=sample.run_id)


def _unit(rows, pair, metric):
    return next(r for r in rows if r["pair"] == pair and r["metric"] == metric)


def test_an_agreeing_human_leaves_the_judge_estimate(labelled):
    records, sample, labels = labelled
    row = _unit(corrected_rows(records, sample, labels), "female-male", "answer_leakage")
    assert row["n_labelled"] == 15 and row["corrected_estimate"] == pytest.approx(row["judge_estimate"], abs=0.05)
    assert row["verdict_judge"] == row["verdict_corrected"] == "flag"


def test_a_pair_counts_the_questions_labelled_at_its_own_levels(labelled):
    records, sample, labels = labelled
    levels = {"female", "male"}
    partial = {t: lab for t, lab in labels.items() if sample.by_turn[t].level in levels}
    rows = corrected_rows(records, sample, partial)
    assert _unit(rows, "female-male", "answer_leakage")["n_labelled"] == 15
    other = _unit(rows, "immigrant-native_born", "answer_leakage")
    assert other["n_labelled"] == 0 and other["verdict_corrected"] == "insufficient"
