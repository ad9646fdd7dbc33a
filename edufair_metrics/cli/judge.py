"""``edufair judge``: re-judge stored transcripts from lm-eval samples files without regenerating.

See ``edufair_metrics/judge/rejudge.py``; inputs are never modified.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", help="lm-eval samples_*.jsonl files or output directories")
    parser.add_argument("--judge-base-url", help="OpenAI-compatible endpoint (overrides env/config)")
    parser.add_argument("--judge-model", help="served judge model name")
    parser.add_argument("--concurrency", type=int, help="dialogues judged in parallel")
    parser.add_argument("--max-retries", type=int, help="retries per turn after the first attempt")
    parser.add_argument("--structured-output", choices=("off", "json_object", "json_schema"))
    parser.add_argument("--reasoning-effort", choices=("minimal", "low", "medium", "high", "none"),
                        help="request field reasoning_effort (default low, the paper's; none sends nothing)")
    parser.add_argument("--mask-cues", action="store_true",
                        help="condition-blind judging: the judge sees the condition's names, gender and group words "
                             "replaced by placeholders (protocol.yaml); the count is recorded. Default off (the paper's)")
    parser.add_argument("--judge-config", help="judge settings YAML (default: $EDUFAIR_JUDGE_CONFIG, else the packaged edufair_metrics/judge/defaults.yaml)")
    parser.add_argument("--cache", default=None, help="call cache path, or 'off' (default: $EDUFAIR_CACHE_DIR or results/cache)")
    parser.add_argument("--out", default="results/rejudged", help="output folder (default: results/rejudged)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def main(args: argparse.Namespace) -> int:
    from edufair_metrics.cache import CachePolicy
    from edufair_metrics.judge.rejudge import rejudge_samples
    from edufair_metrics.judge.run import format_missing_summary

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
    out_dir = Path(args.out)
    res = rejudge_samples(args.inputs, out_dir, cli=cli, cache=CachePolicy.from_settings(args.cache),
                          progress=not args.no_progress, config_path=args.judge_config)
    print(format_missing_summary(f"{res.dialogues} dialogue(s) in {len(res.files)} file(s)", res.summary["by_level"], res.summary),
          file=sys.stderr)
    print(f"wrote {len(res.outputs)} samples file(s) and judge_summary.json to {out_dir}")
    return 0
