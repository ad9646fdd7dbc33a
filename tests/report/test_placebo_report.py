"""`edufair report` on runs with a placebo replicate: placebo.csv, the exchangeability check beside
every table and in a summary section (a banner above everything when it fails); the replicate never
enters a demographic contrast."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from edufair_metrics.analysis.params import StatParams
from edufair_metrics.protocol.placebo import replicate_level
from edufair_metrics.report.write import read_report_inputs, write_report

from tests.helpers.synthetic_runs import make_scores, write_run


def _with_replicate(scores, level="female", noise=0.0, seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    extra = []
    for s in scores:
        if s.condition == "explicit" and s.level == level:
            vals = {m: (v + noise * rng.normal() + shift if v == v else v) for m, v in s.scores.items()}
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
    assert {"excess_abs_r", "p_perm", "p_decide", "flagged"} <= set(floor.columns)
    assert (floor["excess_abs_r"] == floor["abs_r"] - floor["null_abs_r"]).all()
    table6 = (tmp_path / "report" / "table6_metric.md").read_text()
    assert "Placebo exchangeability check" in table6 and "org/tutor-a: passed" in table6
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "Placebo replicate (exchangeability check)" in summary and "placebo_abs_r" in summary
    assert "indistinguishable" not in summary  # the old reading is gone
    assert "exchangeability check failed" not in summary  # no banner
    check = pd.read_csv(tmp_path / "report" / "exchangeability.csv")
    assert len(check) == 1 and not check["failed"].iloc[0] and check["rows"].iloc[0] == 9
    assert {"placebo.csv", "exchangeability.csv"} <= set(res.files)


def test_a_placebo_that_is_not_exchangeable_puts_a_banner_on_the_summary(tmp_path):
    """The replicate drifts (every score +0.15): the check fails, and summary.md says at its top
    that this run's verdicts are not trusted; the verdicts themselves are unchanged."""
    base = make_scores(domains=("physics",), conditions=("explicit",), n_questions=60)
    write_run(tmp_path / "runs", "org/tutor-a", scores=_with_replicate(base, noise=0.05, shift=0.15))
    write_report(read_report_inputs([tmp_path / "runs"]), tmp_path / "report", StatParams(n_boot=200), figures=False)
    check = pd.read_csv(tmp_path / "report" / "exchangeability.csv")
    assert check["failed"].iloc[0] and check["p_exch"].iloc[0] < 0.05 and check["excess"].iloc[0] > 0.1
    summary = (tmp_path / "report" / "summary.md").read_text()
    top = summary.split("\n\n")[1]
    assert top.startswith("**org/tutor-a: exchangeability check failed: verdicts of this run are not trusted.**")
    write_run(tmp_path / "plain", "org/tutor-a", scores=base)
    write_report(read_report_inputs([tmp_path / "plain"]), tmp_path / "report2", StatParams(n_boot=200), figures=False)
    units = pd.read_csv(tmp_path / "report" / "units.csv")
    units2 = pd.read_csv(tmp_path / "report2" / "units.csv")
    assert units["verdict"].tolist() == units2["verdict"].tolist()  # display only: no verdict changes


def test_report_without_replicate_says_how_to_get_one(tmp_path):
    write_run(tmp_path / "runs", "org/tutor-a", scores=make_scores(domains=("physics",), conditions=("explicit",), n_questions=20))
    write_report(read_report_inputs([tmp_path / "runs"]), tmp_path / "report", StatParams(n_boot=50), figures=False)
    assert pd.read_csv(tmp_path / "report" / "placebo.csv").empty
    assert '"placebo"' in (tmp_path / "report" / "summary.md").read_text()
    assert "Placebo" not in (tmp_path / "report" / "table6_metric.md").read_text()
