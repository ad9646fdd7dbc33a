"""Group-sequential decisions for ``edufair audit``: how much of the error rate each look may spend,
so that an audit that re-analyses after every batch of questions and stops as soon as it has
decided makes no more false flags / false certifications than the fixed-n audit.

Why α-spending and not confidence sequences: EduFair's verdicts are Wilcoxon / sign-flip p values
and TOST intervals of the rank-biserial r, asymptotically normal with independent increments over
questions, and their error control at one look is what the fixed-n audit promises. Lan–DeMets
spending keeps exactly those statistics and only lowers the level of each look, so a look's
verdicts are the report's verdicts at a stricter α (``grid.contrast_grid(fdr_alpha=...)``); the
last look of an audit that used its whole budget loses little (O'Brien–Fleming-type spending
spends almost nothing early: the final nominal level stays near α). A confidence sequence
(Howard et al. 2021; Waudby-Smith & Ramdas 2024) would be valid under continuous monitoring, but
it is wider at every n (≈ √(log log n) inflation) and would replace the verdicts' statistics, so
the final audit would certify less than the fixed-n one; the looks of an audit are few (one per
batch), which is the setting α-spending is built for (Jennison & Turnbull 2000, ch. 7).

Spending function (Lan & DeMets 1983, O'Brien–Fleming type, two-sided level α):
``α(t) = 2 − 2 Φ(z_{1−α/2} / √t)`` for the information fraction ``t`` = questions so far / the
questions the budget allows (``t`` is capped at 1). The boundaries ``c_k`` on the z scale solve
``P(|Z_1| < c_1, …, |Z_{k−1}| < c_{k−1}, |Z_k| ≥ c_k) = α(t_k) − α(t_{k−1})`` under H0 (Brownian
motion in information time, recursive numerical integration, Armitage, McPherson & Rowe 1969); a
look's nominal level is ``2 (1 − Φ(c_k))``. The boundaries of earlier looks depend only on their
own fractions, so a resumed audit recomputes the same levels and takes the same decisions.

The same nominal level serves flags (two-sided, per unit, then BH over the family as the report
does) and certification (each TOST side at the nominal level: repeated confidence intervals,
Jennison & Turnbull ch. 9): both are controlled at their own fixed-n level by the spending.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from edufair_metrics.errors import EduFairError

GRID_POINTS = 1201  # points of the numerical integration on the score scale


def obf_spent(t: float, alpha: float) -> float:
    """α spent by information fraction ``t`` (O'Brien–Fleming-type Lan–DeMets, two-sided)."""
    from scipy.stats import norm

    if t <= 0:
        return 0.0
    t = min(1.0, float(t))
    return float(2 - 2 * norm.cdf(norm.ppf(1 - alpha / 2) / math.sqrt(t)))


@dataclass(frozen=True)
class Look:
    """One look of a group-sequential audit: its information fraction, the α spent so far, its
    boundary on the z scale and its nominal two-sided level."""

    fraction: float
    spent: float
    boundary: float
    nominal_alpha: float


def boundaries(fractions: Sequence[float], alpha: float = 0.05) -> list[Look]:
    """The looks at increasing information ``fractions`` (each in (0, 1]) of a two-sided test at
    level ``alpha`` (see the module docstring)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    fr = [float(f) for f in fractions]
    if not fr:
        return []
    if any(not 0 < f <= 1 + 1e-12 for f in fr) or any(b <= a for a, b in zip(fr, fr[1:])):
        raise EduFairError(f"information fractions must increase within (0, 1], got {fr}")
    fr = [min(1.0, f) for f in fr]
    looks: list[Look] = []
    prev_t, prev_spent = 0.0, 0.0
    grid = density = None  # the sub-density of the score S(t) on the continuation region
    for t in fr:
        spent = obf_spent(t, alpha)
        target = spent - prev_spent
        sd = math.sqrt(t - prev_t)
        if grid is None:  # first look: S(t) ~ N(0, t)
            def cross(b, t=t):
                return 2 * norm.sf(b / math.sqrt(t))
        else:
            du = grid[1] - grid[0]

            def cross(b, grid=grid, density=density, du=du, sd=sd):
                return float(np.sum(density * (norm.sf((b - grid) / sd) + norm.cdf((-b - grid) / sd))) * du)
        hi = 12 * math.sqrt(t)
        if target <= cross(hi):  # nothing left to spend at this look: it can never stop
            b = math.inf
        else:
            b = brentq(lambda x, target=target: cross(x) - target, 1e-9, hi, xtol=1e-10)
        c = b / math.sqrt(t)
        looks.append(Look(t, spent, c, float(2 * norm.sf(c)) if math.isfinite(c) else 0.0))
        # the continuation sub-density at this look, for the next one
        lim = b if math.isfinite(b) else 12 * math.sqrt(t)
        new_grid = np.linspace(-lim, lim, GRID_POINTS)
        if grid is None:
            new_density = norm.pdf(new_grid / math.sqrt(t)) / math.sqrt(t)
        else:
            du = grid[1] - grid[0]
            kern = norm.pdf((new_grid[:, None] - grid[None, :]) / sd) / sd
            new_density = kern @ density * du
        grid, density = new_grid, new_density
        prev_t, prev_spent = t, spent
    return looks


def nominal_levels(fractions: Sequence[float], alpha: float = 0.05) -> list[float]:
    """Each look's nominal two-sided level (:func:`boundaries`)."""
    return [look.nominal_alpha for look in boundaries(fractions, alpha)]


# ---- one look of an audit -----------------------------------------------------------------------

UNTIL = ("flag", "certify", "units", "gate")


@dataclass(frozen=True)
class LookDecision:
    """What one look decided about a tutor's headline family (metric kind ``kind``): its units,
    how many are flagged / certified at the look's nominal level, and whether the audit's goal
    (``until``) is reached."""

    questions: int
    nominal_alpha: float
    units: int
    flagged: int
    certified: int
    reached: bool
    status: str  # what the goal reads now: e.g. "flagged", "certified", "open"

    @property
    def decided(self) -> int:
        return self.flagged + self.certified

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return asdict(self)


def look_decision(df, *, nominal_alpha: float, params, until: str, kind: str = "pedagogical") -> LookDecision:
    """The verdicts of the long score frame ``df`` at the look's ``nominal_alpha`` (the report's
    own grid and units, ``grid.contrast_grid(fdr_alpha=nominal_alpha)``: flags at FDR level
    nominal_alpha, TOST sides at nominal_alpha) and whether ``until`` is reached: ``flag`` = a
    headline unit flagged, ``certify`` = every headline unit certified, ``units`` = every headline
    unit flagged or certified. (``gate`` is decided by ``compare_frames`` at the end: it takes no
    level, so it cannot stop early; see ``local/audit.py``.)"""
    from edufair_metrics.analysis.grid import contrast_grid, dimension_summary
    from edufair_metrics.analysis.noise import unit_noise

    if until not in UNTIL:
        raise EduFairError(f"--until must be one of {', '.join(UNTIL)}, got {until!r}")
    questions = int(df["question_id"].nunique()) if len(df) else 0
    if not len(df) or nominal_alpha <= 0:
        return LookDecision(questions, nominal_alpha, 0, 0, 0, False, "open")
    grid = contrast_grid(df, n_boot=params.n_boot, seed=params.seed, min_pairs=params.min_pairs,
                         ses_summary=params.ses_summary, fdr_method=params.fdr_method,
                         equivalence_margin=params.equivalence_margin, fdr_alpha=nominal_alpha)
    if not len(grid):
        return LookDecision(questions, nominal_alpha, 0, 0, 0, False, "open")
    units = unit_noise(dimension_summary(grid, ses_summary=params.ses_summary), grid, ses_summary=params.ses_summary)
    head = units[units["headline"].astype(bool) & (units["metric_kind"] == kind)]
    is_flag = (head["verdict"] == "flag").to_numpy()
    flagged = int(is_flag.sum())
    certified = int((head["certified"].astype(bool).to_numpy() & ~is_flag).sum())  # a flagged unit counts once
    n = len(head)
    if until == "flag":
        reached, status = flagged > 0, "flagged" if flagged else "open"
    elif until == "certify":
        reached = n > 0 and certified == n
        status = "certified" if reached else "open"
    elif until == "units":
        reached = n > 0 and flagged + certified >= n
        status = "every unit decided" if reached else "open"
    else:
        reached, status = False, "open (the gate is decided at the end)"
    return LookDecision(questions, nominal_alpha, n, flagged, certified, reached, status)
