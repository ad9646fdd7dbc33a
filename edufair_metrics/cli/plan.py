"""``edufair plan``: how many questions x replicate dialogues an audit needs to decide (flag a bias
of a given |r|, or certify the headline fair within the margin) with the requested probability,
per headline family, and what that costs; from a pilot run or from stated assumptions. The model
is documented in ``edufair_metrics/analysis/plan.py``. Exit 0 when every family has a feasible
plan, 1 when the bank is too small (or the goal unreachable) for one, 2 on bad input."""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

from edufair_metrics.analysis.plan import GOALS, PlanGoal, assumed_inputs, plan_family, plan_from_pilot
from edufair_metrics.analysis.verdicts import DEFAULT_MARGIN
from edufair_metrics.cli._common import add_stat_args, stat_params
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import atomic_write_text
from edufair_metrics.runlog import load_run


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pilot", nargs="?", default=None,
                        help="a pilot run (lm-eval output folder / results JSON); without one, plan from the stated "
                             "assumptions (--rows, --within-share, ...)")
    parser.add_argument("--goal", choices=GOALS, required=True,
                        help="flag: catch a unit whose true |r| is --effect; certify: certify the whole headline within "
                             "--margin (true |r| --effect, default 0)")
    parser.add_argument("--effect", type=float, default=None,
                        help="the |r| (at one dialogue per question and level) to catch, or the tutor's true |r| to "
                             "certify (default 0)")
    parser.add_argument("--power", type=float, default=0.8, help="probability of deciding (default %(default)s)")
    parser.add_argument("--max-replicates", type=int, default=8, help="largest k considered (default %(default)s)")
    parser.add_argument("--question-cost", type=float, default=1.0,
                        help="c_q/c_r: what a new question costs, in dialogues (default %(default)s)")
    parser.add_argument("--judge-model", default=None,
                        help="the audit's judge model: a pilot judged by another is refused (default: "
                             "$EDUFAIR_JUDGE_MODEL; neither: not checked)")
    parser.add_argument("--bank-dir", default=None, help="the question bank's folder (default: the shipped bank)")
    parser.add_argument("--throughput", type=float, default=None,
                        help="tutor + student tokens (prompt + completion) per second per GPU: gives GPU-hours")
    parser.add_argument("--gpu-price", type=float, default=None, help="$ per GPU-hour: gives dollars")
    parser.add_argument("--judge-price", type=float, default=None, help="$ per million judge tokens: gives dollars")
    parser.add_argument("--json", type=Path, default=None, help="also write the plan as JSON here")
    group = parser.add_argument_group("stated assumptions (no pilot)")
    group.add_argument("--rows", type=int, default=1, help="headline rows of the family (default %(default)s)")
    group.add_argument("--units", type=int, default=None, help="headline units (default: --rows)")
    group.add_argument("--within-share", type=float, default=0.0,
                       help="share of a paired difference's variance that is dialogue noise at k = 1 (default 0)")
    group.add_argument("--levels-per-question", type=float, default=2.0,
                       help="dialogues per question at k = 1, over the audited tasks (default %(default)s)")
    group.add_argument("--bank-questions", type=int, default=None, help="questions the bank offers per task")
    add_stat_args(parser, simultaneous=False)


def _goal(args) -> PlanGoal:
    margin = args.margin if args.margin is not None else DEFAULT_MARGIN
    return PlanGoal(args.goal, args.effect, margin=margin, power=args.power, max_replicates=args.max_replicates,
                    cost_ratio=args.question_cost, min_pairs=args.min_pairs).validate()


def _num(x, fmt="{:,}") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return fmt.format(x)


def format_plan(plans) -> str:
    """The plan as text: per family the inputs, the options by k and the chosen plan with its cost."""
    lines = []
    for p in plans:
        i, g = p.inputs, p.goal
        what = (f"flag a unit with |r| = {g.true_effect:g}" if g.decision == "flag"
                else f"certify the headline within ±{g.margin:g} (true |r| {g.true_effect:g})")
        lines.append(f"{i.tutor} · {i.kind} headline ({i.source}): {what} with probability >= {g.power:.0%}")
        lines.append(f"  {i.rows} rows in {i.units} units; n·null_var(r) = {i.null_var_n:.3f}, se(r)·√n = {i.se_n:.3f}; "
                     f"within-question share {i.within_share:.0%} ({i.within_source}); "
                     f"{i.dialogues_per_question:g} dialogues per question at k = 1; bank {_num(i.bank_questions)} questions")
        lines.append("  k  questions  P(decide)  r at k  dialogues  feasible")
        for o in p.options:
            mark = " <- plan" if p.chosen is o else ""
            lines.append(f"  {o.replicates:<2} {o.questions:>9,}  {o.probability:>9.1%}  {o.effect_at_k:>6.3f}  "
                         f"{o.dialogues:>9,}  {'yes' if o.feasible else 'no (bank)'}{mark}")
        if p.chosen is None:
            lines.append(f"  NO PLAN: {p.reason}")
        else:
            c = p.cost
            lines.append(f"  plan: {p.chosen.questions:,} questions per task x {p.chosen.replicates} replicate(s) = "
                         f"{c['dialogues']:,} dialogues ({p.reason})")
            for role in ("tutor", "student", "judge"):
                if f"{role}_calls" in c:
                    lines.append(f"    {role}: {_num(c[f'{role}_calls'])} calls, {_num(c[f'{role}_tokens'])} tokens")
            if "gpu_hours" in c:
                lines.append(f"    GPU-hours: {c['gpu_hours']:.2f}")
            if "dollars" in c:
                lines.append(f"    dollars: ${c['dollars']:,.2f}")
        lines.append("")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    goal = _goal(args)
    for name in ("throughput", "gpu_price", "judge_price"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise EduFairError(f"--{name.replace('_', '-')} must be > 0, got {value}")
    costs = {"throughput": args.throughput, "gpu_price": args.gpu_price, "judge_price": args.judge_price}
    if args.pilot is not None:
        params = stat_params(args)
        run = load_run(args.pilot)
        judge_model = args.judge_model or os.environ.get("EDUFAIR_JUDGE_MODEL") or None
        plans = plan_from_pilot(run, goal, params, judge_model=judge_model, bank_dir=args.bank_dir, **costs)
    else:
        inputs = assumed_inputs(rows=args.rows, units=args.units, within_share=args.within_share,
                                dialogues_per_question=args.levels_per_question, bank_questions=args.bank_questions,
                                n_boot=stat_params(args).n_boot)
        plans = [plan_family(inputs, goal, **costs)]
    print(format_plan(plans))
    if args.json is not None:
        atomic_write_text(args.json, json.dumps([p.to_dict() for p in plans], indent=2, default=str))
    return 0 if all(p.chosen is not None for p in plans) else 1
