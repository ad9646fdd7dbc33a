"""Simultaneous bounds over the whole audit grid (an option: ``--simultaneous``).

The verdicts of ``analysis.verdicts`` control the false discovery rate of the flags within each
family and decide each certification on its own (α = 0.05 per row). This module gives, in the
spirit of the simultaneous fairness-audit bounds of Cherian & Candès, decisions that hold *for the
whole grid at once*: with probability about 95%, no row of the audit is flagged falsely, and with
probability about 90% every certified row is within the margin (each of its one-sided bounds at
5%).

Flags: a max-|T| sign-flip test (Westfall–Young). Each sufficient row j has the studentised
statistic ``T_j = r_j / √V0_j = Σ_i s_ij / √Σ_i s_ij²`` (s_ij: the signed Pratt rank of question
i's difference; V0 the exact sign-flip variance of r), whose null variance is exactly 1 whatever
the zeros and ties. Its null: a sign flip per question *shared by the rows of one dialogue pair*
(the metrics of one contrast pair: swapping the pair's two levels is an exact symmetry of the null
for all of them at once; the flips of ``engine.flip_matrix``, seeded by ``seed`` and the pair's
place), *independent across pairs*. One flip shared by every row of the domain (as before) is not
a symmetry for rows that share a level (SES low/middle vs high; Implicit's names across contrasts:
no permutation of the levels negates both differences), and the grids of no bias had a false
simultaneous flag 6.3% (150 per domain) and 10% (500) of the time. Independent flips across pairs
drop their dependence, which can only raise the critical value for (near-normal) T (Šidák's
inequality, and for near-normal T the Gaussian correlation inequality for the blocks of one pair):
conservative, not liberal. The test is the randomization test that counts the observed statistic
among the flips (Phipson & Smyth 2010): the family-wise p of row j is ``(1 + #{b: max_k |T_kb| >=
|T_j|}) / (B + 1)`` and ``sim_flagged`` is p <= 0.05, i.e. ``|T_j| > sim_c_flag``, the
⌊0.05·(B + 1)⌋-th largest of the B maxima (:func:`max_t_flags`; the 95th percentile used before
sat between the two order statistics around it, slightly liberal). Each row's marginal null is
exact: under no bias a pair's difference is symmetric given the question, so given the |d| the
signs are fair coins, ties and zeros included; simulated rows of every metric (answer_leakage,
half its differences zero, too) exceed |T| = 2.0 / 2.5 / 3.0 / 3.5 as often as the normal tail
(tests/analysis/sim_simultaneous.py, README). Why not the bootstrap's max-|T| (as before): the bootstrap T of a
row with few non-zero differences has a narrow, discrete distribution whose max misses the tail
of its own estimate, and 13.6% of no-bias grids had a false simultaneous flag; the sign-flip
statistic has the exact null variance of every row and no such rows.

Certification: the bootstrap. One shared resample of the questions: the questions of each domain
are drawn with replacement, domain by domain in sorted order (``default_rng(seed).integers(0, Q,
(B, Q))`` over the domain's sorted question ids, as the rank intervals and the CI gate draw
them), and *every* sufficient row recomputes its r on the drawn questions (absent pairs dropped).
``sim_se`` = max(the standard deviation of its bootstrap r, √((1 − r²)·V0)) with V0 floored as in
``verdicts.evidence_null_var`` (a row whose differences are all zero has se 1, never the
degenerate [r, r]); ``T_jb = (r_jb − r_j) / sim_se_j``, ``M_b = max_j |T_jb|``, and ``sim_c95`` /
``sim_c90`` are the 95th / 90th percentiles of M_b (``grid.attrs``). Then

* ``sim_ci_low`` / ``sim_ci_high`` = r ∓ sim_c95 · sim_se (shown; the flags are the sign-flip
  test's);
* ``sim_certified``: r ∓ sim_c90 · sim_se lies inside (−M, M) (every row's TOST at 5%, jointly),
  and the row has a non-zero difference;
* ``verdict_sim``: flag / unconfirmed (a flagged pedagogical row the turn-level test does not
  confirm, as in ``analysis.verdicts``) / certify / inconclusive / insufficient; a unit is flagged
  when one of its rows is and certified when all of them are (no further correction: the max
  covers every row).
"""

from __future__ import annotations

import numpy as np

from edufair_metrics.analysis.cells import cell_matrices, contrast_pairs
from edufair_metrics.analysis.engine import _one_blas_thread, flip_matrix, multiplicities, resampled_r, round_diffs
from edufair_metrics.protocol.contrasts import load_contrasts

SIM_COLUMNS = ["sim_se", "sim_ci_low", "sim_ci_high", "sim_flagged", "sim_certified", "verdict_sim"]
_ROW_KEYS = ["tutor", "domain", "condition", "contrast", "pair", "metric"]


def _signed_ranks(d: np.ndarray) -> np.ndarray:
    """Per question of the domain: sign(d) × the Pratt rank of |d| among the row's defined
    differences (zeros rank but carry no sign; absent questions 0), as the grid ranks them."""
    from scipy.stats import rankdata

    d = round_diffs(d)
    ok = ~np.isnan(d)
    out = np.zeros(d.size)
    if ok.any():
        out[ok] = np.sign(d[ok]) * rankdata(np.abs(d[ok]))
    return out



def max_t_flags(ranks: dict, pair_of: dict, *, n_boot: int, seed: int, alpha: float = 0.05):
    """The max-|T| sign-flip test (module docstring) on rows given as ``ranks`` (row -> signed
    Pratt ranks over the domain's questions, :func:`_signed_ranks`) and ``pair_of`` (row -> its
    dialogue pair; the rows of one pair share their flips, pairs get independent ones, one seed
    each in sorted pair order). Returns ``(|T| per row, c_flag, p per row)``: the family-wise p of
    a row is the randomization p with the observed statistic counted among the flips,
    ``(1 + #{b: max_j |T_jb| >= |T_row|}) / (B + 1)`` (Phipson & Smyth 2010: never below 1/(B+1)),
    and a row is flagged at ``alpha`` exactly when ``|T| > c_flag``, the ``⌊alpha·(B + 1)⌋``-th
    largest of the B maxima (``p <= alpha``). A row without a non-zero difference has T = 0."""
    t_obs = {i: 0.0 for i in ranks}
    t_max = np.zeros(n_boot)
    by_pair: dict[tuple, list] = {}
    for i in ranks:
        by_pair.setdefault(tuple(pair_of[i]), []).append(i)
    for g, (_key, rows) in enumerate(sorted(by_pair.items(), key=lambda kv: tuple(map(str, kv[0])))):
        signed = np.vstack([ranks[i] for i in rows])  # rows × Q
        norm = np.sqrt((signed * signed).sum(axis=1))
        live = norm > 0
        if not live.any():
            continue
        flips = flip_matrix(signed.shape[1], n_boot, seed + 7 * (1 + g))
        with _one_blas_thread():
            tb = np.abs(signed[live] @ flips[: signed.shape[1]].astype(np.float64)) / norm[live, None]
        t_max = np.maximum(t_max, tb.max(axis=0))
        for i, t in zip([i for i, ok in zip(rows, live) if ok], np.abs(signed[live].sum(axis=1)) / norm[live]):
            t_obs[i] = float(t)
    desc = np.sort(t_max)[::-1]
    k = int(np.floor(alpha * (n_boot + 1) + 1e-9))  # flagged: at most k − 1 of the B maxima reach |T|
    c_flag = float(desc[k - 1]) if 1 <= k <= n_boot else np.inf
    asc = np.sort(t_max)
    p = {i: (1 + n_boot - int(np.searchsorted(asc, t - 1e-12 * max(t, 1.0), side="left"))) / (n_boot + 1)
         for i, t in t_obs.items()}
    return t_obs, c_flag, p

def simultaneous_bounds(df, grid, *, margin: float, n_boot: int = 1000, seed: int = 0, contrasts=None):
    """A copy of ``grid`` with ``SIM_COLUMNS`` and ``attrs["sim_c95"]``, ``attrs["sim_c90"]`` (see
    the module docstring); ``df`` is the long score frame the grid was built from."""
    from edufair_metrics.analysis.verdicts import check_margin, evidence_null_var

    margin = check_margin(margin)
    out = grid.copy()
    for c in SIM_COLUMNS[:3]:
        out[c] = np.nan
    out["sim_flagged"] = False
    out["sim_certified"] = False
    out["verdict_sim"] = np.where(out["sufficient"].astype(bool), "inconclusive", "insufficient").astype(object)
    live = out[out["sufficient"].astype(bool)]
    if len(live) == 0:
        out.attrs.update(sim_c95=np.nan, sim_c90=np.nan, sim_c_flag=np.nan)
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
    ranks: dict = {}
    for cm, spec, _a, _b, label, d in contrast_pairs(cells, contrasts):
        tutor, domain, condition, metric = cm.key
        i = wanted.get((tutor, domain, condition, spec.name, label, metric))
        if i is not None and domain in counts:
            spread = cm.spread(d, domains[domain])
            boot[i] = resampled_r(spread, counts[domain])
            ranks[i] = _signed_ranks(spread)
    idx = np.array(sorted(boot), dtype=object)
    rb = np.vstack([boot[i] for i in idx])  # rows × B
    r = out.loc[idx, "r"].to_numpy(dtype=float)
    v0 = out.loc[idx, "null_var_r"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        boot_se = np.nanstd(rb, axis=1, ddof=1)
    model_se = np.sqrt(np.where(v0 > 0, np.clip(1 - r * r, 0, 1), 1.0) * evidence_null_var(v0))
    se = np.fmax(np.where(np.isnan(boot_se), 0.0, boot_se), model_se)
    with np.errstate(invalid="ignore", divide="ignore"):  # |r| = 1 on one sign: se 0, no spread to studentise
        t = np.abs(rb - r[:, None]) / np.where(se > 0, se, np.nan)[:, None]
        mx = np.nanmax(t, axis=0)
    c95, c90 = (float(np.nanpercentile(mx, q)) for q in (95, 90))
    lo, hi = r - c95 * se, r + c95 * se
    # flags: the max-|T| sign-flip test over every row, one flip per question per dialogue pair
    pair_of = {i: tuple(out.loc[i, ["tutor", "domain", "condition", "contrast", "pair"]]) for i in idx}
    t_obs, c_flag, _p = max_t_flags({i: ranks[i] for i in idx}, pair_of, n_boot=n_boot, seed=seed)
    t_obs = np.array([t_obs[i] for i in idx])
    flagged = t_obs > c_flag
    certified = (r - c90 * se > -margin) & (r + c90 * se < margin) & (v0 > 0)
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
    out.attrs.update(sim_c95=c95, sim_c90=c90, sim_c_flag=c_flag)
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
