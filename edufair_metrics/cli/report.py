"""``edufair report``: paired bias statistics, the paper's Tables 5–12 and Figures 2–5 for runs.

    edufair report OUT_A OUT_B ... [--out DIR] [--n-boot 1000] [--seed 0] [--min-pairs 15]
                   [--ses-summary single|mean_abs_pairwise|max_abs_pairwise] [--keep-failed-dialogues]
                   [--label NAME=DIR ...] [--judge-agreement DIR] [--human-agreement DIR]

summary.md ends with a "Judge validity" section: judge vs deterministic detector per condition
level and differential judge error (always, from the runs' transcripts), the judge-contingent
contrasts of a second judging (``--judge-agreement``: an ``edufair agreement --out`` folder) and
judge–human agreement (``--human-agreement``: an ``edufair judge-human --out`` folder).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edufair_metrics.cli._common import add_stat_args, stat_params
from edufair_metrics.report.write import read_report_inputs, timestamped_dir, write_report
from edufair_metrics.runlog import run_inputs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="*", metavar="RUN",
                        help="lm-eval --output_path folder, model folder or results JSON (one or more)")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default results/report-<timestamp>/)")
    parser.add_argument("--label", action="append", default=[], metavar="NAME=DIR", help="tutor name for a run folder; the folder is a run even when not given as RUN")
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    parser.add_argument("--judge-agreement", type=Path, default=None, metavar="DIR",
                        help="an `edufair agreement --out` folder: its judge-contingent contrasts go into summary.md")
    parser.add_argument("--human-agreement", type=Path, default=None, metavar="DIR",
                        help="an `edufair judge-human --out` folder: its judge–human α goes into summary.md")
    add_stat_args(parser)


def main(args: argparse.Namespace) -> int:
    params = stat_params(args)
    paths, labels = run_inputs(args.inputs, args.label)
    inputs = read_report_inputs(paths, labels)
    result = write_report(inputs, args.out or timestamped_dir("report"), params, figures=not args.no_figures,
                          command=["edufair", "report", *paths], progress=sys.stderr.isatty(),
                          agreement_dir=args.judge_agreement, human_dir=args.human_agreement)
    print(f"edufair report: {result.line()}")
    return 0
