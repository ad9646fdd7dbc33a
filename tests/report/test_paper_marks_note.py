"""the paper view's ``*`` (a 95% percentile CI that excludes 0) is liberal below
50 pairs; the paper-view notes say so there, and only there."""

from __future__ import annotations

import pytest

from edufair_metrics.analysis.params import StatParams, analyse_frame
from edufair_metrics.report.tables import LIBERAL_STAR_NOTE, all_tables
from tests.analysis.sim_verdicts import simulate_frame


@pytest.mark.parametrize("n,liberal", [(30, True), (80, False)])
def test_the_paper_view_says_its_star_is_liberal_below_50_pairs(n, liberal):
    grid, units = analyse_frame(simulate_frame(n, {}, seed=3, conditions=("explicit",)), StatParams(n_boot=50))
    tables = all_tables(grid, units)
    signed_paper = [note for stem, (_t, _df, note) in tables.items() if stem.endswith("_paper") and "*: the CI" in note]
    assert signed_paper  # the signed tables carry the marks
    assert all((LIBERAL_STAR_NOTE in note) == liberal for note in signed_paper)
    verdict_notes = [note for stem, (_t, _df, note) in tables.items() if not stem.endswith("_paper")]
    assert not any(LIBERAL_STAR_NOTE in note for note in verdict_notes)
