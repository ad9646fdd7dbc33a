"""Group-sequential decisions for ``edufair audit``: how much of the error rate each look may spend,
so that an audit that re-analyses after every batch of questions and stops as soon as it has
decided makes no more false flags / false certifications / false gate fails than the fixed-n audit.

Why α-spending and not confidence sequences: EduFair's verdicts are Wilcoxon / sign-flip p values
and TOST intervals of the rank-biserial r, asymptotically normal with independent increments over
questions, and their error control at one look is what the fixed-n audit promises. Lan–DeMets
spending keeps exactly those statistics and only lowers the level of each look, so a look's
verdicts are the report's verdicts at a stricter α (``grid.contrast_grid(fdr_alpha=...)``, the
TOST redone at its own level by :func:`recertify`, the gate by ``compare_frames(alpha=...)``). A
confidence sequence (Howard et al. 2021; Waudby-Smith & Ramdas 2024) would be valid under
continuous monitoring, but it is wider at every n (≈ √(log log n) inflation) and would replace the
verdicts' statistics; the looks of an audit are few (one per batch), the setting α-spending is
built for (Jennison & Turnbull 2000, ch. 7).

Three error rates, each spent separately (each is its own hypothesis test, so each keeps its own
fixed-n level, or less, under optional stopping):

* flags: two-sided, H0 ρ = 0, at level α (then BH over the family as the report does);
* certification: each TOST side is a one-sided test of H0 |ρ| >= M at level α (repeated
  confidence intervals, Jennison & Turnbull ch. 9); the intersection–union TOST certifies when
  both reject, so a false certification at |ρ| = M needs its own side's one-sided sequential test
  to err: at most the 0.8·α it spends (below: why not all of α);
* the CI gate: its pass bound (non-inferiority) and its fail bound, each one-sided at level α.

Spending functions (:class:`Spending`; ``t`` = questions so far / the questions the budget
allows, capped at 1), one per error rate, each a Lan–DeMets spending function (Lan & DeMets 1983),
so each rate stays at most α however the looks fall (a look with nothing to spend cannot stop):

* flags (:data:`FLAG_SPENDING`): O'Brien–Fleming type ``2 − 2Φ(z_{1−α/2}/√t)``, two-sided, so α/2
  per sign in total, as the fixed-n two-sided test. It spends almost nothing early (two-sided
  1.2e-5 by t = 0.2, 0.0019 by 0.4) and 0.044 of its 0.05 in the second half, so (i) only an
  overwhelming bias is flagged early (a clearly biased tutor, r = 0.3, still stops at ~30% of
  the budget), and (ii) a fair tutor, which certifies and stops before the late looks in most
  runs, has had little flag α spent on it: false flags 4.2% vs the fixed-n audit's 5.0% in the
  normal model (``tests/analysis/design_sequential.py``); linear flag spending gave 4.7% and
  certified a fair tutor only 93.9% (its early flag α took runs the certification would have).
* each TOST side (:data:`CERTIFY_SPENDING`): the power family ``share·α·u^ρ`` (Kim & DeMets
  1987; Jennison & Turnbull 2000, §7.3) with ρ = 1/2 on ``u = (t − 0.3)/0.7``: nothing before 30%
  of the budget, then front-loaded, and ``share`` = :data:`CERTIFY_SHARE` = 0.8, i.e. 0.04 of
  α = 0.05 per side in all. The TOST at ρ = 0 has no drift: its evidence grows only as
  M·√n/√V0, and it can certify at a look only once M/se exceeds the look's z, i.e. after ~30% of
  a budget sized as below (M/se ≈ 2.3 at 30% of 1.3x the plan); α spent on earlier looks is
  spent on paths that cannot certify (the other side still fails) and is lost to the later
  looks, which is what held the first, linear version to 29% fewer dialogues. From the start the
  ρ = 1/2 front-loading gives the looks that can certify a fair tutor most of α (of 20 looks,
  the first past the start has a one-sided level of 0.011, the last 0.012). The look schedule
  thus starts at ~30% of the budget whatever ``--batch`` is (looks before spend nothing and
  cannot decide).

  Why 0.8·α and not α. A valid sequential test of H0 |ρ| >= M errs at ρ = M with (nearly) all
  the α it spends. The fixed-n audit errs less than its α there: a unit at the margin is
  certified only if its TOST passes *and* it is not flagged, and at the planned n (80% to
  certify a tutor at M/3) the Wilcoxon test flags a tutor at the margin 96% of the time, which
  removes 1.3 of the TOST's 5 points: 3.7% (normal model), whatever M, since it depends on n only
  through M·√n/√V0. The sequential audit's flags (O'Brien–Fleming) are too strict at its
  certifying looks to do the same (the flag region |r̂| >= z·se₀ and the certify region
  |r̂| <= M − c_k·se only meet once M/se > c_k + 1.96 ≈ 4.1, past the budget), so a rule "never
  certify what the fixed-n test on the look's data flags" would change nothing; the sequential
  audit has to spend less instead, about what the fixed-n audit falsely certifies: 0.8·α = 4% per
  side, whose realized rate at the margin is 3.5% (its late flags remove some), below the fixed n's
  3.7%. A share of 0.74 (= 3.7/5: a bound that needs no help from the flags) falsely certifies 3.3%
  but certifies the planning point less often than the fixed n (normal model, 100,000 paths:
  76.0% vs 76.2%); 0.8 certifies it 76.8% at the same budget. The first
  version, with all of α, certified falsely at 4.5% vs the fixed n's 3.7% (normal model) and
  2.5% ± 1.2% vs 1.2% ± 0.9% on the audit's verdicts (160 runs; the fixed n's 1.2% was low by
  chance); now 3.5% ± 0.7% vs 3.8% ± 0.8%, difference −0.3% ± 0.7% from the discordant runs (600
  runs, ``sim_sequential --only 2``). The price is power, bought back by the budget:
  :data:`BUDGET_MULTIPLE` = 1.3x the plan (was 1.15x). An audit of a single batch (t = 1 at its
  only look) certifies at 0.04 per side, stricter than the report's 0.05.
* the CI gate's pass bound (:data:`GATE_SPENDING`): linear ``α·t``, and its fail bound
  (:data:`GATE_FAIL_SPENDING`): O'Brien–Fleming type, each one-sided at α (the gate decides from 50
  shared questions on), with a budget of :data:`GATE_BUDGET_MULTIPLE` = 1.4x the fixed-n plan (the
  compare's questions for 80% at no change). At no change the gate's change of the mean unbiased
  r² has the variance of a mean of squares at ρ = 0, falling as 1/n², so its pass statistic grows
  linearly in n: whether a gate passes is nearly a function of n (the fixed n for 99% is only 1.6x
  the n for 80%), and no valid sequential gate passes as often as the fixed-n plan with much
  fewer questions (normal model, ``design_sequential --gate``: 10 looks, linear, 1x the plan: 23%
  fewer than the plan but passing 75% vs 81%). With 1.4x it passes 95% after 11% fewer questions
  than the plan, i.e. 31% fewer than the fixed n that passes 95%, and fails a clearly worse
  candidate 94% after 12% fewer (34% fewer than the fixed n for 94%; a linear fail bound: 91%
  after 24% fewer, 36%). Why the fail bound waits: at an early look the change of a few units is
  far from normal (at no bias a weighted sum of χ²₁, heavy-tailed whatever its skewness) and its
  bias part A is shrunk to 0 (within the plug-in's noise), so the se cannot follow a draw that
  is large by chance; with the linear fail bound a five-metric gate (``sim_sequential --gate
  --gate-metrics 5``) failed 2 of 60 unchanged candidates at looks of ~50–100 questions where the
  fixed-n gate failed none (one recorded: 52 shared questions, a change of 3.2 se at level
  0.005, ``test_sequential.py``). O'Brien–Fleming spends 6e-10 at 10% of the budget and 3e-4 by
  30%, and fails an unchanged candidate no more often than the fixed n (README). The pass bound
  stays linear: it is where the saving at no change comes from (an early look passes only once
  the change's upper bound is below the threshold, which at no change is a function of n).
  On the gate's own verdicts (``sim_sequential --gate``) the saving at no change is 17% ± 3% for
  a one-metric headline (40 runs; against the fixed n that passes as often, read off a coarse
  grid), the worst case for stopping early (a scaled χ²₁ − 1, bounded below: no lucky early
  pass), and about a third for five metrics (README).

The design was chosen in the normal model (``tests/analysis/design_sequential.py``, 20 looks,
margin 0.15, the fixed-n plan 826 questions for 80% at ρ = 0.05) and is what ``edufair plan``'s
size x 1.3 as ``--budget`` means (100,000 paths, MC se <= 0.13 points): at ρ = 0 it certifies
95.9% (fixed n: 95.0%) with 33% fewer dialogues; at the planning point ρ = 0.05 it certifies 76.8%
(fixed n: 76.2%) with 24% fewer; it falsely certifies at ρ = M 3.5% (fixed n: 3.7%), falsely
flags a fair tutor 3.9% (fixed n: 5.0%) and flags a clearly biased tutor (0.3) after 34% of the
plan. All of α per side at the same budget: false certifications 4.5%. Alternatives measured there:
linear certification from t = 0, 10–40 looks, starts 0.25–0.4, ρ 0.25–1.5, inflation 1.0–1.4,
a share of 0.74–1: later starts and larger ρ certify more at the planning point and save less;
earlier starts or ρ < 1/2 save ~1 point more and certify a fair tutor less often (measured for
the previous design; at this one a start of 0.25 certifies the planning point 76.1% vs 76.9%,
40,000 paths); a share
of 0.74 at 1.3x falsely certifies 3.3% but certifies the planning point 0.2 points less than the
fixed n, 1.25x with 0.8 certifies it 0.3 points less; 10 looks save 2 points less than 20 (the
audit's default batch of 20 questions gives more looks than that). ``sim_sequential.py``
measures the design on the audit's own verdicts.

Boundaries: ``c_k`` on the z scale solve ``P(no crossing at looks < k, crossing at k) = α(t_k) −
α(t_{k−1})`` under H0 (Brownian motion in information time, recursive numerical integration,
Armitage, McPherson & Rowe 1969; two-sided |Z| >= c or one-sided Z >= c); a look's nominal level
is ``2 (1 − Φ(c_k))`` (two-sided) or ``1 − Φ(c_k)`` (one-sided). The boundaries of earlier looks
depend only on their own fractions, so a resumed audit recomputes the same levels and takes the
same decisions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from edufair_metrics.errors import EduFairError

GRID_POINTS = 1201  # points of the numerical integration on the score scale
SPENDING = ("obf", "linear", "power")


@dataclass(frozen=True)
class Spending:
    """A Lan–DeMets spending function ``α(t)`` on the information fraction ``t`` (module docstring):
    ``kind`` ``obf`` = O'Brien–Fleming type ``2 − 2Φ(z_{1−α/2}/√u)``, ``power`` = Kim–DeMets
    ``α·u^rho`` (``rho`` = 1: linear), on ``u = (t − start) / (1 − start)``: nothing is spent at or
    before ``start`` (a look there can never stop), ``share``·α in all by ``t`` = 1 (``share`` < 1:
    a test that promises less than α, as the certification does, module docstring)."""

    kind: str = "obf"
    start: float = 0.0
    rho: float = 1.0
    share: float = 1.0

    def __post_init__(self):
        if self.kind not in ("obf", "power"):
            raise EduFairError(f"unknown spending function {self.kind!r} (one of: {', '.join(SPENDING)})")
        if not 0 <= self.start < 1 or not self.rho > 0 or not 0 < self.share <= 1:
            raise EduFairError(f"a spending function needs 0 <= start < 1, rho > 0 and 0 < share <= 1, got "
                               f"{self.start}, {self.rho}, {self.share}")

    def __call__(self, t: float, alpha: float) -> float:
        from scipy.stats import norm

        if t <= self.start:
            return 0.0
        u = (min(1.0, float(t)) - self.start) / (1 - self.start)
        if self.kind == "power":
            return float(self.share * alpha * u ** self.rho)
        return float(self.share * (2 - 2 * norm.cdf(norm.ppf(1 - alpha / 2) / math.sqrt(u))))

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return asdict(self)


NAMED = {"obf": Spending("obf"), "linear": Spending("power", 0.0, 1.0)}
# the audit's spending functions (module docstring: why these, and what the others cost)
FLAG_SPENDING = Spending("obf")  # flags, two-sided (α/2 per sign, as the fixed-n Wilcoxon test)
FIRST_CERTIFY_FRACTION = 0.3  # no certification α is spent before 30% of the budget
CERTIFY_SHARE = 0.8  # each TOST side spends 0.8·α in all: the fixed-n audit's own false-certify rate (docstring)
CERTIFY_SPENDING = Spending("power", start=FIRST_CERTIFY_FRACTION, rho=0.5, share=CERTIFY_SHARE)  # one-sided
BUDGET_MULTIPLE = 1.3  # the --budget the design is for: this x the dialogues of the fixed-n plan (docstring)
GATE_BUDGET_MULTIPLE = 1.4  # --until gate: this x the compare's questions_needed (docstring)
GATE_SPENDING = NAMED["linear"]  # the CI gate's pass bound, one-sided: α·t
GATE_FAIL_SPENDING = Spending("obf")  # its fail bound, one-sided: O'Brien–Fleming type (docstring)
GATE_BOUNDS = ("pass", "fail")


def _spending(spending) -> Spending:
    if isinstance(spending, Spending):
        return spending
    if spending not in NAMED:
        raise EduFairError(f"unknown spending function {spending!r} (one of: {', '.join(SPENDING)})")
    return NAMED[spending]


def spent(t: float, alpha: float, spending="obf") -> float:
    """α spent by information fraction ``t`` (module docstring): ``obf`` = O'Brien–Fleming-type
    Lan–DeMets ``2 − 2Φ(z_{1−α/2}/√t)`` (two-sided α), ``linear`` = ``α·t``, or a
    :class:`Spending`."""
    if t <= 0:
        return 0.0
    return _spending(spending)(t, alpha)


def obf_spent(t: float, alpha: float) -> float:
    """α spent by information fraction ``t`` (O'Brien–Fleming-type Lan–DeMets, two-sided)."""
    return spent(t, alpha, "obf")


@dataclass(frozen=True)
class Look:
    """One look of a group-sequential audit: its information fraction, the α spent so far, its
    boundary on the z scale and its nominal level (two-sided for ``sides`` = 2, one-sided for 1)."""

    fraction: float
    spent: float
    boundary: float
    nominal_alpha: float


def boundaries(fractions: Sequence[float], alpha: float = 0.05, *, spending="obf", sides: int = 2) -> list[Look]:
    """The looks at increasing information ``fractions`` (each in (0, 1]) of a test at level
    ``alpha`` (two-sided for ``sides`` = 2: reject at |Z_k| >= c_k; one-sided for 1: Z_k >= c_k)
    spending ``spending`` (a name of :data:`SPENDING` or a :class:`Spending`; module docstring)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    if sides not in (1, 2):
        raise EduFairError(f"sides must be 1 or 2, got {sides!r}")
    spending = _spending(spending)
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
        now = spent(t, alpha, spending)
        target = now - prev_spent
        sd = math.sqrt(t - prev_t)
        if grid is None:  # first look: S(t) ~ N(0, t)
            def cross(b, t=t):
                return sides * norm.sf(b / math.sqrt(t))
        else:
            du = grid[1] - grid[0]

            def cross(b, grid=grid, density=density, du=du, sd=sd):
                lower = norm.cdf((-b - grid) / sd) if sides == 2 else 0.0
                return float(np.sum(density * (norm.sf((b - grid) / sd) + lower)) * du)
        hi = 12 * math.sqrt(t)
        if target <= cross(hi):  # nothing left to spend at this look: it can never stop
            b = math.inf
        else:
            b = brentq(lambda x, target=target: cross(x) - target, 1e-9, hi, xtol=1e-10)
        c = b / math.sqrt(t)
        looks.append(Look(t, now, c, float(sides * norm.sf(c)) if math.isfinite(c) else 0.0))
        # the continuation sub-density at this look, for the next one (one-sided: all of (-inf, b))
        lim = b if math.isfinite(b) else hi
        new_grid = np.linspace(-lim if sides == 2 else -hi, lim, GRID_POINTS)
        if grid is None:
            new_density = norm.pdf(new_grid / math.sqrt(t)) / math.sqrt(t)
        else:
            du = grid[1] - grid[0]
            kern = norm.pdf((new_grid[:, None] - grid[None, :]) / sd) / sd
            new_density = kern @ density * du
        grid, density = new_grid, new_density
        prev_t, prev_spent = t, now
    return looks


def flag_looks(fractions: Sequence[float], alpha: float = 0.05) -> list[Look]:
    """Each look's two-sided boundary and level for flags (:data:`FLAG_SPENDING`)."""
    return boundaries(fractions, alpha, spending=FLAG_SPENDING)


def nominal_levels(fractions: Sequence[float], alpha: float = 0.05) -> list[float]:
    """Each look's nominal two-sided level for flags (:func:`flag_looks`)."""
    return [look.nominal_alpha for look in flag_looks(fractions, alpha)]


def certify_looks(fractions: Sequence[float], alpha: float = 0.05) -> list[Look]:
    """Each look's one-sided boundary and level for each side of the TOST
    (:data:`CERTIFY_SPENDING`; module docstring)."""
    return boundaries(fractions, alpha, spending=CERTIFY_SPENDING, sides=1)


def certify_levels(fractions: Sequence[float], alpha: float = 0.05) -> list[float]:
    """Each look's nominal one-sided level of each TOST side (:func:`certify_looks`)."""
    return [look.nominal_alpha for look in certify_looks(fractions, alpha)]


def gate_looks(fractions: Sequence[float], alpha: float = 0.05, bound: str = "pass") -> list[Look]:
    """Each look's one-sided boundary and level for the CI gate's ``bound``: ``pass``
    (:data:`GATE_SPENDING`, linear) or ``fail`` (:data:`GATE_FAIL_SPENDING`, O'Brien–Fleming type)."""
    if bound not in GATE_BOUNDS:
        raise EduFairError(f"a gate bound is one of {', '.join(GATE_BOUNDS)}, got {bound!r}")
    return boundaries(fractions, alpha, spending=GATE_SPENDING if bound == "pass" else GATE_FAIL_SPENDING, sides=1)


def design() -> dict:
    """The audit's spending functions, as ``audit.json`` records them (a resume must match them)."""
    return {"flag": FLAG_SPENDING.to_dict(), "certify": CERTIFY_SPENDING.to_dict(), "gate": GATE_SPENDING.to_dict(),
            "gate_fail": GATE_FAIL_SPENDING.to_dict()}


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


def recertify(grid, certify_alpha: float, margin: float):
    """``grid`` (``grid.contrast_grid``) with each row's TOST redone at one-sided level
    ``certify_alpha`` per side (the certification's own spent level; the flags stay at the grid's):
    ``eq_ci_low`` / ``eq_ci_high`` = r ∓ z·se with the verdicts' conservative se
    (``verdicts.equivalence_se``), ``certified`` and the ``certify`` / ``inconclusive`` verdicts
    from them (flag, unconfirmed and insufficient rows keep theirs)."""
    from scipy.special import ndtri

    from edufair_metrics.analysis.verdicts import equivalence_se

    g = grid.copy()
    r = g["r"].to_numpy(dtype=float)
    se = equivalence_se(r, g["n_pairs"].to_numpy(dtype=float), g["boot_sd"].to_numpy(dtype=float),
                        g["null_var_r"].to_numpy(dtype=float))
    z = float(ndtri(1 - certify_alpha)) if certify_alpha > 0 else math.inf
    with np.errstate(invalid="ignore"):
        lo, hi = r - z * se, r + z * se
        certified = g["sufficient"].astype(bool).to_numpy() & (lo > -margin) & (hi < margin)
    g["eq_ci_low"], g["eq_ci_high"], g["certified"] = lo, hi, certified
    open_rows = g["verdict"].isin(["certify", "inconclusive"]).to_numpy()
    g.loc[open_rows, "verdict"] = np.where(certified[open_rows], "certify", "inconclusive")
    return g


def look_decision(df, *, nominal_alpha: float, params, until: str, kind: str = "pedagogical",
                  certify_alpha: float | None = None) -> LookDecision:
    """The verdicts of the long score frame ``df`` at the look's levels (the report's own grid and
    units, ``grid.contrast_grid(fdr_alpha=nominal_alpha)``: flags at FDR level ``nominal_alpha``;
    each TOST side at one-sided level ``certify_alpha``, None: ``nominal_alpha`` as the report
    does, :func:`recertify`) and whether ``until`` is reached: ``flag`` = a headline unit flagged,
    ``certify`` = every headline unit certified, ``units`` = every headline unit flagged or
    certified. (``gate`` is decided by ``compare_frames(alpha=...)`` in ``local/audit.py``.)"""
    from edufair_metrics.analysis.grid import contrast_grid, dimension_summary
    from edufair_metrics.analysis.noise import unit_noise

    if until not in UNTIL:
        raise EduFairError(f"--until must be one of {', '.join(UNTIL)}, got {until!r}")
    questions = int(df["question_id"].nunique()) if len(df) else 0
    cert_level = nominal_alpha if certify_alpha is None else certify_alpha
    if not len(df) or (nominal_alpha <= 0 and cert_level <= 0):  # a look that can never stop
        return LookDecision(questions, nominal_alpha, 0, 0, 0, False, "open")
    # a look with nothing to spend on flags (level 0) may still certify: its grid at the
    # certification's level, and no unit flagged
    grid = contrast_grid(df, n_boot=params.n_boot, seed=params.seed, min_pairs=params.min_pairs,
                         ses_summary=params.ses_summary, fdr_method=params.fdr_method,
                         equivalence_margin=params.equivalence_margin,
                         fdr_alpha=nominal_alpha if nominal_alpha > 0 else cert_level)
    if not len(grid):
        return LookDecision(questions, nominal_alpha, 0, 0, 0, False, "open")
    if certify_alpha is not None and certify_alpha != nominal_alpha:
        grid = recertify(grid, certify_alpha, params.equivalence_margin)
    units = unit_noise(dimension_summary(grid, ses_summary=params.ses_summary), grid, ses_summary=params.ses_summary)
    head = units[units["headline"].astype(bool) & (units["metric_kind"] == kind)]
    is_flag = (head["verdict"] == "flag").to_numpy() & (nominal_alpha > 0)
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
        reached, status = False, "open (the gate decides)"
    return LookDecision(questions, nominal_alpha, n, flagged, certified, reached, status)
