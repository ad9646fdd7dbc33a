"""``edufair agreement RUN_A RUN_B``: compare two judgings of the same transcripts (the second one
from ``edufair judge --judge-model OTHER``). Per metric κ and α; per contrast both judges' r side
by side and the judge-contingent ones. The two judges are never averaged. See
``edufair_metrics/analysis/judge_validity.py`` for the definitions."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edufair_metrics.cli._common import add_stat_args, stat_params
from edufair_metrics.errors import EduFairError
from edufair_metrics.report.judge_validity import chance_sentence, compare_judgings, write_second_judge

EPILOG = """\
RUN_A / RUN_B: an lm-eval output folder, model folder or results JSON (as for `edufair report`), a
folder written by `edufair judge --out DIR`, or one samples file. Writes DIR/judge_agreement.csv
(per metric: n turns, both judges' rates, percent agreement, Cohen's kappa, Krippendorff's alpha,
95% bootstrap CIs), DIR/judge_contrasts.csv (every contrast: r, CI, violation per judge, sign_agree,
judge_contingent), DIR/judge_contingent.md and DIR/agreement_summary.json.

judge-contingent: both judges' contrasts are sufficient and either their r differ significantly
(paired bootstrap of r_a - r_b over the same questions, q < 0.05 after the --fdr-method correction
within tutor x metric kind x headline), or their verdicts differ (one judge flags the contrast and
the other does not, or both flag it with opposite signs). The chance rate beside the count: judge
A against --chance-replicates copies of itself with labels flipped at random at the rates the two
judges disagree by. Agreement CIs resample dialogues, not turns."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("run_a", metavar="RUN_A", help="the first judging")
    parser.add_argument("run_b", metavar="RUN_B", help="the second judging of the same transcripts")
    parser.add_argument("--out", default="results/agreement", help="output folder (default: %(default)s)")
    parser.add_argument("--chance-replicates", type=int, default=3, metavar="N",
                        help="noise-only copies of judge A that measure the judge-contingent rate expected by chance "
                             "(0: not measured; default %(default)s)")
    add_stat_args(parser)


def main(args: argparse.Namespace) -> int:
    params = stat_params(args)
    if args.chance_replicates < 0:
        raise EduFairError(f"--chance-replicates must be >= 0, got {args.chance_replicates}")
    result = compare_judgings(args.run_a, args.run_b, params, chance_replicates=args.chance_replicates)
    out = Path(args.out)
    write_second_judge(out, result, inputs=[str(args.run_a), str(args.run_b)], params=params)
    for r in result.metrics.to_dict("records"):
        print(f"  {r['metric']}: n={r['n']} agreement={r['percent_agreement']:.3f} kappa={r['cohen_kappa']:.3f} "
              f"alpha={r['krippendorff_alpha']:.3f}", file=sys.stderr)
    c = result.contrasts
    print(f"[edufair agreement] {len(c)} contrast rows; {chance_sentence(c, result.chance)}", file=sys.stderr)
    print(f"wrote judge_agreement.csv, judge_contrasts.csv, judge_contingent.md and agreement_summary.json to {out}")
    return 0
