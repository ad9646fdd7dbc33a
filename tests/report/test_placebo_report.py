"""`edufair report` on runs with a placebo replicate: placebo.csv, the floor beside every table and
a summary section; the replicate never enters a demographic contrast."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from edufair_metrics.analysis.params import StatParams
from edufair_metrics.protocol.placebo import replicate_level
from edufair_metrics.report.write import read_report_inputs, write_report

from tests.helpers.synthetic_runs import make_scores, write_run


def _with_replicate(scores, level="female", noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    extra = []
    for s in scores:
        if s.condition == "explicit" and s.level == level:
            vals = {m: (v + noise * rng.normal() if v == v else v) for m, v in s.scores.items()}
            extra.append(dataclasses.replace(s, level=replicate_level(level, 2), scores=vals))
    return scores + extra


def test_report_shows_the_placebo_floor(tmp_path):
    scores = _with_replicate(make_scores(domains=("physics",), conditions=("explicit",), n_questions=60), noise=0.1)
    write_run(tmp_path / "runs", "org/tutor-a", scores=scores)
    res = write_report(read_report_inputs([tmp_path / "runs"]), tmp_path / "report", StatParams(n_boot=100), figures=False)
    floor = pd.read_csv(tmp_path / "report" / "placebo.csv")
    assert len(floor) == 9 and set(floor["level"]) == {"female"} and set(floor["replicate"]) == {2}
    assert (floor["n_pairs"] == 60).all() and (floor["abs_r"] < 0.35).all()
    grid = pd.read_csv(tmp_path / "report" / "grid.csv")
    assert not grid[["a", "b"]].astype(str).apply(lambda c: c.str.contains("replicate")).any().any()
    table6 = (tmp_path / "report" / "table6_metric.md").read_text()
    assert "Placebo floor" in table6 and "org/tutor-a" in table6
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "Placebo replicate (empirical noise floor)" in summary and "placebo_abs_r" in summary
    assert "placebo.csv" in res.files


def test_report_without_replicate_says_how_to_get_one(tmp_path):
    write_run(tmp_path / "runs", "org/tutor-a", scores=make_scores(domains=("physics",), conditions=("explicit",), n_questions=20))
    write_report(read_report_inputs([tmp_path / "runs"]), tmp_path / "report", StatParams(n_boot=50), figures=False)
    assert pd.read_csv(tmp_path / "report" / "placebo.csv").empty
    assert '"placebo"' in (tmp_path / "report" / "summary.md").read_text()
    assert "Placebo floor" not in (tmp_path / "report" / "table6_metric.md").read_text()
