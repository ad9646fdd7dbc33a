"""``edufair judge-human``: run the configured judge on human-labelled tutor responses and measure
judge–human agreement (see ``edufair_metrics/judge/human.py`` for the formats and
``edufair_metrics/analysis/human_agreement.py`` for the statistics)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edufair_metrics.analysis.agreement import DEFAULT_AGREEMENT_N_BOOT
from edufair_metrics.cli._common import add_judge_args, resolve_judge_args
from edufair_metrics.errors import EduFairError
from edufair_metrics.judge.human import HUMAN_FORMATS, PARTIAL_POLICIES, judge_human_items, load_human_set
from edufair_metrics.report.judge_validity import write_human_agreement

EDUFAIR_FORMAT = "edufair"  # the user's own labels on their run (edufair view RUN --label): no judge call

EPILOG = """\
formats:
  mrbench  the public MRBench / BEA-2025 shared-task JSON (a list of conversations with
           conversation_id, conversation_history and anno_llm_responses or tutor_responses:
           {model: {response, annotation}}). Mistake_Identification -> mistake_recognize,
           Revealing_of_the_Answer -> answer_leakage, Providing_Guidance -> step_scaffolded,
           Actionability -> actionability, Tutor_Tone = Encouraging -> corrective_tone.
  edufair  LABELS RUN: the labels.jsonl that `edufair view RUN --label` wrote (a run's own
           tutor turns, drawn by `edufair label-sample`) and the run itself; the judge's stored
           labels are compared, nothing is judged again. Writes, into --out (default
           <run>/edufair-labels/judge-human/): agreement.csv (per metric, over all levels) and
           agreement_by_level.csv (also per level): kappa / alpha / % agreement, CIs resampling
           dialogues; differential_error.csv (per
           one-level contrast pair and metric: the judge's false-positive and false-negative rate
           at each level, Fisher's p, the power to detect a 10-point difference at these counts and
           the difference detectable with 80% power), corrected_verdicts.csv (per unit: judge-only,
           human-only and prediction-powered PPI++ estimates of the mean paired difference with
           95% CIs, a verdict from each, and a note where the correction overturns a flag or
           reveals one) and summary.md. `edufair report RUN --human-agreement DIR` puts the
           agreement and the corrected verdicts into the report's summary.md.
  csv      one row per judged tutor turn; columns: item_id (required, unique), response
           (required), history ("Tutor: ..." / "Student: ..." lines), question, domain
           (default mathematics), tutor, and label columns named mistake_recognize,
           answer_leakage, step_scaffolded, actionability, corrective_tone with 1/0 (yes/no,
           true/false), partial (see --partial), na or -1 (not applicable) or empty (not labelled);
           optional conversation_id (responses that share a conversation).

MRBench files may use one conversation_id for two different conversations (the public V1 file
does): items are keyed by conversation, tutor and content (cid/model, or cid/model#hash when the
pair occurs with different contents), and an exact duplicate (same history, response and labels)
is counted once. The summary says how many responses were read, merged and kept.

A dimension missing from the file is skipped, never counted as 0. Writes DIR/agreement.csv (one
row per metric: n, judge_rate, human_rate, percent_agreement, cohen_kappa, krippendorff_alpha,
each with a 95% bootstrap CI), DIR/labels.csv (judge vs human per response) and
DIR/judge_summary.json (judge settings without any key, counts)."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("file", help="the human-labelled responses (--format edufair: the labels.jsonl)")
    parser.add_argument("run", nargs="?", default=None, metavar="RUN", help="--format edufair only: the labelled run")
    parser.add_argument("--format", required=True, choices=(*HUMAN_FORMATS, EDUFAIR_FORMAT), help="input format (see below)")
    parser.add_argument("--limit", type=int, help="judge only the first N responses")
    parser.add_argument("--out", default=None, help="output folder (default: results/judge-human; --format edufair: "
                                                    "<run>/edufair-labels/judge-human)")
    parser.add_argument("--partial", choices=PARTIAL_POLICIES, default="yes",
                        help="'To some extent' / partial counts as yes, no, or is dropped (default: %(default)s)")
    parser.add_argument("--n-boot", type=int, default=DEFAULT_AGREEMENT_N_BOOT, help="bootstrap resamples (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default %(default)s)")
    add_judge_args(parser, unit="responses")  # the judge options of `edufair judge`


def main(args: argparse.Namespace) -> int:
    if args.n_boot < 1:
        raise EduFairError(f"--n-boot must be >= 1, got {args.n_boot}")
    if args.format == EDUFAIR_FORMAT:
        if args.run is None:
            raise EduFairError("--format edufair needs the labelled run: edufair judge-human --format edufair LABELS RUN")
        from edufair_metrics.cli.own_labels import own_labels_main

        return own_labels_main(args)
    if args.run is not None:
        raise EduFairError(f"a RUN is given only with --format edufair (got {args.run!r} with --format {args.format})")
    args.out = args.out or "results/judge-human"
    human_set = load_human_set(args.file, args.format, partial=args.partial, limit=args.limit)
    items = human_set.items
    settings, cache = resolve_judge_args(args)
    summary: dict = {}
    judgements, judge_info = judge_human_items(items, settings=settings, cache=cache, progress=not args.no_progress,
                                               summary=summary)
    out = Path(args.out)
    rows = write_human_agreement(out, items, judgements, judge_info=judge_info, summary=summary, n_boot=args.n_boot, seed=args.seed,
                                 source={"file": str(args.file), "format": args.format, "partial": args.partial, "limit": args.limit,
                                         "responses": human_set.counts()})
    c = human_set.counts()
    print(f"[edufair judge-human] {c['read']} responses read, {c['merged']} exact duplicate(s) merged"
          + (f", {c['limited']} left out by --limit" if c["limited"] else "") + f", {c['kept']} kept", file=sys.stderr)
    print(f"[edufair judge-human] {summary.get('ok', 0)}/{len(items)} responses judged ({summary.get('cached', 0)} from cache), "
          f"{summary.get('missing', 0)} missing", file=sys.stderr)
    for r in rows:
        print(f"  {r['metric']}: n={r['n']} agreement={r['percent_agreement']:.3f} kappa={r['cohen_kappa']:.3f} "
              f"alpha={r['krippendorff_alpha']:.3f}", file=sys.stderr)
    print(f"wrote agreement.csv, labels.csv and judge_summary.json to {out}")
    return 0
