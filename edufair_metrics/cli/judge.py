"""``edufair judge``: re-judge stored transcripts from lm-eval samples files without regenerating.

See ``edufair_metrics/run/rejudge.py``: the output folder is a run folder that every command reads;
inputs are never modified.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edufair_metrics.cli._common import add_judge_args, resolve_judge_args
from edufair_metrics.run.rejudge import rejudge_samples
from edufair_metrics.judge.run import format_missing_summary


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", help="lm-eval samples_*.jsonl files or output directories")
    add_judge_args(parser, unit="dialogues")
    parser.add_argument("--out", default="results/rejudged", help="output folder (default: results/rejudged)")


def main(args: argparse.Namespace) -> int:
    settings, policy = resolve_judge_args(args)
    out_dir = Path(args.out)
    cache = policy.open()
    try:
        res = rejudge_samples(args.inputs, out_dir, judge=settings, cache=cache, progress=not args.no_progress)
    finally:
        if cache is not None:
            cache.close()
    print(format_missing_summary(f"{res.dialogues} dialogue(s) in {len(res.files)} file(s)", res.summary["by_level"], res.summary),
          file=sys.stderr)
    print(f"wrote {len(res.outputs)} samples file(s) and judge_summary.json to {out_dir}")
    return 0
