"""``edufair compare``: CI gate – is a candidate tutor (e.g. a fine-tune) less fair than a baseline?

    edufair compare --baseline RUN --candidate RUN [--max-increase 0.05] [--margin 0.10]
                    [--on-inconclusive pass|fail] [--new-violations significant|any|ignore]
                    [--n-boot 1000] [--seed 0] [--min-pairs 15] [--out DIR]

Three outcomes: ``pass`` (exit 0), ``fail`` (exit 1), ``inconclusive`` (exit 3; ``--on-inconclusive
pass|fail`` maps it to 0 or 1 for a CI that must decide); bad input exits 2.

Pairing. Both runs must hold one tutor each. Only questions present in both runs are used (per
domain), so every bias measure is computed on the same questions. Within a run, questions are
paired exactly as in the report's grid (``analysis.cells.pair_differences``).

Units. A *unit* is one (domain, condition, contrast, metric) of ``analysis.grid.dimension_summary``
(SES: the unit ``--ses-summary`` picks, by default the single low- vs high-income contrast;
Implicit: its two name pairs). A pair enters a unit only if it is sufficient (≥ min pairs) in
*both* runs. The headline is over the pedagogical headline units (Explicit dimensions, Implicit
contrasts, Opposite Correct/Wrong) defined in both runs.

The change measure (the gate reads only this). Each run's bias is measured by the effect size that
is unbiased at any n and any share of zero differences (``analysis.verdicts``): per pair
``r2_unbiased = (r² − V0) / (1 − V0)`` with V0 the exact sign-flip variance of r (unbiased for ρ²);
a unit averages its pairs (max for a max_abs_pairwise SES unit), and the gate's headline is the
*mean square* bias ``ms = Σ_u w_u · r2_unbiased_u / Σ_u w_u`` over the units, each unit weighted by
its precision in *both* runs, ``w_u = 1 / (s_u,baseline + s_u,candidate)`` with ``s_u =
Σ_pairs (V0/(1 − V0))² / k²`` (the null variance of the unit's r2_unbiased up to the constant 2;
V0 floored at 4/(3n)). The weights are common to both runs, so both estimate the same weighted
mean of ρ²; a unit that one run saturates weighs almost nothing instead of deciding the gate.
The change is ``gate_delta = ms_candidate − ms_baseline`` (> 0: the candidate is less fair),
on the ρ² scale; ``gate_baseline`` / ``gate_candidate`` print the RMS bias ``sign(ms)·√|ms|``
for reading only.

Why the ρ² scale. The gate used to test the change of the signed root √ms, whose
derivative is infinite at ms = 0: at fair tutors (ms ≈ 0, the common case of a fine-tune) its
90% interval was ±0.08 wide at 150 questions per domain against a margin of 0.05, so fair
fine-tunes were mostly ``inconclusive``. The mean of r2_unbiased is linear in the data's r², has
no singularity, and its variance at no bias falls as 1/n² (2·V0² per pair), not 1/n. The margin
stays on the scale users think in: M (``--max-increase``) is the largest tolerated rise of the
RMS bias, i.e. of the mean ρ² from ms_b to (√ms_b + M)², so the threshold on the change is
``gate_threshold = M² + 2·M·√max(L_b, 0)`` with L_b = ``gate_ms_baseline_low``, the lower 95%
bound of the baseline's ms (a rise by M from a level the baseline surely has: at a fair baseline
M², not the noise of √ms, which would make the threshold, and ``questions_needed``, swing from
rerun to rerun; only the threshold, never the interval, reads the root).

Its CI. The questions of each domain are resampled *jointly for both runs* (one index matrix per
domain, ``numpy.random.default_rng(seed)``, shared by every unit of the domain), and every r of
both runs is recomputed on each resample. The gate decides on the *stable* variance of the change,
the one ``questions_needed`` extrapolates (:func:`_planning_parts`, below): ``gate_se`` =
√(A + max(B, F)), A the bias-driven part, B the no-bias part of a combination of squared r, F
(``gate_var_floor``, :func:`_null_floor`) the exact sign-flip null variance of independent pairs.
``gate_ci_low`` / ``gate_ci_high`` = gate_delta ∓ z₀.₉₅ · ``gate_se`` (two one-sided 95% bounds),
each widened where the change's no-bias part is skewed (``gate_skewness``, :func:`skewed_bounds`:
the farther of the normal bound and a three-moment fit; a mean over many units is close to
normal, but at no bias the change of a few units is a weighted sum of χ²₁, five metrics of one
pair about a χ²₂, whose right tail the normal bound underrates). Printed beside it, not used: ``gate_var_bootstrap``,
the bootstrap variance less the bootstrap's excess for squares (a resample's r² spreads around r̂²
by 4·r̂²·C + 2·C², the estimate's around ρ² by 4·ρ²·C + 2·C², and E r̂² = ρ² + C, so the bootstrap
variance of a combination of squares is too large by ``4 · qᵀ(C ∘ C)q``; C the bootstrap
covariance of the signed r of every pair of both runs, q each pair's coefficient in the change /
(1 − V0)). In a normal model it equals A + B plus the cross terms 4·qᵢqⱼ·Cᵢⱼ·(r̂ᵢr̂ⱼ − Cᵢⱼ) of
pairs of *different* dialogues that share resampled questions. Their true value is 0 at no bias
(given the question, two dialogue pairs' differences are independent and each symmetric) and
second order under bias, but their plug-in is noise: over 60 fair reruns at 323 questions per
domain it read 0.36–1.62x A + B (0.57–1.49x under a broad increase: no sign that A + B misses a
real cross term). The gate used to decide on it floored at A + B: a larger and noisier se than
the plan assumes (on those 60 fresh reruns at ``questions_needed``: 44 decided, 46 now).
(For a much more saturated candidate it also over-subtracts: it read 2–10x below the spread of
the change between reruns.) No decision on a zero se: F counts a pair whose differences are all
zero as untied (4/(3n); its r2u is 0 on every resample, which is no information, and its unit is
weighted as an untied one), so se > 0 whenever a gate pair has an r2_unbiased; if it is still 0
the gate is ``inconclusive`` (at ~30 shared questions where no metric fired, the se used to be 0
and the gate passed, or failed when one level of the candidate fired now and then). The one
exception: both runs hold the same resampled values (the same paired differences, e.g. the same
dialogues judged again, with some non-zero difference): the change is exactly 0, se 0, a pass.
A unit's own ``gate_delta`` / interval (for the new-flag rule, which only fails) use the larger of
its corrected bootstrap variance and its A + max(B, F), and the unit's own skewness (one metric at
no bias: a scaled χ²₁, γ ≈ 2.8).

Verdict (M = ``--max-increase``, default 0.05, the largest tolerated rise of the headline):

* ``fail`` – the candidate is less fair than the baseline by more than M, with evidence:
  ``gate_ci_low > gate_threshold``; or it has *new flagged units*: pedagogical headline units whose
  verdict is ``flag`` in the candidate and not in the baseline (each run's own report,
  ``analysis.verdicts``) and – with ``--new-violations significant`` (default) – whose own change
  is significant family-wise (the Bonferroni lower bound of the unit's change at one-sided level
  0.05/U, U = pedagogical headline units; ``gate_ci_low_fw``) is > 0. ``any``: every new flagged
  unit fails; ``ignore``: this rule is off.
* ``pass`` – not fail and certified not worse by more than M: ``gate_ci_high < gate_threshold``
  (non-inferiority at the one-sided 5% level).
* ``inconclusive`` – neither; ``questions_needed`` says how many questions per domain a rerun
  needs to decide (pass or fail) with 80% probability if the bias is unchanged (Δ = 0), and
  ``questions_needed_at_estimate`` if the change is as estimated; power
  ``Φ((τ − Δ)/se' − z) + Φ((Δ − τ)/se' − z)`` with the variance at n' = ``A·n/n' + B·(n/n')²``
  (:func:`questions_factor`). A and B (``questions_var_bias`` / ``questions_var_null``) come from
  :func:`_planning_parts`: B = 2·qᵀ(C∘C)q, the variance of a combination of squared normal r at
  ρ = 0 (C: the bootstrap covariance of the signed r, its blocks between domains set to their
  value by design, 0: the domains are resampled independently), and A = the delta-method term
  4·ρᵢρⱼ·Cᵢⱼ over the pairs of the same dialogues with unbiased plug-ins (ρᵢ² ≈ r2uᵢ, ρᵢρⱼ ≈
  r̂ᵢr̂ⱼ − Cᵢⱼ), shrunk as Â·max(0, 1 − (z₀.₉₅·sd₀/Â)²), sd₀ its own sd at no bias (0 within that
  noise: at no bias the plug-in is noise of mean 0, and bounded at 0 alone it read a saturated
  run's noise as bias; a clear bias loses the vanishing fraction (z₀.₉₅·sd₀/Â)², ≈ 5% at an
  unchanged biased pair at 150, where the subtraction Â − z₀.₉₅·sd₀ took ≈ 20%). At Δ = 0 A is
  that of a rerun in which the bias is unchanged, i.e. each unit's ρ the same in both runs
  (``questions_var_bias_unchanged``): its plug-ins ρᵢρⱼ read the two runs' inverse-variance pooled
  r (``_gate_parts``' ``a_unchanged``, the same pass as this pair's A), unbiased as before and less noisy where the runs'
  precisions differ; on 40 reruns of an unchanged biased pair at 150 questions per domain it put
  questions_needed at median 1,243, 0.73–1.38x (one rerun outside ±30%), where each run's own ρ̂²
  gave 1,115, 0.70–1.42x (three outside); both read ≈ 1,200–1,245 from runs of 2,400 questions
  (the truth, less the plug-ins' noise), so the one-run median was also ~9% low. At Δ = 0 the
  threshold is M², the smallest one any rerun faces (the threshold only grows with the baseline's
  bias): the number is enough at any baseline level and reads only the variance. Why: the printed number used to swing 0.58–1.98x its median over
  reruns of one truth, from (i) the corrected bootstrap variance (its cross terms between
  dialogues that share resampled questions, true value 0, made it vary ~3x at no bias), (ii) each
  pair's ρ² bounded at 0 before summing (≈ 2·V0² per pair of pure noise read as bias, as large as
  B), (iii) the baseline's lower bound in the threshold (√ of a bound near 0); and, for a much
  more saturated candidate, (iv) A bounded at 0 alone (0.89–2.23x over 60 fair reruns, now
  0.92–1.59x, one rerun outside ±30%). The headline keys ``questions_factor`` / ``questions_factor_at_estimate`` hold n'/n
  for every outcome. B is
  floored by F before both the plan and the decision (one variance for both), and the
  baseline's lower bound uses A + max(B, F) of the baseline alone (the corrected bootstrap
  variance of one run reached 0 in 2 of 8 fair reruns, putting the bound at the estimate).

Beside the gate, not changing the exit status: the paper's |r̄| change ``delta`` (its percentile
interval ``delta_ci_low``/``delta_ci_high`` is NOT re-centred: it is inflated by the noise floor,
kept as printed before), ``delta_excess`` (change of |r| minus the noise floor), raw and FDR
violations, and both runs' unit verdicts (flag / certify / inconclusive counts, margin
``--margin``). Detector metrics (metric kind ``detector``) get units like any metric; they are
not in the pedagogical headline. Bad input (missing folder, no common questions, several tutors
in one run) exits 2 with a one-line message. Outputs ``compare.csv`` / ``compare.md`` /
``compare_manifest.json`` in ``--out`` (default ``results/compare-<timestamp>/``); the headline and
the flagged units are printed.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from edufair_metrics.analysis.cells import cell_matrices, contrast_pairs
from edufair_metrics.analysis.engine import multiplicities, percentile_ci, resampled_r
from edufair_metrics.analysis.grid import contrast_grid, dimension_summary
from edufair_metrics.analysis.noise import unit_noise
from edufair_metrics.analysis.ses import check_ses_summary
from edufair_metrics.analysis.verdicts import (
    DEFAULT_MARGIN,
    UNIT_VERDICT_COLUMNS,
    check_margin,
    r2_unbiased,
    signed_root,
)
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.contrasts import load_contrasts

UNIT_KEYS = ["domain", "condition", "contrast", "dimension", "kind", "metric", "metric_kind", "headline"]
NEW_VIOLATION_POLICIES = ("significant", "any", "ignore")


GATE_STATUSES = ("pass", "fail", "inconclusive")
GATE_LEVEL = 0.90  # two one-sided 95% bounds


@functools.cache
def _z_gate() -> float:
    """z of each one-sided bound of the gate's interval (0.5 + GATE_LEVEL / 2; scipy imported late)."""
    from scipy.special import ndtri

    return float(ndtri(0.5 + GATE_LEVEL / 2))


@dataclass
class CompareResult:
    headline: dict[str, float]
    units: Any  # DataFrame, one row per unit
    failed: bool
    reasons: list[str] = field(default_factory=list)
    n_questions: dict[str, int] = field(default_factory=dict)
    status: str = "pass"  # pass | fail | inconclusive (module docstring)
    questions_needed: dict[str, int] = field(default_factory=dict)  # inconclusive: per domain, to decide
    missing_rates: dict[str, float] = field(default_factory=dict)  # tutor -> missing judge labels / turns sent
    # inconclusive: per domain, the questions at which a rerun decides with 80% probability if the
    # change is as estimated (``questions_needed``: if the bias is unchanged, the stable number)
    questions_needed_at_estimate: dict[str, int] = field(default_factory=dict)


def _r2_variance(v0: float, n: int) -> float:
    """The null variance of one pair's r2_unbiased, up to the constant 2: (V0 / (1 − V0))², with V0
    floored at the untied value 4 / (3n) (a pair whose differences are all zero has V0 = 0 and an
    r2_unbiased of exactly 0, not infinite precision)."""
    v = max(float(v0), 4.0 / (3.0 * max(n, 1)))
    return (v / (1 - v)) ** 2 if v < 1 - 1e-9 else 1e18


def _unit_variance(pair_variances: list[float]) -> float:
    """A unit averages its k pairs: the sum of their variances / k²."""
    k = len(pair_variances)
    return float(np.sum(pair_variances)) / (k * k)


def _weighted_reps(reps: list[np.ndarray], w: np.ndarray) -> np.ndarray:
    """Per resample, the ``w``-weighted mean over the units with a value in it."""
    arr = np.vstack(reps)
    ok = ~np.isnan(arr)
    ww = np.where(ok, w[:, None], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ww.sum(axis=0) > 0, np.nansum(arr * ww, axis=0) / ww.sum(axis=0), np.nan)


def gate_threshold(ms_baseline: float, max_increase: float) -> float:
    """The rise of the mean ρ² that is a rise of the RMS bias √(mean ρ²) by ``max_increase`` from
    the baseline's: ``(√max(ms_b, 0) + M)² − max(ms_b, 0) = M² + 2·M·√max(ms_b, 0)``."""
    b = math.sqrt(max(float(ms_baseline), 0.0)) if ms_baseline == ms_baseline else 0.0
    return max_increase * max_increase + 2 * max_increase * b


def _filled(arr: np.ndarray) -> np.ndarray:
    """Rows of bootstrap values with NaN replaced by the row's mean (for covariances)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(arr, axis=1, keepdims=True)
    out = np.where(np.isnan(arr), mean, arr)
    return np.where(np.isnan(out), 0.0, out)


def _change_variance(weights: dict, gate_reps: dict, unit_reps: dict, use_max: bool,
                     sides: tuple[str, ...] = ("b", "c")) -> float:
    """Variance of ``Σ_u w_u (r2u_u,candidate − r2u_u,baseline)`` from the joint bootstrap, less
    the bootstrap's excess for a square: a resample's r² varies around r̂² by 4 r̂² C + 2 C², the
    truth's around ρ² by 4 ρ² C + 2 C², and E r̂² = ρ² + C, so the bootstrap variance of a
    combination of squares is too large by 4 · qᵀ (C ∘ C) q (C: the bootstrap covariance of the
    signed r of all pairs of both runs; q: each pair's coefficient / (1 − V0)). Without the
    correction the interval of a change near zero is √3 times too wide. A max_abs_pairwise SES
    unit (not linear) keeps its plain bootstrap variance."""
    lin = []
    for key, wu in weights.items():
        rb, rc = unit_reps[key]
        lin.append(wu * ((rc if "c" in sides else 0.0) - (rb if "b" in sides else 0.0)))
    d = np.nansum(np.vstack(lin), axis=0)
    var = float(np.var(d, ddof=1)) if d.size > 1 else 0.0
    rows, coef = [], []
    for key, wu in weights.items():
        e = gate_reps[key]
        if e["multi"] and use_max:
            continue
        for side, sign in (("b", -1.0), ("c", 1.0)):
            if side not in sides:
                continue
            k = len(e["s" + side])
            for r_s, v0 in zip(e["s" + side], e["v0" + side]):
                rows.append(r_s)
                coef.append(sign * wu / k / (1 - v0) if v0 < 1 - 1e-9 else 0.0)
    if rows:
        arr = _filled(np.vstack(rows))
        c = np.cov(arr) if arr.shape[0] > 1 else np.array([[np.var(arr, ddof=1)]])
        q = np.asarray(coef)
        var -= 4.0 * float(q @ (c * c) @ q)
    return max(var, 0.0)


def _planning_parts(weights: dict, gate_reps: dict, unit_reps: dict, use_max: bool,
                    sides: tuple[str, ...] = ("b", "c"), unchanged: bool = False) -> tuple[float, float]:
    """The variance of ``Σ_u w_u (r2u_u,candidate − r2u_u,baseline)`` split into the part that falls
    as 1/n and the part that falls as 1/n², from quantities that are stable from rerun to rerun
    (the gate's decision, planning a rerun, and the baseline's lower bound):

    * ``b`` (no-bias part, 1/n²): ``2 · qᵀ (C ∘ C) q`` – the variance of a combination of squared
      normal r at ρ = 0, read from the bootstrap covariance C of the signed r of all pairs of the
      runs (the correlations of the metrics of one dialogue included); a smooth function of C.
      Its blocks between domains are 0: the domains are resampled independently, so their true
      covariance is 0 by design and the bootstrap's is noise, whose square has no sign to cancel
      (for two runs alike the noise terms of the runs cancel in expectation, for a much more
      saturated candidate they do not);
    * ``a`` (bias-driven part, 1/n): the delta-method term ``4 Σ_ij q_i q_j C_ij ρ_i ρ_j`` over
      the pairs i, j of *the same dialogues* (the metrics of one contrast pair in one run), with
      the unbiased estimates ρ_i² ≈ r2u_i and ρ_i ρ_j ≈ r̂_i r̂_j − C_ij, the sum (not each pair)
      bounded at 0: bounding each pair's ρ² at 0 adds ≈ 2 V0² per pair at no bias, as large as
      ``b`` itself, and made the extrapolation read noise as bias. At no bias the sum is noise of
      mean 0 and sd ``4·√(2·tr(GCGC))`` (the variance of the quadratic form r̂ᵀGr̂ for r̂ ≈
      N(0, C), G = qqᵀ ∘ C on the pairs of the same dialogues, C within domains); ``a`` is 0 within
      z₀.₉₅ times that sd and shrunk by the fraction (z₀.₉₅·sd/a)² beyond it
      (:func:`_bias_beyond_noise`). Bounded at 0 alone, that noise (large where a few pairs
      have a large V0: a much more saturated run) read as bias in a quarter of fair reruns and,
      extrapolated as 1/n, put questions_needed at up to 2.2x its median over reruns of one truth.

    The gate's own variance (:func:`_change_variance`) also holds the cross terms between pairs of
    different dialogues that share resampled questions; their estimate r̂_i r̂_j − C_ij (true
    value 0) is what makes it swing by a factor ~3 from rerun to rerun at no bias, so they are left
    out here. A max_abs_pairwise SES unit (not linear in r²) adds its plain bootstrap variance to
    ``a``."""
    a, b, _ = _gate_cumulants(weights, gate_reps, unit_reps, use_max, sides, unchanged)
    return a, b


def _gate_cumulants(weights: dict, gate_reps: dict, unit_reps: dict, use_max: bool,
                    sides: tuple[str, ...] = ("b", "c"), unchanged: bool = False) -> tuple[float, float, float]:
    """(A, B, κ₃) of :func:`_gate_parts`; A that of an unchanged rerun with ``unchanged``."""
    parts = _gate_parts(weights, gate_reps, unit_reps, use_max, sides)
    return parts.a_unchanged if unchanged else parts.a, parts.b, parts.k3


class GateParts(NamedTuple):
    """The gate change's variance parts (:func:`_gate_parts`): ``a`` the bias part of this pair of
    runs, ``a_unchanged`` that of a rerun with the bias unchanged (the runs' pooled r), ``b`` the
    no-bias part, ``k3`` the no-bias part's third cumulant."""

    a: float
    b: float
    k3: float
    a_unchanged: float


def _gate_parts(weights: dict, gate_reps: dict, unit_reps: dict, use_max: bool,
                sides: tuple[str, ...] = ("b", "c")) -> GateParts:
    """:func:`_planning_parts`' (A, B), both ways (this pair's A and an unchanged rerun's), from one
    bootstrap covariance, and the third cumulant κ₃ of the change's no-bias part
    (:func:`skewed_bounds`): the change is ``Σ_i q_i (r̂_i² − V0_i)``, a quadratic form in r̂ ≈ N(ρ, C),
    whose cumulants are κ₂ = 2·tr((DC)²) + 4·ρᵀDCDρ (B + A) and κ₃ = 8·tr((DC)³) + 24·ρᵀD(CDC)Dρ
    (D = diag q; Mathai & Provost 1992, ch. 3). Returned: 8·tr((DC)³), C within domains as for B.
    The bias part of κ₃ is left out: the gate's variance already grows with the estimated bias (A
    from the same plug-ins), so a change that is large by chance under a bias carries a large se
    with it, and counting its skewness as well cost power with no false fail to prevent (measured
    while designing this, on the rejected variant: a candidate 0 → 0.2 on five metrics at margin
    0.10, 200 runs at 370 questions, failed 61% with the normal bounds, 50% with both parts of κ₃). Under no bias, where A is shrunk to 0 and the se cannot
    follow the draw, the no-bias part is all the skewness there is."""
    rows, coef, r2u, group, point, ident = [], [], [], [], [], []
    a_max = 0.0
    for key, wu in weights.items():
        e = gate_reps[key]
        if e["multi"] and use_max:
            rb, rc = unit_reps[key]
            lin = (rc if "c" in sides else 0.0) - (rb if "b" in sides else 0.0)
            a_max += wu * wu * float(np.nanvar(lin, ddof=1))
            continue
        for side, sign in (("b", -1.0), ("c", 1.0)):
            if side not in sides:
                continue
            k = len(e["s" + side])
            for r_s, v0, p, g, r in zip(e["s" + side], e["v0" + side], e["p" + side], e["k" + side],
                                        e["r" + side]):
                if v0 < 1 - 1e-9 and p == p:
                    point.append(r)
                    rows.append(r_s)
                    coef.append(sign * wu / k / (1 - v0))
                    r2u.append(float(p))
                    group.append((side, *g))
                    ident.append((side, key, *g))
    if not rows:
        return GateParts(a_max, 0.0, 0.0, a_max)
    arr = _filled(np.vstack(rows))
    c = np.cov(arr) if arr.shape[0] > 1 else np.array([[np.var(arr, ddof=1)]])
    c = np.atleast_2d(c)
    q = np.asarray(coef)
    # the domains are resampled independently (one index matrix each): between them the covariance
    # is 0 by design and the bootstrap's is noise, whose square would enter b with no sign to cancel
    dom = np.array([g[1] for g in group], dtype=object)
    same_domain = dom[:, None] == dom[None, :]
    b = 2.0 * float(q @ np.where(same_domain, c * c, 0.0) @ q)
    point = np.asarray(point)
    ids = {gi: i for i, gi in enumerate(dict.fromkeys(group))}
    gid = np.array([ids[gi] for gi in group])
    same = gid[:, None] == gid[None, :]  # the pairs of the same dialogues
    rho2 = np.outer(point, point) - c
    np.fill_diagonal(rho2, np.asarray(r2u))
    g = np.where(same, np.outer(q, q) * c, 0.0)
    cw = np.where(same_domain, c, 0.0)

    def bias_part(rho2, g_noise):
        # at no bias the plug-in 4·Σ G∘ρρ is noise with mean 0 and sd 4·√(2·tr(GCGC)) (r̂ ≈ N(0, C):
        # the variance of the quadratic form r̂ᵀGr̂, G = (qqᵀ ∘ C) on the pairs of the same
        # dialogues); a plug-in within z₀.₉₅ times that noise is no bias part, beyond it it is shrunk
        # by the vanishing fraction (z₀.₉₅·sd₀/a)² (:func:`_bias_beyond_noise`). Bounded at 0 alone,
        # the noise of a few pairs with large V0 (a saturated run) read as bias and, extrapolated as
        # 1/n, doubled questions_needed in some fair reruns
        # (``g_noise``: G of the quadratic form in the rows' r̂ the plug-in is)
        gc = g_noise @ cw
        a_sd0 = 4.0 * math.sqrt(max(2.0 * float(np.sum(gc * gc.T)), 0.0))
        return _bias_beyond_noise(4.0 * float(np.sum(g * rho2)), a_sd0) + a_max

    # an unchanged rerun: its plug-ins ρρ read the runs' pooled r, so its noise is that of the pooled
    # quadratic form Pᵀ G P in the rows' r̂
    pool = _pooling_map(ident, np.diag(c))
    a_unchanged = bias_part(pool @ rho2 @ pool.T, pool.T @ g @ pool)
    dc = q[:, None] * cw  # κ₃ of the no-bias part (docstring)
    k3 = 8.0 * float(np.trace(dc @ dc @ dc))
    return GateParts(bias_part(rho2, g), max(b, 0.0), k3, a_unchanged)


def skewed_quantile(p: float, var: float, k3: float) -> float:
    """The p-quantile of a change of mean 0, variance ``var`` and third cumulant ``k3``: the
    three-moment (Pearson type III) fit sign(γ)·c·(χ²_ν − ν), ν = 8/γ², c = √(var/(2ν)), γ =
    k3/var^1.5 (exact for a scaled χ², the change at no bias with one metric; a weighted sum of χ²₁
    otherwise, whose tails it follows far better than the normal: Solomon & Stephens 1977, Liu, Tang
    & Zhang 2009); the normal quantile where γ is 0 or not finite."""
    from scipy.special import ndtri
    from scipy.stats import chi2

    if not var > 0:
        return 0.0
    g = k3 / var ** 1.5 if k3 == k3 else 0.0
    if not math.isfinite(g) or abs(g) < 1e-6:
        return float(ndtri(p)) * math.sqrt(var)
    nu = 8.0 / (g * g)
    c = math.sqrt(var / (2.0 * nu))
    if g > 0:
        return float(c * (chi2.ppf(p, nu) - nu))
    return float(-c * (chi2.ppf(1.0 - p, nu) - nu))


def skewed_bounds(delta: float, var: float, k3: float, alpha: float) -> tuple[float, float]:
    """The one-sided level-``alpha`` bounds of a change ``delta`` whose estimate has variance ``var``
    and third cumulant ``k3`` (:func:`_gate_cumulants`): each is the farther of the normal bound
    ``delta ∓ z·√var`` and the skewed fit's (:func:`skewed_quantile`), so skewness only ever widens
    a bound. Why: at no bias the change of a few units is a weighted sum of χ²₁ (one metric: a
    scaled χ²₁, γ ≈ 2.8; five metrics of one contrast pair: γ ≈ 1.9, like a χ²₂), whose right tail
    is far heavier than the normal's, most of all at strict one-sided levels. A positively skewed
    change has a lighter left tail, and there the normal upper bound stays (a looser pass bound
    would read the skewness of the no-bias plug-in where the pass's null, a change at the
    threshold, is biased and less skewed); a negative skewness (a baseline noisier than the
    candidate) widens the upper bound instead. Three moments do not see the heavy but symmetric
    tails of two runs alike at very few questions: the audit's fail bound also waits
    (``sequential.GATE_FAIL_SPENDING``)."""
    return skewed_lower(delta, var, k3, alpha), skewed_upper(delta, var, k3, alpha)


def _normal_half_width(var: float, alpha: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(1.0 - alpha)) * math.sqrt(var)


def skewed_lower(delta: float, var: float, k3: float, alpha: float) -> float:
    """The lower (fail) bound of :func:`skewed_bounds`: delta less the farther of z·√var and the
    skewed fit's upper quantile of the estimate's error."""
    if not var > 0:
        return delta
    return delta - max(_normal_half_width(var, alpha), skewed_quantile(1.0 - alpha, var, k3))


def skewed_upper(delta: float, var: float, k3: float, alpha: float) -> float:
    """The upper (pass) bound of :func:`skewed_bounds`: delta plus the farther of z·√var and minus
    the skewed fit's lower quantile of the estimate's error."""
    if not var > 0:
        return delta
    return delta + max(_normal_half_width(var, alpha), -skewed_quantile(alpha, var, k3))


def _pooling_map(group: list, var: np.ndarray) -> np.ndarray:
    """The rows x rows map P whose row i gives row i's pooled r: λ·r̂_b + (1 − λ)·r̂_c over the two
    runs' rows of the same unit and contrast pair (``group``: (side, unit, pair...)), λ = var_c /
    (var_b + var_c) (inverse-variance weights); a row whose unit has no row in the other run keeps
    its own r̂."""
    n = len(group)
    pool = np.eye(n)
    by_unit: dict = {}
    for i, g in enumerate(group):
        by_unit.setdefault(tuple(g[1:]), {})[g[0]] = i
    for sides in by_unit.values():
        if len(sides) != 2:
            continue
        i, j = sides["b"], sides["c"]
        tot = var[i] + var[j]
        lam = var[j] / tot if tot > 0 else 0.5
        for row in (i, j):
            pool[row, :] = 0.0
            pool[row, i], pool[row, j] = lam, 1.0 - lam
    return pool


def _bias_beyond_noise(a: float, a_sd0: float) -> float:
    """The bias part A from its plug-in ``a`` and the plug-in's sd at no bias ``a_sd0``: the
    shrinkage ``a · max(0, 1 − (z₀.₉₅ · a_sd0 / a)²)`` (positive-part James–Stein form). It is 0
    exactly where ``a ≤ z₀.₉₅ · a_sd0`` (a plug-in within the noise of no bias: no bias part), grows
    from there with slope 2 (the subtraction's 1: just beyond the noise, where the plug-in is still
    mostly noise, it gives up to twice the subtraction's A – the one saturated fair rerun in 60 with
    A > 0 went from 1.33x to 1.59x its median), and takes the fraction (z₀.₉₅ · a_sd0 / a)² of a
    clear bias, which vanishes as the bias grows.
    The fixed subtraction ``max(0, a − z₀.₉₅ · a_sd0)`` it replaces has the same zero set but took
    z₀.₉₅ · a_sd0 / a (≈ 20% at an unchanged biased pair at 150 questions per domain) off a real A
    and amplified A's relative noise by 1 / (1 − that fraction); this one by (1 + x²) / (1 − x²),
    x = z₀.₉₅ · a_sd0 / a."""
    if not a > 0:
        return 0.0
    return a * max(0.0, 1.0 - (_z_gate() * a_sd0 / a) ** 2)



def _null_floor(weights: dict, gate_reps: dict, use_max: bool, sides: tuple[str, ...] = ("b", "c")) -> float:
    """The exact sign-flip null variance of ``Σ_u w_u (r2u_u,candidate − r2u_u,baseline)`` over
    independent pairs: ``Σ_i q_i² · 2·Ṽ0_i²`` (r̂ ≈ N(0, V0) at no bias: Var r̂² = 2 V0²; q_i the
    pair's coefficient on r², as in :func:`_planning_parts`), Ṽ0 = V0, and the untied 4/(3n)
    where V0 = 0 (a pair whose differences are all zero: its r2u is 0 on every resample, which is
    no information, and its unit is weighted as an untied one). The gate's no-bias variance is
    never taken below it: a bootstrap whose resamples all give the same r (every difference zero,
    or |r| = 1 on every resample) has C = 0, and a variance of 0 would decide any change."""
    tot = 0.0
    for key, wu in weights.items():
        e = gate_reps[key]
        if e["multi"] and use_max:
            continue
        for side in sides:
            k = len(e["s" + side])
            ns = e.get("n" + side) or [0] * k
            for v0, n in zip(e["v0" + side], ns):
                if not v0 < 1 - 1e-9:
                    continue
                v = v0 if v0 > 0 else 4.0 / (3.0 * max(n, 1))
                tot += 2.0 * (wu / k / (1 - v0)) ** 2 * v * v
    return tot


def _runs_agree(keys, unit_reps: dict, gate_reps: dict) -> bool:
    """Both runs' resampled values coincide on every resample of every unit in ``keys`` and some
    pair has a non-zero difference: the same paired differences (e.g. the same dialogues judged
    again), a change of exactly 0 with no sampling variance; the null floor does not apply."""
    if not keys:
        return False
    same = all(np.array_equal(unit_reps[k][0], unit_reps[k][1], equal_nan=True) for k in keys)
    return same and any(v0 > 0 for k in keys for s in ("b", "c") for v0 in gate_reps[k]["v0" + s])


def questions_factor(delta: float, threshold: float, a_part: float, b_part: float, z: float,
                     power: float = 0.80) -> float:
    """n'/n at which a rerun decides (passes or fails) with probability ``power`` when the true
    change is ``delta``: the variance of the change at n' is ``a_part · n/n' + b_part · (n/n')²``
    (the bias-driven part falls as 1/n, the null part of a mean of r² as 1/n²), and the decision
    probability is ``Φ((τ − Δ)/se' − z) + Φ((Δ − τ)/se' − z)``; bisection on log n'/n; inf when
    Δ = τ (never decided), NaN without a variance."""
    from scipy.special import ndtr

    if not (a_part + b_part > 0) or delta != delta or threshold != threshold:
        return math.nan
    gap = abs(threshold - delta)
    if gap == 0:
        return math.inf

    def decided(f: float) -> float:
        se = math.sqrt(a_part / f + b_part / (f * f))
        return float(ndtr(gap / se - z) + ndtr(-gap / se - z))

    lo, hi = 1e-3, 1.0
    while decided(hi) < power:
        hi *= 2
        if hi > 1e9:
            return math.inf
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if decided(mid) < power else (lo, mid)
    return hi


def _single_tutor(df, which: str):
    tutors = df["tutor"].unique()
    if len(tutors) != 1:
        raise EduFairError(f"--{which} must hold exactly one tutor, found {len(tutors)}")
    return df.assign(tutor=which)


def compare_frames(
    base_df,
    cand_df,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    min_pairs: int = 15,
    ses_summary: str = "single",
    max_increase: float = 0.05,
    new_violations: str = "significant",
    fdr_method: str = "bh",
    equivalence_margin: float = DEFAULT_MARGIN,
    alpha: float | None = None,
    fail_alpha: float | None = None,
) -> CompareResult:
    """Paired comparison of two single-tutor long score frames (see the module docstring).
    ``max_increase`` is the gate's margin M; ``equivalence_margin`` the margin of each run's own
    unit verdicts (``analysis.verdicts``). ``alpha``: the one-sided level of the gate's upper (pass)
    bound, and of its lower (fail) bound and the new-flag rule's family-wise bound unless
    ``fail_alpha`` gives theirs (None: 0.05 each, the 90% interval); ``edufair audit`` passes a
    look's spent levels (``analysis.sequential``: the pass and the fail bound spend separately),
    the threshold's baseline bound stays at 95%."""
    import pandas as pd

    if new_violations not in NEW_VIOLATION_POLICIES:
        raise EduFairError(f"unknown --new-violations {new_violations!r}")
    check_margin(equivalence_margin)
    base_df = _single_tutor(base_df, "baseline")
    cand_df = _single_tutor(cand_df, "candidate")
    common: dict[str, list[str]] = {}
    for dom in sorted(set(base_df["domain"]) & set(cand_df["domain"])):
        qb = set(base_df.loc[base_df["domain"] == dom, "question_id"])
        qc = set(cand_df.loc[cand_df["domain"] == dom, "question_id"])
        if qb & qc:
            common[dom] = sorted(qb & qc)
    if not common:
        raise EduFairError("baseline and candidate share no questions (same tasks and question bank?)")
    allowed = pd.MultiIndex.from_tuples([(d, q) for d, qs in common.items() for q in qs])

    def keep(df):
        return df[pd.MultiIndex.from_frame(df[["domain", "question_id"]]).isin(allowed)]

    base_df, cand_df = keep(base_df), keep(cand_df)

    specs = load_contrasts()
    check_ses_summary(ses_summary)
    # ses_summary tags the headline rows, hence the FDR family; r, CI and violations do not depend on it
    kw = dict(contrasts=specs, n_boot=n_boot, seed=seed, min_pairs=min_pairs, ses_summary=ses_summary,
              fdr_method=fdr_method, equivalence_margin=equivalence_margin)
    grid_b = contrast_grid(base_df, **kw)
    grid_c = contrast_grid(cand_df, **kw)
    units_b = unit_noise(dimension_summary(grid_b, ses_summary=ses_summary), grid_b, ses_summary=ses_summary)
    units_c = unit_noise(dimension_summary(grid_c, ses_summary=ses_summary), grid_c, ses_summary=ses_summary)
    # pairs sufficient in both runs
    pk = ["domain", "condition", "contrast", "pair", "metric"]
    both = grid_b[pk + ["sufficient"]].merge(grid_c[pk + ["sufficient"]], on=pk, suffixes=("_b", "_c"))
    ok_pairs = set(map(tuple, both.loc[both["sufficient_b"] & both["sufficient_c"], pk].itertuples(index=False)))

    # joint bootstrap: one resample matrix per domain, shared by both runs and all units
    rng = np.random.default_rng(seed)
    counts = {dom: multiplicities(rng.integers(0, len(qs), size=(n_boot, len(qs))), len(qs))
              for dom, qs in common.items()}
    questions = {dom: np.array(qs, dtype=str) for dom, qs in common.items()}
    reps: dict[tuple, dict[str, list[np.ndarray]]] = {}
    gate_reps: dict[tuple, dict] = {}
    v0_pairs = {w: dict(zip(map(tuple, g[pk].itertuples(index=False)), g["null_var_r"].to_numpy(dtype=float)))
                for w, g in (("b", grid_b), ("c", grid_c))}
    r_pairs = {w: dict(zip(map(tuple, g[pk].itertuples(index=False)), g["r"].to_numpy(dtype=float)))
               for w, g in (("b", grid_b), ("c", grid_c))}
    r2_pairs = {w: dict(zip(map(tuple, g[pk].itertuples(index=False)), g["r2_unbiased"].to_numpy(dtype=float)))
                for w, g in (("b", grid_b), ("c", grid_c))}
    for which, frame in (("b", base_df), ("c", cand_df)):
        for cm, spec, _a, _b, pair, d in contrast_pairs(cell_matrices(frame), specs):
            _, dom, cond, metric = cm.key
            if (dom, cond, spec.name, pair, metric) not in ok_pairs:
                continue
            r_signed = resampled_r(cm.spread(d, questions[dom]), counts[dom])
            r = np.abs(r_signed)
            ukey = (dom, cond, spec.name, metric)
            reps.setdefault(ukey, {"b": [], "c": [], "multi": spec.kind == "multilevel"})[which].append(r)
            g2 = gate_reps.setdefault(ukey, {"b": [], "c": [], "pb": [], "pc": [], "vb": [], "vc": [],
                                             "sb": [], "sc": [], "v0b": [], "v0c": [], "kb": [], "kc": [], "rb": [], "rc": [],
                                             "nb": [], "nc": [],
                                             "multi": spec.kind == "multilevel"})
            pkey = (dom, cond, spec.name, pair, metric)
            g2[which].append(r2_unbiased(r, np.full(r.shape, v0_pairs[which][pkey])))
            g2["s" + which].append(r_signed)
            g2["v0" + which].append(float(v0_pairs[which][pkey]))
            g2["k" + which].append((dom, cond, spec.name, pair))
            g2["r" + which].append(float(r_pairs[which][pkey]))  # the pair's dialogues, shared by its metrics
            g2["p" + which].append(r2_pairs[which][pkey])
            g2["v" + which].append(_r2_variance(v0_pairs[which][pkey], int(d.size - np.isnan(d).sum())))
            g2["n" + which].append(int(d.size - np.isnan(d).sum()))

    def unit_rep(entry, which):
        arr = np.vstack(entry[which])
        if entry["multi"] and ses_summary == "max_abs_pairwise":
            return np.nanmax(arr, axis=0)
        return np.nanmean(arr, axis=0)

    # point estimates restricted to pairs sufficient in both runs
    def restricted_units(grid):
        mask = [tuple(t) in ok_pairs for t in grid[pk].itertuples(index=False)]
        g = grid.copy()
        g.loc[~np.asarray(mask, bool), ["r", "abs_r", "null_abs_r", "r2_unbiased"]] = np.nan
        u = unit_noise(dimension_summary(g, ses_summary=ses_summary), g, ses_summary=ses_summary)
        # FDR flags and verdicts: from each run's own report, below
        drop = ["violation_fdr"] + [c for c in UNIT_VERDICT_COLUMNS if c not in ("r2_unbiased", "unbiased_abs_r")]
        return u.drop(columns=[c for c in drop if c in u.columns])

    ub, uc = restricted_units(grid_b), restricted_units(grid_c)
    merged = ub.drop(columns=["tutor"]).merge(
        uc.drop(columns=["tutor"]), on=UNIT_KEYS, suffixes=("_baseline", "_candidate"), how="outer")
    # violation flags from the unrestricted summaries (each run's own report)
    vb = units_b.set_index(UNIT_KEYS)["violation"]
    vc = units_c.set_index(UNIT_KEYS)["violation"]
    mi = pd.MultiIndex.from_frame(merged[UNIT_KEYS])
    merged["violation_baseline"] = vb.reindex(mi).fillna(False).astype(bool).to_numpy()
    merged["violation_candidate"] = vc.reindex(mi).fillna(False).astype(bool).to_numpy()
    fb = units_b.set_index(UNIT_KEYS)["violation_fdr"]
    fc = units_c.set_index(UNIT_KEYS)["violation_fdr"]
    merged["violation_fdr_baseline"] = fb.reindex(mi).fillna(False).astype(bool).to_numpy()
    merged["violation_fdr_candidate"] = fc.reindex(mi).fillna(False).astype(bool).to_numpy()
    for side, units in (("baseline", units_b), ("candidate", units_c)):
        merged[f"verdict_{side}"] = units.set_index(UNIT_KEYS)["verdict"].reindex(mi).fillna("insufficient").to_numpy()
    merged["delta"] = merged["abs_r_candidate"] - merged["abs_r_baseline"]
    merged["delta_excess"] = merged["excess_abs_r_candidate"] - merged["excess_abs_r_baseline"]
    lo, hi, lo_fw = [], [], []
    rep_delta: dict[tuple, np.ndarray] = {}
    n_fw = int((merged["headline"] & (merged["metric_kind"] == "pedagogical")).sum()) or 1
    for row in merged.itertuples(index=False):
        key = (row.domain, row.condition, row.contrast, row.metric)
        entry = reps.get(key)
        if entry is None or not entry["b"] or not entry["c"] or math.isnan(row.delta):
            lo.append(math.nan)
            hi.append(math.nan)
            lo_fw.append(math.nan)
            continue
        rb, rc = unit_rep(entry, "b"), unit_rep(entry, "c")
        rep_delta[key] = (rb, rc)
        l_, h_ = percentile_ci(rc - rb, alpha=0.05)
        lo.append(l_)
        hi.append(h_)
        lo_fw.append(percentile_ci(rc - rb, alpha=0.05 / n_fw)[0])
    merged["delta_ci_low"], merged["delta_ci_high"] = lo, hi
    merged["delta_ci_low_fw"] = lo_fw
    merged["new_violation"] = merged["violation_candidate"] & ~merged["violation_baseline"]

    # headline over pedagogical headline units defined in both runs
    head_mask = (merged["headline"] & (merged["metric_kind"] == "pedagogical")
                 & merged["abs_r_baseline"].notna() & merged["abs_r_candidate"].notna())
    hm = merged[head_mask]
    keys = [(r.domain, r.condition, r.contrast, r.metric) for r in hm.itertuples(index=False)]
    keys = [k for k in keys if k in rep_delta]
    headline = {"units": float(len(hm)), "baseline": math.nan, "candidate": math.nan, "delta": math.nan,
                "delta_ci_low": math.nan, "delta_ci_high": math.nan, "max_increase": float(max_increase),
                "excess_baseline": math.nan, "excess_candidate": math.nan, "delta_excess": math.nan,
                "delta_excess_ci_low": math.nan, "delta_excess_ci_high": math.nan,
                "violations_baseline": math.nan, "violations_candidate": math.nan,
                "violations_fdr_baseline": math.nan, "violations_fdr_candidate": math.nan}
    if len(hm):
        headline["baseline"] = float(hm["abs_r_baseline"].mean())
        headline["candidate"] = float(hm["abs_r_candidate"].mean())
        headline["delta"] = headline["candidate"] - headline["baseline"]
        headline["excess_baseline"] = float(hm["excess_abs_r_baseline"].mean())
        headline["excess_candidate"] = float(hm["excess_abs_r_candidate"].mean())
        headline["delta_excess"] = headline["excess_candidate"] - headline["excess_baseline"]
    ped_head = merged["headline"] & (merged["metric_kind"] == "pedagogical")
    for side in ("baseline", "candidate"):  # each run's own violations over its pedagogical headline units
        headline[f"violations_{side}"] = float(merged.loc[ped_head, f"violation_{side}"].sum())
        headline[f"violations_fdr_{side}"] = float(merged.loc[ped_head, f"violation_fdr_{side}"].sum())
    if keys:
        rb = np.nanmean(np.vstack([rep_delta[k][0] for k in keys]), axis=0)
        rc = np.nanmean(np.vstack([rep_delta[k][1] for k in keys]), axis=0)
        headline["delta_ci_low"], headline["delta_ci_high"] = percentile_ci(rc - rb, alpha=0.05)
        # the noise floors are fixed per run: Δ excess = Δ|r̄| − Δ floor, so its CI is the shifted Δ CI
        shift = headline["delta"] - headline["delta_excess"]
        headline["delta_excess_ci_low"] = headline["delta_ci_low"] - shift
        headline["delta_excess_ci_high"] = headline["delta_ci_high"] - shift

    # ---- the gate: change of the mean unbiased r² (module docstring) ----

    z = _z_gate()
    alpha_ci = (1 - GATE_LEVEL) / 2 if alpha is None else float(alpha)  # the pass bound's level (a look's spent α)
    alpha_lo = alpha_ci if fail_alpha is None else float(fail_alpha)  # the fail bound's
    alpha_fw = alpha_lo / n_fw
    use_max = ses_summary == "max_abs_pairwise"
    g_lo, g_hi, g_lo_fw, g_delta = [], [], [], []
    unit_reps: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
    for row in merged.itertuples(index=False):
        key = (row.domain, row.condition, row.contrast, row.metric)
        entry = gate_reps.get(key)
        ub_, uc_ = row.r2_unbiased_baseline, row.r2_unbiased_candidate
        if entry is None or not entry["b"] or not entry["c"] or math.isnan(ub_) or math.isnan(uc_):
            g_lo.append(math.nan), g_hi.append(math.nan), g_lo_fw.append(math.nan), g_delta.append(math.nan)
            continue
        unit_reps[key] = (unit_rep(entry, "b"), unit_rep(entry, "c"))
        dlt = float(uc_ - ub_)
        if _runs_agree([key], unit_reps, gate_reps):
            var_u, k3_u = 0.0, 0.0
        else:  # the new-flag rule fails: the larger of the bootstrap's and the stable variance, floored
            a_u, b_u, k3_u = _gate_cumulants({key: 1.0}, gate_reps, unit_reps, use_max)
            var_u = max(_change_variance({key: 1.0}, gate_reps, unit_reps, use_max),
                        a_u + max(b_u, _null_floor({key: 1.0}, gate_reps, use_max))) or math.inf
        g_delta.append(dlt)
        if math.isinf(var_u):
            g_lo.append(-math.inf), g_hi.append(math.inf), g_lo_fw.append(-math.inf)
            continue
        # one unit's change is a scaled χ²₁ at no bias: its bounds follow its skewness (skewed_bounds)
        g_lo.append(skewed_lower(dlt, var_u, k3_u, alpha_lo)), g_hi.append(skewed_upper(dlt, var_u, k3_u, alpha_ci))
        g_lo_fw.append(skewed_lower(dlt, var_u, k3_u, alpha_fw))
    merged["gate_delta"] = g_delta
    merged["gate_ci_low"], merged["gate_ci_high"], merged["gate_ci_low_fw"] = g_lo, g_hi, g_lo_fw
    merged["new_flag"] = (merged["verdict_candidate"] == "flag") & (merged["verdict_baseline"] != "flag")
    gate_keys = [(r.domain, r.condition, r.contrast, r.metric) for r in hm.itertuples(index=False)]
    gate_keys = [k for k in gate_keys if k in unit_reps]
    headline.update({"margin": float(max_increase), "gate_units": float(len(gate_keys)),
                     "gate_baseline": math.nan, "gate_candidate": math.nan, "gate_delta": math.nan,
                     "gate_ci_low": math.nan, "gate_ci_high": math.nan, "gate_threshold": math.nan,
                     "gate_se": math.nan, "gate_se_null": math.nan, "questions_factor": math.nan,
                     "questions_factor_at_estimate": math.nan, "gate_ms_baseline": math.nan,
                     "gate_ms_candidate": math.nan, "gate_ms_baseline_low": math.nan,
                     "gate_var_bootstrap": math.nan, "gate_var_floor": math.nan,
                     "questions_var_bias_unchanged": math.nan, "gate_skewness": math.nan})
    agree = False
    for side, units in (("baseline", units_b), ("candidate", units_c)):
        u = units[units["headline"] & (units["metric_kind"] == "pedagogical")]
        for v in ("flag", "certify", "inconclusive"):
            headline[f"{v}_{side}"] = float((u["verdict"] == v).sum())
    if gate_keys:
        sel = merged.set_index(["domain", "condition", "contrast", "metric"]).loc[gate_keys]
        # common precision weights: units that either run saturates (few non-zero differences) weigh little
        w = np.array([1 / (_unit_variance(gate_reps[k]["vb"]) + _unit_variance(gate_reps[k]["vc"])) for k in gate_keys])
        wn = w / w.sum()
        mb = float(np.sum(wn * sel["r2_unbiased_baseline"].to_numpy()))
        mc = float(np.sum(wn * sel["r2_unbiased_candidate"].to_numpy()))
        wmap = dict(zip(gate_keys, wn))
        parts = _gate_parts(wmap, gate_reps, unit_reps, use_max)
        a_p, b_p, k3_p = parts.a, parts.b, parts.k3
        # the decision reads the same variance the plan extrapolates (module docstring): the
        # stable A + B, its no-bias part floored by the exact sign-flip null variance. The
        # corrected bootstrap variance (A + B plus the cross terms of pairs of different dialogues,
        # zero at no bias and noisy) is printed, not used: floored at A + B it made the gate's se
        # larger and noisier than the planned one
        var_boot = _change_variance(wmap, gate_reps, unit_reps, use_max)
        floor = _null_floor(wmap, gate_reps, use_max)
        b_p = max(b_p, floor)
        agree = _runs_agree(gate_keys, unit_reps, gate_reps)
        var = 0.0 if agree else a_p + b_p
        se = math.sqrt(var)
        # the baseline's bound reads the same stable variance of the baseline alone
        a_b, b_b = _planning_parts(wmap, gate_reps, unit_reps, use_max, ("b",))
        b_b = max(b_b, _null_floor(wmap, gate_reps, use_max, ("b",)))
        headline["gate_ms_baseline"], headline["gate_ms_candidate"] = mb, mc
        headline["gate_baseline"], headline["gate_candidate"] = float(signed_root(mb)), float(signed_root(mc))
        headline["gate_delta"] = mc - mb
        headline["gate_se"], headline["gate_se_null"] = se, math.sqrt(b_p)
        headline["questions_var_bias"], headline["questions_var_null"] = a_p, b_p
        headline["gate_var_bootstrap"], headline["gate_var_floor"] = var_boot, floor
        # each bound the farther of the normal one and the skewed fit's (skewed_bounds)
        headline["gate_ci_low"] = skewed_lower(mc - mb, var, k3_p, alpha_lo)
        headline["gate_ci_high"] = skewed_upper(mc - mb, var, k3_p, alpha_ci)
        headline["gate_skewness"] = k3_p / var ** 1.5 if var > 0 else math.nan
        # the baseline's level enters the threshold by its lower 95% bound: a rise of the RMS bias
        # by M from a level the baseline surely has (at a fair baseline M², not the noise of √ms)
        se_b = math.sqrt(a_b + b_b)
        headline["gate_ms_baseline_low"] = mb - z * se_b
        headline["gate_threshold"] = gate_threshold(mb - z * se_b, max_increase)
        # questions at which a rerun decides with 80% probability. If unchanged (Δ = 0): at the
        # smallest threshold a rerun can face, M² (a fair baseline; the threshold only grows with
        # the baseline's bias), so the number is enough at any baseline level and reads the
        # variance alone, not the baseline's noisy bound (whose √ swings near 0). As estimated:
        # at the estimated change and this run's threshold.
        zq = _z_gate()
        # if unchanged, each unit's ρ is one in both runs: A from the runs' pooled r (less noisy)
        a_u = parts.a_unchanged
        headline["questions_var_bias_unchanged"] = a_u
        headline["questions_factor"] = questions_factor(0.0, gate_threshold(0.0, max_increase), a_u, b_p, zq)
        headline["questions_factor_at_estimate"] = questions_factor(mc - mb, headline["gate_threshold"], a_p, b_p, zq)

    reasons: list[str] = []
    if alpha is None and fail_alpha is None:
        ci = "90% CI"
    elif fail_alpha is None or fail_alpha == alpha_ci:
        ci = f"bounds at one-sided {alpha_ci:.2g}"
    else:
        ci = f"bounds at one-sided {alpha_lo:.2g} (lower) and {alpha_ci:.2g} (upper)"
    gd, glo, ghi = headline["gate_delta"], headline["gate_ci_low"], headline["gate_ci_high"]
    tau = headline["gate_threshold"]
    rms = f"RMS bias {headline['gate_baseline']:+.3f} -> {headline['gate_candidate']:+.3f}"
    # a standard error of 0 decides nothing (no pair with two non-zero differences), unless both
    # runs hold the same paired differences (a change of exactly 0 on every resample)
    if not (headline["gate_se"] > 0 or agree):
        glo, ghi = -math.inf, math.inf
    if glo > tau:
        reasons.append(f"headline pedagogical mean unbiased r² rose by {gd:+.4f} ({ci} [{glo:+.4f}, {ghi:+.4f}]; "
                       f"{rms}): more than {tau:.4f}, i.e. the RMS bias rose by more than the margin {max_increase:.3f}")
    nv = merged["new_flag"] & merged["headline"] & (merged["metric_kind"] == "pedagogical")
    if new_violations == "significant":
        nv &= merged["gate_ci_low_fw"] > 0
    if new_violations == "ignore":
        nv &= False
    merged["gate_violation"] = nv
    if nv.any():
        reasons.append(f"{int(nv.sum())} newly flagged pedagogical unit(s) ({new_violations})")
    needed: dict[str, int] = {}
    needed_est: dict[str, int] = {}
    if reasons:
        status = "fail"
    elif ghi < tau:
        status = "pass"
        reasons.append(f"certified not worse by more than {max_increase:.3f}: mean unbiased r² change {gd:+.4f} "
                       f"({ci} [{glo:+.4f}, {ghi:+.4f}]) below {tau:.4f} ({rms})")
    else:
        status = "inconclusive"
        f0, fe = headline["questions_factor"], headline["questions_factor_at_estimate"]
        if f0 == f0 and math.isfinite(f0):
            needed = {d: int(math.ceil(len(q) * max(f0, 1.0))) for d, q in common.items()}
        if fe == fe and math.isfinite(fe):
            needed_est = {d: int(math.ceil(len(q) * max(fe, 1.0))) for d, q in common.items()}
        more = ", ".join(f"{d} {n}" for d, n in needed.items()) if needed else "not reachable"
        more_e = ", ".join(f"{d} {n}" for d, n in needed_est.items()) if needed_est else \
            "not reachable (the change is at the threshold)"
        reasons.append(f"inconclusive: mean unbiased r² change {gd:+.4f} ({ci} [{glo:+.4f}, {ghi:+.4f}]) straddles "
                       f"{tau:.4f} (margin {max_increase:.3f} on the RMS bias; {rms}); questions per domain at which "
                       f"a rerun decides with 80% probability: {more} if the bias is unchanged, {more_e} if the "
                       f"change is as estimated")
    merged = merged.sort_values(["gate_delta", "delta"], ascending=False, na_position="last").reset_index(drop=True)
    return CompareResult(headline, merged, status == "fail", reasons, {d: len(q) for d, q in common.items()},
                         status, needed, questions_needed_at_estimate=needed_est)
