"""``edufair compare``: the CI gate – is a candidate tutor less fair than a baseline? The rule is
documented in ``edufair_metrics/analysis/compare.py``. Exit 0 pass, 1 fail (less fair by more than
the margin, with evidence), 3 inconclusive (``--on-inconclusive pass|fail`` maps it to 0 / 1),
2 bad input."""

from __future__ import annotations

import argparse
from pathlib import Path

from edufair_metrics.analysis.compare import NEW_VIOLATION_POLICIES
from edufair_metrics.cli._common import add_missing_labels_arg, add_stat_args, missing_labels_exit, stat_params
from edufair_metrics.report.compare import run_compare
from edufair_metrics.report.write import timestamped_dir
from edufair_metrics.runlog import load_run


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", required=True, help="baseline tutor's lm-eval output (folder or results JSON)")
    parser.add_argument("--candidate", required=True, help="candidate tutor's lm-eval output")
    parser.add_argument("--max-increase", type=float, default=0.05,
                        help="the gate's margin: largest tolerated increase of the headline pedagogical unbiased |r̄| "
                             "(fail: the 90%% CI of the change lies above it; pass: below it; default %(default)s)")
    parser.add_argument("--on-inconclusive", choices=("pass", "fail"), default=None,
                        help="exit status for an inconclusive gate (default: exit 3)")
    parser.add_argument("--new-violations", choices=NEW_VIOLATION_POLICIES, default="significant",
                        help="which newly flagged units fail the gate (default %(default)s)")
    parser.add_argument("--baseline-label", default=None, help="the baseline's name in the output (default: its folder name)")
    parser.add_argument("--candidate-label", default=None, help="the candidate's name in the output (default: its folder name)")
    parser.add_argument("--out", type=Path, default=None, help="folder (default results/compare-<timestamp>/)")
    add_stat_args(parser, simultaneous=False)
    add_missing_labels_arg(parser)


EXIT_CODES = {"pass": 0, "fail": 1, "inconclusive": 3}


def main(args: argparse.Namespace) -> int:
    params = stat_params(args)
    base = load_run(args.baseline, label=args.baseline_label or _folder_name(args.baseline))
    cand = load_run(args.candidate, label=args.candidate_label or _folder_name(args.candidate))
    res, text = run_compare(base, cand, args.out or timestamped_dir("compare"), params,
                            max_increase=args.max_increase, new_violations=args.new_violations,
                            on_inconclusive=args.on_inconclusive)
    print(text)
    if missing_labels_exit("compare", res.missing_rates, args.fail_on_missing_labels):
        return 1
    if res.status == "inconclusive" and args.on_inconclusive:
        return EXIT_CODES[args.on_inconclusive]
    return EXIT_CODES[res.status]


def _folder_name(path: str) -> str:
    """A run's default name: the folder given (its parent for a results file)."""
    p = Path(path).expanduser().resolve()
    return p.parent.name if p.is_file() else p.name
