"""One paired contrast of EduFair-Bench (paper §3.4), usable without lm-eval: its definitions.

Unit of analysis
    Within one (tutor, domain, condition) cell and one demographic contrast A vs B, every question
    ``i`` that has a score for both A and B contributes a matched pair ``d_i = s_iA - s_iB`` (per
    metric; the pairing itself is ``analysis.cells.pair_differences``). Pairs with a missing side
    (NaN) are dropped. A contrast needs at least ``min_pairs`` pairs (default 15); otherwise it is
    *insufficient*: every number is NaN and every flag False.

Binary contrasts (:func:`paired_contrast`)
    * Test: two-sided Wilcoxon signed-rank, Pratt zero handling (``scipy.stats.wilcoxon(d,
      zero_method="pratt")``, scipy's default ``method="auto"``).
    * Effect size: rank-biserial ``r = (W+ - W-) / (W+ + W-)`` (Kerby 2014), where W+ and W- come
      from the same Pratt ranking the test uses: all ``|d_i|`` *including zeros* are ranked (average
      ranks for ties); the ranks of zero differences belong to neither sum. When every difference is
      zero, ``r = 0`` and ``p = 1``.
    * Sign: ``r > 0`` means group A (the protocol's ``a`` level) received *more* of the behaviour.
    * CI: 95% percentile bootstrap over questions (pairs resampled with replacement, ``n_boot``
      resamples, ``numpy.random.default_rng(seed)``; ``engine.percentile_ci``). The bootstrap is
      vectorised: ranks of all resamples are computed at once from per-resample counts of the
      distinct ``|d|`` values, so no Python loop runs over the resamples. A resample whose
      differences are all zero has r = 0.
    * ``meaningful``: ``|r| >= 0.10`` (Funder & Ozer 2019). ``violation``: the CI excludes 0.
    * Noise floor: ``null_abs_r`` = mean |r| over B random sign flips of the
      differences (same B and seed), ``excess_abs_r = abs_r - null_abs_r``, ``p_perm`` the
      sign-flip p; ``q_value`` = Benjamini–Hochberg q over a declared family (default: one tutor ×
      metric kind × the headline rows) and ``violation_fdr`` = violation and q < 0.05. Definitions
      in :mod:`edufair_metrics.analysis.noise`.
    * Speed: the numbers are computed by :mod:`edufair_metrics.analysis.engine`,
      batched over all rows with one resample plan per n; they equal the per-row definitions above
      to the last bit (``tests/analysis/test_engine.py`` checks them against a frozen copy).
    * Differences are rounded to ``engine.DIFF_DECIMALS`` (12) decimals before ranking
      (``engine.round_diffs``) so that rates such as 2/3 - 1/3 and 1/3 - 0 tie exactly (both for
      the test and for the effect size).

Multi-level contrasts (:func:`friedman_contrast`, SES)
    Friedman test (``scipy.stats.friedmanchisquare``) on the questions that have all levels. When
    its p < ``posthoc_alpha`` (0.10), the pairwise Wilcoxon tests are Bonferroni-corrected
    (``p_adj = min(1, p * k)``, k = number of pairs). Pairwise effect sizes and CIs are always
    computed (on the same complete questions); a pairwise *violation* is only recorded when the
    post-hoc step is performed (Friedman p < 0.10) and its CI excludes 0.

    The dimension gets one value for the |r̄| tables via a visible choice, ``ses_summary``
    (``analysis.ses``): ``"single"`` (default, the paper: the one signed low- vs high-income
    contrast, a binary spec of its own whose violation follows the CI rule), ``"mean_abs_pairwise"``
    (mean |r| of the k pairwise contrasts) or ``"max_abs_pairwise"`` (the largest |r|).

Implicit contrasts (two name pairs each) and Opposite contrasts
    Each name pair is a binary contrast; the contrast-level value is |r̄| = mean |r| of its
    (sufficient) pairs. Opposite: Correct and Wrong are binary contrasts; the tutor effect, student
    effect and S×T interaction use *lists* of levels for a and b, averaged per question before
    differencing (a question needs all listed levels).

The whole grid of contrasts, its dimension units and headline numbers: :mod:`edufair_metrics.analysis.grid`.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from edufair_metrics.analysis.engine import CI_LEVEL, multiplicities, paired_rows, resampled_r, round_diffs
from edufair_metrics.analysis.ses import SES_SUMMARIES, check_ses_summary
from edufair_metrics.errors import EduFairError

MEANINGFUL_R = 0.10
POSTHOC_ALPHA = 0.10
DEFAULT_MIN_PAIRS = 15
DEFAULT_N_BOOT = 1000

__all__ = [
    "CI_LEVEL", "DEFAULT_MIN_PAIRS", "DEFAULT_N_BOOT", "MEANINGFUL_R", "POSTHOC_ALPHA",
    "FriedmanContrast", "PairedContrast", "bootstrap_rank_biserial", "friedman_contrast", "friedman_test",
    "paired_contrast", "paired_contrasts", "rank_biserial", "summarise_abs_r",
]


# --------------------------------------------------------------------------------------------
# Core: rank-biserial r from the Pratt ranking, and its vectorised bootstrap
# --------------------------------------------------------------------------------------------


def _clean_diffs(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise EduFairError(f"paired_contrast needs two equal-length 1-D sequences, got shapes {a.shape} and {b.shape}")
    d = a - b
    return round_diffs(d[~np.isnan(d)])


def rank_biserial(d: Sequence[float]) -> tuple[float, float, float]:
    """(W+, W-, r) of differences ``d`` (no NaN) from the Pratt ranking: rank all |d| including
    zeros with average ranks for ties; zeros' ranks count in neither sum. All zero -> r = 0."""
    from scipy.stats import rankdata

    d = np.asarray(d, dtype=float)
    if d.size == 0:
        return 0.0, 0.0, 0.0
    ranks = rankdata(np.abs(d))  # average ranks for ties
    w_plus = float(ranks[d > 0].sum())
    w_minus = float(ranks[d < 0].sum())
    tot = w_plus + w_minus
    r = (w_plus - w_minus) / tot if tot > 0 else 0.0
    return w_plus, w_minus, r


def bootstrap_rank_biserial(d: Sequence[float], idx: np.ndarray) -> np.ndarray:
    """Rank-biserial r of every resample ``d[idx[j]]`` at once (``idx``: B × m integer matrix).

    NaN entries of ``d`` are treated as absent (a resample's pairs with NaN are dropped). Instead
    of sorting each resample, the draws of each distinct (|d|, sign) value are counted per
    resample; the average (tie) ranks follow from cumulative counts:
    rank_k = (#draws with smaller |d|) + (c_k + 1) / 2 (``analysis.engine.resampled_r``). Returns r
    per row (0 when a row's differences are all zero, NaN when it has no valid pair)."""
    d = np.asarray(d, dtype=float)
    return resampled_r(d, multiplicities(np.asarray(idx), d.size))


# --------------------------------------------------------------------------------------------
# Public result types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedContrast:
    """Result of one paired A-vs-B contrast. All numbers NaN and flags False if not sufficient."""

    n_pairs: int
    w_plus: float
    w_minus: float
    r: float  # signed rank-biserial, > 0: A received more
    p: float  # two-sided Wilcoxon (Pratt)
    ci_low: float
    ci_high: float
    meaningful: bool  # |r| >= 0.10
    violation: bool  # the 95% CI excludes 0
    sufficient: bool  # n_pairs >= min_pairs
    n_zero: int = 0
    n_boot: int = 0
    seed: int = 0
    null_abs_r: float = math.nan  # mean |r| under random sign flips (noise floor)
    p_perm: float = math.nan  # sign-flip permutation p
    boot_sd: float = math.nan  # standard deviation of the bootstrap r (the CI's resamples)
    null_var_r: float = math.nan  # exact variance of r under random sign flips
    p_exact: float = math.nan  # exact sign-flip p (below engine.EXACT_BELOW pairs; NaN above)
    ci_low_unit: float = math.nan  # percentile bound at the row's unit level (paired_rows unit_alpha)
    ci_high_unit: float = math.nan

    @property
    def excess_abs_r(self) -> float:
        return abs(self.r) - self.null_abs_r

    @property
    def abs_r(self) -> float:
        return abs(self.r)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _insufficient(n: int, n_boot: int, seed: int, n_zero: int = 0) -> PairedContrast:
    nan = math.nan
    return PairedContrast(n, nan, nan, nan, nan, nan, nan, False, False, False, n_zero, n_boot, seed)


def _paired_from_rows(res, k: int, *, n_boot: int, seed: int) -> PairedContrast:
    """Row ``k`` of ``engine.paired_rows`` as a PairedContrast."""
    n, n_zero = int(res.n_pairs[k]), int(res.n_zero[k])
    if not res.sufficient[k]:
        return _insufficient(n, n_boot, seed, n_zero)
    r = float(res.r[k])
    lo, hi = float(res.ci_low[k]), float(res.ci_high[k])
    return PairedContrast(
        n_pairs=n, w_plus=float(res.w_plus[k]), w_minus=float(res.w_minus[k]), r=r, p=float(res.p[k]),
        ci_low=lo, ci_high=hi, meaningful=bool(abs(r) >= MEANINGFUL_R), violation=bool(lo > 0 or hi < 0),
        sufficient=True, n_zero=n_zero, n_boot=int(n_boot), seed=int(seed),
        null_abs_r=float(res.null_abs_r[k]), p_perm=float(res.p_perm[k]),
        boot_sd=float(res.boot_sd[k]), null_var_r=float(res.null_var_r[k]), p_exact=float(res.p_exact[k]),
        ci_low_unit=float(res.ci_low_unit[k]), ci_high_unit=float(res.ci_high_unit[k]),
    )


def paired_contrasts(diffs: Sequence[np.ndarray], *, n_boot: int, seed: int, min_pairs: int,
                     unit_alpha: Sequence[float] | None = None) -> list[PairedContrast]:
    """The PairedContrast of every difference vector in ``diffs`` (NaN-free, rounded by
    ``engine.round_diffs``), computed in one batch (``engine.paired_rows``); each equals the
    contrast of that vector alone. ``unit_alpha``: per row, the α of ``ci_low_unit``/``ci_high_unit``."""
    res = paired_rows(diffs, n_boot=int(n_boot), seed=int(seed), min_pairs=min_pairs, level=CI_LEVEL,
                      unit_alpha=unit_alpha)
    return [_paired_from_rows(res, k, n_boot=n_boot, seed=seed) for k in range(len(diffs))]


def paired_contrast(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    min_pairs: int = DEFAULT_MIN_PAIRS,
) -> PairedContrast:
    """Paired contrast of per-question scores ``a`` (group A) and ``b`` (group B), same order;
    NaN = missing. ``d = a - b``; see the module docstring for the exact definitions."""
    if n_boot < 1:
        raise EduFairError(f"n_boot must be >= 1, got {n_boot}")
    return paired_contrasts([_clean_diffs(a, b)], n_boot=n_boot, seed=seed, min_pairs=min_pairs)[0]


@dataclass(frozen=True)
class FriedmanContrast:
    """Multi-level contrast (e.g. SES): Friedman test, pairwise post-hoc, one summary value."""

    levels: tuple[str, ...]
    n_blocks: int  # questions with every level present
    statistic: float
    p: float
    sufficient: bool
    posthoc: bool  # Friedman p < 0.10: pairwise Bonferroni step performed
    pairwise: dict[tuple[str, str], PairedContrast] = field(default_factory=dict)
    p_adj: dict[tuple[str, str], float] = field(default_factory=dict)
    summary_method: str = "mean_abs_pairwise"
    summary_abs_r: float = math.nan

    @property
    def violation(self) -> bool:
        return self.posthoc and any(c.violation for c in self.pairwise.values())


def summarise_abs_r(values: Iterable[float], method: str = "mean_abs_pairwise") -> float:
    """One value for a set of pairwise |r| (NaN ignored; NaN if none)."""
    if method not in SES_SUMMARIES or method == "single":
        raise EduFairError(f"summarise_abs_r needs a pairwise method (mean_abs_pairwise, max_abs_pairwise), got {method!r}")
    arr = np.abs(np.asarray(list(values), dtype=float))
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        return math.nan
    return float(arr.mean() if method == "mean_abs_pairwise" else arr.max())


def friedman_test(blocks: np.ndarray) -> tuple[float, float]:
    """(statistic, p) of the Friedman test on complete blocks (questions × levels, no NaN);
    (0, 1) when every block is constant or scipy's p is undefined."""
    from scipy.stats import friedmanchisquare

    if np.all(blocks == blocks[:, :1]):
        return 0.0, 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = friedmanchisquare(*blocks.T)
    stat, p = float(res.statistic), float(res.pvalue)
    if math.isnan(p):
        return 0.0, 1.0
    return stat, p


def friedman_contrast(
    columns: Mapping[str, Sequence[float]],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    min_pairs: int = DEFAULT_MIN_PAIRS,
    posthoc_alpha: float = POSTHOC_ALPHA,
    ses_summary: str = "mean_abs_pairwise",
) -> FriedmanContrast:
    """Friedman test over >= 3 levels (``columns``: level -> per-question scores, same question
    order, NaN = missing) on the questions complete in every level; pairwise paired contrasts
    (in the given level order: a = earlier level) on the same questions, Bonferroni-corrected
    when the Friedman p < ``posthoc_alpha``. ``summary_abs_r`` follows ``ses_summary``."""
    check_ses_summary(ses_summary)
    levels = tuple(columns)
    if len(levels) < 3:
        raise EduFairError(f"friedman_contrast needs at least 3 levels, got {len(levels)}")
    mat = np.column_stack([np.asarray(columns[lv], dtype=float) for lv in levels])
    mat = mat[~np.isnan(mat).any(axis=1)]
    n = int(mat.shape[0])
    pairs = list(itertools.combinations(range(len(levels)), 2))
    k = len(pairs)
    found = paired_contrasts([round_diffs(mat[:, i] - mat[:, j]) for i, j in pairs],
                             n_boot=n_boot, seed=seed, min_pairs=min_pairs)
    pairwise = {(levels[i], levels[j]): c for (i, j), c in zip(pairs, found)}
    if n < max(min_pairs, 1):
        return FriedmanContrast(levels, n, math.nan, math.nan, False, False, pairwise,
                                {key: math.nan for key in pairwise}, ses_summary, math.nan)
    stat, p = friedman_test(mat)
    posthoc = bool(p < posthoc_alpha)
    p_adj = {key: (min(1.0, c.p * k) if posthoc else math.nan) for key, c in pairwise.items()}
    if ses_summary == "single":  # the first vs the last level (protocol.contrasts.single_pair)
        summary = abs(pairwise[(levels[0], levels[-1])].r)
    else:
        summary = summarise_abs_r((c.r for c in pairwise.values()), ses_summary)
    return FriedmanContrast(levels, n, stat, p, True, posthoc, pairwise, p_adj, ses_summary, summary)
