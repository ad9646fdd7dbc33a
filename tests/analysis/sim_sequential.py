"""Benchmark of the sequential audit's goals (``analysis.sequential`` + ``look_decision``, the code
path of ``edufair audit``): against the fixed-n audit of the same plan,

* false flag (a fair tutor flagged), false certify (a tutor at the margin certified) rates no
  higher than the fixed-n audit's;
* on a clearly biased and on a clearly fair tutor, >= 30% fewer dialogues for the same decision.

Design: one headline unit (one contrast pair, one pedagogical metric, continuous normal
differences); the fixed-n plan is ``analysis.plan``'s for certifying the worst fair case the user
accepts (true |r| = ``--fair-r`` < margin) with 80%; the sequential audit has the same maximum
(budget = the fixed plan) and ``--looks`` equally spaced looks, goal ``units`` (stop when the unit
is flagged or certified). Each look uses the report's statistics at the spent level.

    nice -n 10 python -m tests.analysis.sim_sequential --reps 200
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.stats import norm

from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.analysis.plan import PlanGoal, assumed_inputs, plan_family
from edufair_metrics.analysis.sequential import boundaries, look_decision
from edufair_metrics.records import DialogueScores

TASK = "edufair_explicit_physics"
METRIC = "actionability"


def scores(n: int, rho: float, rng) -> list[DialogueScores]:
    """n questions whose paired difference has rank-biserial r = ``rho`` (normal differences)."""
    delta = norm.ppf((1 + rho) / 2) / math.sqrt(2) * math.sqrt(2.0)  # sd of a difference: √2
    out = []
    for q in range(n):
        u = rng.normal()
        for lv, shift in (("female", delta), ("male", 0.0)):
            out.append(DialogueScores(f"q{q:05d}", "physics", "explicit", "gender", lv, {METRIC: u + shift + rng.normal()},
                                      tutor="sim", task=TASK))
    return out


def first(rows, n):
    keep = {f"q{q:05d}" for q in range(n)}
    return [s for s in rows if s.question_id in keep]


def run(rho, n_max, looks, reps, rng, params):
    """(fixed: flagged, certified rates; sequential: flagged, certified rates, mean questions)."""
    fx_f = fx_c = sq_f = sq_c = 0
    used = []
    nominal = [lk.nominal_alpha for lk in boundaries([j / looks for j in range(1, looks + 1)], 0.05)]
    for _ in range(reps):
        data = scores(n_max, rho, rng)
        fixed = look_decision(scores_frame(data), nominal_alpha=0.05, params=params, until="units")
        fx_f += fixed.flagged > 0
        fx_c += fixed.certified == fixed.units
        for j in range(1, looks + 1):
            n = round(n_max * j / looks)
            d = look_decision(scores_frame(first(data, n)), nominal_alpha=nominal[j - 1], params=params, until="units")
            if d.reached or j == looks:
                sq_f += d.flagged > 0
                sq_c += d.certified == d.units and d.units > 0
                used.append(n)
                break
    return fx_f / reps, fx_c / reps, sq_f / reps, sq_c / reps, float(np.mean(used))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--looks", type=int, default=5)
    parser.add_argument("--margin", type=float, default=0.15)
    parser.add_argument("--fair-r", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--n-boot", type=int, default=100)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    params = StatParams(n_boot=args.n_boot, seed=0, equivalence_margin=args.margin)
    plan = plan_family(assumed_inputs(), PlanGoal("certify", args.fair_r, margin=args.margin))
    n = plan.chosen.questions
    print(f"fixed-n plan: {n} questions (certify true |r| {args.fair_r} within {args.margin} with "
          f"{plan.chosen.probability:.0%}); sequential: same maximum, {args.looks} looks, O'Brien-Fleming spending; "
          f"{args.reps} runs per scenario")
    se = lambda p: math.sqrt(max(p * (1 - p), 1e-9) / args.reps)  # noqa: E731
    for name, rho in (("fair (r = 0): false flags; clearly fair", 0.0), (f"worst accepted fair (r = {args.fair_r})", args.fair_r),
                      (f"at the margin (r = {args.margin}): false certifications", args.margin),
                      ("clearly biased (r = 0.30)", 0.30)):
        t0 = time.perf_counter()
        fxf, fxc, sqf, sqc, used = run(rho, n, args.looks, args.reps, rng, params)
        print(f"{name}: fixed flag {fxf:.1%}±{se(fxf):.1%} certify {fxc:.1%}±{se(fxc):.1%} | sequential flag "
              f"{sqf:.1%}±{se(sqf):.1%} certify {sqc:.1%}±{se(sqc):.1%}, mean {used:.0f} questions = "
              f"{1 - used / n:.0%} fewer dialogues ({time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
