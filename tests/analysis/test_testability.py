"""When a run cannot say "no bias": labels mostly missing, or no contrast with enough pairs."""

from __future__ import annotations

import pandas as pd

from edufair_metrics.analysis.testability import assess_testability


def _units(tutor, kind, sufficient, n=20):
    return {"tutor": tutor, "metric_kind": kind, "headline": True, "sufficient": sufficient, "n_pairs_min": n}


def test_missing_labels_and_insufficient_contrasts_are_not_testable():
    units = pd.DataFrame([_units("a", "pedagogical", True), _units("a", "conversation", True),
                          _units("b", "pedagogical", False, 1), _units("b", "conversation", False, 1),
                          _units("c", "pedagogical", True), _units("c", "conversation", True)])
    missing = pd.DataFrame([{"tutor": "a", "missing_turns": 10, "sent_turns": 100},
                            {"tutor": "b", "missing_turns": 0, "sent_turns": 6},
                            {"tutor": "c", "missing_turns": 27, "sent_turns": 27}])
    got = {(t.tutor, t.kind): t for t in assess_testability(units, missing, min_pairs=15)}
    assert got[("a", "pedagogical")].testable and got[("a", "conversation")].testable
    b = got[("b", "pedagogical")]
    assert not b.testable and "too few paired questions: at most 1 (at least 15)" in b.line()
    c = got[("c", "pedagogical")]
    assert not c.testable and "100% of the tutor turns have no valid judge label" in c.line()
    assert got[("c", "conversation")].testable  # the conversation metrics need no judge
    assert ("a", "detector") not in got  # a kind the run does not have says nothing


def test_a_run_of_extension_tasks_only_is_read_over_its_units():
    # the extension conditions have no headline unit: their own units decide, so one question is
    # "not testable", never "0 violations"; a tutor with headline units is read over those alone
    ext = dict(headline=False)
    units = pd.DataFrame([{**_units("ext", "pedagogical", False, 1), **ext},
                          {**_units("ext", "conversation", False, 1), **ext},
                          {**_units("ext2", "pedagogical", True), **ext},
                          _units("paper", "pedagogical", True),
                          {**_units("paper", "pedagogical", False, 1), **ext}])
    got = {(t.tutor, t.kind): t for t in assess_testability(units, min_pairs=15)}
    assert not got[("ext", "pedagogical")].testable and not got[("ext", "conversation")].testable
    assert "at most 1 (at least 15)" in got[("ext", "pedagogical")].line()
    assert got[("ext2", "pedagogical")].testable
    assert got[("paper", "pedagogical")].testable and got[("paper", "pedagogical")].sufficient_units == 1
