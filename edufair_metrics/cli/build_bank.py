"""``edufair build-bank``: rebuild the question bank from SciQ and SocraTeach (or the GSM8K proxy)."""

from __future__ import annotations

import argparse
import sys

from edufair_metrics.bank import DATA_DIR
from edufair_metrics.bank.build import build_bank, parse_caps, parse_domains
from edufair_metrics.bank.common import DEFAULT_CAPS, DEFAULT_SEED
from edufair_metrics.bank.sciq import DEFAULT_VARIANT, VARIANTS


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sciq",
        metavar="PATH",
        help="SciQ release: the official SciQ.zip, its extracted folder, or 'hub' "
        "(default: ../shared/data/sciq/SciQ.zip beside the checkout, else the hub copy allenai/sciq)",
    )
    parser.add_argument(
        "--socrateach",
        metavar="PATH",
        help="SocraTeach_multi.json (or a folder holding it, or 'hub'): build the faithful math split "
        "instead of the GSM8K proxy",
    )
    parser.add_argument(
        "--gsm8k", metavar="PATH", help="GSM8K folder (uses train.jsonl) or a GSM8K JSONL file for the math proxy (default: ../shared/data/gsm8k)"
    )
    parser.add_argument("--out", metavar="DIR", help="output folder (default: the shipped edufair_metrics/bank/data)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"sampling seed (default {DEFAULT_SEED})")
    parser.add_argument(
        "--cap",
        action="append",
        metavar="DOMAIN=N",
        help="at most N questions for DOMAIN ('all' or 'none': no cap); repeatable. Defaults by source: "
        f"SciQ {DEFAULT_CAPS['sciq']}, SocraTeach all (the paper's 907), GSM8K proxy {DEFAULT_CAPS['gsm8k-proxy']}",
    )
    parser.add_argument(
        "--per-domain", type=int, default=None, metavar="N", help="one cap for every domain without a --cap (default: per source, see --cap)"
    )
    parser.add_argument(
        "--sciq-variant",
        default=DEFAULT_VARIANT,
        choices=sorted(VARIANTS),
        metavar="NAME",
        help=f"reading of the paper's SciQ pipeline: {', '.join(VARIANTS)} (default {DEFAULT_VARIANT}; see edufair_metrics/bank/data/README.md)",
    )
    parser.add_argument(
        "--compare-sciq-variants",
        action="store_true",
        help="also run every SciQ variant and write their funnels to sciq_variants.json and the bank README (slow)",
    )
    parser.add_argument(
        "--domains", nargs="+", metavar="DOMAIN", help="subset of mathematics physics chemistry (default: all)"
    )


def main(args: argparse.Namespace) -> int:
    if args.out is None:
        out = DATA_DIR
    else:
        out = args.out
    domains = parse_domains(args.domains)
    caps = parse_caps(args.cap)

    def log(msg: str) -> None:
        print(f"build-bank: {msg}", file=sys.stderr, flush=True)

    manifest = build_bank(
        out,
        domains=domains,
        seed=args.seed,
        per_domain=args.per_domain,
        caps=caps,
        sciq_variant=args.sciq_variant,
        compare_sciq_variants=args.compare_sciq_variants,
        sciq_path=args.sciq,
        gsm8k_path=args.gsm8k,
        socrateach_path=args.socrateach,
        log=log,
    )
    print(f"wrote {out}")
    for name, entry in manifest["files"].items():
        if entry["domain"] in domains:
            print(f"  {name:<18} {entry['count']:>4} questions  source={entry['source']}  sha256={entry['sha256'][:12]}")
    return 0
