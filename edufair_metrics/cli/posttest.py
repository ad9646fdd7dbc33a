"""``edufair posttest``: the post-test of outcome fairness for stored transcripts, without
re-generating any dialogue (``edufair_metrics/run/posttest.py``): the student that held the
dialogues answers each question once more, alone; the output folder is a run folder every command
reads; inputs are never modified.

The student is resolved through the one settings chain (the task template's student < ``--config``
< ``EDUFAIR_STUDENT_*`` < the flags below) and must be the records' own (same lm-eval model class
and answer-determining arguments); its decoding is the records'.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from edufair_metrics.lmeval import quiet_request_bars, template_settings
from edufair_metrics.lmeval.models import HarnessModel, build_student, identity
from edufair_metrics.run.posttest import posttest_samples
from edufair_metrics.settings import load_cache_policy, resolve_runner_settings


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", help="lm-eval samples_*.jsonl files or output directories")
    parser.add_argument("--out", default="results/posttest", help="output folder (default: results/posttest)")
    parser.add_argument("--config", help="settings file whose edufair.student block names the student")
    parser.add_argument("--student-model", help="the student's served model name (student.model_args.model)")
    parser.add_argument("--student-base-url", help="the student's endpoint (student.model_args.base_url)")
    parser.add_argument("--cache", default=None, help="call cache file, or 'off' (default: edufair-calls.sqlite in "
                                                      "$EDUFAIR_CACHE_DIR, else $XDG_CACHE_HOME/edufair, else ~/.cache/edufair)")


def main(args: argparse.Namespace) -> int:
    args_cli = {k: v for k, v in (("model", args.student_model), ("base_url", args.student_base_url)) if v}
    meta = {"edufair": {"judge": {"enabled": False}, "preflight": False,
                        **({"config": args.config} if args.config else {})}}
    settings = resolve_runner_settings(template_settings(), meta,
                                       cli={"student": {"model_args": args_cli}} if args_cli else None)
    student_cfg = settings.student
    ident = identity(student_cfg.model, student_cfg.model_args)
    cache = load_cache_policy(args.cache).open()
    try:
        with quiet_request_bars():
            res = posttest_samples(args.inputs, Path(args.out), student=HarnessModel(build_student(student_cfg.to_dict())),
                                   identity=ident, cache=cache)
    finally:
        if cache is not None:
            cache.close()
    print(f"edufair posttest: {res.posttests} post-test(s) for {res.dialogues} dialogue(s) in {len(res.files)} file(s) "
          f"({json.dumps(res.by_verdict, sort_keys=True)}); student requests {res.counts.get('requests', 0)}, "
          f"from the cache {res.counts.get('cached', 0)}", file=sys.stderr)
    print(f"wrote {len(res.outputs)} samples file(s) and posttest_summary.json to {args.out}")
    return 0
