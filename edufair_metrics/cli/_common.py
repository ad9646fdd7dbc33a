"""Command-line pieces shared by ``edufair report``, ``leaderboard`` and ``compare``."""

from __future__ import annotations

import argparse

from edufair_metrics.analysis.params import StatParams
from edufair_metrics.analysis.stats import DEFAULT_MIN_PAIRS, DEFAULT_N_BOOT, SES_SUMMARIES


def add_stat_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n-boot", type=int, default=DEFAULT_N_BOOT, help="bootstrap resamples (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default %(default)s)")
    parser.add_argument("--min-pairs", type=int, default=DEFAULT_MIN_PAIRS,
                        help="fewest paired questions for a contrast (default %(default)s)")
    parser.add_argument("--ses-summary", choices=SES_SUMMARIES, default="mean_abs_pairwise",
                        help="how SES (multi-level) gets one dimension value (default %(default)s)")


def stat_params(args: argparse.Namespace) -> StatParams:
    return StatParams(n_boot=args.n_boot, seed=args.seed, min_pairs=args.min_pairs, ses_summary=args.ses_summary).validate()
