"""One EduFair task run end to end without lm-eval's evaluator (after HELM's ``Runner.run_one`` and
Inspect's ``task_run``): documents in, dialogue records and call counts out.

    result = run_task(spec, settings, documents, tutor=RoleModel(tutor_chat_model, identity),
                      student=RoleModel(student_chat_model, identity), judge=judge_settings, cache=cache)

The dialogues of all documents run together (``dialogue.loop.run_dialogues``: one batched call per
side and turn), every tutor turn is judged (``judge_settings`` None: labels recorded missing,
``judge_disabled``), with ``edufair.posttest`` the student answers each finished dialogue's question
once more (``dialogue.posttest``, one student call per dialogue), and each dialogue becomes a
:class:`~edufair_metrics.records.DialogueRecord` (``run.judging``, ``runlog.build``). lm-eval's task (``edufair_metrics.lmeval.task.EduFairTask``) only adapts the
harness to this function: its LM becomes the tutor, its documents and decoding settings the spec.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from edufair_metrics.cache import CallCache
from edufair_metrics.dialogue import DialogueState
from edufair_metrics.dialogue.generation import CachedGenerator, ChatModel
from edufair_metrics.dialogue.loop import run_dialogues
from edufair_metrics.dialogue.posttest import run_posttests
from edufair_metrics.errors import Interrupted
from edufair_metrics.judge.prompt import judge_prompts_path
from edufair_metrics.judge.settings import JudgeSettings
from edufair_metrics.protocol import posttest_prompt, posttest_provenance
from edufair_metrics.provenance import run_provenance
from edufair_metrics.failures import CallCounts
from edufair_metrics.records import DialogueRecord, DocumentFacts, RunHeader
from edufair_metrics.run.counts import CountsRecorder, run_key
from edufair_metrics.run.judging import judge_and_build

log = logging.getLogger("edufair")


@dataclass(frozen=True)
class RoleModel:
    """A model in one role of the dialogue (tutor or student): the model, the identity its calls
    are cached under (None: its calls are not cached, so that no other model can ever receive its
    answers) and where that identity came from (recorded in provenance)."""

    model: ChatModel
    identity: dict[str, Any] | None
    identity_source: str = "model"
    kind: str | None = None  # the model's class, for provenance when it has no identity

    def provenance(self) -> dict[str, Any]:
        ident = self.identity or {"kind": self.kind or type(self.model).__name__, "model_args": {}}
        return {**ident, "identity_source": self.identity_source}


@dataclass(frozen=True)
class TaskSpec:
    """What one task is: its name, condition and domain, and what the harness decides about it
    (the tutor's decoding, a system instruction, seeds, the question sample, the bank file)."""

    name: str
    condition: str
    domain: str
    tutor_gen_kwargs: dict[str, Any]
    system_instruction: str | None = None
    seeds: dict[str, Any] = field(default_factory=dict)
    sample: dict[str, Any] | None = None  # provenance of the question sample, when one was drawn
    bank_file: Path | None = None
    # how the task is split and batched: {"world_size", "tutor_batch_size", "shard"} (provenance)
    execution: dict[str, Any] | None = None
    # an extension condition's protocol provenance (run.TaskDocuments.protocol); None for the paper's
    protocol: dict[str, Any] | None = None


@dataclass
class TaskResult:
    """The records of one task run (in document order), each role's call counts
    (``failures.CallCounts.to_dict()``), the judging summary, the run's provenance (the part fixed
    when its dialogues started) and its run header (the facts of the run, shared by its records)."""

    records: list[DialogueRecord]
    call_counts: dict[str, dict[str, Any]]
    judge_summary: dict[str, Any]
    provenance: dict[str, Any]
    header: RunHeader | None = None


def run_task(spec: TaskSpec, settings, documents: Sequence[dict[str, Any]], *, tutor: RoleModel, student: RoleModel,
             judge: JudgeSettings | None, cache: CallCache | None, doc_ids: Sequence[int] | None = None,
             progress: bool = True) -> TaskResult:
    """Run ``documents`` (lm-eval documents of ``spec``'s task, e.g. from
    :func:`edufair_metrics.run.task_documents`) to their stop, judge them and build their records.
    ``settings``: the resolved runner settings (``max_tutor_turns``, ``overlap``, the student's
    decoding). ``doc_ids``: the documents' ids in the task (default 0..n-1)."""
    documents = list(documents)
    doc_ids = list(range(len(documents))) if doc_ids is None else list(doc_ids)
    if len(doc_ids) != len(documents):
        raise ValueError(f"{len(doc_ids)} document ids for {len(documents)} documents")
    tutor_gk = dict(spec.tutor_gen_kwargs)
    student_gk = dict(settings.student.generation_kwargs)
    provenance = run_provenance(
        bank_file=spec.bank_file or Path(""), domain=spec.domain, judge_prompts_file=judge_prompts_path(),
        models={"tutor": tutor.provenance(), "student": student.identity or {}},
        decoding={"tutor": tutor_gk, "student": student_gk}, max_tutor_turns=settings.max_tutor_turns,
        seeds=dict(spec.seeds), sample=spec.sample, execution=spec.execution, protocol=spec.protocol,
    )
    replicates = int(getattr(settings, "replicates", 1) or 1)
    if replicates > 1:  # k dialogues per question and level (protocol/replicates.py); k = 1 records nothing
        provenance["replicates"] = replicates
    posttest = bool(getattr(settings, "posttest", False))
    if posttest:  # outcome fairness: one more student turn per finished dialogue (dialogue/posttest.py)
        provenance["posttest"] = posttest_provenance()
    tutor_gen = CachedGenerator(tutor.model, "tutor", tutor.identity or {}, cache if tutor.identity else None)
    student_gen = CachedGenerator(student.model, "student", student.identity or {}, cache if student.identity else None)
    for generator in (tutor_gen, student_gen):
        if hasattr(generator.model, "counts"):
            generator.model.counts = generator.counts  # HTTP attempts, incl. lm-eval's silent retries
    judge_counts = CallCounts("judge")

    def counts_so_far() -> dict[str, dict[str, Any]]:
        return {"tutor": tutor_gen.counts.to_dict(), "student": student_gen.counts.to_dict(),
                "judge": judge_counts.to_dict()}

    # the counts are kept in the cache while the task runs, so that a resumed run counts them all
    recorder = CountsRecorder(cache, run_key(
        task=spec.name, tutor=tutor.identity or tutor.provenance(), tutor_decoding=tutor_gk,
        student=student.identity, student_decoding=student_gk, judge=judge.output_identity() if judge else None,
        max_tutor_turns=settings.max_tutor_turns, system_instruction=spec.system_instruction, seeds=spec.seeds,
        documents=[[i, d.get("question_id"), d.get("level"), *([d["dialogue_replicate"]] if d.get("dialogue_replicate") else [])]
                   for i, d in zip(doc_ids, documents)],
        **({"posttest": provenance["posttest"]} if posttest else {}),
    ), counts_so_far)
    states = [DialogueState(doc=doc) for doc in documents]
    log.info("edufair: %s: %d dialogues, up to %d tutor turns", spec.name, len(states), settings.max_tutor_turns)
    with recorder:
        try:
            run_dialogues(tutor_gen, student_gen, states, max_tutor_turns=settings.max_tutor_turns,
                          tutor_gen_kwargs=tutor_gk, student_gen_kwargs=student_gk,
                          system_instruction=spec.system_instruction, label=spec.name, overlap=settings.overlap,
                          progress=progress)
        except KeyboardInterrupt:  # every finished call is in the cache; say how far the run got
            raise Interrupted(dialogues=sum(s.done for s in states), labels=0) from None
        transcripts = [s.to_transcript(task=spec.name, doc_id=i) for s, i in zip(states, doc_ids)]
        posttests = None
        if posttest:
            try:
                posttests = run_posttests(student_gen, transcripts, documents, student_gk, posttest_prompt)
            except KeyboardInterrupt:
                raise Interrupted(dialogues=len(states), labels=0) from None
        summary: dict[str, Any] = {}
        try:
            records = judge_and_build(transcripts, judge=judge, cache=cache,
                                      documents=[DocumentFacts.from_doc(d) for d in documents],
                                      run_provenance=provenance, progress=progress, summary=summary,
                                      judge_counts=judge_counts, posttests=posttests)
        except Interrupted as exc:
            raise Interrupted(dialogues=len(states), labels=exc.labels) from None
    counts = recorder.finish(counts_so_far())
    if recorder.earlier_processes:
        log.warning("edufair: %s: this run resumed %d interrupted process(es); its call counts include their "
                    "sends, retries and failed attempts", spec.name, recorder.earlier_processes)
    return TaskResult(records, counts, summary, provenance, records[0].run if records else None)
