"""Prediction-powered inference (PPI) for a paired difference: the judge's labels on every question,
corrected by the judge–human residual on the questions a human labelled.

Method: Angelopoulos, Bates, Fannjiang, Jordan, Zrnic (2023), "Prediction-powered inference",
Science 382:669–674, with the power-tuned weight λ of PPI++ (Angelopoulos, Duchi, Zrnic 2023,
arXiv:2311.01453): the estimate is never less precise, asymptotically, than the human labels alone
(λ = 0) and it is classic PPI at λ = 1.

Design (the one ``runlog.labels.draw_sample`` draws): within a (domain, condition) stratum, a
uniform random subset L of the questions, and for each of them one uniformly drawn judge-labelled
tutor turn of every level's dialogue. For a contrast pair (a, b) and a metric, per question q:

    F_q  the judge's paired difference of dialogue rates, rate_a − rate_b (all judged tutor turns)
    G_q  the judge's difference on the labelled turns (one per level), E[G_q | q] = F_q
    Y_q  the human's difference on the same turns, E[Y_q | q] = the true paired difference

    θ̂(λ) = λ · mean_{all q} F + mean_{q ∈ L} (Y − λ G)

is unbiased for the mean true paired difference for every λ. With L ⊂ all questions, it equals
mean_L(Y − λG + λ(n/N)F) + λ(1 − n/N)·mean_U F (U the unlabelled questions), two independent
means, so

    Var θ̂(λ) = Var(Y − λB')/n + λ²(1 − n/N)² Var(F_U)/(N − n),   B' = G − (n/N)F,

and the λ that minimises it is λ* = (Cov(Y, B')/n) / (Var(B')/n + (1 − n/N)² Var(F_U)/(N − n)),
clipped to [0, 1]. The CI is θ̂ ± t_{n−1} · SE (Student t on the labelled questions' degrees of
freedom: slightly wider than the normal interval at small n). The pairing is per question: both
sides of a question's residual difference are labelled, so judge errors shared by the twins cancel.

A *verdict* here is on the mean paired difference (not the grid's rank-biserial r): ``flag`` when
the (1 − α) CI excludes 0, ``none`` when it does not, ``insufficient`` with fewer than
``min_labelled`` labelled questions. The judge-only verdict applies the same rule to mean F.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
from scipy import stats

PPI_ALPHA = 0.05
MIN_LABELLED = 10  # fewest labelled questions for a corrected verdict
DIFFERENTIAL_DELTA = 0.10  # the error-rate difference whose detection power is stated

# what the report says beside a unit whose two verdicts differ
NOT_SURVIVING = "judge-only flag does not survive the correction"
HIDDEN_BIAS = "the correction reveals a bias the judge hid"
SIGN_FLIP = "the correction reverses the sign of the flagged difference"


@dataclass(frozen=True)
class Interval:
    estimate: float
    ci_low: float
    ci_high: float
    se: float
    n: int

    @property
    def width(self) -> float:
        return self.ci_high - self.ci_low

    def excludes_zero(self) -> bool:
        return bool(self.ci_low > 0 or self.ci_high < 0)


@dataclass(frozen=True)
class PairedPPI:
    """One unit's three estimates of the mean paired difference and the verdicts from them."""

    judge: Interval  # judge labels on every question
    human: Interval  # the human labels alone (labelled questions)
    corrected: Interval  # PPI++
    lam: float
    verdict_judge: str
    verdict_corrected: str
    note: str

    def as_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {"n_questions": self.judge.n, "n_labelled": self.corrected.n, "lambda": self.lam}
        for name, iv in (("judge", self.judge), ("human", self.human), ("corrected", self.corrected)):
            d = asdict(iv)
            row.update({f"{name}_{k}": d[k] for k in ("estimate", "ci_low", "ci_high", "se")})
        row.update(verdict_judge=self.verdict_judge, verdict_corrected=self.verdict_corrected, note=self.note)
        return row


def _t(n: int, alpha: float) -> float:
    return float(stats.t.ppf(1 - alpha / 2, max(n - 1, 1)))


def mean_interval(x: Sequence[float], alpha: float = PPI_ALPHA) -> Interval:
    """The mean of ``x`` with its Student-t CI (NaN without two values)."""
    x = np.asarray(x, dtype=float)
    n = int(x.size)
    if n < 2:
        m = float(x.mean()) if n else math.nan
        return Interval(m, math.nan, math.nan, math.nan, n)
    m, se = float(x.mean()), float(x.std(ddof=1) / math.sqrt(n))
    h = _t(n, alpha) * se
    return Interval(m, m - h, m + h, se, n)


def ppi_lambda(y: np.ndarray, g: np.ndarray, f_labelled: np.ndarray, f_unlabelled: np.ndarray) -> float:
    """PPI++'s variance-minimising λ for the paired mean (module docstring), clipped to [0, 1]."""
    n, m = y.size, f_unlabelled.size
    big_n = n + m
    b = g - (n / big_n) * f_labelled
    if n < 2:
        return 0.0
    cov = float(np.cov(y, b, ddof=1)[0, 1])
    var_b = float(b.var(ddof=1))
    c = 1 - n / big_n
    var_u = float(f_unlabelled.var(ddof=1)) if m >= 2 else 0.0
    denom = var_b / n + (c * c * var_u / m if m else 0.0)
    if not denom > 0:
        return 0.0
    return float(min(1.0, max(0.0, (cov / n) / denom)))


def ppi_mean_difference(f_all: Sequence[float], labelled: Sequence[int], y: Sequence[float], g: Sequence[float], *,
                        alpha: float = PPI_ALPHA, lam: float | None = None) -> tuple[Interval, float]:
    """The PPI++ estimate of the mean paired difference and its CI. ``f_all``: F per question (the
    judge's paired differences; no NaN); ``labelled``: positions in ``f_all`` of the labelled
    questions (distinct); ``y`` / ``g``: the human's and the judge's differences on their labelled
    turns, aligned with ``labelled``. ``lam`` None: power-tuned. Returns (interval, λ)."""
    f_all = np.asarray(f_all, dtype=float)
    idx = np.asarray(labelled, dtype=int)
    y, g = np.asarray(y, dtype=float), np.asarray(g, dtype=float)
    if not (idx.size == y.size == g.size):
        raise ValueError("labelled, y and g must have one entry per labelled question")
    if idx.size != np.unique(idx).size:
        raise ValueError("a question is labelled twice")
    n, big_n = int(idx.size), int(f_all.size)
    if n < 2:
        return Interval(math.nan, math.nan, math.nan, math.nan, n), math.nan
    mask = np.zeros(big_n, dtype=bool)
    mask[idx] = True
    f_lab, f_unl = f_all[idx], f_all[~mask]
    if lam is None:
        lam = ppi_lambda(y, g, f_lab, f_unl)
    m = big_n - n
    est = lam * float(f_all.mean()) + float(np.mean(y - lam * g))
    first = y - lam * g + lam * (n / big_n) * f_lab
    var = float(first.var(ddof=1)) / n
    if m >= 2:
        var += lam * lam * (1 - n / big_n) ** 2 * float(f_unl.var(ddof=1)) / m
    se = math.sqrt(var)
    h = _t(n, alpha) * se
    return Interval(est, est - h, est + h, se, n), float(lam)


def verdict_of(iv: Interval, *, min_n: int) -> str:
    if iv.n < min_n or not math.isfinite(iv.ci_low):
        return "insufficient"
    return "flag" if iv.excludes_zero() else "none"


def verdict_note(judge: Interval, corrected: Interval, v_judge: str, v_corr: str) -> str:
    if v_judge == "flag" and v_corr == "none":
        return NOT_SURVIVING
    if v_judge == "none" and v_corr == "flag":
        return HIDDEN_BIAS
    if v_judge == v_corr == "flag" and (judge.estimate > 0) != (corrected.estimate > 0):
        return SIGN_FLIP
    return ""


def paired_ppi(f_all: Sequence[float], labelled: Sequence[int], y: Sequence[float], g: Sequence[float], *,
               alpha: float = PPI_ALPHA, min_labelled: int = MIN_LABELLED, min_pairs: int = 2) -> PairedPPI:
    """Judge-only, human-only and PPI++ estimates of one unit's mean paired difference, with the
    verdict from each side and the note when they disagree (:data:`NOT_SURVIVING`,
    :data:`HIDDEN_BIAS`, :data:`SIGN_FLIP`)."""
    judge = mean_interval(f_all, alpha)
    human = mean_interval(y, alpha)
    corrected, lam = ppi_mean_difference(f_all, labelled, y, g, alpha=alpha)
    vj = verdict_of(judge, min_n=min_pairs)
    vc = verdict_of(corrected, min_n=min_labelled)
    return PairedPPI(judge, human, corrected, lam, vj, vc, verdict_note(judge, corrected, vj, vc))


# ---- differential judge error ------------------------------------------------------------------


@dataclass(frozen=True)
class DifferentialError:
    """Does the judge's false-positive (or false-negative) rate differ between two levels? Rates
    against the human labels; Fisher's exact test; the power to detect a ``delta`` difference at
    these counts (normal approximation around the pooled rate) and the smallest difference
    detectable with 80% power."""

    kind: str  # fpr | fnr
    rate_a: float
    n_a: int
    rate_b: float
    n_b: int
    p: float
    power: float
    delta: float
    mde80: float

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


def power_two_rates(p0: float, delta: float, n_a: int, n_b: int, alpha: float = PPI_ALPHA) -> float:
    """Power of a two-sided two-proportion test at level ``alpha`` to detect rates p0 and p0 + delta
    with n_a and n_b observations (normal approximation)."""
    if n_a < 1 or n_b < 1 or not math.isfinite(p0):
        return math.nan
    p1 = min(max(p0, 0.0), 1.0)
    p2 = min(p1 + delta, 1.0)
    if p2 == p1:
        p2, p1 = p1, max(p1 - delta, 0.0)
    se = math.sqrt(max(p1 * (1 - p1) / n_a + p2 * (1 - p2) / n_b, 1e-12))
    z = stats.norm.ppf(1 - alpha / 2)
    d = abs(p2 - p1) / se
    return float(stats.norm.cdf(d - z) + stats.norm.cdf(-d - z))


def minimum_detectable(p0: float, n_a: int, n_b: int, alpha: float = PPI_ALPHA, power: float = 0.80) -> float:
    """The smallest rate difference detectable with ``power`` (bisection on :func:`power_two_rates`)."""
    if n_a < 1 or n_b < 1 or not math.isfinite(p0):
        return math.nan
    lo, hi = 0.0, 1.0
    if power_two_rates(p0, hi, n_a, n_b, alpha) < power:
        return math.nan
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if power_two_rates(p0, mid, n_a, n_b, alpha) < power else (lo, mid)
    return hi


def differential_error(judge_a: Sequence[int], human_a: Sequence[int], judge_b: Sequence[int], human_b: Sequence[int],
                       kind: str, *, delta: float = DIFFERENTIAL_DELTA, alpha: float = PPI_ALPHA) -> DifferentialError:
    """``kind`` fpr: P(judge 1 | human 0) at level a vs b; fnr: P(judge 0 | human 1)."""
    if kind not in ("fpr", "fnr"):
        raise ValueError(f"kind must be fpr or fnr, got {kind!r}")
    truth = 0 if kind == "fpr" else 1

    def counts(j, h):
        j, h = np.asarray(j, dtype=int), np.asarray(h, dtype=int)
        sel = h == truth
        err = int(np.sum(j[sel] != truth))
        return err, int(sel.sum())

    ea, na = counts(judge_a, human_a)
    eb, nb = counts(judge_b, human_b)
    ra = ea / na if na else math.nan
    rb = eb / nb if nb else math.nan
    p = float(stats.fisher_exact([[ea, na - ea], [eb, nb - eb]])[1]) if na and nb else math.nan
    pooled = (ea + eb) / (na + nb) if na + nb else math.nan
    return DifferentialError(kind, ra, na, rb, nb, p, power_two_rates(pooled, delta, na, nb, alpha), delta,
                             minimum_detectable(pooled, na, nb, alpha))


__all__ = [
    "DIFFERENTIAL_DELTA", "DifferentialError", "HIDDEN_BIAS", "Interval", "MIN_LABELLED", "NOT_SURVIVING", "PPI_ALPHA",
    "PairedPPI", "SIGN_FLIP", "differential_error", "mean_interval", "minimum_detectable", "paired_ppi",
    "power_two_rates", "ppi_lambda", "ppi_mean_difference", "verdict_note", "verdict_of",
]
