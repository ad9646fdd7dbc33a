"""Benchmark of the sequential audit's goals (``analysis.sequential`` + ``look_decision`` /
``compare_frames(alpha=...)``, the code path of ``edufair audit``) against the fixed-n audit:

* false flag (a fair tutor flagged), false certify (a tutor at the margin certified) and false
  fail (the gate under no change) rates no higher than the fixed-n audit's;
* on a clearly fair and on a clearly biased tutor >= 30% fewer dialogues than the fixed-n plan,
  deciding at least as often.

Design (headline, ``--until units``): one headline unit (one contrast pair, one pedagogical
metric, continuous normal differences). The fixed-n plan is ``analysis.plan``'s for certifying,
with 80%, the worst fair tutor the user accepts (true |r| = ``--fair-r``, default a third of the
margin); the fixed-n audit runs exactly that many questions and reads the report's verdicts at
α = 0.05. The sequential audit has ``--looks`` equally spaced looks up to ``--inflation`` x the
plan (default ``BUDGET_MULTIPLE``, the maximum-size inflation of a group-sequential design, so
that it still decides the planned tutor as often as the plan promises), flags (two-sided) and
each TOST side (one-sided) at the audit's spent levels (``flag_looks`` / ``certify_looks``:
O'Brien–Fleming; the power family from 30%, 0.8·α per side); it stops when the unit is flagged
or certified.

Each scenario prints both audits' flag / certify rates (MC se), the sequential audit's mean
questions and (i) its saving against the fixed-n plan, (ii) its saving against the fixed n that
the planner says reaches the *sequential audit's own* decision probability on that tutor (the
strictest like-with-like comparison; for a tutor exactly at the planning point it is the
classical average-sample-number saving, which for an equivalence test is ~20-25% at best).

Gate (``--gate``): the fixed-n plan is ``--gate-questions`` candidate questions (300: the gate
then passes an unchanged candidate ~80% of the time, the plan's probability; the compare's own
``questions_needed`` at the plan is printed beside it); a fair baseline run with enough questions
for every gate below; a candidate with no change (false fails; clearly passing) and one clearly
worse (``--gate-worse``). The headline has ``--gate-metrics`` pedagogical metrics of one contrast
pair (default 1: at ρ = 0 its change is a scaled χ²₁ − 1, the hardest case for stopping early; 5:
the catalogue's five, dialogue noise correlated ``--metric-corr`` between them). The fixed-n gate
runs at 0.8-1.6x the plan's questions (``FIXED_FACTORS``; the same runs' first questions), which
measures how often a fixed n decides; the
sequential gate (``local.audit.gate_look``: each look's bounds at their spent levels,
``gate_looks``: the pass bound linear, the fail bound O'Brien–Fleming type; no decision below 50
shared questions) looks ``--looks`` times up to
``--gate-multiple`` x the plan (default ``GATE_BUDGET_MULTIPLE``). Printed: both gates' pass /
fail rates, the audit's mean questions and its saving against the plan and against the fixed n
that decides (passes / fails) as often as the audit, interpolated in the measured rates
(``same_probability_n``: the like-with-like comparison of #32's goal), and the runs where only
one of the two gates failed.

Both audits read the same simulated questions in each run, so ``paired`` counts the runs where
only one of them flagged (certified): the sequential audit's rate minus the fixed-n audit's is
``(seq only − fixed only) / runs``, whose MC se is far smaller than either rate's.

    nice -n 10 python -m tests.analysis.sim_sequential --reps 100
    nice -n 10 python -m tests.analysis.sim_sequential --gate --looks 10 --reps 20 --only 0
    nice -n 10 python -m tests.analysis.sim_sequential --gate --looks 10 --reps 30 --only 0 --seed 21 \
        --gate-metrics 5 --max-increase 0.10 --gate-questions 370 --gate-worse 0.2
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
from scipy.stats import norm

from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.analysis.plan import PlanGoal, assumed_inputs, plan_family
from edufair_metrics.analysis.sequential import (
    BUDGET_MULTIPLE,
    CERTIFY_SPENDING,
    GATE_BUDGET_MULTIPLE,
    certify_looks,
    flag_looks,
    gate_looks,
    look_decision,
)
from edufair_metrics.catalogue import CATALOGUE
from edufair_metrics.records import DialogueScores

TASK = "edufair_explicit_physics"
# the plans of the exact TOST (no bootstrap noise in the planner's se): both audits read the same
# verdicts, so the comparison is like with like whatever the plan's size; the README's figures
# were measured with these plans (826 questions at the defaults)
EXACT = 10 ** 9
METRIC = "actionability"
PEDAGOGICAL = [m.name for m in CATALOGUE if m.kind == "pedagogical"]


def scores(n: int, rho: float, rng, tutor: str = "sim", metrics: int = 1, corr: float = 0.0) -> list[DialogueScores]:
    """n questions whose paired difference has rank-biserial r = ``rho`` (normal differences) on
    each of ``metrics`` pedagogical metrics (the first: ``METRIC``; more: the catalogue's others,
    a headline of one contrast pair), whose dialogue noise is correlated ``corr`` between the
    metrics of one dialogue (a tutor that scaffolds also tends to be actionable)."""
    delta = norm.ppf((1 + rho) / 2) / math.sqrt(2) * math.sqrt(2.0)  # sd of a difference: √2
    names = ([METRIC] + [m for m in PEDAGOGICAL if m != METRIC])[:metrics]
    out = []
    for q in range(n):
        u = rng.normal(size=len(names))
        for lv, shift in (("female", delta), ("male", 0.0)):
            e = (rng.normal(size=1) if len(names) == 1  # the one-metric draws of the earlier figures
                 else math.sqrt(corr) * rng.normal() + math.sqrt(1 - corr) * rng.normal(size=len(names)))
            out.append(DialogueScores(f"q{q:05d}", "physics", "explicit", "gender", lv,
                                      {m: float(u[i] + shift + e[i]) for i, m in enumerate(names)},
                                      tutor=tutor, task=TASK))
    return out


def first_frame(df, n):
    """The long frame of the first ``n`` questions (the questions a look has seen)."""
    return df[df["question_id"] < f"q{n:05d}"]


def look_sizes(n_max: int, looks: int) -> list[int]:
    return [round(n_max * j / looks) for j in range(1, looks + 1)]


def levels(looks: int, alpha: float = 0.05, n_max: int | None = None) -> tuple[list[float], list[float]]:
    """Each look's flag (two-sided) and certification (one-sided) level; the fractions are those of
    the looks' whole questions (``look_sizes``) when ``n_max`` is given, as the audit computes them."""
    fr = ([n / n_max for n in look_sizes(n_max, looks)] if n_max else [j / looks for j in range(1, looks + 1)])
    return [lk.nominal_alpha for lk in flag_looks(fr, alpha)], [lk.nominal_alpha for lk in certify_looks(fr, alpha)]


def run(rho, n_plan, n_max, looks, reps, rng, params):
    """(fixed: flagged, certified; sequential: flagged, certified, questions per run; paired: runs
    flagged only by the sequential / only by the fixed-n audit, certified only by either)."""
    fx_f = fx_c = sq_f = sq_c = 0
    used = []
    paired = {"flag_seq_only": 0, "flag_fixed_only": 0, "cert_seq_only": 0, "cert_fixed_only": 0}
    flag_a, cert_a = levels(looks, n_max=n_max)
    sizes = look_sizes(n_max, looks)
    for _ in range(reps):
        data = scores_frame(scores(max(n_max, n_plan), rho, rng))
        fixed = look_decision(first_frame(data, n_plan), nominal_alpha=0.05, params=params, until="units")
        f_flag = fixed.flagged > 0
        f_cert = fixed.certified == fixed.units and fixed.units > 0 and not fixed.flagged
        for j, n in enumerate(sizes):
            if flag_a[j] <= 0 and cert_a[j] <= 0 and j < looks - 1:
                continue  # a look with nothing to spend can never stop (look_decision: "open")
            d = look_decision(first_frame(data, n), nominal_alpha=flag_a[j], certify_alpha=cert_a[j],
                              params=params, until="units")
            if d.reached or j == looks - 1:
                s_flag = d.flagged > 0
                s_cert = d.certified == d.units and d.units > 0 and not d.flagged
                used.append(n)
                break
        fx_f, fx_c, sq_f, sq_c = fx_f + f_flag, fx_c + f_cert, sq_f + s_flag, sq_c + s_cert
        paired["flag_seq_only"] += s_flag and not f_flag
        paired["flag_fixed_only"] += f_flag and not s_flag
        paired["cert_seq_only"] += s_cert and not f_cert
        paired["cert_fixed_only"] += f_cert and not s_cert
        done = len(used)
        if done % 10 == 0 and done < reps:  # a running tally (stderr), in case a long run is cut short
            print(f"  {done} runs: fixed flag {fx_f} certify {fx_c} | sequential flag {sq_f} certify {sq_c}, mean "
                  f"{np.mean(used):.0f} questions; {paired}", file=sys.stderr, flush=True)
    return fx_f / reps, fx_c / reps, sq_f / reps, sq_c / reps, np.asarray(used, dtype=float), paired


def fixed_n_for(decision: str, effect: float, probability: float, margin: float) -> int | None:
    """The planner's fixed n that reaches ``probability`` (capped at 0.99) for this tutor."""
    p = min(max(probability, 0.5), 0.99)
    plan = plan_family(assumed_inputs(n_boot=EXACT), PlanGoal(decision, effect, margin=margin, power=p))
    return plan.chosen.questions if plan.chosen else None


def headline(args, rng, params) -> None:
    fair_r = args.margin / 3 if args.fair_r is None else args.fair_r
    plan = plan_family(assumed_inputs(n_boot=EXACT), PlanGoal("certify", fair_r, margin=args.margin))
    n_plan = plan.chosen.questions
    n_max = int(math.ceil(args.inflation * n_plan))
    print(f"fixed-n plan: {n_plan} questions (certify true |r| {fair_r:.3f} within {args.margin} with "
          f"{plan.chosen.probability:.0%}); sequential: at most {n_max} ({args.inflation}x), {args.looks} looks, flags "
          f"(O'Brien–Fleming) and certification (power family from 30%, {CERTIFY_SPENDING.share:g}·α per side) at "
          f"spent levels; {args.reps} runs per scenario, n_boot {args.n_boot}")
    scenarios = [("clearly fair (r = 0): certifications; false flags", 0.0, "certify"),
                 (f"planning point (r = {fair_r:.3f})", fair_r, "certify"),
                 (f"at the margin (r = {args.margin}): false certifications", args.margin, None),
                 (f"clearly biased (r = {args.biased})", args.biased, "flag")]
    se = lambda p: math.sqrt(max(p * (1 - p), 1e-9) / args.reps)  # noqa: E731
    for i, (name, rho, goal) in enumerate(scenarios):
        if args.only is not None and i != args.only:
            continue
        t0 = time.perf_counter()
        fxf, fxc, sqf, sqc, used, paired = run(rho, n_plan, n_max, args.looks, args.reps, rng, params)
        mean, mse = used.mean(), used.std(ddof=1) / math.sqrt(len(used))
        line = (f"{name}: fixed flag {fxf:.1%}±{se(fxf):.1%} certify {fxc:.1%}±{se(fxc):.1%} | sequential flag "
                f"{sqf:.1%}±{se(sqf):.1%} certify {sqc:.1%}±{se(sqc):.1%}, mean {mean:.0f}±{mse:.0f} questions = "
                f"{1 - mean / n_plan:.0%}±{mse / n_plan:.0%} fewer dialogues than the plan")
        if goal is not None:
            p_seq = sqc if goal == "certify" else sqf
            n_same = fixed_n_for(goal, rho, p_seq, args.margin)
            if n_same:
                line += (f"; the fixed n for the same {p_seq:.1%} ({goal}, planner): {n_same}, saving "
                         f"{1 - mean / n_same:.0%}±{mse / n_same:.0%}")
        line += (f"; paired runs: flagged only by seq {paired['flag_seq_only']} / only fixed {paired['flag_fixed_only']}, "
                 f"certified only by seq {paired['cert_seq_only']} / only fixed {paired['cert_fixed_only']}")
        print(line + f" ({time.perf_counter() - t0:.0f}s)", flush=True)


FIXED_FACTORS = (0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.6)  # the fixed-n gates run beside the audit (x the plan)


def same_probability_n(sizes, rates, p) -> tuple[float, str]:
    """The fixed n that decides with probability ``p``, linearly interpolated in the measured
    decision rates of the fixed-n gates at ``sizes`` (made non-decreasing); beyond the largest:
    (its size, ">")."""
    rates = np.maximum.accumulate(np.asarray(rates, dtype=float))
    if p <= rates[0]:
        return float(sizes[0]), "<="
    for (n0, r0), (n1, r1) in zip(zip(sizes, rates), zip(sizes[1:], rates[1:])):
        if r0 < p <= r1:
            return float(n0 + (n1 - n0) * (p - r0) / (r1 - r0)), "="
    return float(sizes[-1]), ">"


def gate(args, rng, params) -> None:
    from edufair_metrics.analysis.compare import compare_frames
    from edufair_metrics.local.audit import gate_look

    n_plan = args.gate_questions
    n_max = int(math.ceil(args.gate_multiple * n_plan))
    fixed_sizes = [int(round(f * n_plan)) for f in FIXED_FACTORS]
    n_base = max(n_max, fixed_sizes[-1])
    sizes = look_sizes(n_max, args.looks)
    gate_a = [lk.nominal_alpha for lk in gate_looks([m / n_max for m in sizes])]
    gate_f = [lk.nominal_alpha for lk in gate_looks([m / n_max for m in sizes], bound="fail")]
    kw = dict(n_boot=params.n_boot, seed=0, min_pairs=params.min_pairs, max_increase=args.max_increase,
              equivalence_margin=params.equivalence_margin)
    print(f"gate: a fair baseline of {n_base} questions, margin --max-increase {args.max_increase}; the fixed-n "
          f"plan: {n_plan} candidate questions (fixed-n gates also at {fixed_sizes}); sequential: {args.looks} looks "
          f"up to {n_max} ({args.gate_multiple}x the plan), each bound at its spent level (gate_looks: pass linear, fail O'Brien-Fleming); "
          f"{args.reps} runs per scenario")
    se = lambda p: math.sqrt(max(p * (1 - p), 1e-9) / args.reps)  # noqa: E731
    for i, (name, rho, goal) in enumerate((("no change (r = 0 -> 0): false fails; clearly passing", 0.0, "pass"),
                                           (f"clearly worse (r = 0 -> {args.gate_worse})", args.gate_worse, "fail"))):
        if args.only is not None and i != args.only:
            continue
        t0 = time.perf_counter()
        fx = {m: {"pass": 0, "fail": 0, "inconclusive": 0} for m in fixed_sizes}
        sq = {"pass": 0, "fail": 0, "inconclusive": 0}
        paired = {"fail_seq_only": 0, "fail_fixed_only": 0}
        used, planned = [], []
        for _ in range(args.reps):
            base = scores_frame(scores(n_base, 0.0, rng, tutor="base", metrics=args.gate_metrics, corr=args.metric_corr))
            cand = scores_frame(scores(n_base, rho, rng, tutor="cand", metrics=args.gate_metrics, corr=args.metric_corr))
            fixed_status = None
            for m in fixed_sizes:
                res = compare_frames(base, first_frame(cand, m), **kw)
                fx[m][res.status] += 1
                if m == n_plan:
                    fixed_status = res.status
                    planned.append(m * max(res.headline.get("questions_factor", math.nan), 0.0))
            for j, m in enumerate(sizes):
                status = gate_look(base, first_frame(cand, m), alpha=gate_a[j], params=params,
                                   max_increase=args.max_increase, new_violations="significant", fail_alpha=gate_f[j])
                if status in ("pass", "fail") or j == args.looks - 1:
                    sq[status] += 1
                    used.append(m)
                    break
            paired["fail_seq_only"] += status == "fail" and fixed_status != "fail"
            paired["fail_fixed_only"] += fixed_status == "fail" and status != "fail"
            if len(used) % 10 == 0 and len(used) < args.reps:
                print(f"  {len(used)} runs: fixed {fx[n_plan]} | sequential {sq}, mean {np.mean(used):.0f}",
                      file=sys.stderr, flush=True)
        used = np.asarray(used, dtype=float)
        mean, mse = used.mean(), used.std(ddof=1) / math.sqrt(len(used))
        r = {k: v / args.reps for k, v in fx[n_plan].items()}
        s = {k: v / args.reps for k, v in sq.items()}
        p_seq = s[goal]
        n_same, how = same_probability_n(fixed_sizes, [fx[m][goal] / args.reps for m in fixed_sizes], p_seq)
        curve = ", ".join(f"{m}: {fx[m][goal] / args.reps:.0%}" for m in fixed_sizes)
        print(f"{name}: fixed-n plan ({n_plan}) pass {r['pass']:.1%}±{se(r['pass']):.1%} fail {r['fail']:.1%}±"
              f"{se(r['fail']):.1%} | sequential pass {s['pass']:.1%}±{se(s['pass']):.1%} fail {s['fail']:.1%}±"
              f"{se(s['fail']):.1%}, mean {mean:.0f}±{mse:.0f} candidate questions = {1 - mean / n_plan:.0%}±"
              f"{mse / n_plan:.0%} fewer dialogues than the plan; fixed-n {goal} rate by n: {curve}; the fixed n "
              f"that decides ({goal}) as often as the audit ({p_seq:.1%}): {how} {n_same:.0f}, saving "
              f"{ {'>': 'more than ', '<=': 'at most ', '=': ''}[how]}{1 - mean / n_same:.0%}±{mse / n_same:.0%}"
              + (f"; the compare's own questions_needed at the plan (80% if unchanged): mean {np.nanmean(planned):.0f}"
                 if goal == "pass" else "")
              + f"; {'false ' if goal == 'pass' else ''}fails, paired runs: only seq {paired['fail_seq_only']} / only "
              f"fixed {paired['fail_fixed_only']} ({time.perf_counter() - t0:.0f}s)", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--looks", type=int, default=20)
    parser.add_argument("--inflation", type=float, default=BUDGET_MULTIPLE, help="the sequential maximum / the fixed-n plan")
    parser.add_argument("--margin", type=float, default=0.15)
    parser.add_argument("--fair-r", type=float, default=None, help="the planning point (default margin / 3)")
    parser.add_argument("--biased", type=float, default=0.30)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--n-boot", type=int, default=50)
    parser.add_argument("--only", type=int, default=None, help="run only scenario N (headline 0-3, gate 0-1)")
    parser.add_argument("--gate", action="store_true", help="the gate's scenarios instead of the headline's")
    parser.add_argument("--gate-questions", type=int, default=300, help="the fixed-n plan of the gate")
    parser.add_argument("--gate-multiple", type=float, default=GATE_BUDGET_MULTIPLE,
                        help="the sequential gate's maximum / the fixed-n plan")
    parser.add_argument("--gate-worse", type=float, default=0.35)
    parser.add_argument("--gate-metrics", type=int, default=1,
                        help="pedagogical metrics of the gate's headline (one contrast pair): 1-5")
    parser.add_argument("--metric-corr", type=float, default=0.3,
                        help="correlation of the dialogue noise between the metrics of one dialogue")
    parser.add_argument("--max-increase", type=float, default=0.15)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed if args.only is None else args.seed + 101 * args.only)
    params = StatParams(n_boot=args.n_boot, seed=0, equivalence_margin=args.margin)
    (gate if args.gate else headline)(args, rng, params)


if __name__ == "__main__":
    main()
