"""``edufair report``: paired bias statistics, the paper's Tables 5–12 and Figures 2–5 for runs.

    edufair report OUT_A OUT_B ... [--out DIR] [--n-boot 1000] [--seed 0] [--min-pairs 15]
                   [--ses-summary single|mean_abs_pairwise|max_abs_pairwise] [--keep-failed-dialogues]
                   [--label NAME=DIR ...] [--judge-agreement DIR] [--human-agreement DIR]

summary.md ends with a "Judge validity" section: judge vs deterministic detector per condition
level and differential judge error (always, from the runs' transcripts), the judge-contingent
contrasts of a second judging (``--judge-agreement``: an ``edufair agreement --out`` folder) and
judge–human agreement (``--human-agreement``: an ``edufair judge-human --out`` folder).

``index.html`` (the HTML view with the twin transcripts behind every cell; ``--no-html`` skips it)
is written too; the transcripts are collected while the samples files are read, into a folder of
the report (``.viewer-partial``), which becomes ``viewer/t`` when the report is complete.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from edufair_metrics.cli._common import add_missing_labels_arg, add_stat_args, missing_labels_exit, stat_params
from edufair_metrics.report.write import read_report_inputs, timestamped_dir, write_report
from edufair_metrics.runlog import run_inputs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="*", metavar="RUN",
                        help="lm-eval --output_path folder, model folder or results JSON (one or more)")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default results/report-<timestamp>/)")
    parser.add_argument("--label", action="append", default=[], metavar="NAME=DIR", help="tutor name for a run folder; the folder is a run even when not given as RUN")
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    parser.add_argument("--no-html", action="store_true",
                        help="skip index.html and its viewer/ folder (the transcripts behind each cell)")
    parser.add_argument("--judge-agreement", type=Path, default=None, metavar="DIR",
                        help="an `edufair agreement --out` folder: its judge-contingent contrasts go into summary.md")
    parser.add_argument("--human-agreement", type=Path, default=None, metavar="DIR",
                        help="an `edufair judge-human --out` folder: its judge–human α goes into summary.md")
    add_stat_args(parser)
    add_missing_labels_arg(parser)


def main(args: argparse.Namespace) -> int:
    params = stat_params(args)
    paths, labels = run_inputs(args.inputs, args.label)
    out = Path(args.out or timestamped_dir("report"))
    result = make_report(paths, out, params, labels=labels, figures=not args.no_figures,
                         html=not args.no_html, command=["edufair", "report", *map(str, paths)],
                         agreement_dir=args.judge_agreement, human_dir=args.human_agreement)
    print(f"edufair report: {result.line()}")
    if not args.no_html:
        print(f"edufair report: open {out / 'index.html'} (or: edufair view {out})")
    return missing_labels_exit("report", result.missing_rates, args.fail_on_missing_labels)


PARTIAL = ".viewer-partial"


def make_report(inputs, out: Path, params, *, labels=None, figures: bool = True, html: bool = True,
                command: list[str] | None = None, agreement_dir=None, human_dir=None):
    """Read the runs and write the report into ``out`` (``edufair report`` and ``edufair view``)."""
    partial = out / PARTIAL
    existed = out.exists()
    done = False
    try:
        read = read_report_inputs(inputs, labels, evidence=partial if html else False)
        result = write_report(read, out, params, figures=figures, command=command, progress=sys.stderr.isatty(),
                              agreement_dir=agreement_dir, human_dir=human_dir, html=html)
        done = True
        return result
    finally:
        if partial.exists():  # a report that failed half-way leaves no half-written transcripts
            shutil.rmtree(partial, ignore_errors=True)
        if not done and not existed and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # nor an empty folder it created
