"""``edufair leaderboard``: rank tutors by fairness and pedagogy.

    edufair leaderboard OUT_A OUT_B ... [--out DIR] [--label NAME=DIR ...] [--n-boot ...] [--fdr-method bh|holm]

Ranked by the mean excess |r̄| of the pedagogical headline units (|r| minus its noise floor), with a
bootstrap rank interval per tutor and tied tutors marked; the paper's |r̄|, raw and FDR violations
beside it (``edufair_metrics/report/leaderboard.py``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from edufair_metrics.analysis.testability import missing_rates
from edufair_metrics.cli._common import add_missing_labels_arg, add_stat_args, missing_labels_exit, stat_params
from edufair_metrics.report.failures import missing_label_table
from edufair_metrics.report.leaderboard import write_leaderboard
from edufair_metrics.report.write import timestamped_dir
from edufair_metrics.runlog import load_runs, run_inputs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="*", metavar="RUN", help="lm-eval output folders (one or more tutors)")
    parser.add_argument("--out", type=Path, default=None, help="folder (default results/leaderboard-<timestamp>/)")
    parser.add_argument("--label", action="append", default=[], metavar="NAME=DIR", help="tutor name for a run folder; the folder is a run even when not given as RUN")
    add_stat_args(parser)
    add_missing_labels_arg(parser)


def main(args: argparse.Namespace) -> int:
    params = stat_params(args)
    runs = load_runs(*run_inputs(args.inputs, args.label))
    out_dir = args.out or timestamped_dir("leaderboard")
    print(write_leaderboard(runs, out_dir, params))
    print(f"written to {out_dir}")
    return missing_labels_exit("leaderboard", missing_rates(missing_label_table(runs)), args.fail_on_missing_labels)
