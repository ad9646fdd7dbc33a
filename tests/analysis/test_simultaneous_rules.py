"""The simultaneous bounds of ``analysis.simultaneous`` stated as rules on one small grid, in well
under a second (test_simultaneous.py checks their error rates on simulated grids): the signed
Pratt ranks by hand; the shared bootstrap recomputed resample by resample with the per-row
definition of r (``contrast.rank_biserial``); the se as the larger of the bootstrap's and the
model's; the max-|T| critical values; the intervals and the joint certification; the flags as the
max-|T| sign-flip test with one flip per question shared by the rows of a dialogue pair,
recomputed flip by flip; the verdicts and the unit rule."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from edufair_metrics.analysis.cells import cell_matrices, contrast_pairs
from edufair_metrics.analysis.contrast import rank_biserial
from edufair_metrics.analysis.engine import flip_matrix
from edufair_metrics.analysis.grid import contrast_grid
from edufair_metrics.analysis.simultaneous import _signed_ranks, simultaneous_bounds, unit_simultaneous
from edufair_metrics.protocol.contrasts import load_contrasts
from tests.analysis.synthetic_scores import rate_frame

KEYS = ["tutor", "domain", "condition", "contrast", "pair", "metric"]
B, SEED, MARGIN = 100, 3, 0.75


def test_the_signed_ranks_are_pratts():
    # |d| ranked with the zero (rank 1) and ties averaged; the zero and the absent question carry 0
    d = np.array([0.0, 1.0, -2.0, np.nan, 1.0])
    assert _signed_ranks(d).tolist() == [0.0, 2.5, -4.0, 0.0, 2.5]
    assert _signed_ranks(np.array([np.nan, np.nan])).tolist() == [0.0, 0.0]
    # differences equal after rounding (engine.round_diffs) tie
    assert _signed_ranks(np.array([0.1 + 0.2, -0.3]) * 1.0).tolist() == [1.5, -1.5]


@pytest.fixture(scope="module")
def small():
    df = rate_frame({"t": {"female": 0.35}}, n=40, seed=2,
                    metrics=("actionability", "step_scaffolded", "corrective_tone"))
    df = df[df["condition"] == "explicit"].reset_index(drop=True)
    df.loc[df["metric"] == "corrective_tone", "value"] = 0.5  # a metric whose differences are all zero
    grid = contrast_grid(df, n_boot=20, seed=0)
    sim = simultaneous_bounds(df, grid, margin=MARGIN, n_boot=B, seed=SEED)
    # each sufficient row's differences over the domain's sorted questions (NaN: absent)
    questions = np.array(sorted(df["question_id"].astype(str).unique()), dtype=str)
    diffs = {}
    for cm, spec, _a, _b, label, d in contrast_pairs(cell_matrices(df), load_contrasts()):
        tutor, domain, condition, metric = cm.key
        diffs[(tutor, domain, condition, spec.name, label, metric)] = cm.spread(d, questions)
    live = sim[sim["sufficient"].astype(bool)]
    assert len(live) >= 6 and (live["null_var_r"] == 0).any()
    return df, grid, sim, live, diffs, questions


def _boot_r(x, idx):
    out = np.full(idx.shape[0], np.nan)
    for b in range(idx.shape[0]):
        drawn = x[idx[b]]
        drawn = drawn[~np.isnan(drawn)]
        if drawn.size:
            out[b] = rank_biserial(drawn)[2]
    return out


def test_the_se_the_critical_values_the_intervals_and_the_certificates_by_hand(small):
    _, _, sim, live, diffs, questions = small
    idx = np.random.default_rng(SEED).integers(0, questions.size, size=(B, questions.size))
    r = live["r"].to_numpy(dtype=float)
    v0 = live["null_var_r"].to_numpy(dtype=float)
    boot = np.vstack([_boot_r(diffs[tuple(row)], idx) for row in live[KEYS].itertuples(index=False)])
    # se: the larger of the bootstrap sd and √((1 − r²) V0), V0 = 0 read as 1 (no evidence)
    model = np.sqrt(np.where(v0 > 0, 1 - r * r, 1.0) * np.where(v0 > 0, v0, 1.0))
    se = np.fmax(np.nan_to_num(np.nanstd(boot, axis=1, ddof=1)), model)
    np.testing.assert_allclose(live["sim_se"].to_numpy(dtype=float), se, rtol=1e-9)
    # the critical values: percentiles of the max over rows of |r_b − r| / se
    mx = np.nanmax(np.abs(boot - r[:, None]) / se[:, None], axis=0)
    c95, c90 = np.percentile(mx, 95), np.percentile(mx, 90)
    assert sim.attrs["sim_c95"] == pytest.approx(c95, rel=1e-9)
    assert sim.attrs["sim_c90"] == pytest.approx(c90, rel=1e-9)
    assert c90 < c95
    np.testing.assert_allclose(live["sim_ci_low"].to_numpy(dtype=float), r - c95 * se, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(live["sim_ci_high"].to_numpy(dtype=float), r + c95 * se, rtol=1e-9, atol=1e-12)
    # certified: r ∓ c90·se strictly inside (−M, M), with a non-zero difference
    want = (r - c90 * se > -MARGIN) & (r + c90 * se < MARGIN) & (v0 > 0)
    assert want.any() and not want.all()
    assert live["sim_certified"].tolist() == want.tolist()


def test_the_flags_are_the_max_t_sign_flip_test_with_one_flip_per_pair(small):
    """|T_j| = |Σ s_ij| / √Σ s_ij² (= |r| / √V0) against the 95th percentile of max_j |T_jb| over
    sign flips, the rows of one dialogue pair (its metrics) flipped together: pair g of the sorted
    pairs by ``flip_matrix(Q, B, seed + 7(1 + g))``, recomputed flip by flip."""
    _, _, sim, live, diffs, questions = small
    pairs = sorted({tuple(k[:5]) for k in diffs if k in set(map(tuple, live[KEYS].itertuples(index=False)))},
                   key=lambda k: tuple(map(str, k)))
    t_max = np.zeros(B)
    t_obs = {}
    for g, pair in enumerate(pairs):
        flips = flip_matrix(questions.size, B, SEED + 7 * (1 + g)).astype(float)
        for key in (k for k in map(tuple, live[KEYS].itertuples(index=False)) if k[:5] == pair):
            s = _signed_ranks(diffs[key])
            norm = math.sqrt(float((s * s).sum()))
            if norm == 0:
                t_obs[key] = 0.0
                continue
            t_obs[key] = abs(float(s.sum())) / norm
            for b in range(B):
                t_max[b] = max(t_max[b], abs(float(s @ flips[:, b])) / norm)
    # the randomization p: (1 + #{b: max_b >= |T|}) / (B + 1) <= 0.05, i.e. |T| above the
    # floor(0.05 (B + 1))-th largest maximum
    c_flag = float(np.sort(t_max)[::-1][int(math.floor(0.05 * (B + 1))) - 1])
    assert sim.attrs["sim_c_flag"] == pytest.approx(c_flag, rel=1e-9)
    obs = np.array([t_obs[tuple(k)] for k in live[KEYS].itertuples(index=False)])
    # the studentised statistic is r / √V0 (the exact sign-flip variance of r)
    v0 = live["null_var_r"].to_numpy(dtype=float)
    np.testing.assert_allclose(obs[v0 > 0], np.abs(live["r"].to_numpy(dtype=float))[v0 > 0] / np.sqrt(v0[v0 > 0]),
                               rtol=1e-9)
    flagged = np.array([(1 + int((t_max >= t).sum())) / (B + 1) <= 0.05 for t in obs])
    assert flagged.tolist() == (obs > c_flag).tolist()
    assert flagged.any() and not flagged.all()
    assert live["sim_flagged"].tolist() == flagged.tolist()


def test_the_row_verdicts_and_what_an_insufficient_row_gets(small):
    df, grid, sim, live, _, _ = small
    v = live["verdict_sim"].to_numpy()
    f, c = live["sim_flagged"].to_numpy(bool), live["sim_certified"].to_numpy(bool)
    assert f.any() and (v[f] == "flag").all()  # no turn-level test here: a flag stands
    assert (v[~f & c] == "certify").all() and (v[~f & ~c] == "inconclusive").all()
    # a flagged pedagogical row the turn-level test does not confirm is unconfirmed; NaN (not
    # tested) keeps the flag
    g = grid.copy()
    rows = g.index[g["sufficient"].astype(bool)]
    flagged_rows = live.index[f]
    g["turn_confirmed"] = pd.Series([pd.NA] * len(g), index=g.index, dtype="boolean")
    g["metric_kind"] = "pedagogical"
    g.loc[flagged_rows[0], "turn_confirmed"] = False
    g.loc[flagged_rows[-1], "turn_confirmed"] = True
    out = simultaneous_bounds(df, g, margin=MARGIN, n_boot=B, seed=SEED)
    assert out.loc[flagged_rows[0], "verdict_sim"] == "unconfirmed"
    assert (out.loc[flagged_rows[1:], "verdict_sim"] == "flag").all()
    # the same row not pedagogical: its flag stands
    g.loc[flagged_rows[0], "metric_kind"] = "conversation"
    assert simultaneous_bounds(df, g, margin=MARGIN, n_boot=B, seed=SEED).loc[flagged_rows[0], "verdict_sim"] == "flag"
    # an insufficient row: no bounds, no flag, no certificate
    g = grid.copy()
    g.loc[rows[0], "sufficient"] = False
    out = simultaneous_bounds(df, g, margin=MARGIN, n_boot=B, seed=SEED)
    row = out.loc[rows[0]]
    assert row["verdict_sim"] == "insufficient" and not row["sim_flagged"] and not row["sim_certified"]
    assert math.isnan(row["sim_se"]) and math.isnan(row["sim_ci_low"])
    assert out["sim_flagged"].dtype == bool and out["sim_certified"].dtype == bool
    # no sufficient row at all: NaN critical values, every row insufficient
    g["sufficient"] = False
    out = simultaneous_bounds(df, g, margin=MARGIN, n_boot=B, seed=SEED)
    assert (out["verdict_sim"] == "insufficient").all() and not out["sim_flagged"].any()
    assert all(math.isnan(out.attrs[k]) for k in ("sim_c95", "sim_c90", "sim_c_flag"))


def test_the_margin_is_checked():
    from edufair_metrics.errors import EduFairError

    with pytest.raises(EduFairError):
        simultaneous_bounds(pd.DataFrame(), pd.DataFrame({"sufficient": []}), margin=1.0)


def test_the_unit_rule():
    """A unit is flagged when one of its rows is (unconfirmed when its flagged rows all are),
    certified when every sufficient row is, insufficient without a sufficient row."""
    unit_keys = dict(tutor="t", domain="d", condition="explicit", contrast="c", dimension="x", kind="binary",
                     metric="m")
    rows, units = [], []
    cases = {  # unit -> its rows (verdict_sim, sim_certified, sufficient)
        "flag": [("flag", False, True), ("unconfirmed", False, True), ("certify", True, True)],
        "unconfirmed": [("unconfirmed", False, True), ("certify", True, True)],
        "certify": [("certify", True, True), ("certify", True, True)],
        # every row must be certified: an insufficient row is not
        "inconclusive_with_an_insufficient_row": [("certify", True, True), ("insufficient", False, False)],
        "inconclusive": [("certify", True, True), ("inconclusive", False, True)],
        "insufficient": [("insufficient", False, False)],
    }
    for name, rs in cases.items():
        units.append({**unit_keys, "metric": name})
        rows += [{**unit_keys, "metric": name, "verdict_sim": v, "sim_certified": c, "sufficient": s} for v, c, s in rs]
    units.append({**unit_keys, "metric": "no rows"})
    out = unit_simultaneous(pd.DataFrame(units), pd.DataFrame(rows)).set_index("metric")["verdict_sim"]
    want = {name: name.split("_")[0] for name in cases}
    want["no rows"] = "insufficient"
    assert out.to_dict() == want


def test_rows_without_evidence_alone_are_never_certified(small):
    """Only rows whose differences are all zero: every resample's T is 0, so the critical values are
    0, and the se floor alone would put r = 0 inside any band; such a row is still not certified."""
    df, grid, *_ = small
    g = grid.copy()
    g.loc[g["null_var_r"] > 0, "sufficient"] = False
    assert g["sufficient"].any()
    out = simultaneous_bounds(df, g, margin=0.9, n_boot=B, seed=SEED)
    live = out[out["sufficient"]]
    assert out.attrs["sim_c90"] == 0.0
    assert (live["sim_se"] == 1.0).all()  # no evidence: se 1, never the degenerate 0
    assert not live["sim_certified"].any() and not live["sim_flagged"].any()
    assert (live["verdict_sim"] == "inconclusive").all()


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")  # numpy's sd of one value
def test_without_a_bootstrap_spread_the_se_is_the_models(small):
    """One resample has no standard deviation: the se is √((1 − r²)·V0) alone (not floored at 1)."""
    df, grid, *_ = small
    out = simultaneous_bounds(df, grid, margin=MARGIN, n_boot=1, seed=SEED)
    live = out[out["sufficient"] & (out["null_var_r"] > 0)]
    r, v0 = live["r"].to_numpy(dtype=float), live["null_var_r"].to_numpy(dtype=float)
    np.testing.assert_allclose(live["sim_se"].to_numpy(dtype=float), np.sqrt((1 - r * r) * v0), rtol=1e-12)
