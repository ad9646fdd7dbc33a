"""``edufair detector-human``: measure the deterministic reveal detectors (the history-aware
``leaks_answer``, the stop rule's matcher, ``partially_reveals``) against human "reveals the
answer" labels; no judge and no model call (``edufair_metrics/analysis/detector_human.py``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edufair_metrics.analysis.detector_human import INCORRECT_POLICIES, detector_human
from edufair_metrics.judge.human import PARTIAL_POLICIES, load_human_set
from edufair_metrics.report.detector_human import detector_agreement_markdown, write_detector_human

EPILOG = """\
format:
  mrbench  the public MRBench / BEA-2025 shared-task JSON (see `edufair judge-human --help`).
           Revealing_of_the_Answer is the human label; the gold is the number on the final
           "#### N" / "### N" line of Ground_Truth_Solution (MathDial items); responses whose
           gold cannot be derived (e.g. Bridge items) are skipped and counted. The question is
           taken from the opening tutor line ("... The question is: ...").

Labels: "Yes" / "Yes (and the answer is correct)" = reveal, "No" = no reveal, "To some extent"
= --partial, "Yes (but the answer is incorrect)" = --incorrect-reveal (default drop: a revealed
wrong answer is not the gold, and not a non-reveal either).

Writes DIR/detector_agreement.csv (per detector and subset: all / gold not yet appeared / gold
appeared earlier; n, TP, FP, FN, TN, precision and recall with 95% bootstrap CIs over
conversations), DIR/detector_agreement.md, DIR/detector_labels.csv (per response) and
DIR/detector_summary.json (source, policies, counts)."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("file", help="the human-labelled responses")
    parser.add_argument("--format", required=True, choices=("mrbench",), help="input format (see below)")
    parser.add_argument("--limit", type=int, help="only the first N responses")
    parser.add_argument("--out", default="results/detector-human", help="output folder (default: %(default)s)")
    parser.add_argument("--partial", choices=PARTIAL_POLICIES, default="yes",
                        help="'To some extent' counts as a reveal, not, or is dropped (default: %(default)s)")
    parser.add_argument("--incorrect-reveal", choices=INCORRECT_POLICIES, default="drop",
                        help="'Yes (but the answer is incorrect)' is dropped, a reveal or not (default: %(default)s)")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default %(default)s)")


def main(args: argparse.Namespace) -> int:
    human_set = load_human_set(args.file, args.format, partial=args.partial, limit=args.limit)
    result = detector_human(human_set.items, partial=args.partial, incorrect=args.incorrect_reveal,
                            n_boot=args.n_boot, seed=args.seed)
    out = Path(args.out)
    write_detector_human(out, result, n_boot=args.n_boot, seed=args.seed,
                         source={"file": str(args.file), "format": args.format, "partial": args.partial,
                                 "incorrect_reveal": args.incorrect_reveal, "limit": args.limit,
                                 "responses": human_set.counts()})
    print(detector_agreement_markdown(result.summary, result.counts), file=sys.stderr)
    print(f"wrote detector_agreement.csv, detector_agreement.md, detector_labels.csv and detector_summary.json to {out}")
    return 0
