"""The random-names inference of a names contrast (analysis/names.py): its pieces equal their
definitions, and with names that do not differ it reduces to the question-only contrast."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import friedmanchisquare

from edufair_metrics.analysis.cells import CellMatrix, names_design, pair_differences
from edufair_metrics.analysis.contrast import paired_contrast
from edufair_metrics.analysis.names import (
    friedman_statistic,
    name_inference,
    name_level_test,
    per_name_r,
    two_way_bootstrap,
)
from edufair_metrics.protocol.contrasts import load_contrasts

SPEC = next(s for s in load_contrasts() if s.kind == "names" and s.dimension == "black_white")
NAMES = ["jamal", "malik", "rashad", "jasmine", "ebony", "nia", "michael", "christopher", "william", "emily",
         "ashley", "elizabeth"]


def _cell(values: np.ndarray, levels=NAMES) -> CellMatrix:
    order = np.argsort(levels)
    return CellMatrix(("t", "physics", "implicit_names", "m"), np.array([f"q{i:03d}" for i in range(values.shape[0])]),
                      tuple(np.asarray(levels)[order]), values[:, order])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_friedman_statistic_is_scipys(seed):
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 4, size=(30, 3)) / 3  # ties within and across blocks
    stat = friedmanchisquare(*blocks.T).statistic
    assert friedman_statistic(blocks) == pytest.approx(stat, rel=1e-12)
    assert friedman_statistic(np.ones((5, 3))) == 0.0


def test_the_design_averages_names_within_strata():
    rng = np.random.default_rng(0)
    v = rng.random((40, len(NAMES)))
    cell = _cell(v)
    (a, b, label, d), = pair_differences(cell, SPEC)
    assert set(a) == {"jamal", "malik", "rashad", "jasmine", "ebony", "nia"} and label == "black_white"
    col = {lv: v[:, i] for i, lv in enumerate(NAMES)}
    male = (col["jamal"] + col["malik"] + col["rashad"]) / 3 - (col["michael"] + col["christopher"] + col["william"]) / 3
    female = (col["jasmine"] + col["ebony"] + col["nia"]) / 3 - (col["emily"] + col["ashley"] + col["elizabeth"]) / 3
    np.testing.assert_allclose(d, (male + female) / 2, atol=1e-11)


def test_identical_names_give_the_question_only_bootstrap():
    rng = np.random.default_rng(5)
    base_a, base_b = rng.random((60, 1)), rng.random((60, 1))
    # every name of a cell scores the same: resampling names changes nothing
    v = np.hstack([np.repeat(base_a, 6, axis=1), np.repeat(base_b, 6, axis=1)])
    cell = _cell(v)
    design = names_design(cell, SPEC)
    values = cell.values[design.complete][:, design.columns]
    rs = two_way_bootstrap(values, design, n_boot=300, seed=3)
    (_, _, _, d), = pair_differences(cell, SPEC)
    ref = paired_contrast(d, np.zeros_like(d), n_boot=300, seed=3)
    lo, hi = np.percentile(rs, [2.5, 97.5])
    assert lo == pytest.approx(ref.ci_low, abs=1e-9) and hi == pytest.approx(ref.ci_high, abs=1e-9)
    inf = name_inference(cell, SPEC, n_boot=300, seed=3)
    assert inf.het_p == 1.0 or math.isnan(inf.het_p) or inf.het_stat == 0.0  # names do not differ
    assert inf.spread_a == pytest.approx(0.0) and inf.spread_b == pytest.approx(0.0)


def test_name_level_test_is_a_stratified_t_test():
    rng = np.random.default_rng(1)
    cell = _cell(rng.random((50, len(NAMES))))
    design = names_design(cell, SPEC)
    means = cell.values[:, design.columns].mean(axis=0)
    p, df = name_level_test(means, design)
    assert df == 4 * 2 and 0 < p <= 1  # 4 cells of 3 names
    # a gap over all names of side a: tiny p; with one name per cell: no degree of freedom
    shifted = means + np.where(np.asarray(design.sides) == "a", 0.5, 0.0)
    assert name_level_test(shifted, design)[0] < 1e-4
    one = _cell(rng.random((50, 4)), ["jamal", "jasmine", "michael", "emily"])
    assert math.isnan(name_level_test(one.values.mean(axis=0), names_design(one, SPEC))[0])


def test_one_name_that_differs_is_seen_in_heterogeneity_and_per_name_r():
    rng = np.random.default_rng(2)
    v = rng.random((80, len(NAMES)))
    v[:, NAMES.index("malik")] += 1.0
    cell = _cell(v)
    inf = name_inference(cell, SPEC, n_boot=200, seed=0)
    assert inf.het_p < 1e-6 and inf.outlier == "malik" and inf.outlier_r > 0.9
    design = names_design(cell, SPEC)
    per = dict((lv, r) for lv, _, _, r in per_name_r(cell.values[design.complete][:, design.columns], design))
    assert per["malik"] == max(per.values())
    assert inf.p_name > 0.05  # one name of six is not a gap of the group's names
