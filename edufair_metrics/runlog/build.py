"""Building dialogue records: the ONE place a :class:`~edufair_metrics.records.DialogueRecord` is
made from a transcript and its (already obtained) judgements, with its scores (every registered
dialogue scorer, ``runlog.scorers``), flags, judge settings, run header and provenance. Pure: no
model is called here (judging is ``run.judging``, the post-test's student call ``run.posttest``)."""

from __future__ import annotations

from typing import Any

from edufair_metrics.protocol import protocol_hash
from edufair_metrics.provenance import record_provenance
from edufair_metrics.records import (
    DialogueRecord,
    DialogueScores,
    DocumentFacts,
    PostTest,
    RecordFlags,
    RunHeader,
    Transcript,
    TurnJudgement,
    transcript_failed,
)
from edufair_metrics.runlog.scorers import score_record

# the judge field of records whose labels were not asked for (--predict_only, judge.enabled: false)
JUDGE_DISABLED_INFO: dict[str, Any] = {"enabled": False}


def build_record(transcript: Transcript, judgements: list[TurnJudgement], *, judge_info: dict[str, Any] | None,
                 document: DocumentFacts | None = None, run_provenance: dict[str, Any] | None = None,
                 provenance: dict[str, Any] | None = None, masked_cues: int | None = None,
                 posttest: PostTest | None = None, header: RunHeader | None = None) -> DialogueRecord:
    """The record of one dialogue. ``provenance``: the record's full provenance as is (re-judging
    keeps the generating run's); else it is made from ``run_provenance`` (the part fixed when the
    task's dialogues started) and the judge's settings. ``header``: the task's run header, shared by
    its records (default: one made from the provenance). ``posttest``: the dialogue's post-test
    (``dialogue.posttest``), scored here (``detectors.outcome``) into the outcome metrics."""
    document = document or DocumentFacts()
    scores = DialogueScores(question_id=transcript.question_id, domain=transcript.domain,
                            condition=transcript.condition, dimension=transcript.dimension, level=transcript.level,
                            scores={}, task=transcript.task, failed=transcript_failed(transcript),
                            stop_reason=transcript.stop_reason or None, replicate=transcript.replicate)
    flags = RecordFlags(incomplete=not transcript.complete, stop_reason=transcript.stop_reason, error=transcript.error,
                        error_kind=transcript.error_kind, masked_cues=masked_cues)
    if provenance is None and header is not None and run_provenance is None:
        provenance = header.to_provenance()  # a record of the task: the header is all of its provenance
    elif provenance is None:
        provenance = record_provenance(judge_info, run_provenance, protocol_hash())
    if header is None or header.to_provenance() != provenance:
        header = RunHeader.from_provenance(provenance)
    record = DialogueRecord(transcript, list(judgements), scores, flags, judge_info, provenance, document,
                            posttest=posttest, run=header)
    return score_record(record)


def task_header(judge_info: dict[str, Any] | None, run_provenance: dict[str, Any] | None) -> RunHeader:
    """The run header of a task's records: its run provenance with the versions and the judge's part."""
    return RunHeader.from_provenance(record_provenance(judge_info, run_provenance, protocol_hash()))


def rejudged_provenance(old: dict[str, Any], judge_info: dict[str, Any] | None) -> dict[str, Any]:
    """A re-judged record's provenance: the generating run's (bank, tutor, student, decoding,
    seeds, protocol), with the judge's part replaced by the new judge's."""
    base = {k: v for k, v in (old or {}).items() if k not in ("package_version", "protocol_version", "protocol_sha256")}
    new = record_provenance(judge_info, base, str((old or {}).get("protocol_sha256") or protocol_hash()))
    if (old or {}).get("protocol_version"):
        new["protocol_version"] = old["protocol_version"]  # the dialogues were generated under it
    return new


__all__ = ["JUDGE_DISABLED_INFO", "build_record", "rejudged_provenance", "task_header"]
