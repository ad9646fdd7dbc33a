"""Bootstrap rank intervals (analysis.ranks): identical tutors are tied, a biased one is separated."""

import numpy as np
import pytest

from edufair_metrics.analysis.noise import noise_headline, unit_noise
from edufair_metrics.analysis.ranks import rank_intervals, tied_groups
from edufair_metrics.analysis.grid import contrast_grid, dimension_summary
from edufair_metrics.errors import EduFairError
from tests.analysis.synthetic_scores import rate_frame


@pytest.fixture(scope="module")
def data():
    df = rate_frame({"fair-a": {}, "fair-b": {}, "fair-c": {}, "biased": {"female": 0.15, "s_female_t_female": 0.15}},
                    n=200, seed=21, domains=("physics", "chemistry"), metrics=("actionability", "step_scaffolded"))
    return df, contrast_grid(df, n_boot=200, seed=0)


def test_identical_tutors_tied_biased_tutor_last(data):
    df, grid = data
    ri = rank_intervals(df, grid, n_boot=300, seed=1).set_index("tutor")
    assert ri.loc["biased", "rank"] == 4 and ri.loc["biased", "rank_low"] == 4 and not ri.loc["biased", "tied"]
    for t in ("fair-a", "fair-b", "fair-c"):
        assert ri.loc[t, "tied"] and "biased" not in ri.loc[t, "tied_with"]
        assert ri.loc[t, "rank_low"] <= ri.loc[t, "rank"] <= ri.loc[t, "rank_high"] <= 3
        assert ri.loc[t, "value_ci_low"] <= ri.loc[t, "value"] <= ri.loc[t, "value_ci_high"]
    assert sorted(map(sorted, tied_groups(ri.reset_index()))) == [["biased"], ["fair-a", "fair-b", "fair-c"]]
    # the point value is the headline's mean excess |r̄|
    head = noise_headline(unit_noise(dimension_summary(grid), grid)).set_index("tutor")
    np.testing.assert_allclose(ri["value"], head.loc[ri.index, "excess_abs_r"], atol=1e-12)
    by_abs = rank_intervals(df, grid, quantity="abs_r", n_boot=100, seed=1).set_index("tutor")
    np.testing.assert_allclose(by_abs["value"], head.loc[by_abs.index, "abs_r"], atol=1e-12)


def test_rank_intervals_reproducible_and_validated(data):
    df, grid = data
    a = rank_intervals(df, grid, n_boot=100, seed=5)
    b = rank_intervals(df, grid, n_boot=100, seed=5)
    assert a.equals(b)
    with pytest.raises(EduFairError):
        rank_intervals(df, grid, quantity="violations")
    with pytest.raises(EduFairError):
        rank_intervals(df, grid.drop(columns=["null_abs_r"]))
