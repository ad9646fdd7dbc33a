"""Simultaneous bounds over the whole audit grid (an option: ``--simultaneous``).

The verdicts of ``analysis.verdicts`` control the false discovery rate of the flags within each
family and decide each certification on its own (α = 0.05 per row). This module gives, in the
spirit of the simultaneous fairness-audit bounds of Cherian & Candès, decisions that hold *for the
whole grid at once*: with probability about 95%, no row of the audit is flagged falsely, and with
probability about 90% every certified row is within the margin (each of its one-sided bounds at
5%).

Bootstrap. One shared resample of the questions: the questions of each domain are drawn with
replacement, domain by domain in sorted order (``default_rng(seed).integers(0, Q, (B, Q))`` over
the domain's sorted question ids, as the rank intervals and the CI gate draw them), and *every*
sufficient row of the grid (all tutors, conditions, metrics) recomputes its r on the drawn
questions (absent pairs dropped). So the dependence between rows that share questions (the metrics
of one dialogue, the pairs of one unit, the tutors of one bank) is kept. Per row, ``sim_se`` is
the standard deviation of its bootstrap r, and the studentised deviation of resample b is
``T_jb = (r_jb − r_j) / sim_se_j``.

Max-|T|. ``M_b = max_j |T_jb|`` over all rows with ``sim_se > 0``; the critical values
``sim_c95`` / ``sim_c90`` are the 95th / 90th percentiles of M_b (``grid.attrs``). Then

* ``sim_ci_low`` / ``sim_ci_high`` = r ∓ sim_c95 · sim_se, simultaneous 95% intervals;
  ``sim_flagged``: the interval excludes 0 (family-wise error ≈ 5% over the grid);
* ``sim_certified``: r ∓ sim_c90 · sim_se lies inside (−M, M) (every row's TOST at 5%, jointly);
* ``verdict_sim``: flag / unconfirmed (a flagged pedagogical row the turn-level test does not
  confirm, as in ``analysis.verdicts``) / certify / inconclusive / insufficient; a unit is flagged
  when one of its rows is and certified when all of them are (no further correction: the max
  covers every row).

Rows with ``sim_se = 0`` (every resample gives the same r) get the degenerate interval [r, r].
"""

from __future__ import annotations

import numpy as np

from edufair_metrics.analysis.cells import cell_matrices, contrast_pairs
from edufair_metrics.analysis.engine import multiplicities, resampled_r
from edufair_metrics.protocol.contrasts import load_contrasts

SIM_COLUMNS = ["sim_se", "sim_ci_low", "sim_ci_high", "sim_flagged", "sim_certified", "verdict_sim"]
_ROW_KEYS = ["tutor", "domain", "condition", "contrast", "pair", "metric"]


def simultaneous_bounds(df, grid, *, margin: float, n_boot: int = 1000, seed: int = 0, contrasts=None):
    """A copy of ``grid`` with ``SIM_COLUMNS`` and ``attrs["sim_c95"]``, ``attrs["sim_c90"]`` (see
    the module docstring); ``df`` is the long score frame the grid was built from."""
    from edufair_metrics.analysis.verdicts import check_margin

    margin = check_margin(margin)
    out = grid.copy()
    for c in SIM_COLUMNS[:3]:
        out[c] = np.nan
    out["sim_flagged"] = False
    out["sim_certified"] = False
    out["verdict_sim"] = np.where(out["sufficient"].astype(bool), "inconclusive", "insufficient").astype(object)
    live = out[out["sufficient"].astype(bool)]
    if len(live) == 0:
        out.attrs.update(sim_c95=np.nan, sim_c90=np.nan)
        return out
    contrasts = load_contrasts() if contrasts is None else contrasts
    cells = cell_matrices(df)
    qsets: dict[str, set] = {}
    for cm in cells:
        qsets.setdefault(cm.key[1], set()).update(cm.questions.astype(str).tolist())
    domains = {dom: np.array(sorted(qsets.get(dom, ())), dtype=str) for dom in sorted(set(live["domain"]))}
    rng = np.random.default_rng(seed)
    counts = {dom: multiplicities(rng.integers(0, qs.size, size=(n_boot, qs.size)), qs.size)
              for dom, qs in domains.items()}
    wanted = dict(zip(live[_ROW_KEYS].itertuples(index=False, name=None), live.index))
    boot: dict = {}
    for cm, spec, _a, _b, label, d in contrast_pairs(cells, contrasts):
        tutor, domain, condition, metric = cm.key
        i = wanted.get((tutor, domain, condition, spec.name, label, metric))
        if i is not None and domain in counts:
            boot[i] = resampled_r(cm.spread(d, domains[domain]), counts[domain])
    idx = np.array(sorted(boot), dtype=object)
    rb = np.vstack([boot[i] for i in idx])  # rows × B
    r = out.loc[idx, "r"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        se = np.nanstd(rb, axis=1, ddof=1)
    use = se > 0
    t = np.abs(rb[use] - r[use, None]) / se[use, None]
    mx = np.nanmax(t, axis=0) if use.any() else np.zeros(n_boot)
    c95, c90 = (float(np.nanpercentile(mx, q)) for q in (95, 90))
    se = np.where(use, se, 0.0)
    lo, hi = r - c95 * se, r + c95 * se
    flagged = (lo > 0) | (hi < 0)
    certified = (r - c90 * se > -margin) & (r + c90 * se < margin)
    out.loc[idx, "sim_se"] = se
    out.loc[idx, "sim_ci_low"], out.loc[idx, "sim_ci_high"] = lo, hi
    out.loc[idx, "sim_flagged"] = flagged
    out.loc[idx, "sim_certified"] = certified
    verdict = np.where(certified, "certify", "inconclusive").astype(object)
    confirmed = out.loc[idx, "turn_confirmed"] if "turn_confirmed" in out.columns else None
    if confirmed is not None:
        unconf = (out.loc[idx, "metric_kind"] == "pedagogical").to_numpy() & confirmed.notna().to_numpy() \
            & ~confirmed.fillna(True).astype(bool).to_numpy()
    else:
        unconf = np.zeros(idx.size, dtype=bool)
    verdict[flagged] = "flag"
    verdict[flagged & unconf] = "unconfirmed"
    out.loc[idx, "verdict_sim"] = verdict
    out["sim_flagged"] = out["sim_flagged"].astype(bool)
    out["sim_certified"] = out["sim_certified"].astype(bool)
    out.attrs.update(sim_c95=c95, sim_c90=c90)
    return out


def unit_simultaneous(units, grid):
    """``units`` with ``verdict_sim``: flag when a row of the unit is flagged (unconfirmed when all
    its flagged rows are), certify when every row is certified, insufficient without a sufficient
    row, inconclusive otherwise."""
    keys = ["tutor", "domain", "condition", "contrast", "dimension", "kind", "metric"]
    g = grid.assign(_f=grid["verdict_sim"] == "flag", _u=grid["verdict_sim"] == "unconfirmed",
                    _c=grid["sim_certified"].astype(bool) & grid["sufficient"].astype(bool))
    gb = g.groupby(keys, sort=False, dropna=False)
    import pandas as pd

    agg = pd.DataFrame({"f": gb["_f"].any(), "u": gb["_u"].any(), "c": gb["_c"].all(), "s": gb["sufficient"].any()})
    a = agg.reindex(pd.MultiIndex.from_frame(units[keys]))
    v = np.where(a["c"].fillna(False).to_numpy(dtype=bool), "certify", "inconclusive").astype(object)
    v[a["u"].fillna(False).to_numpy(dtype=bool)] = "unconfirmed"
    v[a["f"].fillna(False).to_numpy(dtype=bool)] = "flag"
    v[~a["s"].fillna(False).to_numpy(dtype=bool)] = "insufficient"
    out = units.copy()
    out["verdict_sim"] = v
    return out


def add_simultaneous(df, grid, units, *, margin: float, n_boot: int, seed: int):
    """(grid, units) with the simultaneous columns (``analysis.params.analyse_frame`` with
    ``StatParams.simultaneous``)."""
    g = simultaneous_bounds(df, grid, margin=margin, n_boot=n_boot, seed=seed)
    u = unit_simultaneous(units, g)
    u.attrs.update(g.attrs)
    return g, u
