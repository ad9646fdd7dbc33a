"""The sequential audit (``edufair audit``): one EduFair task run in batches of whole questions,
re-analysed after every batch with group-sequential levels (``analysis.sequential``: Lan–DeMets
α-spending over the questions the budget allows), stopping as soon as
the requested decision is reached or the budget is spent.

Design: the harness-free runner (``run.run_task``) on each batch's documents, with the task's
call cache shared by all batches; the batches are contiguous runs of whole questions in the
task's document order (every level and replicate of a question in one batch, so the question
stays the unit). Successive lm-eval runs sharing the call cache (``--limit`` growing by one batch)
would give the same dialogues, but each would re-read every earlier batch through lm-eval and
could not stop on a verdict; the harness-free loop needs neither.

The output folder is a normal run folder, rewritten atomically after every batch:
``results_<ts>.json`` and ``samples_<task>_<ts>.jsonl`` (lm-eval's layout; ``edufair report`` /
``compare`` / ``view`` read it) with every dialogue so far, plus ``audit.json`` (the audit's
identity, its looks and decisions) and ``audit_batches/batch_<i>.jsonl`` (each finished batch's
records). An interrupted audit resumes from its last finished batch (records read back, the
unfinished batch served from the call cache as far as it got) and, because each look's level
depends only on the looks' information fractions and its verdicts only on the records, ends
with the same decisions as an uninterrupted one.

Levels (``analysis.sequential``, its docstring says why): flags at the O'Brien–Fleming-type
two-sided level of each look (``flag_looks``), each TOST side of a certification at the one-sided
level of a power-family spending that spends nothing before 30% of the budget and 0.8·α in all
(``certify_looks``).
The CI gate (``--until gate``): at each look ``analysis.compare.compare_frames`` against the
baseline's frame on the questions both share, each of its one-sided bounds (pass: the upper one
below the threshold; fail: the lower one above it, or a new flag whose change is significant
family-wise) each at its own spent level (``gate_looks``: the pass bound linear, the fail bound
O'Brien–Fleming type), so the gate stops as soon as it passes or fails. ``audit.json`` records
the spending functions (``sequential.design()``) in the audit's identity: a resume under other
spending functions is another audit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.analysis.sequential import (UNTIL, LookDecision, certify_looks, design, flag_looks, gate_looks,
                                                 look_decision)
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import atomic_write_text
from edufair_metrics.records import RECORD_KEY, DialogueRecord
from edufair_metrics.run import RoleModel, TaskSpec, run_task
from edufair_metrics.run.documents import question_blocks

STATE_FILE = "audit.json"
BATCH_DIR = "audit_batches"
AUDIT_KIND = "edufair-audit"


@dataclass(frozen=True)
class AuditPlan:
    """How an audit spends its budget: ``budget`` dialogues at most, in batches of
    ``batch_questions`` questions; stop when ``until`` is reached (``analysis.sequential.UNTIL``)
    for the headline family of metric ``kind``, each look at the spent level of ``alpha``."""

    budget: int
    batch_questions: int
    until: str = "units"
    alpha: float = 0.05
    kind: str = "pedagogical"

    def validate(self) -> "AuditPlan":
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 1:
            raise EduFairError(f"--budget must be a whole number of dialogues >= 1, got {self.budget!r}")
        if isinstance(self.batch_questions, bool) or not isinstance(self.batch_questions, int) or self.batch_questions < 1:
            raise EduFairError(f"--batch must be a whole number of questions >= 1, got {self.batch_questions!r}")
        if self.until not in UNTIL:
            raise EduFairError(f"--until must be one of {', '.join(UNTIL)}, got {self.until!r}")
        if not 0 < self.alpha < 0.5:
            raise EduFairError(f"--alpha must lie in (0, 0.5), got {self.alpha}")
        return self


@dataclass
class AuditResult:
    out_dir: Path
    looks: list[dict[str, Any]]
    stopped: str  # "decided" | "budget"
    dialogues: int
    questions: int
    budget: int
    records: list[DialogueRecord] = field(default_factory=list, repr=False)

    @property
    def final(self) -> dict[str, Any] | None:
        return self.looks[-1] if self.looks else None


def batches_within_budget(blocks: Sequence[list], plan: AuditPlan, task: str) -> list[list]:
    """The batches (lists of question blocks) the budget allows, in document order; a budget below
    one batch is an error (one line)."""
    if not blocks:
        raise EduFairError(f"{task}: no documents to audit")
    first = sum(len(b) for b in blocks[:plan.batch_questions])
    if plan.budget < first:
        raise EduFairError(f"--budget {plan.budget} dialogues is below one batch ({min(plan.batch_questions, len(blocks))} "
                           f"questions = {first} dialogues of {task}): raise --budget or lower --batch")
    out, spent = [], 0
    for start in range(0, len(blocks), plan.batch_questions):
        batch = blocks[start:start + plan.batch_questions]
        cost = sum(len(b) for b in batch)
        if spent + cost > plan.budget:
            break
        out.append(batch)
        spent += cost
    return out


def audit_identity(task: str, plan: AuditPlan, spec: TaskSpec, tutor: RoleModel, student: RoleModel,
                   judge_identity: Any, documents: Sequence[dict[str, Any]], params: StatParams,
                   gate: dict[str, Any] | None = None) -> dict[str, Any]:
    """What makes two audits the same audit (a resume must match it): the task, the models and
    decoding, the documents, the plan and the statistics."""
    docs = json.dumps([[d.get("question_id"), d.get("level"), d.get("dialogue_replicate")] for d in documents])
    extra = {"gate": gate} if gate is not None else {}
    return {**extra,
        "kind": AUDIT_KIND, "task": task, "plan": asdict(plan), "statistics": params.to_dict(),
        "tutor": tutor.identity or tutor.provenance(), "student": student.identity,
        "tutor_decoding": spec.tutor_gen_kwargs, "judge": judge_identity,
        "documents_sha256": hashlib.sha256(docs.encode()).hexdigest(), "spending": design(),
    }


def _read_state(out_dir: Path, identity: dict[str, Any]) -> dict[str, Any] | None:
    """The state of an earlier audit of the same identity in ``out_dir`` (None: a fresh folder);
    a folder holding another run, or another audit, is an error."""
    state_path = out_dir / STATE_FILE
    if state_path.exists():
        try:
            state = json.loads(state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EduFairError(f"{state_path}: unreadable audit state ({exc}); move the folder away to start afresh") from None
        if state.get("identity") != identity:
            diff = sorted(k for k in set(identity) | set(state.get("identity") or {})
                          if (state.get("identity") or {}).get(k) != identity.get(k))
            raise EduFairError(f"{out_dir} holds another audit (its {', '.join(diff) or 'identity'} differ(s)); "
                               "audit into an empty folder, or resume with the same task, models and plan")
        return state
    if out_dir.exists() and any(out_dir.iterdir()):
        raise EduFairError(f"{out_dir} is not empty and holds no audit: it holds another run or other files; "
                           "audit into an empty (or new) folder")
    return None


def _batch_path(out_dir: Path, i: int) -> Path:
    return out_dir / BATCH_DIR / f"batch_{i:04d}.jsonl"


def _write_run_folder(out_dir: Path, task: str, stamp: str, tutor_name: str, records: list[DialogueRecord],
                      documents: dict[int, dict[str, Any]], counts: dict[str, dict[str, Any]], audit: dict[str, Any]) -> None:
    """The lm-eval-shaped run folder of every record so far (atomic files, rewritten each batch)."""
    lines = []
    for rec in records:
        doc_id = rec.transcript.doc_id
        doc = documents.get(doc_id, {})
        lines.append(json.dumps({"doc_id": doc_id, "doc": {k: doc.get(k) for k in ("question_id", "level", "answer_forms", "source")},
                                 "target": "", "arguments": [], "resps": [], "filtered_resps": [], "filter": "judged",
                                 "metrics": [RECORD_KEY], RECORD_KEY: rec.to_dict()}, ensure_ascii=False))
    atomic_write_text(out_dir / f"samples_{task}_{stamp}.jsonl", "\n".join(lines) + "\n")
    results = {
        "results": {task: {"alias": task, f"{RECORD_KEY},judged": float(sum(not r.flags.incomplete for r in records))}},
        "configs": {task: {"task": task, "metadata": {"edufair_calls": counts, "edufair_audit": audit}}},
        "config": {"model": "edufair-audit"},
        "model_name": tutor_name,
        "date": time.time(),
    }
    atomic_write_text(out_dir / f"results_{stamp}.json", json.dumps(results, indent=1, default=str))


def _summed(counts: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    from edufair_metrics.failures import CallCounts

    out: dict[str, dict[str, Any]] = {}
    for role in ("tutor", "student", "judge"):
        parts = [CallCounts.from_dict(c[role]) for c in counts if isinstance(c.get(role), dict)]
        if parts:
            total = parts[0]
            for p in parts[1:]:
                total = total.merged(p)
            out[role] = total.to_dict()
    return out


def batch_line(i: int, n_batches: int, look: dict[str, Any], dialogues: int, budget: int) -> str:
    """The one line printed after each batch."""
    return (f"edufair audit: batch {i + 1}/{n_batches}: {look['questions']} questions, {dialogues}/{budget} dialogues "
            f"({dialogues / budget:.0%} of the budget); level {look['nominal_alpha']:.2g} (spent {look['spent']:.3g}), "
            f"certify {look.get('certify_alpha', look['nominal_alpha']):.2g} per side"
            + (f", gate pass {look['gate_alpha']:.2g} / fail {look.get('gate_fail_alpha', look['gate_alpha']):.2g}"
               if look.get("gate_alpha") is not None else "")
            + f"; headline units {look['decided']}/{look['units']} decided ({look['flagged']} flagged, {look['certified']} "
            f"certified), {look['units'] - look['decided']} open: {look['status']}")


def run_audit(task: str, spec: TaskSpec, settings, documents: Sequence[dict[str, Any]], plan: AuditPlan, out_dir: Path,
              *, tutor: RoleModel, student: RoleModel, judge, cache, params: StatParams, tutor_name: str,
              echo: Callable[[str], None] | None = None, progress: bool = True,
              stop_after_batches: int | None = None, baseline=None, max_increase: float = 0.05,
              new_violations: str = "significant") -> AuditResult:
    """Run the audit of ``task``'s ``documents`` (``run.task_documents``) into ``out_dir`` (see the
    module docstring). ``stop_after_batches``: end after that many batches of this call, as an
    interruption would (tests of the resume). ``baseline`` (``until = "gate"``): the baseline run's
    long score frame (``analysis.frames.scores_frame``), with the gate's ``max_increase`` and
    ``new_violations``."""
    from tqdm import tqdm

    plan.validate()
    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    out_dir = Path(out_dir)
    docs = list(documents)
    blocks = question_blocks(list(enumerate(docs)))
    batches = batches_within_budget(blocks, plan, task)
    max_questions = sum(len(b) for b in batches)
    if plan.until == "gate" and baseline is None:
        raise EduFairError("--until gate needs --baseline RUN (the run the gate compares the audit with)")
    gate = ({"max_increase": float(max_increase), "new_violations": new_violations,
             "baseline_sha256": _frame_digest(baseline)} if plan.until == "gate" else None)
    identity = audit_identity(task, plan, spec, tutor, student, judge.output_identity() if judge else None, docs, params,
                              gate)
    state = _read_state(out_dir, identity)
    out_dir.mkdir(parents=True, exist_ok=True)
    if state is None:
        state = {"identity": identity, "stamp": time.strftime("%Y-%m-%dT%H-%M-%S"), "looks": [], "counts": [],
                 "stopped": None}
    records: list[DialogueRecord] = []
    for i in range(len(state["looks"])):  # finished batches: their records, read back
        for line in _batch_path(out_dir, i).read_text(encoding="utf-8").splitlines():
            if line.strip():
                records.append(DialogueRecord.from_dict(json.loads(line)))
    documents_by_id = dict(enumerate(docs))
    questions_so_far = sum(len(b) for b in batches[:len(state["looks"])])
    ran = 0
    bar = tqdm(total=len(batches), initial=len(state["looks"]), desc=f"{task} audit", unit="batch", disable=not progress)
    try:
        for i in range(len(state["looks"]), len(batches)):
            if state["stopped"] == "decided":
                break
            if stop_after_batches is not None and ran >= stop_after_batches:
                break
            pairs = [pair for block in batches[i] for pair in block]
            result = run_task(spec, settings, [d for _, d in pairs], tutor=tutor, student=student, judge=judge,
                              cache=cache, doc_ids=[doc_id for doc_id, _ in pairs], progress=False)
            atomic_write_text(_batch_path(out_dir, i), "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n"
                                                              for r in result.records))
            records.extend(result.records)
            state["counts"].append(result.call_counts)
            questions_so_far += len(batches[i])
            fractions = [look["fraction"] for look in state["looks"]] + [questions_so_far / max_questions]
            looks = flag_looks(fractions, plan.alpha)
            cert = certify_looks(fractions, plan.alpha)
            gate_level = gate_looks(fractions, plan.alpha)[-1] if plan.until == "gate" else None
            gate_fail = gate_looks(fractions, plan.alpha, "fail")[-1] if plan.until == "gate" else None
            for s in records:
                s.scores.tutor = tutor_name
            frame = scores_frame([r.scores for r in records], keep_failed=params.keep_failed_dialogues)
            decision: LookDecision = look_decision(frame, nominal_alpha=looks[-1].nominal_alpha, params=params,
                                                   until=plan.until, kind=plan.kind,
                                                   certify_alpha=cert[-1].nominal_alpha)
            gate_status = None
            if plan.until == "gate":
                gate_status = gate_look(baseline, frame, alpha=gate_level.nominal_alpha, params=params,
                                        max_increase=max_increase, new_violations=new_violations,
                                        fail_alpha=gate_fail.nominal_alpha)
                decision = dataclasses.replace(decision, reached=gate_status in ("pass", "fail"),
                                               status=f"gate {gate_status}")
            look = {**decision.to_dict(), "decided": decision.decided, "fraction": fractions[-1], "spent": looks[-1].spent,
                    "boundary_z": looks[-1].boundary, "certify_alpha": cert[-1].nominal_alpha,
                    "certify_boundary_z": cert[-1].boundary, "gate": gate_status, "dialogues": len(records)}
            if gate_level is not None:
                look["gate_alpha"], look["gate_fail_alpha"] = gate_level.nominal_alpha, gate_fail.nominal_alpha
            state["looks"].append(look)
            last = i + 1 == len(batches)
            state["stopped"] = "decided" if decision.reached else ("budget" if last else None)
            _write_run_folder(out_dir, task, state["stamp"], tutor_name, records, documents_by_id, _summed(state["counts"]),
                              {"looks": state["looks"], "stopped": state["stopped"], "budget": plan.budget})
            atomic_write_text(out_dir / STATE_FILE, json.dumps(state, indent=1, default=str))
            bar.update(1)
            echo(batch_line(i, len(batches), look, len(records), plan.budget))
            ran += 1
    finally:
        bar.close()
    return AuditResult(out_dir, state["looks"], state["stopped"] or "interrupted", len(records),
                       questions_so_far, plan.budget, records)


def _frame_digest(df) -> str | None:
    """A digest of a long score frame (the gate's baseline: a resume must compare with the same one)."""
    if df is None:
        return None
    return hashlib.sha256(df.to_csv(index=False).encode()).hexdigest()


# the gate's bounds are normal approximations of a bootstrap on the questions both runs share;
# below 50 paired questions (verdicts.EXACT_BELOW: where the percentile CIs are liberal) a look
# does not decide the gate
GATE_MIN_QUESTIONS = 50


def gate_look(baseline, frame, *, alpha: float, params: StatParams, max_increase: float, new_violations: str,
              fail_alpha: float | None = None) -> str:
    """The CI gate of the audit's ``frame`` against the ``baseline`` frame, its pass bound at one-sided
    level ``alpha`` and its fail bound (and the new-flag rule) at ``fail_alpha`` (None: ``alpha``;
    ``compare_frames(alpha=..., fail_alpha=...)``): pass / fail / inconclusive; inconclusive too while the
    runs share fewer than :data:`GATE_MIN_QUESTIONS` questions in some domain, or too few for any
    unit, and never a pass on a zero standard error (a baseline of other questions is an error: one
    line)."""
    from edufair_metrics.analysis.compare import compare_frames

    res = compare_frames(baseline, frame, n_boot=params.n_boot, seed=params.seed, min_pairs=params.min_pairs,
                         ses_summary=params.ses_summary, max_increase=max_increase, new_violations=new_violations,
                         fdr_method=params.fdr_method, equivalence_margin=params.equivalence_margin, alpha=alpha,
                         fail_alpha=fail_alpha)
    if not res.headline.get("units") or min(res.n_questions.values(), default=0) < GATE_MIN_QUESTIONS:
        return "inconclusive"
    se, delta = res.headline.get("gate_se", math.nan), res.headline.get("gate_delta", math.nan)
    if res.status == "pass" and not (se > 0) and delta != 0:
        # no pass without evidence (compare_frames itself decides nothing on a zero se since its
        # null floor; kept as a guard): an interval of width 0 would pass any change below the
        # threshold (identical runs, a change of exactly 0 on every resample, still pass)
        return "inconclusive"
    return res.status


def tutor_label(identity: dict[str, Any] | None, fallback: str) -> str:
    """A run folder's tutor name from the tutor's identity (its model name or path)."""
    args = (identity or {}).get("model_args") or {}
    for key in ("model", "pretrained", "path"):
        if isinstance(args, dict) and args.get(key):
            return re.sub(r"\s+", "_", str(args[key]))
    return fallback


def stopping_summary(result: AuditResult) -> str:
    """The audit's last line: why it stopped and what it decided."""
    look = result.final
    if look is None:
        return "edufair audit: no batch ran"
    why = {"decided": "decided", "budget": "budget spent", "interrupted": "interrupted (resume with the same command)"}
    saved = 1 - result.dialogues / result.budget if result.budget else math.nan
    return (f"edufair audit: {why.get(result.stopped, result.stopped)} after {look['questions']} questions, "
            f"{result.dialogues} of {result.budget} dialogues ({saved:.0%} of the budget left): {look['flagged']} flagged, "
            f"{look['certified']} certified of {look['units']} headline units; run folder {result.out_dir}")
