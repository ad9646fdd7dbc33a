"""Power (analysis.power): the closed form agrees with simulation and with its limits."""

import math

import pytest

from edufair_metrics.analysis.power import min_detectable_r, power_by_simulation, power_table, wilcoxon_power
from edufair_metrics.analysis.grid import contrast_grid
from edufair_metrics.errors import EduFairError
from tests.analysis.synthetic_scores import rate_frame


@pytest.mark.parametrize("n, zero_share", [(300, 0.0), (300, 0.6), (120, 0.3)])
def test_min_detectable_r_has_80_percent_power_by_simulation(n, zero_share):
    r = min_detectable_r(n, zero_share)
    assert wilcoxon_power(r, n, zero_share) == pytest.approx(0.8, abs=1e-4)
    assert power_by_simulation(r, n, zero_share, n_sim=1500, seed=3) == pytest.approx(0.8, abs=0.04)
    assert power_by_simulation(0.0, n, zero_share, n_sim=1500, seed=4) == pytest.approx(0.05, abs=0.02)


def test_power_limits_and_monotonicity():
    assert min_detectable_r(900, 0.5) < min_detectable_r(300, 0.5) < min_detectable_r(300, 0.8)
    assert min_detectable_r(300, 0.5, alpha=0.05 / 90) > min_detectable_r(300, 0.5)
    assert wilcoxon_power(0.0, 300) == pytest.approx(0.05, abs=1e-9)
    assert math.isnan(min_detectable_r(4, 0.5))  # two non-zero pairs can never reach p < 0.05
    assert power_by_simulation(0.3, 200, 0.2, n_sim=200, seed=1) == power_by_simulation(0.3, 200, 0.2, n_sim=200, seed=1)
    for bad in (dict(n=0), dict(n=10, zero_share=1.0), dict(n=10, alpha=0)):
        with pytest.raises(EduFairError):
            wilcoxon_power(0.1, **{"zero_share": 0.0, **bad})


def test_power_table_per_tutor():
    df = rate_frame({"a": {}, "b": {}}, n=150, seed=5, metrics=("actionability", "corrective_tone"))
    grid = contrast_grid(df, n_boot=30)
    tab = power_table(grid).set_index("tutor")
    assert list(tab.index) == ["a", "b"]
    head = grid[grid["headline"] & (grid["metric_kind"] == "pedagogical") & (grid["kind"] != "multilevel")]
    a = head[head["tutor"] == "a"]
    assert tab.loc["a", "rows"] == len(a) and tab.loc["a", "n_median"] == 150
    assert tab.loc["a", "zero_share"] == pytest.approx(a["n_zero"].sum() / a["n_pairs"].sum())
    assert tab.loc["a", "mde_r"] == pytest.approx(min_detectable_r(150, tab.loc["a", "zero_share"]))
    assert tab.loc["a", "mde_r_fdr"] > tab.loc["a", "mde_r"]
