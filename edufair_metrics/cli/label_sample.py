"""``edufair label-sample RUN --n N [--seed S]``: draw the blind labelling sample of a run's tutor
turns and write it into the run folder (``edufair-labels/sample.json``, atomically); label it with
``edufair view RUN --label``, then measure the judge with ``edufair judge-human --format edufair``.

The design (``runlog/labels.py``): per task, a uniform random subset of the questions complete at
every level, one drawn judge-labelled tutor turn per level's dialogue (levels equally represented,
every contrast pair labelled on both sides of the same questions, each turn with all five metrics);
a task holding a flagged unit of the run's report (``--report``, default <run>/edufair-report/units.csv
when it exists) gets twice the share, so the labels can confirm or overturn the flags."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edufair_metrics.errors import EduFairError
from edufair_metrics.runlog import load_records
from edufair_metrics.records import PEDAGOGICAL_METRICS
from edufair_metrics.runlog.labels import draw_sample, flagged_units, judge_turn_value, run_folder, write_sample

DEFAULT_REPORT = "edufair-report"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="a judged run: lm-eval --output_path folder, model folder or results JSON")
    parser.add_argument("--n", type=int, required=True, help="tutor turns to label")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default %(default)s)")
    parser.add_argument("--report", type=Path, default=None,
                        help="the run's report folder whose flagged units are over-sampled (default <run>/edufair-report/ "
                             "when it exists; none otherwise)")
    parser.add_argument("--force", action="store_true", help="replace an existing sample (its labels no longer match)")


def main(args: argparse.Namespace) -> int:
    folder = run_folder(args.run)
    tutor, records = load_records(args.run)
    report = args.report
    if report is None:
        for cand in (folder / DEFAULT_REPORT, Path(args.run) / DEFAULT_REPORT):
            if (cand / "units.csv").is_file():
                report = cand
                break
    elif not (report / "units.csv").is_file():
        raise EduFairError(f"{report}: no units.csv (an `edufair report` folder)")
    flagged = flagged_units(report / "units.csv") if report is not None else {}
    sample = draw_sample(records, args.n, seed=args.seed, tutor=tutor, flagged=flagged)
    path = write_sample(sample, folder, overwrite=args.force)
    print(f"edufair label-sample: {len(sample.items)} tutor turns of {tutor} (seed {args.seed}, run {sample.run_id})"
          + (f"; {args.n - len(sample.items)} fewer than asked: a question costs one turn per level" if len(sample.items) < args.n else ""),
          file=sys.stderr)
    for s in sample.strata:
        flag = f", over-sampled: flagged {'; '.join(s.flagged_units)}" if s.flagged else ""
        print(f"  {s.task}: {s.sampled_questions} of {s.questions} questions x {len(s.levels)} levels "
              f"= {s.sampled_questions * len(s.levels)} turns{flag}", file=sys.stderr)
    by_key = {f"{r.key[0]}|{r.key[2]}|{r.key[3]}": r for r in records}
    counts = {m: [0, 0] for m in PEDAGOGICAL_METRICS}  # metric -> [judge-applicable, judge-positive]
    for item in sample.items:
        rec = by_key[item.turn_id.rsplit("|", 1)[0]]
        for m in PEDAGOGICAL_METRICS:
            v = judge_turn_value(rec, item.turn_index, m)
            if v is not None:
                counts[m][0] += 1
                counts[m][1] += v
    print("  judge labels on the sampled turns (applicable / positive): "
          + ", ".join(f"{m} {a}/{p}" for m, (a, p) in counts.items()), file=sys.stderr)
    if report is None:
        print("  (no report of the run found: no flagged unit over-sampled; --report names one)", file=sys.stderr)
    print(path)
    return 0
