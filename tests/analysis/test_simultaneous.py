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


def test_the_flag_rule_is_the_randomization_test_that_counts_the_observed_statistic():
    """max_t_flags by hand: |T| = |Σ s| / √Σ s² per row; per flip b the max over rows of the
    flipped |T| (the rows of one pair share a flip, seeds seed + 7·(1 + g) in sorted pair order);
    the family-wise p of a row is (1 + #{b: max_b >= |T|}) / (B + 1) and a row is flagged exactly
    when p <= 0.05, i.e. |T| > c_flag, the ⌊0.05·(B + 1)⌋-th largest maximum. With B = 19 that is
    the largest: a row beaten by one flip (p = 2/20) is not flagged, where the 95th percentile
    (interpolated between the two largest maxima) would have flagged it."""
    from edufair_metrics.analysis.engine import flip_matrix
    from edufair_metrics.analysis.simultaneous import max_t_flags

    rng = np.random.default_rng(4)
    q, b = 40, 19
    ranks = {("p1", "m1"): rng.normal(0.3, 1, q), ("p1", "m2"): rng.normal(0, 1, q), ("p2", "m1"): rng.normal(0, 1, q)}
    pair_of = {k: (k[0],) for k in ranks}
    t, c, p = max_t_flags(ranks, pair_of, n_boot=b, seed=5)
    mx = np.zeros(b)
    for g, pair in enumerate(("p1", "p2")):
        rows = [k for k in ranks if k[0] == pair]
        s = np.vstack([ranks[k] for k in rows])
        f = flip_matrix(q, b, 5 + 7 * (1 + g)).astype(float)
        mx = np.maximum(mx, (np.abs(s @ f) / np.sqrt((s * s).sum(axis=1))[:, None]).max(axis=0))
    assert c == pytest.approx(mx.max())  # ⌊0.05 · 20⌋ = 1: the largest of the 19 maxima
    for k, s in ranks.items():
        assert t[k] == pytest.approx(abs(s.sum()) / np.sqrt((s * s).sum()))
        assert p[k] == pytest.approx((1 + (mx >= t[k] - 1e-12).sum()) / (b + 1))
        assert (p[k] <= 0.05) == (t[k] > c)
    # the statistic is scale free: the ranks times 3 give the same |T|
    s0 = ranks[("p2", "m1")]
    assert t[("p2", "m1")] == pytest.approx(max_t_flags({("p2", "m1"): 3 * s0}, {("p2", "m1"): ("p2",)},
                                                        n_boot=b, seed=5)[0][("p2", "m1")])
    # a |T| between the two largest maxima (p = 2/20) is not flagged; the 95th percentile did flag it
    assert np.sort(mx)[-2] < np.percentile(mx, 95) < c


def test_a_row_without_non_zero_differences_has_no_statistic_and_is_never_flagged():
    from edufair_metrics.analysis.simultaneous import max_t_flags

    ranks = {"zero": np.zeros(30), "live": np.arange(1.0, 31.0)}  # all positive: |T| = Σs/√Σs² ≈ 5.4
    t, c, p = max_t_flags(ranks, {"zero": ("a",), "live": ("b",)}, n_boot=99, seed=0)
    assert t["zero"] == 0.0 and p["zero"] == 1.0
    assert t["live"] > c and p["live"] == pytest.approx(1 / 100)  # no flip reaches all-positive: the floor 1/(B+1)
