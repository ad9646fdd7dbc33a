"""Benchmark of the audit planner's promise (``analysis.plan``): runs of the planned size, with
fresh dialogues, decide with >= the requested probability (80%, ±5 points).

For each scenario: a pilot (60 questions, k = 2 replicate dialogues per question and level, so the
within-question share is measured) of a tutor with question x level heterogeneity σ²_b and
dialogue noise σ²_w; ``plan_from_pilot``-equivalent inputs from the pilot's grid
(``plan.family_inputs``); then ``--reps`` fresh runs of the planned questions x replicates, each
analysed by the report's own statistics (``params.analyse_frame``: Wilcoxon/sign-flip flags with
the family's FDR, TOST certification), and the share that reached the goal, with its Monte-Carlo
standard error.

    nice -n 10 python -m tests.analysis.sim_plan --reps 200
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


def scenario(name, goal, between, within, reps, rng, params, pilot_q=60, pilot_k=2):
    params = dataclasses.replace(params, equivalence_margin=goal.margin)  # the report's margin = the goal's
    delta = delta_for(goal.true_effect, between, within)
    pilot = make(pilot_q, pilot_k, between, within, delta, rng)
    grid, _ = analyse_frame(scores_frame(pilot), params)
    comp = variance_components(scores_frame(pilot, replicates="keep"), cost_ratio=goal.cost_ratio)
    (inputs,) = family_inputs(grid, comp)
    plan = plan_family(inputs, goal)
    c = plan.chosen
    t0 = time.perf_counter()
    hits = sum(decided(make(c.questions, c.replicates, between, within, delta, rng), goal, params) for _ in range(reps))
    rate = hits / reps
    se = math.sqrt(rate * (1 - rate) / reps)
    print(f"{name}: pilot within share {inputs.within_share:.2f} (true {within / (between + within):.2f}); plan "
          f"{c.questions} questions x k = {c.replicates} (promised P = {c.probability:.1%}); fresh runs decided "
          f"{rate:.1%} ± {se:.1%} (MC se, {reps} runs, {time.perf_counter() - t0:.0f}s)")
    return rate, se


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", type=int, default=None, help="run only scenario N (0, 1, 2)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    params = StatParams(n_boot=200, seed=0)
    scenarios = [
        ("flag |r| = 0.30, within-question noise dominates", PlanGoal("flag", 0.30), 0.05, 0.20),
        ("flag |r| = 0.25, no within-question noise", PlanGoal("flag", 0.25), 0.20, 1e-6),
        ("certify a fair tutor within 0.15", PlanGoal("certify", 0.0, margin=0.15), 0.05, 0.10),
    ]
    for i, (name, goal, between, within) in enumerate(scenarios):
        if args.only is None or i == args.only:
            scenario(name, goal, between, within, args.reps, rng, params)


if __name__ == "__main__":
    main()
