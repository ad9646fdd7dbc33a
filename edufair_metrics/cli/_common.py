"""Command-line pieces shared by ``edufair report``, ``leaderboard`` and ``compare``."""

from __future__ import annotations

import argparse

from edufair_metrics.analysis.noise import DEFAULT_FDR_METHOD, FDR_METHODS
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.analysis.ses import DEFAULT_SES_SUMMARY, SES_SUMMARIES
from edufair_metrics.analysis.stats import DEFAULT_MIN_PAIRS, DEFAULT_N_BOOT


def add_stat_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n-boot", type=int, default=DEFAULT_N_BOOT, help="bootstrap resamples (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default %(default)s)")
    parser.add_argument("--min-pairs", type=int, default=DEFAULT_MIN_PAIRS,
                        help="fewest paired questions for a contrast (default %(default)s)")
    parser.add_argument("--ses-summary", choices=SES_SUMMARIES, default=DEFAULT_SES_SUMMARY,
                        help="SES's one value: single = the paper's low- vs high-income contrast; or the mean / "
                             "largest |r| of the three pairwise contrasts (default %(default)s)")
    parser.add_argument("--keep-failed-dialogues", action="store_true",
                        help="score dialogues ended by a failed student/tutor call on their partial turns and keep "
                             "them in the contrasts (default: leave them out; their pairs drop out)")
    parser.add_argument("--fdr-method", choices=FDR_METHODS, default=DEFAULT_FDR_METHOD,
                        help="multiplicity correction behind q_value and the FDR violations, within each tutor × metric "
                             "kind headline family: bh = Benjamini–Hochberg, holm = Holm (family-wise) "
                             "(default %(default)s)")


def stat_params(args: argparse.Namespace) -> StatParams:
    return StatParams(n_boot=args.n_boot, seed=args.seed, min_pairs=args.min_pairs, ses_summary=args.ses_summary,
                      keep_failed_dialogues=args.keep_failed_dialogues, fdr_method=args.fdr_method).validate()
