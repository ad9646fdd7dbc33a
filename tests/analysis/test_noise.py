"""Noise floor and multiplicity (analysis.noise): BH/Holm, families, and a known truth —
identical tutors are (almost) never flagged after FDR and their mean excess |r| is ~0; injected
biases of moderate size are found."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as ss

from edufair_metrics.analysis.ses import apply_ses_summary
from edufair_metrics.analysis.noise import adjust_p, holm_adjust, noise_headline, unit_noise
from edufair_metrics.analysis.grid import contrast_grid, dimension_summary
from edufair_metrics.errors import EduFairError
from tests.analysis.synthetic_scores import rate_frame


def _holm_by_definition(p):
    """Holm: reject H_(1..k) while p_(i) <= alpha / (m - i + 1); the adjusted p is the smallest
    alpha at which each hypothesis is rejected (brute force over a fine grid is too slow, so the
    step-down maximum written out)."""
    m = len(p)
    order = np.argsort(p)
    out = np.empty(m)
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        out[j] = running
    return out


def test_holm_and_bh_adjustments():
    rng = np.random.default_rng(0)
    p = np.r_[rng.uniform(size=40), [1e-5, 0.001, 0.004]]
    np.testing.assert_allclose(holm_adjust(p), _holm_by_definition(p))
    np.testing.assert_allclose(adjust_p(p, "bh"), ss.false_discovery_control(p, method="bh"))
    # Holm is never less strict than BH, and both keep the order of the p-values
    assert np.all(adjust_p(p, "holm") >= adjust_p(p, "bh") - 1e-15)
    assert holm_adjust([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    q = adjust_p([0.2, np.nan, 0.01])
    assert np.isnan(q[1]) and q[2] == pytest.approx(0.02) and q[0] == pytest.approx(0.2)
    with pytest.raises(EduFairError):
        adjust_p([0.1], "bonferroni")
    with pytest.raises(EduFairError):
        adjust_p([1.5])


def test_q_values_are_adjusted_within_tutor_kind_headline_families():
    df = rate_frame({"t1": {}, "t2": {"female": 0.1}}, n=60, seed=1, metrics=("actionability", "tutor_turns"))
    for ses in ("single", "mean_abs_pairwise"):  # the SES family the headline uses is in the family
        grid = contrast_grid(df, n_boot=50, seed=0, ses_summary=ses)
        head = grid["headline"]  # tagged by contrast_grid
        assert head.equals(apply_ses_summary(grid, ses)["headline"])
        for _, fam in grid.groupby([grid["tutor"], grid["metric_kind"], head]):
            np.testing.assert_allclose(fam["q_value"], adjust_p(fam["p"].to_numpy()), equal_nan=True)
        assert head[grid["kind"] == "multilevel"].all() == (ses != "single")
    grid = contrast_grid(df, n_boot=50, seed=0)  # default: ses_summary "single", BH
    assert (grid["violation_fdr"] == (grid["violation"] & (grid["q_value"] < 0.05))).all()
    holm = contrast_grid(df, n_boot=50, seed=0, fdr_method="holm")
    assert (holm["q_value"] >= grid["q_value"] - 1e-15).all()
    wide = contrast_grid(df, n_boot=50, seed=0, fdr_family=("metric_kind",))  # one family for both tutors
    fam = wide[(wide["metric_kind"] == "pedagogical") & wide["headline"]]
    np.testing.assert_allclose(fam["q_value"], adjust_p(fam["p"].to_numpy()))
    with pytest.raises(EduFairError):
        contrast_grid(df, n_boot=50, fdr_method="bonferroni")


def _null_units(seed):
    df = rate_frame({f"tutor{i}": {} for i in range(4)}, n=200, seed=seed)
    grid = contrast_grid(df, n_boot=200, seed=seed)
    units = unit_noise(dimension_summary(grid), grid)
    return grid, units[units["headline"] & (units["metric_kind"] == "pedagogical")]


def test_null_identical_tutors_rarely_flagged_after_fdr_and_excess_is_zero():
    grids, units = zip(*(_null_units(s) for s in range(6)))
    units = pd.concat(units)
    grid = pd.concat(grids)
    assert len(units) > 1000
    raw, fdr = units["violation"].mean(), units["violation_fdr"].mean()
    assert 0.02 < raw < 0.10  # the paper's rule flags ~5% of units in identical tutors
    assert fdr <= 0.01
    # the noise floor is what identical tutors show: mean excess ~ 0 (SE ~ 0.001), |r| is not
    assert abs(units["excess_abs_r"].mean()) < 0.005
    assert units["abs_r"].mean() > 0.03
    assert abs(grid["excess_abs_r"].mean()) < 0.004
    assert grid["null_abs_r"].between(0.02, 0.12).all()
    # the sign-flip p is uniform-ish under the null
    assert 0.4 < grid.loc[grid["sufficient"], "p_perm"].mean() < 0.6


def test_injected_biases_are_found():
    # a moderate bias (+0.12 probability of the behaviour) for the female level and one name pair
    df = rate_frame({"fair": {}, "biased": {"female": 0.12, "s_female_t_female": 0.12}}, n=300, seed=11)
    grid = contrast_grid(df, n_boot=300, seed=0)
    units = unit_noise(dimension_summary(grid), grid)
    ped = units[units["headline"] & (units["metric_kind"] == "pedagogical")]
    injected = (ped["contrast"].isin(["Gender", "Correct"]) & ped["condition"].isin(["explicit", "opposite"])
                & (ped["tutor"] == "biased"))
    assert injected.sum() == 10  # 2 contrasts × 5 pedagogical metrics
    assert ped.loc[injected, "violation_fdr"].mean() >= 0.8
    assert ped.loc[~injected, "violation_fdr"].mean() <= 0.02
    assert ped.loc[injected, "excess_abs_r"].min() > 0.1
    head = noise_headline(units).set_index("tutor")
    assert head.loc["biased", "violations_fdr"] >= 8 and head.loc["fair", "violations_fdr"] <= 1
    assert head.loc["biased", "excess_abs_r"] > head.loc["fair", "excess_abs_r"] + 0.02
    assert abs(head.loc["fair", "excess_abs_r"]) < 0.02
    assert (head["abs_r"] - head["null_abs_r"]).to_numpy() == pytest.approx(head["excess_abs_r"].to_numpy())


def test_unit_noise_requires_a_grid_with_noise_columns():
    df = rate_frame({"t": {}}, n=30, seed=2, metrics=("actionability",))
    grid = contrast_grid(df, n_boot=20)
    with pytest.raises(EduFairError, match="lacks"):
        unit_noise(dimension_summary(grid), grid.drop(columns=["null_abs_r"]))
    with pytest.raises(EduFairError):
        noise_headline(dimension_summary(grid))
