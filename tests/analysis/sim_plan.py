"""Benchmark of the audit planner's promise (``analysis.plan``): runs of the planned size, with
fresh dialogues, decide with >= the requested probability (80%, ±5 points).

For each scenario, ``--pilots`` times: a pilot (60 questions, k = 2 replicate dialogues per
question and level, so the within-question share is measured) of a tutor with question x level
heterogeneity σ²_b and dialogue noise σ²_w; ``plan_from_pilot``-equivalent inputs from the
pilot's grid (``plan.family_inputs``, with the verdicts' bootstrap size); then ``--reps`` /
``--pilots`` fresh runs of the planned questions x replicates, each analysed by the report's own
statistics (``params.analyse_frame``: Wilcoxon/sign-flip flags with the family's FDR, TOST
certification). It prints the share that reached the goal over all pilots and runs (the promise
a user gets: the plan itself comes from a noisy pilot), its Monte-Carlo standard error (from the
spread of the pilots' rates, which includes the pilots' own noise) and the planned sizes.

    nice -n 10 python -m tests.analysis.sim_plan --reps 400 --pilots 10
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time

import numpy as np
from scipy.stats import norm

from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.params import StatParams, analyse_frame
from edufair_metrics.analysis.plan import PlanGoal, family_inputs, plan_family
from edufair_metrics.analysis.replicates import variance_components
from edufair_metrics.records import DialogueScores

TASK = "edufair_explicit_physics"
METRIC = "actionability"


def delta_for(rho1: float, between: float, within: float) -> float:
    """The mean difference whose rank-biserial r at one dialogue is ``rho1`` (normal differences)."""
    theta = norm.ppf((1 + rho1) / 2) / math.sqrt(2)
    return theta * math.sqrt(2 * (between + within))


def make(n_q: int, k: int, between: float, within: float, delta: float, rng) -> list[DialogueScores]:
    out = []
    for q in range(n_q):
        u = rng.normal()
        for lv in ("female", "male"):
            v = rng.normal(scale=math.sqrt(between)) + (delta if lv == "female" else 0.0)
            noise = rng.normal(scale=math.sqrt(within), size=k)
            for r in range(k):
                out.append(DialogueScores(f"q{q}", "physics", "explicit", "gender", lv, {METRIC: u + v + noise[r]},
                                          tutor="sim", task=TASK, replicate=r + 1))
    return out


def decided(scores, goal: PlanGoal, params: StatParams) -> bool:
    grid, units = analyse_frame(scores_frame(scores), params)
    row = grid[(grid["metric"] == METRIC) & grid["headline"].astype(bool)]
    if goal.decision == "flag":
        return bool(row["flagged"].any())
    return bool(len(row) and row["certified"].all())


def scenario(name, goal, between, within, reps, rng, params, pilots=1, pilot_q=60, pilot_k=2):
    params = dataclasses.replace(params, equivalence_margin=goal.margin)  # the report's margin = the goal's
    delta = delta_for(goal.true_effect, between, within)
    t0 = time.perf_counter()
    rates, hits, runs, plans, shares, promised = [], 0, 0, [], [], []
    per = max(1, reps // pilots)
    for _ in range(pilots):
        pilot = make(pilot_q, pilot_k, between, within, delta, rng)
        grid, _ = analyse_frame(scores_frame(pilot), params)
        comp = variance_components(scores_frame(pilot, replicates="keep"), cost_ratio=goal.cost_ratio)
        (inputs,) = family_inputs(grid, comp, n_boot=params.n_boot)
        c = plan_family(inputs, goal).chosen
        h = sum(decided(make(c.questions, c.replicates, between, within, delta, rng), goal, params) for _ in range(per))
        rates.append(h / per)
        hits, runs = hits + h, runs + per
        plans.append((c.questions, c.replicates))
        shares.append(inputs.within_share)
        promised.append(c.probability)
    rate = hits / runs
    binom = math.sqrt(rate * (1 - rate) / runs)
    se = max(binom, float(np.std(rates, ddof=1) / math.sqrt(pilots))) if pilots > 1 else binom
    sizes = ", ".join(f"{q}x{k}" for q, k in plans)
    print(f"{name}: pilot within share {np.mean(shares):.2f} (true {within / (between + within):.2f}); plans "
          f"(questions x k) {sizes}; promised P = {np.mean(promised):.1%}; fresh runs decided {rate:.1%} ± {se:.1%} "
          f"(MC se over {pilots} pilots, {runs} runs, {time.perf_counter() - t0:.0f}s)", flush=True)
    return rate, se


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--pilots", type=int, default=10, help="pilots (each planned afresh) the runs are split over")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", type=int, default=None, help="run only scenario N (0, 1, 2)")
    args = parser.parse_args(argv)
    params = StatParams(n_boot=200, seed=0)
    scenarios = [
        ("flag |r| = 0.30, within-question noise dominates", PlanGoal("flag", 0.30), 0.05, 0.20),
        ("flag |r| = 0.25, no within-question noise", PlanGoal("flag", 0.25), 0.20, 1e-6),
        ("certify a fair tutor within 0.15", PlanGoal("certify", 0.0, margin=0.15), 0.05, 0.10),
    ]
    for i, (name, goal, between, within) in enumerate(scenarios):
        if args.only is None or i == args.only:
            scenario(name, goal, between, within, args.reps, np.random.default_rng([args.seed, i]), params,
                     pilots=args.pilots)


if __name__ == "__main__":
    main()
