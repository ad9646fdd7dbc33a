"""The batched engine of the paired contrasts: the numbers of ``contrast.paired_contrast`` for many
difference vectors at once, plus the sign-flip noise floor, and the two
numeric conventions every statistic shares (:data:`DIFF_DECIMALS` / :func:`round_diffs`,
:func:`percentile_ci`).

Every row is a vector ``d`` of paired differences (NaN already dropped, rounded by
:func:`round_diffs`). Its results are, to the last bit, those of the per-row definitions in
:mod:`edufair_metrics.analysis.contrast`:

* ``w_plus``, ``w_minus``, ``r``: the Pratt ranking of |d| (average ranks for ties, zeros ranked
  but counted in neither sum), computed from the sizes of the distinct (|d|, sign) groups.
* ``p``: two-sided Wilcoxon signed-rank, ``scipy.stats.wilcoxon(d, zero_method="pratt")``. For
  n > 50 scipy uses the normal approximation with Pratt's zero correction and the tie correction;
  it is evaluated here with the same operations in the same order (no scipy call). For n <= 50
  (scipy's exact / permutation branch) scipy itself is called.
* ``ci_low``, ``ci_high``: 95% percentile bootstrap (:func:`percentile_ci`). Resample ``b`` draws
  the pairs ``default_rng(seed).integers(0, n, (B, n))[b]``. Only how often each pair is drawn
  matters, so the draws are kept as an n × B matrix of multiplicities (:func:`bootstrap_counts`,
  cached per (n, B, seed): every metric, pair and cell with n pairs shares it). Per row, the
  multiplicities of the pairs of each distinct (|d|, sign) group are summed across all B
  resamples at once; tie ranks follow from cumulative counts: twice the average rank of |d|
  value k is ``2 * (#draws with |d| <= value k) - c_k + 1``, and since all N draws have 2·ranks
  summing to N (N + 1), only the positive groups are summed (:func:`_resampled_diff_tot`).
* ``null_abs_r`` (noise floor): mean |r| over B random sign flips of the differences, the exact
  null of the Wilcoxon setting (under H0 each d_i is symmetric about 0). Flipping signs does not
  change the ranks, so each flipped r is ``(signed ranks · flips) / (W+ + W-)``: a few matrix
  products for all rows. Pair i is flipped in resample b by draw i·B + b of
  ``default_rng(SeedSequence(seed).spawn(1)[0])`` (:func:`flip_matrix`): the same seed as the
  bootstrap, an independent stream, the same B, one matrix for every n.
* ``p_perm``: two-sided sign-flip p, ``(1 + #{b: |r_b| >= |r|}) / (B + 1)``.

Added for the verdicts (``analysis.verdicts``); none of them changes a number above:

* ``boot_sd``: the standard deviation (ddof 1) of the same bootstrap r_b as the CI.
* ``null_var_r``: the variance of r under the sign-flip null, computed exactly: with the ranks
  fixed, r = Σ ε_i R_i / Σ R_i over the non-zero pairs (ε_i = ±1 fair coins), so
  Var_null(r) = Σ R_i² / (Σ R_i)² (what the B flips estimate; ties and zeros included).
* ``p_exact`` (rows with fewer than :data:`EXACT_BELOW` pairs, NaN otherwise): the exact two-sided
  sign-flip p, ``P(|Σ ε_i R_i| >= |W+ − W−|)`` over all 2^m sign patterns of the m non-zero
  pairs, by convolution of the integer weights 2 R_i (exact integer counts). It is the p the
  permutation null ``p_perm`` estimates, without its resolution limit 1/(B + 1).
* ``ci_low_unit`` / ``ci_high_unit``: the percentile interval at a per-row ``unit_alpha``
  (``paired_rows(..., unit_alpha=...)``; a unit of k pairs uses 0.05 / k); equal to ``ci_low`` /
  ``ci_high`` (the same floats) where ``unit_alpha`` is the CI's own α.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np

CI_LEVEL = 0.95
DIFF_DECIMALS = 12
EXACT_BELOW = 50  # rows with fewer pairs get the exact sign-flip p (``p_exact``)
_EXACT_FLOAT32 = 2**24  # integer sums below this are exact in float32
_BLAS = None


def round_diffs(d) -> np.ndarray:
    """Paired differences rounded to :data:`DIFF_DECIMALS` decimals (NaN stays NaN), so that rates
    such as 2/3 - 1/3 and 1/3 - 0 tie exactly, for the test, the effect size and every bootstrap."""
    return np.round(np.asarray(d, dtype=float), DIFF_DECIMALS)


def percentile_ci(values, level: float = CI_LEVEL, *, alpha: float | None = None,
                  methods: tuple[str, str] = ("linear", "linear")) -> tuple[float, float]:
    """Two-sided percentile interval of ``values`` without their NaN: the ``100·α/2`` and
    ``100·(1 − α/2)`` percentiles (numpy's ``methods`` for the lower and the upper bound), with
    α = ``alpha`` if given, else ``1 − level``; (NaN, NaN) when no value is left. The one interval
    of EduFair's bootstraps (contrasts, compare, rank intervals, rater agreement). ``alpha`` is
    used as given: 0.05 and ``1 − 0.95`` differ in the last bit, and so may the bounds."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return math.nan, math.nan
    a = 1 - level if alpha is None else alpha
    q = [100 * a / 2, 100 * (1 - a / 2)]
    if methods[0] == methods[1]:
        lo, hi = np.percentile(v, q, method=methods[0])
    else:
        lo, hi = np.percentile(v, q[0], method=methods[0]), np.percentile(v, q[1], method=methods[1])
    return float(lo), float(hi)


def _one_blas_thread():
    """Context in which BLAS runs single-threaded: the sign-flip products are small, and BLAS
    threads spinning on a busy 2-core machine cost ~10x more than they save."""
    global _BLAS
    if _BLAS is None:
        try:  # installed with scikit-learn, a dependency
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover
            return contextlib.nullcontext()
        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


def bootstrap_indices(n: int, n_boot: int, seed: int) -> np.ndarray:
    """The bootstrap draws of EduFair (B × n pair indices); the definition every resample uses."""
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def multiplicities(idx: np.ndarray, n: int) -> np.ndarray:
    """n × B: how often each index 0..n-1 occurs in each row of ``idx`` (B × m). Pair-major, so
    that a row's pairs are gathered as contiguous rows and summed across all B at once."""
    B = idx.shape[0]
    flat = idx.astype(np.int64, copy=True)
    flat += (np.arange(B, dtype=np.int64) * n)[:, None]
    counts = np.bincount(flat.ravel(), minlength=n * B).reshape(B, n)
    counts = counts.astype(np.uint8 if counts.max(initial=0) < 256 else np.int32)
    return np.ascontiguousarray(counts.T)


@functools.lru_cache(maxsize=8)
def bootstrap_counts(n: int, n_boot: int, seed: int) -> np.ndarray:
    """``multiplicities(bootstrap_indices(n, B, seed), n)``, cached: every row with n pairs (any
    metric, pair or cell) shares it."""
    counts = multiplicities(bootstrap_indices(n, n_boot, seed), n)
    counts.setflags(write=False)
    return counts


_FLIPS: dict[tuple[int, int], np.ndarray] = {}


def flip_matrix(n: int, n_boot: int, seed: int) -> np.ndarray:
    """n × B signs (±1, float32) of the sign-flip null: pair i of any row is flipped in resample b
    when draw i·B + b of ``default_rng(SeedSequence(seed).spawn(1)[0]).integers(0, 2)`` is 0 (an
    independent stream from the bootstrap's seed). Row-major generation makes the matrix for n
    pairs the first n rows of the one for more pairs, so one matrix serves every n."""
    have = _FLIPS.get((n_boot, seed))
    if have is None or have.shape[0] < n:
        m = max(n, 1024 if have is None else 2 * have.shape[0])
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        bits = rng.integers(0, 2, size=(m, n_boot), dtype=np.int8)
        have = (bits * 2 - 1).astype(np.float32)
        have.setflags(write=False)
        if len(_FLIPS) >= 4:
            _FLIPS.clear()
        _FLIPS[(n_boot, seed)] = have
    return have[:n]


# --------------------------------------------------------------------------------------------
# One difference vector: its (|d|, sign) groups
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Groups:
    """The pairs of one row sorted by (|d|, sign) and cut into groups of equal (|d|, sign)."""

    order: np.ndarray  # sorted position -> pair index
    starts: np.ndarray  # first sorted position of each (|d|, sign) group; groups of NaN excluded
    sign: np.ndarray  # sign of each group (-1, 0, 1)
    signs: np.ndarray  # 2 × groups: [sign, |sign|] (weights of W+ - W- and W+ + W-)
    abs_group: np.ndarray  # index of each group's |d| value (groups of one |d| are adjacent)
    abs_starts: np.ndarray  # first (|d|, sign) group of each |d| value
    n_valid: int


def _groups(d: np.ndarray) -> _Groups:
    valid = ~np.isnan(d)
    absd = np.where(valid, np.abs(d), np.inf)
    sgn = np.where(valid, np.sign(d), 2.0)  # NaN last: a group of its own, dropped below
    order = np.lexsort((sgn, absd))
    a_s, s_s = absd[order], sgn[order]
    new_abs = np.empty(d.size, dtype=bool)
    new_abs[:1] = True
    np.not_equal(a_s[1:], a_s[:-1], out=new_abs[1:])
    new_grp = new_abs.copy()
    new_grp[1:] |= s_s[1:] != s_s[:-1]
    starts = np.flatnonzero(new_grp)
    sign = s_s[starts]
    abs_group = np.cumsum(new_abs)[starts] - 1
    keep = sign != 2.0
    n_valid = int(valid.sum())
    starts, abs_group = starts[keep], abs_group[keep]
    abs_starts = np.flatnonzero(np.r_[True, abs_group[1:] != abs_group[:-1]]) if abs_group.size else abs_group
    # NaN pairs sort last: cutting them off ``order`` ends the last group before them
    sign = sign[keep].astype(np.int64)
    return _Groups(order[:n_valid], starts, sign, np.stack([sign, np.abs(sign)]), abs_group, abs_starts, n_valid)


def _observed_rank2(g: _Groups) -> tuple[int, int, np.ndarray, np.ndarray]:
    """(2 (W+ - W-), 2 (W+ + W-), sizes of the (|d|, sign) groups, twice the average rank of
    each |d| value) of the observed differences: every pair drawn once."""
    sizes = np.diff(np.r_[g.starts, g.n_valid])
    size_abs = np.add.reduceat(sizes, g.abs_starts)
    rank2 = 2 * np.cumsum(size_abs) - size_abs + 1
    diff, tot = g.signs @ (rank2[g.abs_group] * sizes)
    return int(diff), int(tot), sizes, rank2


def _block_sums(a: np.ndarray, starts: np.ndarray, dtype) -> np.ndarray:
    """Sums of the consecutive row blocks of ``a`` that begin at ``starts`` (``np.add.reduceat``
    along axis 0, which is slow for wide rows). Few blocks (rates): a loop of contiguous sums.
    Many blocks (continuous metrics, mostly single rows): the first row of every block, then the
    j-th rows of the blocks longer than j, for j = 1, 2, ...; blocks over 32 rows are summed whole."""
    n = a.shape[0]
    if starts.size == n:
        return a.astype(dtype)
    ends = np.r_[starts[1:], n]
    if starts.size <= 256:
        out = np.empty((starts.size, a.shape[1]), dtype=dtype)
        for k, (s, e) in enumerate(zip(starts.tolist(), ends.tolist())):
            np.sum(a[s:e], axis=0, dtype=dtype, out=out[k])
        return out
    sizes = ends - starts
    out = a[starts].astype(dtype)
    long = sizes > 32
    for k in np.flatnonzero(long):
        np.sum(a[starts[k]:ends[k]], axis=0, dtype=dtype, out=out[k])
    sizes = np.where(long, 1, sizes)
    for j in range(1, int(sizes.max())):
        sel = np.flatnonzero(sizes > j)
        out[sel] += a[starts[sel] + j]
    return out


def _cumsum_rows(a: np.ndarray) -> np.ndarray:
    """In-place cumulative sum down the rows (numpy's cumsum along axis 0 is ~3x slower here:
    each row-add is vectorised over the B resamples)."""
    for k in range(1, a.shape[0]):
        a[k] += a[k - 1]
    return a


def _resampled_diff_tot(counts: np.ndarray, g: _Groups) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per resample (column of ``counts``, pairs × B): 2 (W+ - W-), 2 (W+ + W-) (exact int64) and
    the number of valid draws N. Twice the average rank of a |d| value is
    ``2·(#draws with |d| <= it) - (its draws) + 1``; all N draws have 2·ranks summing to N (N + 1)
    and the Z zero draws (smallest |d|) take the ranks 1..Z, so only the positive groups' ranks
    are summed: 2 (W+ + W-) = N (N + 1) - Z (Z + 1), 2 (W+ - W-) = 2·(2 W+) - 2 (W+ + W-)."""
    drawn = counts[g.order]  # valid pairs in (|d|, sign) order × B
    dt = np.int64 if g.n_valid >= 30000 else np.int32  # 2·rank × count must fit
    pos = g.sign > 0
    if g.starts.size <= 256:  # few distinct values (rates): work per group
        c = _block_sums(drawn, g.starts, dt)
        cabs = _block_sums(c, g.abs_starts, dt) if g.abs_starts.size < g.starts.size else c
        rank2 = _cumsum_rows(cabs.copy())
        rank2 *= 2
        rank2 -= cabs
        rank2 += 1
        wp2 = (rank2[g.abs_group[pos]] * c[pos]).sum(axis=0, dtype=np.int64)  # 2 W+
        z = cabs[0].astype(np.int64) if g.sign[0] == 0 else None
        total = cabs.sum(axis=0, dtype=np.int64) if g.n_valid < counts.shape[0] else None
    else:  # many distinct values (continuous metrics): cumulative draws per pair, read at group edges
        cum = np.empty((drawn.shape[0] + 1, drawn.shape[1]), dtype=dt)
        cum[0] = 0
        cum[1:] = drawn
        _cumsum_rows(cum)  # cum[i] = draws of the first i pairs
        ends = np.r_[g.starts[1:], g.n_valid]
        abs_lo = g.starts[g.abs_starts]
        abs_hi = np.r_[abs_lo[1:], g.n_valid]
        lo, hi = cum[g.starts[pos]], cum[ends[pos]]
        alo, ahi = cum[abs_lo[g.abs_group[pos]]], cum[abs_hi[g.abs_group[pos]]]
        alo += ahi
        alo += 1  # 2·average rank = draws up to the value's end + draws before its start + 1
        hi -= lo  # draws of each positive group
        wp2 = (hi * alo).sum(axis=0, dtype=np.int64)
        z = cum[ends[0]].astype(np.int64) if g.sign[0] == 0 else None
        total = cum[-1].astype(np.int64) if g.n_valid < counts.shape[0] else None
    n_draws = np.full(counts.shape[1], g.n_valid, dtype=np.int64) if total is None else total
    z = np.zeros_like(n_draws) if z is None else z
    tot = n_draws * (n_draws + 1) - z * (z + 1)
    return 2 * wp2 - tot, tot, n_draws


def _r_of(diff: np.ndarray, tot: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0, diff / np.where(tot > 0, tot, 1), 0.0)


def resampled_r(d: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Rank-biserial r of each resample (column of ``counts``, pairs × B: how often each pair of
    ``d`` is drawn). NaN entries of ``d`` are absent pairs (dropped within each resample); r = 0
    for a resample whose drawn differences are all zero, NaN for one without a valid pair. Equals
    ``contrast.bootstrap_rank_biserial(d, idx)`` when ``counts = multiplicities(idx, len(d))``."""
    d = np.asarray(d, dtype=float)
    g = _groups(d)
    if g.starts.size == 0:
        return np.full(counts.shape[1], np.nan)
    diff, tot, n_draws = _resampled_diff_tot(counts, g)
    r = _r_of(diff, tot)
    r[n_draws == 0] = np.nan
    return r


# --------------------------------------------------------------------------------------------
# Wilcoxon signed-rank p, Pratt zeros, as scipy computes it
# --------------------------------------------------------------------------------------------


def _wilcoxon_scipy(d: np.ndarray) -> float:
    from scipy.stats import wilcoxon

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = float(wilcoxon(d, zero_method="pratt", alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else p


def wilcoxon_normal_p(r_plus, count, n_zero, tie_term) -> np.ndarray:
    """scipy's asymptotic two-sided Wilcoxon p (no continuity correction) with Pratt's zero
    correction (Cureton 1967) and the tie correction ``tie_term`` = sum of t^3 - t over the tie
    groups of non-zero |d|; the operations of ``scipy.stats._wilcoxon`` in their order."""
    from scipy.special import ndtr

    count = np.asarray(count, dtype=float)
    n_zero = np.asarray(n_zero, dtype=float)
    mn = count * (count + 1.0) * 0.25
    se = count * (count + 1.0) * (2.0 * count + 1.0)
    mn = mn - n_zero * (n_zero + 1.0) * 0.25
    se = se - n_zero * (n_zero + 1.0) * (2.0 * n_zero + 1.0)
    se = np.sqrt((se - np.asarray(tie_term, dtype=float) / 2) / 24)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (np.asarray(r_plus, dtype=float) - mn) / se
        p = 2 * ndtr(-np.abs(z))
    return np.where(np.isnan(p), 1.0, p)


def exact_sign_flip_p(signed_ranks2: np.ndarray, diff2: float) -> float:
    """Exact two-sided sign-flip p of one row: ``signed_ranks2`` = twice the signed Pratt rank of
    each pair (integers; zeros 0), ``diff2`` = 2 (W+ − W−). Under random signs, S = Σ_{ε_i = +1}
    w_i (w_i = |signed_ranks2_i| > 0) has the distribution of a sum of independent fair draws; its
    counts over the 2^m patterns are built by convolution (exact integers below 2^53, m < 53).
    D = 2 S − Σ w; p = #{|D| >= |diff2|} / 2^m."""
    w = np.abs(np.asarray(signed_ranks2)).astype(np.int64)
    w = w[w > 0]
    if w.size == 0:
        return 1.0
    if w.size >= 53:
        raise ValueError("exact_sign_flip_p: at most 52 non-zero pairs")
    total = int(w.sum())
    counts = np.zeros(total + 1)
    counts[0] = 1.0
    reach = 0
    for wi in w.tolist():
        counts[wi:reach + wi + 1] += counts[:reach + 1].copy()
        reach += wi
    stat = np.abs(2 * np.arange(total + 1) - total)
    extreme = counts[stat >= abs(int(round(diff2)))].sum()
    return float(min(1.0, extreme / 2.0 ** w.size))


# --------------------------------------------------------------------------------------------
# Many rows at once
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedRows:
    """Per-row arrays (row order of the input). Insufficient rows: NaN numbers; ``sufficient``."""

    n_pairs: np.ndarray
    n_zero: np.ndarray
    sufficient: np.ndarray
    w_plus: np.ndarray
    w_minus: np.ndarray
    r: np.ndarray
    p: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    null_abs_r: np.ndarray
    p_perm: np.ndarray
    boot_sd: np.ndarray | None = None
    null_var_r: np.ndarray | None = None
    p_exact: np.ndarray | None = None
    ci_low_unit: np.ndarray | None = None
    ci_high_unit: np.ndarray | None = None

    def row(self, i: int) -> dict:
        return {f: getattr(self, f)[i].item() for f in self.__dataclass_fields__}


def paired_rows(
    diffs: Sequence[np.ndarray],
    *,
    n_boot: int,
    seed: int,
    min_pairs: int,
    level: float = CI_LEVEL,
    unit_alpha: Sequence[float] | None = None,
) -> PairedRows:
    """Paired-contrast numbers of every difference vector in ``diffs`` (each without NaN, rounded
    by :func:`round_diffs`): see the module docstring. Rows are grouped by n so that each bootstrap
    count matrix is built once; the sign-flip null of all rows is a few matrix products.
    ``unit_alpha`` (one α per row, default the CI's): the level of ``ci_low_unit``/``ci_high_unit``."""
    m = len(diffs)
    n_boot, seed = int(n_boot), int(seed)
    nan = np.full(m, np.nan)
    out = {k: nan.copy() for k in ("w_plus", "w_minus", "r", "p", "ci_low", "ci_high", "null_abs_r", "p_perm",
                                   "boot_sd", "null_var_r", "p_exact", "ci_low_unit", "ci_high_unit")}
    own_alpha = 1 - level
    u_alpha = np.full(m, own_alpha) if unit_alpha is None else np.asarray(unit_alpha, dtype=float)
    if u_alpha.shape != (m,):
        raise ValueError(f"unit_alpha needs one value per row ({m}), got shape {u_alpha.shape}")
    diffs = [np.asarray(d, dtype=float) for d in diffs]
    n_pairs = np.array([d.size for d in diffs], dtype=np.int64)
    n_zero = np.array([int(np.count_nonzero(d == 0)) for d in diffs], dtype=np.int64)
    sufficient = n_pairs >= max(int(min_pairs), 1)
    allzero = sufficient & (n_zero == n_pairs)
    for k, v in (("w_plus", 0.0), ("w_minus", 0.0), ("r", 0.0), ("p", 1.0), ("ci_low", 0.0), ("ci_high", 0.0),
                 ("null_abs_r", 0.0), ("p_perm", 1.0), ("boot_sd", 0.0), ("null_var_r", 0.0),
                 ("ci_low_unit", 0.0), ("ci_high_unit", 0.0)):
        out[k][allzero] = v  # all differences zero: r = 0, p = 1, CI [0, 0], no noise
    out["p_exact"][allzero & (n_pairs < EXACT_BELOW)] = 1.0
    live = np.flatnonzero(sufficient & ~allzero)
    groups: dict[int, _Groups] = {}
    ranks: dict[int, np.ndarray] = {}  # twice the signed rank of each pair (pair order)
    tot_obs = np.zeros(m)
    diff_obs = np.zeros(m)
    normal_rows: list[tuple[int, float, int, int, float]] = []
    for i in live:
        g = groups[i] = _groups(diffs[i])
        d2, t2, sizes, rank2 = _observed_rank2(g)
        w_plus, w_minus = (t2 + d2) / 4, (t2 - d2) / 4  # exact: half-integer rank sums
        out["w_plus"][i], out["w_minus"][i] = w_plus, w_minus
        out["r"][i] = (w_plus - w_minus) / (w_plus + w_minus)
        sr = np.empty(g.n_valid)
        sr[g.order] = np.repeat(rank2[g.abs_group] * g.sign, sizes)
        ranks[i], tot_obs[i], diff_obs[i] = sr, t2, d2
        out["null_var_r"][i] = float(np.dot(sr, sr)) / (t2 * t2)  # exact: integer sums
        n = int(n_pairs[i])
        if n < EXACT_BELOW:
            out["p_exact"][i] = exact_sign_flip_p(sr, d2)
        if n > 50:  # scipy's asymptotic branch, evaluated below for all rows at once
            size_abs = np.add.reduceat(sizes, g.abs_starts)
            t = size_abs[1:] if n_zero[i] else size_abs  # zeros (the smallest |d|) are not ties
            normal_rows.append((int(i), w_plus, n, int(n_zero[i]), float(np.sum(t.astype(float) ** 3 - t))))
        else:
            out["p"][i] = _wilcoxon_scipy(diffs[i])
    if normal_rows:
        idx, r_plus, count, nz, tie = map(np.asarray, zip(*normal_rows))
        out["p"][idx.astype(int)] = wilcoxon_normal_p(r_plus, count, nz, tie)
    # bootstrap CI: one count matrix per n
    by_n: dict[int, list[int]] = {}
    for i in live:
        by_n.setdefault(int(n_pairs[i]), []).append(int(i))

    def bootstrap_ci(n: int) -> None:
        counts = bootstrap_counts(n, n_boot, seed)
        for i in by_n[n]:
            bd, bt, _ = _resampled_diff_tot(counts, groups[i])
            rb = _r_of(bd, bt)
            lo, hi = percentile_ci(rb, level)
            out["ci_low"][i], out["ci_high"][i] = lo, hi
            if abs(u_alpha[i] - own_alpha) > 1e-12:  # 0.05 vs 1 - 0.95: the same level
                lo, hi = percentile_ci(rb, alpha=float(u_alpha[i]))
            out["ci_low_unit"][i], out["ci_high_unit"][i] = lo, hi
            out["boot_sd"][i] = float(np.std(rb, ddof=1)) if rb.size > 1 else 0.0

    for n in sorted(by_n):  # (two threads were measured: no gain, the GIL-held steps dominate)
        bootstrap_ci(n)
    # sign-flip null: |flips · signed ranks| / (W+ + W-), in chunks of rows (exact integer sums)
    if live.size:
        n_max = int(n_pairs[live].max())
        flips = flip_matrix(n_max, n_boot, seed)
        dt = np.float32 if n_max * (n_max + 1) < _EXACT_FLOAT32 else np.float64
        for c0 in range(0, live.size, 256):
            chunk = live[c0:c0 + 256]
            sr = np.zeros((chunk.size, n_max), dtype=dt)
            for j, i in enumerate(chunk):
                sr[j, : ranks[i].size] = ranks[i]
            with _one_blas_thread():
                flipped = np.abs(sr @ flips.astype(dt, copy=False))  # rows × B: |2 (W+ - W-)|
            out["null_abs_r"][chunk] = (flipped / tot_obs[chunk, None]).mean(axis=1)
            out["p_perm"][chunk] = (1 + (flipped >= np.abs(diff_obs[chunk, None])).sum(axis=1)) / (n_boot + 1)
    return PairedRows(n_pairs=n_pairs, n_zero=n_zero, sufficient=sufficient, **out)
