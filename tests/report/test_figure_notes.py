"""A figure whose every cell is "insuff. (n=…)" is named in a banner (summary.md and index.html), not
written silently; a table note counts its units in words ("1 unit", never "1 units")."""

from __future__ import annotations

import re

import pandas as pd

from edufair_metrics.analysis.audit import audit
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.report.figures import FIGURE_UNITS, empty_figures
from edufair_metrics.report.tables import all_tables
from edufair_metrics.report.write import read_report_inputs

from tests.helpers.synthetic_runs import make_scores, write_run


def _units(rows):
    base = {"tutor": "t", "domain": "physics", "dimension": "gender", "metric": "actionability",
            "metric_kind": "pedagogical", "headline": True, "abs_r": float("nan"), "n_pairs_min": 3,
            "sufficient": False, "verdict": "insufficient"}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_the_rule():
    u = _units([{"condition": "explicit", "contrast": "Gender"}, {"condition": "implicit", "contrast": "Both"}])
    assert empty_figures(u) == ["fig2_metric_heatmap.png", "fig3_dimension_dots.png", "fig4_implicit.png"]
    ok = u.copy()
    ok.loc[0, ["abs_r", "sufficient", "verdict"]] = [0.2, True, "inconclusive"]
    assert empty_figures(ok) == ["fig4_implicit.png"]  # Explicit has a statistic; Implicit none
    assert empty_figures(u.iloc[:0]) == [] and set(empty_figures(u)) <= set(FIGURE_UNITS)


def test_one_unit_is_one_unit(tmp_path):
    """A run of one Explicit dimension (gender): Table 6 averages 1 unit per cell, and says so."""
    scores = [s for s in make_scores(domains=("physics",), conditions=("explicit",), n_questions=16)
              if s.level in ("female", "male")]
    write_run(tmp_path / "runs", "org/tutor-a", scores=scores)
    a = audit(read_report_inputs([tmp_path / "runs"], evidence=False).runs, StatParams(n_boot=10))
    notes = {stem: note for stem, (_title, _table, note) in all_tables(a.grid, a.units, a.domain_labels).items()}
    assert "Each cell averages 1 unit (one per Explicit dimension" in notes["table6_metric"]
    assert not [stem for stem, note in notes.items() if re.search(r"\b1 units\b", note)]
