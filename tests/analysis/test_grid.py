"""The contrast grid (edufair_metrics.analysis.grid): rows equal paired_contrast, the SES headline is
tagged once by contrast_grid and read (never re-tagged) downstream."""

import numpy as np
import pandas as pd
import pytest

from edufair_metrics.analysis.contrast import paired_contrast
from edufair_metrics.analysis.grid import contrast_grid, dimension_summary
from edufair_metrics.analysis.noise import unit_noise
from edufair_metrics.analysis.power import power_table
from edufair_metrics.analysis.ranks import rank_intervals
from edufair_metrics.analysis.ses import apply_ses_summary, headline_family, tagged_ses_summary
from edufair_metrics.errors import EduFairError


def _long(n=25, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    q = rng.random(n)
    levels = {"explicit": ["female", "male", "low_income", "middle_class", "high_income"],
              "opposite": ["s_female_t_female", "s_female_t_male", "s_male_t_female", "s_male_t_male"]}
    for cond, lvs in levels.items():
        for lv in lvs:
            v = q + rng.normal(0, 0.1, n) + (0.3 if lv == "female" else 0)
            for i in range(n):
                rows.append(dict(tutor="t", task="x", domain="mathematics", condition=cond, dimension="d", level=lv,
                                 question_id=f"q{i}", metric="actionability", value=v[i]))
    return pd.DataFrame(rows)


def test_grid_rows_equal_paired_contrast():
    df = _long()
    grid = contrast_grid(df, n_boot=200, seed=3)
    wide = df.pivot_table(index="question_id", columns="level", values="value")
    g = grid[(grid["dimension"] == "gender")].iloc[0]
    c = paired_contrast(wide["female"], wide["male"], n_boot=200, seed=3)
    assert (g["r"], g["p"], g["ci_low"], g["ci_high"], g["n_pairs"]) == (c.r, c.p, c.ci_low, c.ci_high, c.n_pairs)
    te = grid[grid["dimension"] == "tutor_effect"].iloc[0]
    a = wide[["s_female_t_female", "s_male_t_female"]].mean(axis=1)
    b = wide[["s_female_t_male", "s_male_t_male"]].mean(axis=1)
    assert te["r"] == paired_contrast(a, b, n_boot=200, seed=3).r
    ses = grid[(grid["dimension"] == "ses") & (grid["kind"] == "multilevel")]
    assert len(ses) == 3 and ses["friedman_p"].nunique() == 1
    single = grid[(grid["dimension"] == "ses") & (grid["kind"] == "binary")]
    assert len(single) == 1 and single["r"].iloc[0] == paired_contrast(wide["low_income"], wide["high_income"], n_boot=200, seed=3).r
    units = dimension_summary(grid)  # default: SES's headline unit is the single low- vs high-income contrast
    u = units[(units["dimension"] == "ses") & units["headline"]]
    assert len(u) == 1 and u["abs_r"].iloc[0] == pytest.approx(abs(single["r"].iloc[0]))
    pairwise = contrast_grid(df, n_boot=200, seed=3, ses_summary="mean_abs_pairwise")
    u = dimension_summary(pairwise, ses_summary="mean_abs_pairwise")
    u = u[(u["dimension"] == "ses") & u["headline"]].iloc[0]
    assert u["kind"] == "multilevel" and u["abs_r"] == pytest.approx(ses["r"].abs().mean())


def test_grid_rejects_duplicates():
    df = _long()
    with pytest.raises(EduFairError, match="duplicate"):
        contrast_grid(pd.concat([df, df.iloc[:1]]), n_boot=10)


@pytest.mark.parametrize("ses", ["single", "mean_abs_pairwise", "max_abs_pairwise"])
def test_contrast_grid_tags_the_ses_headline_once(ses):
    df = _long(n=30, seed=4)
    grid = contrast_grid(df, n_boot=50, seed=0, ses_summary=ses)
    ses_rows = grid[grid["dimension"] == "ses"]
    friedman = ses_rows["kind"] == "multilevel"
    assert (ses_rows.loc[friedman, "headline"] == (ses != "single")).all()
    assert (ses_rows.loc[~friedman, "headline"] == (ses == "single")).all()
    pd.testing.assert_frame_equal(apply_ses_summary(grid, ses), grid)  # already tagged: nothing to change
    assert headline_family(grid) == ("single" if ses == "single" else "pairwise")
    assert tagged_ses_summary(grid) == ("single" if ses == "single" else "mean_abs_pairwise")
    # only the headline (and the FDR families it decides, with the decisions and power read from them) depends on it
    other = contrast_grid(df, n_boot=50, seed=0, ses_summary="single")
    family_dependent = ("headline", "q_value", "violation_fdr", "q_flag", "flagged", "verdict", "mde_r", "n_flag",
                        "n_decide", "more_questions")
    same = [c for c in grid.columns if c not in family_dependent]
    pd.testing.assert_frame_equal(grid[same], other[same])
    units = dimension_summary(grid, ses_summary=ses)
    assert units.loc[units["dimension"] == "ses"].set_index("kind")["headline"].to_dict() == {
        "binary": ses == "single", "multilevel": ses != "single"}


def test_a_mismatched_ses_summary_is_an_error_not_a_re_tag():
    df = _long(n=30, seed=4)
    single = contrast_grid(df, n_boot=50, seed=0)
    pairwise = contrast_grid(df, n_boot=50, seed=0, ses_summary="max_abs_pairwise")
    for grid, wrong in ((single, "mean_abs_pairwise"), (pairwise, "single")):
        with pytest.raises(EduFairError, match="contrast_grid"):
            dimension_summary(grid, ses_summary=wrong)
        with pytest.raises(EduFairError, match="contrast_grid"):
            power_table(grid, ses_summary=wrong)
        with pytest.raises(EduFairError, match="contrast_grid"):
            rank_intervals(df, grid, ses_summary=wrong, n_boot=10)
        units = dimension_summary(grid)  # None: the grid's own choice
        with pytest.raises(EduFairError, match="contrast_grid"):
            unit_noise(units, grid, ses_summary=wrong)
    # max vs mean is the units' aggregation, not a tag: both read the same pairwise grid
    mx = dimension_summary(pairwise, ses_summary="max_abs_pairwise").set_index(["contrast", "metric"])["abs_r"]
    mean = dimension_summary(pairwise, ses_summary="mean_abs_pairwise").set_index(["contrast", "metric"])["abs_r"]
    key = ("SES (Friedman)", "actionability")
    ses = pairwise[pairwise["kind"] == "multilevel"]["r"].abs()
    assert (mx[key], mean[key]) == (pytest.approx(ses.max()), pytest.approx(ses.mean()))
    assert np.isclose(mx.drop(key), mean.drop(key)).all()
