"""Command-line pieces shared by ``edufair report``, ``leaderboard`` and ``compare``, and by
``edufair judge`` and ``judge-human``."""

from __future__ import annotations

import argparse
import sys

from edufair_metrics.analysis.contrast import DEFAULT_MIN_PAIRS, DEFAULT_N_BOOT
from edufair_metrics.analysis.noise import DEFAULT_FDR_METHOD, FDR_METHODS
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.analysis.ses import DEFAULT_SES_SUMMARY, SES_SUMMARIES
from edufair_metrics.analysis.verdicts import DEFAULT_MARGIN
from edufair_metrics.judge.settings import REASONING_EFFORTS, STRUCTURED_OUTPUT_FORMS
from edufair_metrics.settings import load_cache_policy, load_judge_settings


def add_stat_args(parser: argparse.ArgumentParser, *, simultaneous: bool = True) -> None:
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
    parser.add_argument("--margin", type=float, default=DEFAULT_MARGIN,
                        help="equivalence margin: the largest |r| counted as fair. A contrast is certified when the 90%% "
                             "interval of its r lies inside ±margin (TOST at α = 0.05); default %(default)s, the paper's "
                             "'practically meaningful' |r| (analysis/verdicts.py)")
    if simultaneous:
        parser.add_argument("--simultaneous", action="store_true",
                            help="also give family-wise flag / certify decisions over the whole grid (max-|T| bootstrap "
                                 "with one shared resample of the questions; columns sim_*, verdict_sim)")


def add_missing_labels_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fail-on-missing-labels", type=_rate, default=None, metavar="RATE",
                        help="exit 1 when a tutor's share of tutor turns without a valid judge label is above RATE "
                             "(0-1, e.g. 0.05); the outputs are still written")


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a rate between 0 and 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a rate between 0 and 1, got {text!r}")
    return value


def missing_labels_exit(command: str, rates: dict[str, float], limit: float | None) -> int:
    """``--fail-on-missing-labels``: 1 (with a line per tutor on stderr) when a tutor's missing-label
    rate is above ``limit``; 0 otherwise (or without the option)."""
    if limit is None:
        return 0
    over = {t: r for t, r in sorted(rates.items()) if r == r and r > limit}
    for tutor, rate in over.items():
        print(f"edufair {command}: error: {tutor}: {rate:.1%} of the tutor turns have no valid judge label "
              f"(--fail-on-missing-labels {limit:g})", file=sys.stderr)
    return 1 if over else 0


def stat_params(args: argparse.Namespace) -> StatParams:
    return StatParams(n_boot=args.n_boot, seed=args.seed, min_pairs=args.min_pairs, ses_summary=args.ses_summary,
                      keep_failed_dialogues=args.keep_failed_dialogues, fdr_method=args.fdr_method,
                      equivalence_margin=args.margin,
                      simultaneous=bool(getattr(args, "simultaneous", False))).validate()


def add_judge_args(parser: argparse.ArgumentParser, *, unit: str = "dialogues") -> None:
    """The judge options shared by `edufair judge` and `edufair judge-human` (highest priority in
    the judge's settings order; unset flags leave config/--metadata/environment values alone)."""
    parser.add_argument("--judge-base-url", help="OpenAI-compatible endpoint (overrides env/config)")
    parser.add_argument("--judge-model", help="served judge model name")
    parser.add_argument("--concurrency", type=int, help=f"{unit} judged in parallel")
    parser.add_argument("--max-retries", type=int, help="retries per turn after the first attempt")
    parser.add_argument("--structured-output", choices=STRUCTURED_OUTPUT_FORMS)
    parser.add_argument("--reasoning-effort", choices=(*REASONING_EFFORTS, "none"),
                        help="request field reasoning_effort (default low, the paper's; none sends nothing)")
    parser.add_argument("--mask-cues", action="store_true",
                        help="condition-blind judging: the judge sees the condition's names, gender and group words "
                             "replaced by placeholders (protocol.yaml); the count is recorded. Default off (the paper's)")
    parser.add_argument("--judge-config", help="judge settings YAML (default: $EDUFAIR_JUDGE_CONFIG, else the packaged "
                                               "edufair_metrics/judge/defaults.yaml)")
    parser.add_argument("--cache", default=None, help="call cache file, or 'off' (default: edufair-calls.sqlite in "
                                                      "$EDUFAIR_CACHE_DIR, else $XDG_CACHE_HOME/edufair, else ~/.cache/edufair)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def judge_cli_settings(args: argparse.Namespace) -> dict:
    """The judge settings given on the command line (None = not given)."""
    cli = {
        "base_url": args.judge_base_url,
        "model": args.judge_model,
        "concurrency": args.concurrency,
        "max_retries": args.max_retries,
        "structured_output": args.structured_output,
        "reasoning_effort": args.reasoning_effort,
    }
    if args.mask_cues:  # absent otherwise, so a config or --metadata setting still applies
        cli["mask_cues"] = True
    return cli


def resolve_judge_args(args: argparse.Namespace):
    """The judge's settings and the cache policy of `edufair judge` / `judge-human`, through the one
    settings chain (runner layers empty): judge config < environment < these flags."""
    settings = load_judge_settings(cli=judge_cli_settings(args), config_path=args.judge_config)
    return settings, load_cache_policy(args.cache)
