"""``edufair audit``: a sequential audit of one EduFair task. Runs the task in batches of whole
questions (harness-free, sharing the call cache), re-analyses after each batch at the
group-sequential levels (α-spending, ``analysis/sequential.py``) and stops
when the decision asked for (``--until``) is reached or the ``--budget`` is spent. The output
folder is a normal run folder (``edufair report`` / ``compare`` / ``view``); an interrupted audit
resumes with the same command. Design: ``edufair_metrics/local/audit.py``. Exit 0 when decided,
3 when the budget was spent undecided (gate: the gate's exit status), 2 on bad input."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from edufair_metrics.analysis.sequential import UNTIL
from edufair_metrics.cli._common import add_stat_args, stat_params
from edufair_metrics.errors import EduFairError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True, help="one EduFair task, e.g. edufair_explicit_physics")
    parser.add_argument("--model", required=True, help="the tutor: an lm-eval model name, e.g. local-chat-completions")
    parser.add_argument("--model_args", "--model-args", default="", help="the tutor's lm-eval model_args (k=v,...)")
    parser.add_argument("--gen_kwargs", "--gen-kwargs", default=None,
                        help="the tutor's decoding over the task's (k=v,...), as lm_eval --gen_kwargs")
    parser.add_argument("--metadata", default=None, help="task metadata JSON, as lm_eval --metadata: {\"edufair\": {...}}")
    parser.add_argument("--out", type=Path, required=True, help="the audit's run folder (new, empty, or an audit to resume)")
    parser.add_argument("--budget", type=int, required=True, help="the most dialogues the audit may run (designed for ~1.3 x the dialogues `edufair plan` prints, "
                             "~1.4 x the questions `edufair compare` needs for --until gate: no certification before "
                             "30%% of it)")
    parser.add_argument("--batch", type=int, default=20, help="questions per batch (default %(default)s)")
    parser.add_argument("--until", choices=UNTIL, default="units",
                        help="stop when: flag = a headline unit is flagged; certify = every headline unit certified; "
                             "units = every headline unit flagged or certified (default); gate = the CI gate against "
                             "--baseline passes or fails (each look at its spent level)")
    parser.add_argument("--kind", default="pedagogical", help="the headline family's metric kind (default %(default)s)")
    parser.add_argument("--alpha", type=float, default=0.05, help="the audit's total α, spent over the looks (default 0.05)")
    parser.add_argument("--baseline", default=None, help="with --until gate: the baseline run the gate compares with")
    parser.add_argument("--max-increase", type=float, default=0.05, help="with --until gate: the gate's margin")
    parser.add_argument("--new-violations", choices=("significant", "any", "ignore"), default="significant",
                        help="with --until gate: the gate's new-flag rule, as edufair compare (default %(default)s)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no batch progress bar (TQDM_DISABLE=1 also hides the dialogue runner's turn bars)")
    add_stat_args(parser, simultaneous=False)


def _task_yaml(task: str) -> tuple[dict, dict]:
    """(the task's edufair_cell, its generation_kwargs) from the task folder."""
    from edufair_metrics.lmeval import _TagLoader, tasks_path

    path = tasks_path() / f"{task}.yaml"
    if not path.exists():
        from edufair_metrics.lmeval import task_names

        raise EduFairError(f"unknown EduFair task {task!r} (one of: {', '.join(n for n, w in task_names().items() if w == 'task')})")
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_TagLoader) or {}
    template = yaml.load((tasks_path() / "_edufair_template_yaml").read_text(encoding="utf-8"), Loader=_TagLoader) or {}
    cell = data.get("edufair_cell") or {}
    if not cell.get("condition") or not cell.get("domain"):
        raise EduFairError(f"{task} is not one EduFair task (a group or tag?): name one task")
    return cell, dict(template.get("generation_kwargs") or {})


def main(args: argparse.Namespace) -> int:
    from edufair_metrics.lmeval import template_settings
    from edufair_metrics.lmeval.models import HarnessModel, build_student, identity, parse_model_args
    from edufair_metrics.local.audit import AuditPlan, run_audit, stopping_summary, tutor_label
    from edufair_metrics.run import RoleModel, TaskSpec, task_documents
    from edufair_metrics.settings import resolve_runner_settings

    params = stat_params(args)
    plan = AuditPlan(args.budget, args.batch, args.until, args.alpha, args.kind).validate()
    baseline = None
    if plan.until == "gate":
        if not args.baseline:
            raise EduFairError("--until gate needs --baseline RUN (the run the gate compares the audit with)")
        if not args.max_increase >= 0:
            raise EduFairError(f"--max-increase must be >= 0, got {args.max_increase}")
        from edufair_metrics.analysis.frames import scores_frame
        from edufair_metrics.runlog import load_run

        baseline = scores_frame([load_run(args.baseline)], keep_failed=params.keep_failed_dialogues)
    try:
        metadata = json.loads(args.metadata) if args.metadata else {}
    except ValueError as exc:
        raise EduFairError(f"--metadata is not JSON: {exc}") from None
    cell, tutor_gk = _task_yaml(args.task)
    if args.gen_kwargs:
        tutor_gk.update(parse_model_args(args.gen_kwargs))
    settings = resolve_runner_settings(template_settings(), metadata)
    found = task_documents(args.task, cell["condition"], cell["domain"], settings)
    # bad input before any model is built: a budget below one batch
    from edufair_metrics.local.audit import batches_within_budget
    from edufair_metrics.run.documents import question_blocks

    batches_within_budget(question_blocks(list(enumerate(found.documents))), plan, args.task)
    tutor_args = parse_model_args(args.model_args)
    tutor_lm = build_student({"model": args.model, "model_args": tutor_args, "batch_size": 1})
    tutor_id = identity(args.model, tutor_args)
    student_cfg = settings.student
    student_lm = build_student(student_cfg.to_dict())
    spec = TaskSpec(args.task, cell["condition"], cell["domain"], tutor_gk, bank_file=found.bank_file,
                    sample=found.sample, protocol=found.protocol)
    judge = settings.judge if settings.judge_enabled else None
    cache = settings.cache.open()
    try:
        result = run_audit(args.task, spec, settings, found.documents, plan, args.out,
                           tutor=RoleModel(HarnessModel(tutor_lm), tutor_id),
                           student=RoleModel(HarnessModel(student_lm), identity(student_cfg.model, student_cfg.model_args)),
                           judge=judge, cache=cache, params=params, tutor_name=tutor_label(tutor_id, args.model),
                           progress=not args.no_progress, baseline=baseline, max_increase=args.max_increase,
                           new_violations=args.new_violations)
    finally:
        if cache is not None:
            cache.close()
    print(stopping_summary(result))
    if plan.until == "gate":
        from edufair_metrics.report.compare import run_compare
        from edufair_metrics.runlog import load_run

        # the fixed-level comparison of everything run, for reading (and its checks: protocol, judge, ...);
        # the decision is the audit's, taken at the last look's spent level
        _res, text = run_compare(load_run(args.baseline), load_run(args.out), args.out / "gate", params,
                                 max_increase=args.max_increase, new_violations=args.new_violations)
        print(text)
        status = (result.final or {}).get("gate") or "inconclusive"
        final = result.final or {}
        level = final.get("gate_alpha", final.get("certify_alpha"))
        fail_level = final.get("gate_fail_alpha", level)
        print(f"edufair audit: the gate at the last look's spent levels (pass bound {level:.2g}, fail bound "
              f"{fail_level:.2g}): {status}" if result.final else "edufair audit: no look ran")
        return {"pass": 0, "fail": 1}.get(status, 3)
    sys.stdout.flush()
    return 0 if result.stopped == "decided" else 3
