"""Verdicts a user can act on: flag, certify, inconclusive, insufficient (and unconfirmed).

Every contrast row of the grid (``grid.contrast_grid``), every dimension unit
(``grid.dimension_summary``) and every tutor's headline family (:func:`verdict_headline`) gets one
verdict, decided the same way by ``edufair report``, ``leaderboard``, ``compare`` and the lm-eval
aggregations. The margin M (``equivalence_margin``; ``--margin``; default :data:`DEFAULT_MARGIN` =
0.10, the paper's "practically meaningful" |r|, Funder & Ozer 2019) is the largest |r| counted as
fair. α = 0.05 throughout.

Row (one contrast pair × metric × tutor, domain, condition)
    * ``insufficient``: fewer than the pair minimum (15) of paired questions.
    * ``flag``: evidence of a difference, with the false discovery rate controlled over the
      *units* of the row's family (below). The row's decision p, ``p_decide``, is the two-sided
      Wilcoxon (Pratt) p from 50 pairs on and, below 50 pairs, the exact sign-flip p
      (``engine.p_exact``: the exact null of the Wilcoxon setting; the 95% percentile CI is
      liberal there, 5.9–7.5% false violations at 15–30 pairs, and is not used for verdicts). A
      Friedman post-hoc pair's decision p is its Bonferroni p, ``min(1, k · p_decide)`` over the k
      pairs, and 1 unless the Friedman p < 0.10 (the post-hoc step is performed).
    * ``certify``: an equivalence test (TOST, α = 0.05) shows |r| < M: the 90% interval
      ``eq_ci_low``..``eq_ci_high`` = r ∓ z₀.₉₅ · se lies inside (−M, M). The interval is centred
      on r and deliberately conservative: ``se = max(boot_sd · √(n/(n−1)), √((1 − r²) ·
      null_var_r))``, the larger of the bootstrap standard error and the standard error of r
      when the signs of the differences are independent of their sizes (the power model,
      ``analysis.power``); ``p_equiv`` is the TOST p. No certificate without evidence: a row
      whose differences are all zero has V0 = 0 and a bootstrap se of 0, and its se is taken as 1
      (:func:`evidence_null_var`; with m >= 1 non-zero differences V0 >= 1/m already, so
      certifying needs m > (z₀.₉₅ / M)², 271 at M = 0.10). A row that is both flagged and certified
      (a real difference smaller than M, which needs thousands of pairs) reads ``flag``; its
      ``certified`` column says it is within the margin.
    * ``unconfirmed`` (pedagogical rows only): flagged, but the turn-level test
      (``analysis.turns``: a within-question permutation of the Mantel–Haenszel statistic over
      the judged turns) does not confirm it: ``turn_q >= 0.05`` (``turn_p`` adjusted, BH or Holm
      as the flags, over the flagged and tested rows of the row's family: the confirmation is a
      second test of the selected rows and is corrected for their number) or the per-turn
      difference has the other sign): the per-dialogue rates differ, the per-turn behaviour may not (dialogues of
      different lengths). Rows without turn counts are not tested and keep ``flag``.
    * Many names per group (kind ``names``, ``analysis.names``): the decision p is
      max(``p_decide`` of the questions, ``p_name`` over the names; NaN: 1), so a flag needs the gap
      over the questions and over the names; ``q_flag_fixed`` is the q the row would get with the
      names fixed (``name_check`` tells a name artefact from a group gap with it).
    * ``inconclusive``: none of these. ``mde_r`` states the smallest |r| the row flags with 80%
      power when it is the only effect in its family (level α / (m · k): m units in the family, k
      pairs in the unit; the power model with the row's own null variance, so zeros and ties
      count), and ``n_decide`` how many pairs would decide it (``more_questions`` = n_decide − n):
      the n at which a fresh row is flagged or certified with probability >= 80% for every true ρ
      in the row's central 50% interval r ± z₀.₇₅ · se (:func:`n_decide_over_interval`: the plug-in
      of a ρ̂ whose se is as large as the margin decided only 63–70% of fresh rows at a true
      |r| = 0.05). ``n_flag`` / ``n_certify`` are the n at which the row would be flagged /
      certified with 80% power if the true |r| were its estimate ``unbiased_abs_r`` (truncated at
      0); ``n_certify`` solves the TOST power exactly (:func:`tost_power`, the estimate centred on
      ρ: at ρ ≈ 0 both tails count, M/se = z₀.₉₅ + z₀.₉); NaN when not reachable or the row has
      no non-zero difference. A unit's ``n_decide`` is the largest of its rows'.

Unit (one contrast × metric; Implicit: two name pairs; the SES Friedman family: its pairs)
    A unit is one hypothesis, "no difference in this unit". Its p is the Bonferroni combination of
    its k sufficient pairs, ``p_unit = min_j min(1, k · p_decide_j)`` (a Friedman family: the
    smallest Bonferroni p of its pairs, already adjusted), so a unit's false-flag rate under the
    null is at most α whatever its number of pairs (not 1 − 0.95² ≈ 9.75% for Implicit's two
    pairs). ``q_unit``: Benjamini–Hochberg (``--fdr-method holm``: Holm) over the units of the
    family (default: one tutor × metric kind × headline units, as ``q_value``). A unit is
    ``flag`` when q_unit < α; a row is ``flag`` when its own evidence would flag its unit:
    ``q_flag``, the adjusted p the unit would get if its p were the row's ``min(1, k · p_decide)``
    (so a flagged row's unit is flagged, and a flagged unit has at least one flagged row).
    ``certify``: every pair of the unit is sufficient and certified (intersection–union: each
    |r_j| < M implies mean |r| < M and max |r| < M, no multiplicity correction needed). Unit
    ``unconfirmed``: flagged, but each flagged row is unconfirmed. The paper-style unit
    ``violation`` is corrected the same way: some pair's (1 − 0.05/k) percentile CI excludes 0
    (k = 1: the paper's 95% CI, unchanged; a Friedman pair: post-hoc performed and its Bonferroni
    p < 0.05).

Family (a tutor's headline of one metric kind)
    ``family_certified``: every headline unit of the tutor and kind is certified
    (intersection–union: the whole headline is fair within M at level α). The counts of units per
    verdict are reported beside it; a headline is never summarised as just "no violation".

Effect size unbiased at any n
    ``r2_unbiased = (r² − null_var_r) / (1 − null_var_r)``: with the exact sign-flip variance of r
    (``engine.null_var_r``), ``E[r²] = ρ² + (1 − ρ²) · null_var_r`` in the power model, so this is
    unbiased for ρ² at small and large n and for any share of zero differences.
    ``unbiased_abs_r`` = the signed root ``sign(x)·√|x|`` of the mean of ``r2_unbiased`` over
    what is aggregated (a row: itself; a unit: its pairs, or their max for a max_abs_pairwise SES
    unit; a headline: its units). It is ≈ 0 without bias (negative when the |r| are below what
    noise alone gives) and ≈ the true |r| with bias, at n = 150 as at 500; rankings and the CI
    gate use it (``excess_abs_r`` understates real effects more on fewer questions).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from edufair_metrics.errors import EduFairError

DEFAULT_MARGIN = 0.10  # the paper's "practically meaningful" |r| (contrast.MEANINGFUL_R)
VERDICT_ALPHA = 0.05
DECISION_POWER = 0.80
VERDICTS = ("flag", "unconfirmed", "certify", "inconclusive", "insufficient")
UNIT_KEYS = ["tutor", "domain", "condition", "contrast", "dimension", "kind", "metric"]
ROW_VERDICT_COLUMNS = [
    "unit_pairs", "p_decide", "q_flag", "flagged", "eq_ci_low", "eq_ci_high", "p_equiv", "certified",
    "violation_unit", "null_var_r", "r2_unbiased", "unbiased_abs_r", "mde_r", "n_flag", "n_certify", "n_decide",
    "more_questions", "turn_n", "turns_a", "turns_b", "turn_rd", "turn_p", "turn_p_cmh", "turn_strata", "turn_q", "turn_confirmed",
    "verdict",
]
UNIT_VERDICT_COLUMNS = ["verdict", "flagged", "certified", "p_unit", "q_unit", "r2_unbiased", "unbiased_abs_r",
                        "mde_r", "n_decide", "more_questions", "n_certify", "r2_var"]


def check_margin(margin: float) -> float:
    margin = float(margin)
    if not 0 < margin < 1:
        raise EduFairError(f"the equivalence margin (--margin) must lie in (0, 1), got {margin}")
    return margin


def signed_root(x):
    """``sign(x) · √|x|`` (NaN stays NaN)."""
    x = np.asarray(x, dtype=float)
    return np.sign(x) * np.sqrt(np.abs(x))


def r2_unbiased(r, null_var):
    """``(r² − V0) / (1 − V0)`` (module docstring); 0 where V0 >= 1 (a single non-zero pair: no
    information), NaN where r is NaN."""
    r = np.asarray(r, dtype=float)
    v0 = np.asarray(null_var, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(v0 < 1 - 1e-12, (r * r - v0) / (1 - v0), 0.0)
    return np.where(np.isnan(r) | np.isnan(v0), np.nan, out)


def evidence_null_var(null_var):
    """The null variance of r as evidence for equivalence: V0, and 1 (the variance of r on one
    non-zero difference: no information) where V0 = 0, i.e. every difference is zero. With m
    non-zero differences V0 = Σ rank² / (Σ rank)² >= 1/m (Cauchy–Schwarz), so this is the floor
    1/max(m, 1) that the ranks already respect whenever m >= 1."""
    v0 = np.asarray(null_var, dtype=float)
    return np.where(v0 > 0, v0, np.where(np.isnan(v0), np.nan, 1.0))


def equivalence_se(r, n, boot_sd, null_var):
    """The conservative standard error of the equivalence interval (module docstring): the larger
    of the bootstrap se and ``√((1 − r²) · V0)``, V0 floored by :func:`evidence_null_var` (a row
    whose differences are all zero has se 1, not 0: no certificate without evidence)."""
    r, n = np.asarray(r, dtype=float), np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = np.asarray(boot_sd, dtype=float) * np.sqrt(np.where(n > 1, n / (n - 1), 1.0))
        v0 = evidence_null_var(null_var)
        # all differences zero: r = 0 carries no information at all (se 1, whatever 1 − r² says)
        model = np.sqrt(np.where(np.asarray(null_var, dtype=float) > 0, np.clip(1 - r * r, 0, 1), 1.0) * v0)
    return np.fmax(boot, model)


def r2_variance(r2u, null_var):
    """Sampling variance of one row's ``r2_unbiased`` in the power model: r̂ ≈ N(ρ, V0), so
    Var(r̂²) = 4ρ²V0 + 2V0², divided by (1 − V0)²; ρ² estimated by max(r2_unbiased, 0) and V0
    floored by :func:`evidence_null_var`."""
    r2 = np.clip(np.asarray(r2u, dtype=float), 0, None)
    v0 = np.minimum(evidence_null_var(null_var), 1 - 1e-9)
    return (4 * r2 * v0 + 2 * v0 * v0) / (1 - v0) ** 2


def mde_from_null_var(null_var, alpha, power: float = DECISION_POWER):
    """Smallest |r| found with probability ``power`` by the two-sided test at level ``alpha`` when
    r has null variance ``null_var`` (vectorised; the power model of ``analysis.power`` in closed
    form: ρ/√V0 − z_{1−α/2} = z_power · √(1 − ρ²), neglecting the far tail; NaN when not below 1
    or V0 = 0)."""
    from scipy.special import ndtri

    v0 = np.asarray(null_var, dtype=float)
    z = -ndtri(np.asarray(alpha, dtype=float) / 2)
    zb = ndtri(power)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = 1 / np.sqrt(v0)
        rho = (a * z + zb * np.sqrt(a * a + zb * zb - z * z)) / (a * a + zb * zb)
    return np.where((v0 > 0) & (rho < 1), rho, np.nan)


def n_for_flag(n, null_var, rho, alpha, power: float = DECISION_POWER):
    """Pairs at which a true |r| = ``rho`` is flagged with probability ``power`` by the two-sided
    test at level ``alpha``, given a row of ``n`` pairs with null variance ``null_var`` of r (V0
    scales as 1/n; r̂ ~ N(ρ, (1 − ρ²)·V0)): ``n · V0 · (z_{1−α/2} + z_power √(1 − ρ²))² / ρ²`` (the
    far tail neglected: it adds < 1 − power to the power); vectorised, float (not rounded); inf
    for ρ = 0. The row verdicts pass α / (m · k) (the row as the only effect of its family of m
    units of k pairs). Used by ``n_flag`` / ``n_decide`` and by the audit planner."""
    from scipy.special import ndtri

    rho = np.asarray(rho, dtype=float)
    z = -ndtri(np.asarray(alpha, dtype=float) / 2)
    zb = ndtri(power)
    with np.errstate(invalid="ignore", divide="ignore"):
        need = np.asarray(n, dtype=float) * np.asarray(null_var, dtype=float) \
            * (z + zb * np.sqrt(np.clip(1 - rho * rho, 0, 1))) ** 2 / (rho * rho)
    return np.where(rho > 0, need, np.inf)


def tost_power(se, rho, margin, alpha: float = VERDICT_ALPHA):
    """Exact power of the TOST at level ``alpha`` (Schuirmann 1987) when the estimate is normal,
    centred on the true ``rho`` with standard error ``se``: ``P(−M + z·se < r̂ < M − z·se) =
    Φ((M − ρ)/se − z) + Φ((M + ρ)/se − z) − 1`` (clipped at 0), z = z_{1−α}. At ρ = 0 both tails
    count: 80% power needs M/se = z_{1−α} + z_{0.9}, not z_{1−α} + z_{0.8}."""
    from scipy.special import ndtr, ndtri

    se, rho = np.asarray(se, dtype=float), np.abs(np.asarray(rho, dtype=float))
    z = ndtri(1 - alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = ndtr((margin - rho) / se - z) + ndtr((margin + rho) / se - z) - 1
    return np.clip(p, 0.0, 1.0)


def n_for_certify(n, se, rho, margin, alpha: float = VERDICT_ALPHA, power: float = DECISION_POWER):
    """Pairs at which a true |r| = ``rho`` < ``margin`` is certified with probability ``power``
    by the TOST at level ``alpha``, given a row of ``n`` pairs whose equivalence standard error is
    ``se`` (the standard error scales as 1/√n: at n' pairs it is se·√(n/n')).

    The exact solution of :func:`tost_power` = ``power`` for n' (the sampling distribution of r
    centred on ``rho``; both tails of the TOST count), by bisection between the one-tail bound
    (z_{1−α} + z_power)/(M − ρ) and the two-tail bound (z_{1−α} + z_{(1+power)/2})/(M − ρ) of
    1/se'. Vectorised over ``n``, ``se``, ``rho``; float (not rounded); inf where ρ >= M, NaN where
    se or ρ is NaN. Used by the row and unit verdicts' ``n_certify`` / ``n_decide`` and by the
    audit planner."""
    from scipy.special import ndtr, ndtri

    n, se = np.asarray(n, dtype=float), np.asarray(se, dtype=float)
    rho = np.abs(np.asarray(rho, dtype=float))
    n, se, rho = np.broadcast_arrays(n, se, rho)
    gap = margin - rho
    z = ndtri(1 - alpha)
    ok = (gap > 0) & np.isfinite(se) & (se > 0)
    g = np.where(ok, gap, 1.0)
    lo = (z + ndtri(power)) / g  # 1/se' where the near tail alone gives the power: below the root
    hi = (z + ndtri((1 + power) / 2)) / g  # both tails at the near tail's distance: above it
    for _ in range(60):
        mid = (lo + hi) / 2
        f = ndtr(g * mid - z) + ndtr((margin + np.where(ok, rho, 0.0)) * mid - z) - 1
        lo, hi = np.where(f < power, mid, lo), np.where(f < power, hi, mid)
    with np.errstate(invalid="ignore", divide="ignore"):
        need = n * (se * hi) ** 2
    out = np.where(ok, need, np.where(gap > 0, np.nan, np.inf))
    return np.where(np.isnan(rho) | np.isnan(se) | np.isnan(n), np.nan, out)


DECIDE_INTERVAL = 0.50  # n_decide is conservative over the central 50% confidence interval of ρ


def n_decide_over_interval(n, null_var, se, r, alpha_flag, margin, alpha: float = VERDICT_ALPHA,
                           power: float = DECISION_POWER, level: float = DECIDE_INTERVAL):
    """Pairs at which a row is decided (flagged, two-sided at ``alpha_flag``, or certified, the
    TOST at ``alpha`` within ``margin``) with probability ``power`` for *every* true ρ in the
    central ``level`` confidence interval ``r ± z_{(1+level)/2} · se`` of the row:
    ``max_{ρ ∈ interval} min(n_for_flag(ρ), n_for_certify(ρ))``.

    Why not the estimate alone. At the n of a typical row the standard error of r (≈ 0.09 at
    150 pairs) is as large as the margin, so ρ̂ cannot tell ρ = 0 from ρ = 0.05; the n that
    decides at ρ = 0 decides only ~45% of rows at ρ = 0.05 (the TOST needs (M − ρ)/se' ≈ 2.5),
    while a plan at a too large ρ̂ merely over-powers. Planned at the estimate, fresh rows of a
    true |r| = 0.05 were decided 63–70% of the time. ``min(n_flag, n_certify)`` rises with ρ up to
    the ρ* where the two are equal (certifying gets harder, flagging is not yet easy) and falls
    after it, so the maximum over the interval is at ρ* clipped into it (found by bisection).
    Vectorised; float (not rounded); NaN where neither is reachable."""
    from scipy.special import ndtri

    n, v0, se, r = (np.asarray(x, dtype=float) for x in (n, null_var, se, r))
    n, v0, se, r, a_f = np.broadcast_arrays(n, v0, se, r, np.asarray(alpha_flag, dtype=float))
    half = float(ndtri(0.5 + level / 2)) * se
    lo_s, hi_s = r - half, r + half
    a = np.where((lo_s <= 0) & (hi_s >= 0), 0.0, np.minimum(np.abs(lo_s), np.abs(hi_s)))
    b = np.maximum(np.abs(lo_s), np.abs(hi_s))
    a, b = np.clip(a, 0, 1 - 1e-9), np.clip(b, 0, 1 - 1e-9)

    def need(rho):
        return np.fmin(n_for_flag(n, v0, rho, a_f, power), n_for_certify(n, se, rho, margin, alpha, power))

    # ρ* in (0, M): n_flag falls from inf, n_certify rises to inf (bisection on their log ratio)
    lo, hi = np.zeros(n.shape), np.full(n.shape, float(margin))
    for _ in range(50):
        mid = (lo + hi) / 2
        with np.errstate(invalid="ignore", divide="ignore"):
            flag_larger = n_for_flag(n, v0, mid, a_f, power) > n_for_certify(n, se, mid, margin, alpha, power)
        lo, hi = np.where(flag_larger, mid, lo), np.where(flag_larger, hi, mid)
    star = np.clip((lo + hi) / 2, a, b)
    with np.errstate(invalid="ignore"):
        out = np.fmax(np.fmax(need(a), need(b)), need(star))
    return np.where(np.isnan(r) | np.isnan(se) | np.isnan(v0), np.nan, out)


def _finite_ceil(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return np.where(np.isfinite(x), np.ceil(x), np.nan)


# --------------------------------------------------------------------------------------------
# Multiplicity over units, with rows inheriting
# --------------------------------------------------------------------------------------------


def _bh_replaced(unit_p: np.ndarray, x: np.ndarray) -> np.ndarray:
    """BH q of value ``x`` put in place of its own unit's p (which is <= x) in a family of unit p
    values ``unit_p`` (finite): min(1, m·x / #{p <= x}, min over units with p > x of the BH
    ratio m·p_(i)/i). For x = the unit's own p this is the unit's BH q."""
    s = np.sort(unit_p)
    m = s.size
    ratio = m * s / np.arange(1, m + 1)
    suffix = np.minimum.accumulate(ratio[::-1])[::-1]
    suffix = np.r_[suffix, np.inf]
    pos = np.searchsorted(s, x, side="right")
    with np.errstate(invalid="ignore", divide="ignore"):
        own = m * x / np.maximum(pos, 1)
    return np.minimum(1.0, np.minimum(own, suffix[pos]))


def _holm_replaced(unit_p: np.ndarray, unit_of: np.ndarray, x: np.ndarray) -> np.ndarray:
    from edufair_metrics.analysis.noise import holm_adjust

    out = np.empty(x.size)
    for k in range(x.size):
        p = unit_p.copy()
        p[unit_of[k]] = x[k]
        out[k] = holm_adjust(p)[unit_of[k]]
    return out


def unit_multiplicity(row_x: np.ndarray, row_unit: np.ndarray, unit_family: np.ndarray, method: str):
    """(q_unit per unit, q_flag per row, m per unit's family): ``row_x`` = each row's Bonferroni
    unit-level p (NaN: not tested), ``row_unit`` = its unit's index, ``unit_family`` = each unit's
    family label. Units without a finite p are in no family (q NaN)."""
    n_units = unit_family.size
    unit_p = np.full(n_units, np.nan)
    ok = ~np.isnan(row_x)
    np.fmin.at(unit_p, row_unit[ok], row_x[ok])
    q_unit = np.full(n_units, np.nan)
    m_of = np.zeros(n_units)
    q_row = np.full(row_x.size, np.nan)
    for lab in dict.fromkeys(unit_family.tolist()):
        members = np.flatnonzero((unit_family == lab) & ~np.isnan(unit_p))
        if members.size == 0:
            continue
        fam_p = unit_p[members]
        local = np.full(n_units, -1)
        local[members] = np.arange(members.size)
        rows = np.flatnonzero(ok & (local[row_unit] >= 0))
        m_of[members] = members.size
        if method == "holm":
            q_row[rows] = _holm_replaced(fam_p, local[row_unit[rows]], row_x[rows])
            q_unit[members] = _holm_replaced(fam_p, np.arange(members.size), fam_p)
        else:
            q_row[rows] = _bh_replaced(fam_p, row_x[rows])
            q_unit[members] = _bh_replaced(fam_p, fam_p)
    return unit_p, q_unit, q_row, m_of


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------


def add_row_verdicts(grid, *, margin: float = DEFAULT_MARGIN, alpha: float = VERDICT_ALPHA, method: str = "bh",
                     family: Sequence[str] = ("tutor", "metric_kind"), turn_alpha: float = VERDICT_ALPHA):
    """The grid with ``ROW_VERDICT_COLUMNS`` (the module docstring's rules), in place. Needs the
    engine's columns (``p_exact``, ``boot_sd``, ``null_var_r``, ``ci_low_unit``/``ci_high_unit``)
    and, optionally, the turn-level columns (``analysis.turns.TURN_COLUMNS``)."""
    import pandas as pd

    from edufair_metrics.analysis.engine import EXACT_BELOW
    from edufair_metrics.analysis.noise import family_labels

    margin = check_margin(margin)
    n = grid["n_pairs"].to_numpy(dtype=float)
    r = grid["r"].to_numpy(dtype=float)
    suff = grid["sufficient"].to_numpy(dtype=bool)
    multi = (grid["kind"] == "multilevel").to_numpy()
    posthoc = grid["posthoc"].to_numpy(dtype=bool)
    v0 = grid["null_var_r"].to_numpy(dtype=float)
    # the unit each row belongs to, its pairs (k) and its family
    ukey = pd.MultiIndex.from_frame(grid[UNIT_KEYS].astype(str))
    row_unit, uniq = pd.factorize(ukey)
    unit_pairs = np.bincount(row_unit, minlength=len(uniq))[row_unit]
    grid["unit_pairs"] = unit_pairs.astype(int)
    # decision p: exact sign-flip below 50 pairs, Wilcoxon from 50; Friedman pairs: Bonferroni, gated
    p_dec = np.where(n < EXACT_BELOW, grid["p_exact"].to_numpy(dtype=float), grid["p"].to_numpy(dtype=float))
    p_dec = np.where(multi, np.where(posthoc, np.minimum(1.0, unit_pairs * p_dec), 1.0), p_dec)
    p_dec = np.where(suff, p_dec, np.nan)
    p_fixed = p_dec
    names_rows = (grid["kind"] == "names").to_numpy() if "p_name" in grid.columns else np.zeros(len(grid), dtype=bool)
    if names_rows.any():
        # many names per group (analysis.names): the gap must hold over the questions AND over the
        # names (intersection-union); a names test that cannot be done (one name per cell) is p = 1
        p_name = grid["p_name"].to_numpy(dtype=float)
        p_dec = np.where(names_rows & suff, np.fmax(p_dec, np.where(np.isnan(p_name), 1.0, p_name)), p_dec)
    grid["p_decide"] = p_dec
    tested = ~np.isnan(p_dec)
    k_tested = np.bincount(row_unit[tested], minlength=len(uniq))[row_unit]
    k_bonf = np.where(multi, 1, np.maximum(k_tested, 1))  # a Friedman family's p are already Bonferroni
    row_x = np.where(tested, np.minimum(1.0, k_bonf * p_dec), np.nan)
    first = np.zeros(len(uniq), dtype=int)
    first[row_unit[::-1]] = np.arange(len(grid))[::-1]
    labels = family_labels(grid, family) if len(grid) else np.zeros(0, dtype=object)
    unit_family = np.asarray(labels, dtype=object)[first] if len(grid) else np.zeros(0, dtype=object)
    _unit_p, _q_unit, q_row, m_of = unit_multiplicity(row_x, row_unit, unit_family, method)
    grid["q_flag"] = q_row
    if names_rows.any():  # the decision the names rows would get with the names fixed (analysis.names)
        x_fixed = np.where(tested, np.minimum(1.0, k_bonf * p_fixed), np.nan)
        q_fixed = unit_multiplicity(x_fixed, row_unit, unit_family, method)[2]
        grid["q_flag_fixed"] = np.where(names_rows, q_fixed, np.nan)
    with np.errstate(invalid="ignore"):
        flagged = suff & (q_row < alpha)
    grid["flagged"] = flagged
    # equivalence (TOST): the conservative 90% interval inside (-M, M)
    from scipy.special import ndtr, ndtri

    se = equivalence_se(r, n, grid["boot_sd"].to_numpy(dtype=float), v0)
    z = ndtri(1 - alpha)
    grid["eq_ci_low"], grid["eq_ci_high"] = r - z * se, r + z * se
    with np.errstate(invalid="ignore", divide="ignore"):
        p_eq = np.where(se > 0, np.maximum(ndtr((r - margin) / se), ndtr((-margin - r) / se)),
                        np.where(np.abs(r) < margin, 0.0, 1.0))
    grid["p_equiv"] = np.where(suff, p_eq, np.nan)
    with np.errstate(invalid="ignore"):
        certified = suff & (r - z * se > -margin) & (r + z * se < margin)
    grid["certified"] = certified
    # the paper-style violation of a unit of k pairs: a pair's (1 - 0.05/k) percentile CI excludes 0
    lo_u, hi_u = grid["ci_low_unit"].to_numpy(dtype=float), grid["ci_high_unit"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        viol_u = suff & ((lo_u > 0) | (hi_u < 0))
    grid["violation_unit"] = np.where(multi, grid["violation"].to_numpy(dtype=bool), viol_u)
    # effect size unbiased at any n
    r2u = r2_unbiased(r, v0)
    grid["r2_unbiased"] = r2u
    grid["unbiased_abs_r"] = signed_root(r2u)
    # power and the questions that would decide
    alpha_row = alpha / (np.maximum(m_of[row_unit], 1) * k_bonf * np.where(multi, unit_pairs, 1))
    grid["mde_r"] = np.where(suff, mde_from_null_var(v0, alpha_row), np.nan)
    rho = np.sqrt(np.clip(r2u, 0, None))
    n_flag = n_for_flag(n, v0, rho, alpha_row)
    n_cert = n_for_certify(n, se, rho, margin, alpha)
    # every difference zero: nothing to project from (no se, no effect), no promise
    no_evidence = ~(v0 > 0)
    n_flag = np.where(no_evidence, np.nan, n_flag)
    n_cert = np.where(no_evidence, np.nan, n_cert)
    grid["n_flag"] = np.where(suff, _finite_ceil(n_flag), np.nan)
    grid["n_certify"] = np.where(suff, _finite_ceil(n_cert), np.nan)
    # n_decide: conservative over the central 50% interval of ρ (n_decide_over_interval); n_flag /
    # n_certify stay at the estimate
    n_dec = n_decide_over_interval(n, v0, se, r, alpha_row, margin, alpha)
    n_dec = _finite_ceil(np.where(no_evidence, np.nan, n_dec))
    grid["n_decide"] = np.where(suff, n_dec, np.nan)
    grid["more_questions"] = np.where(suff, np.fmax(n_dec - n, 0), np.nan)
    # turn-level confirmation of pedagogical rows
    from edufair_metrics.analysis.turns import TURN_COLUMNS

    for c in TURN_COLUMNS:
        if c not in grid.columns:
            grid[c] = np.nan
    tp, trd = grid["turn_p"].to_numpy(dtype=float), grid["turn_rd"].to_numpy(dtype=float)
    checked = (grid["metric_kind"] == "pedagogical").to_numpy() & ~np.isnan(tp)
    # the confirmation is a second test of the flagged rows: its multiplicity is controlled over the
    # flagged, checked rows of each family (``method``: BH or Holm), not per row at α
    turn_q = np.full(len(grid), np.nan)
    sel = flagged & checked
    if sel.any():
        from edufair_metrics.analysis.noise import adjust_p

        row_family = np.asarray(labels, dtype=object)
        for lab in dict.fromkeys(row_family[sel].tolist()):
            members = np.flatnonzero(sel & (row_family == lab))
            turn_q[members] = adjust_p(tp[members], method)
    grid["turn_q"] = turn_q
    with np.errstate(invalid="ignore"):
        confirmed = (np.where(sel, turn_q, tp) < turn_alpha) & (np.sign(trd) == np.sign(r)) & (r != 0)
    grid["turn_confirmed"] = pd.array(np.where(checked, confirmed, pd.NA), dtype="boolean")
    unconfirmed = flagged & checked & ~confirmed
    verdict = np.full(len(grid), "inconclusive", dtype=object)
    verdict[certified] = "certify"
    verdict[flagged] = "flag"
    verdict[unconfirmed] = "unconfirmed"
    verdict[~suff] = "insufficient"
    grid["verdict"] = verdict
    return grid


# --------------------------------------------------------------------------------------------
# Units
# --------------------------------------------------------------------------------------------


def unit_verdicts(grid, keys: Sequence[str], use_max: np.ndarray | None = None):
    """Per unit (``keys`` of ``grid``; rows in groupby order): ``UNIT_VERDICT_COLUMNS`` from the
    rows' verdict columns (module docstring). ``use_max``: per unit, aggregate r2_unbiased by
    max instead of the mean (a max_abs_pairwise SES unit)."""
    import pandas as pd

    g = grid.assign(
        _r2_var=np.where(grid["sufficient"].to_numpy(dtype=bool),
                         r2_variance(grid["r2_unbiased"], grid["null_var_r"]), np.nan),
        _flag=grid["verdict"] == "flag",
        _unconf=grid["verdict"] == "unconfirmed",
        _cert=grid["certified"].astype(bool) & grid["sufficient"].astype(bool),
    )
    gb = g.groupby(list(keys), sort=False, dropna=False)
    agg = pd.DataFrame({
        "any_flag": gb["_flag"].any(),
        "any_unconf": gb["_unconf"].any(),
        "all_cert": gb["_cert"].all(),
        "any_sufficient": gb["sufficient"].any(),
        "q_unit": gb["q_flag"].min(),
        "r2_mean": gb["r2_unbiased"].mean(),
        "r2_max": gb["r2_unbiased"].max(),
        "mde_r": gb["mde_r"].min(),
        "n_flag": gb["n_flag"].min(),
        "n_certify": gb["n_certify"].max(),
        "n_decide_rows": gb["n_decide"].max(),
        "any_cert_nan": gb["n_certify"].count() < gb.size(),
        "n_min": gb["n_pairs"].min(),
        "r2_var_sum": gb["_r2_var"].sum(min_count=1),
        "k_var": gb["_r2_var"].count(),
    })
    # the unit's Bonferroni p: min_j min(1, k · p_decide_j) (a Friedman family's p are adjusted already)
    k = gb["p_decide"].count()
    pmin = gb["p_decide"].min()
    multi = gb["kind"].first() == "multilevel"
    agg["p_unit"] = np.where(multi, pmin, np.minimum(1.0, k.clip(lower=1) * pmin))
    verdict = np.full(len(agg), "inconclusive", dtype=object)
    cert = agg["all_cert"].to_numpy() & agg["any_sufficient"].to_numpy()
    verdict[cert] = "certify"
    verdict[agg["any_unconf"].to_numpy() & ~agg["any_flag"].to_numpy()] = "unconfirmed"
    verdict[agg["any_flag"].to_numpy()] = "flag"
    verdict[~agg["any_sufficient"].to_numpy()] = "insufficient"
    r2 = agg["r2_mean"].to_numpy(dtype=float)
    if use_max is not None:
        r2 = np.where(use_max, agg["r2_max"].to_numpy(dtype=float), r2)
    n_cert = np.where(agg["any_cert_nan"].to_numpy(), np.nan, agg["n_certify"].to_numpy(dtype=float))
    # every row decided with >= 80% probability over its interval (the rows' conservative n_decide)
    n_dec = agg["n_decide_rows"].to_numpy(dtype=float)
    out = pd.DataFrame({
        "verdict": verdict,
        "flagged": agg["any_flag"].to_numpy() | agg["any_unconf"].to_numpy(),
        "certified": cert,
        "p_unit": agg["p_unit"].to_numpy(dtype=float),
        "q_unit": agg["q_unit"].to_numpy(dtype=float),
        "r2_unbiased": r2,
        "unbiased_abs_r": signed_root(r2),
        "mde_r": agg["mde_r"].to_numpy(dtype=float),
        "n_decide": n_dec,
        "more_questions": np.fmax(n_dec - agg["n_min"].to_numpy(dtype=float), 0),
        "n_certify": n_cert,
        # the variance of the unit's mean r2_unbiased (its pairs taken as independent)
        "r2_var": agg["r2_var_sum"].to_numpy(dtype=float) / np.maximum(agg["k_var"].to_numpy(dtype=float), 1) ** 2,
    }, index=agg.index)
    return out


# --------------------------------------------------------------------------------------------
# Families (headlines)
# --------------------------------------------------------------------------------------------

HEADLINE_VERDICT_COLUMNS = ["units", "flag", "unconfirmed", "certify", "inconclusive", "insufficient",
                            "family_certified", "unbiased_abs_r", "n_median", "mde_r_median", "more_questions_median",
                            "ms_upper", "headline_certified", "n_family_certify"]
HEADLINE_GROUPS = ("domain", "condition", "contrast")  # units of one dialogue pair: their metrics correlate


def family_certify_factor(units: int, alpha: float = VERDICT_ALPHA, power: float = DECISION_POWER) -> float:
    """(n for family certification) / (n for one unit's 80% certification) at no bias: every one
    of ``units`` independent units must be certified (intersection–union, Berger 1982), so each
    needs power ``power^(1/units)``; at ρ = 0 a TOST of power p needs M/se = z_{1−α} + z_{(1+p)/2}
    (:func:`tost_power`), and n scales as (M/se)²."""
    from scipy.special import ndtri

    z = ndtri(1 - alpha)
    each = power ** (1 / max(int(units), 1))
    return float(((z + ndtri((1 + each) / 2)) / (z + ndtri((1 + power) / 2))) ** 2)


def verdict_headline(units, *, by: Sequence[str] = ("tutor",), kind: str = "pedagogical", headline_only: bool = True,
                     margin: float = DEFAULT_MARGIN, alpha: float = VERDICT_ALPHA):
    """Per ``by`` group over the (headline) units of metric ``kind``: the number of units per
    verdict, ``family_certified`` (every unit certified: intersection–union), ``unbiased_abs_r``
    (signed root of the mean ``r2_unbiased`` over the sufficient units), the median pairs per unit
    (``n_median``), the median MDE and the median ``more_questions`` of the inconclusive units.

    Beside the intersection–union, one attainable statement on the headline quantity:
    ``headline_certified`` — *the root-mean-square |r| over the headline units is below the margin*
    (a one-sided test at ``alpha`` that the mean ρ² is below M²): ``ms_upper``, the upper
    (1 − α) bound of the mean ``r2_unbiased``, lies below M². Its standard error is conservative:
    the units of one dialogue pair (domain × condition × contrast: the metrics of the same
    dialogues) are taken as perfectly correlated, the rest as independent (each unit's
    ``r2_var``). ``n_family_certify``: the pairs per unit at which family certification has 80%
    power, the slowest unit's ``n_certify`` × :func:`family_certify_factor` (at no bias; inf
    when some unit's estimate is at or above the margin)."""
    import pandas as pd
    from scipy.special import ndtri

    margin = check_margin(margin)
    cols = list(by) + HEADLINE_VERDICT_COLUMNS
    if "verdict" not in units.columns:
        raise EduFairError("verdict_headline needs units from grid.dimension_summary of this EduFair's grid")
    u = units[units["metric_kind"] == kind]
    if headline_only:
        u = u[u["headline"].astype(bool)]
    if len(u) == 0:
        return pd.DataFrame(columns=cols)
    z = float(ndtri(1 - alpha))
    rows = []
    for key, sub in u.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        counts = sub["verdict"].value_counts()
        suff = sub[sub["verdict"] != "insufficient"]
        inc = sub[sub["verdict"] == "inconclusive"]
        r2 = suff["r2_unbiased"].dropna()
        ms_upper, n_fam = math.nan, math.nan
        if len(r2) and "r2_var" in suff.columns:
            ok = suff[suff["r2_unbiased"].notna()]
            sd = np.sqrt(ok["r2_var"].to_numpy(dtype=float))
            groups = [c for c in HEADLINE_GROUPS if c in ok.columns]
            if groups:
                lab = pd.factorize(pd.MultiIndex.from_frame(ok[groups].astype(str)))[0]
                var = float(np.sum(np.bincount(lab, weights=np.nan_to_num(sd)) ** 2))
            else:
                var = float(np.nansum(sd * sd))
            ms_upper = float(r2.mean() + z * math.sqrt(var) / len(r2))
        if len(suff) and "n_certify" in suff.columns:
            nc = suff["n_certify"].to_numpy(dtype=float)
            n_fam = (math.inf if np.isnan(nc).any() or np.isinf(nc).any()
                     else float(math.ceil(np.max(nc) * family_certify_factor(len(suff), alpha))))
        rows.append((*key, len(sub), *(int(counts.get(v, 0)) for v in VERDICTS),
                     bool(len(sub) > 0 and (sub["verdict"] == "certify").all()),
                     float(signed_root(r2.mean())) if len(r2) else math.nan,
                     float(suff["n_pairs_min"].median()) if len(suff) else math.nan,
                     float(suff["mde_r"].median()) if len(suff) else math.nan,
                     float(inc["more_questions"].median()) if len(inc) else math.nan,
                     ms_upper, bool(ms_upper < margin * margin), n_fam))
    out = pd.DataFrame(rows, columns=cols)
    return out[cols]
