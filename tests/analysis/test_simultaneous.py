"""Simultaneous bounds (analysis.simultaneous, ``--simultaneous``): one shared resample of the
questions for every row, the max-|T| critical value, family-wise flags and certification."""

from __future__ import annotations

import numpy as np
import pytest

from edufair_metrics.analysis.params import StatParams, analyse_frame
from edufair_metrics.analysis.simultaneous import simultaneous_bounds
from edufair_metrics.analysis.grid import contrast_grid
from tests.analysis.sim_verdicts import deltas_for, simulate_frame


def test_simultaneous_intervals_are_wider_than_one_row_s_and_flag_a_strong_bias():
    df = simulate_frame(200, deltas_for(0.4), seed=1)
    grid, units = analyse_frame(df, StatParams(n_boot=300, simultaneous=True))
    assert grid.attrs["sim_c95"] > 2.5 > 1.96 and grid.attrs["sim_c90"] < grid.attrs["sim_c95"]
    live = grid[grid["sufficient"]]
    assert ((live["sim_ci_high"] - live["sim_ci_low"]) >= (live["ci_high"] - live["ci_low"])).mean() > 0.95
    assert (live.loc[live["sim_flagged"], "verdict_sim"].isin(["flag", "unconfirmed"])).all()
    # family-wise flags are (almost) a subset of the FDR flags: stricter
    assert (live["sim_flagged"] & ~live["flagged"]).sum() <= 0.05 * live["sim_flagged"].sum() + 1
    biased = live[live["a"].isin(["female", "immigrant", "other_language"]) & (live["metric_kind"] == "pedagogical")]
    assert (biased["verdict_sim"] == "flag").mean() >= 0.6
    assert {"verdict_sim"} <= set(units.columns)
    for u in units.itertuples(index=False):
        rows = live[(live["contrast"] == u.contrast) & (live["metric"] == u.metric) & (live["condition"] == u.condition)]
        if len(rows) and u.verdict_sim == "flag":
            assert (rows["verdict_sim"] == "flag").any()


@pytest.mark.slow
def test_no_bias_gives_no_family_wise_flag_in_most_audits():
    """Family-wise error over the whole grid ≈ 5%: with no bias, seeded audits rarely flag anything."""
    any_flag = 0
    for seed in range(8):
        df = simulate_frame(120, {}, seed=200 + seed)
        grid = contrast_grid(df, n_boot=200, seed=seed)
        sim = simultaneous_bounds(df, grid, margin=0.1, n_boot=200, seed=seed)
        any_flag += bool(sim["sim_flagged"].any())
    assert any_flag <= 2


def test_certification_needs_every_row_inside_the_band():
    df = simulate_frame(150, {}, seed=9, conditions=("explicit",))
    grid = contrast_grid(df, n_boot=200, seed=0)
    loose = simultaneous_bounds(df, grid, margin=0.9, n_boot=200, seed=0)
    tight = simultaneous_bounds(df, grid, margin=0.05, n_boot=200, seed=0)
    assert loose["sim_certified"].sum() > tight["sim_certified"].sum()
    c90 = loose.attrs["sim_c90"]
    live = loose[loose["sufficient"] & (loose["sim_se"] > 0)]
    inside = (live["r"] - c90 * live["sim_se"] > -0.9) & (live["r"] + c90 * live["sim_se"] < 0.9)
    np.testing.assert_array_equal(live["sim_certified"].to_numpy(), inside.to_numpy())


def test_a_row_without_evidence_gets_no_simultaneous_certificate():
    """a metric that never fires (every difference 0) has the same r on every
    resample; its interval is not [r, r] and it is neither certified nor flagged."""
    from tests.analysis.sim_verdicts import METRICS

    metrics = {"never": (-60.0, 1.0), "actionability": METRICS["actionability"]}
    df = simulate_frame(150, {}, seed=10, conditions=("explicit",), metrics=metrics)
    grid = contrast_grid(df, n_boot=200, seed=0)
    sim = simultaneous_bounds(df, grid, margin=0.9, n_boot=200, seed=0)
    never = sim[(sim["metric"] == "never") & sim["sufficient"]]
    assert len(never) and (never["n_zero"] == never["n_pairs"]).all()
    assert not never["sim_certified"].any() and not never["sim_flagged"].any()
    assert (never["verdict_sim"] == "inconclusive").all()
    assert (never["sim_ci_high"] - never["sim_ci_low"] > 1).all()
    live = sim[(sim["metric"] == "actionability") & sim["sufficient"]]
    assert live["sim_certified"].any()  # margin 0.9: the informative rows still certify


def test_simultaneous_flags_are_the_sign_flip_max_t_test():
    """a row is flagged when |r| / √V0 (its exact sign-flip z) exceeds the 95th
    percentile of the max over all rows of the flipped statistics, one flip per question per domain."""
    df = simulate_frame(150, deltas_for(0.2), seed=12, conditions=("explicit",))
    grid = contrast_grid(df, n_boot=200, seed=0)
    sim = simultaneous_bounds(df, grid, margin=0.1, n_boot=400, seed=0)
    live = sim[sim["sufficient"] & (sim["null_var_r"] > 0)]
    c = sim.attrs["sim_c_flag"]
    assert 2.5 < c < 4.5
    t = live["r"].abs() / np.sqrt(live["null_var_r"])
    np.testing.assert_array_equal(live["sim_flagged"].to_numpy(), (t > c).to_numpy())
    assert live["sim_flagged"].any()


def test_the_flags_flip_each_dialogue_pair_on_its_own(monkeypatch):
    """One flip per question shared by every row of the domain is no symmetry of the null for rows
    that share a level (SES low/middle vs high): the metrics of one contrast pair share a flip, and
    different pairs get independent ones (one seed each)."""
    import edufair_metrics.analysis.simultaneous as sim_mod

    seeds = []
    real = sim_mod.flip_matrix

    def spy(n, n_boot, seed):
        seeds.append(seed)
        return real(n, n_boot, seed)

    monkeypatch.setattr(sim_mod, "flip_matrix", spy)
    df = simulate_frame(60, {}, seed=3, conditions=("explicit",))
    grid = contrast_grid(df, n_boot=50, seed=0)
    simultaneous_bounds(df, grid, margin=0.1, n_boot=100, seed=0)
    live = grid[grid["sufficient"]]
    pairs = live[["tutor", "domain", "condition", "contrast", "pair"]].drop_duplicates()
    assert len(pairs) > 4 and len(seeds) == len(pairs) == len(set(seeds))
