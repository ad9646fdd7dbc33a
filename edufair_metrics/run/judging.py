"""Judging transcripts into dialogue records: every tutor turn sent to the judge (``judge.run``, model
calls through the call cache), then each dialogue's record built (``runlog.build``, pure). Used by the
task run (``run.task``) and by re-judging (``run.rejudge``)."""

from __future__ import annotations

from typing import Any, Sequence

from edufair_metrics.cache import CallCache
from edufair_metrics.failures import CallCounts, FailureKind
from edufair_metrics.judge.run import judge_transcripts, missing_by_level, missing_judgements, summarize_judgements
from edufair_metrics.judge.settings import JudgeSettings
from edufair_metrics.protocol.cues import mask_transcript
from edufair_metrics.records import DialogueRecord, DocumentFacts, PostTest, Transcript
from edufair_metrics.runlog.build import JUDGE_DISABLED_INFO, build_record, rejudged_provenance, task_header


def judge_and_build(transcripts: Sequence[Transcript], *, judge: JudgeSettings | None, cache: CallCache | None = None,
                    documents: Sequence[DocumentFacts | None] | None = None,
                    run_provenance: dict[str, Any] | None = None,
                    provenances: Sequence[dict[str, Any] | None] | None = None, progress: bool = True,
                    summary: dict[str, Any] | None = None,
                    judge_counts: CallCounts | None = None,
                    posttests: Sequence[PostTest | None] | None = None) -> list[DialogueRecord]:
    """Judge every tutor turn of ``transcripts`` (``judge`` None: the judge is off and every label
    is missing with kind ``judge_disabled``) and build one record per transcript. ``provenances``
    (one per transcript) keep each record's own provenance (re-judging); otherwise it is made from
    ``run_provenance``, as one run header shared by the records. ``summary`` (a dict) receives the
    judging summary: counts, missing labels by kind and by condition level (``by_level``), the
    judge's call counts (``calls``) and, with ``mask_cues``, the number of masked cues.
    ``judge_counts``: the judge's CallCounts to count into while it runs (so that a caller can read
    them before the judging ends). ``posttests``: one post-test (or None) per transcript, kept in
    its record."""
    transcripts = list(transcripts)
    documents = list(documents) if documents is not None else [None] * len(transcripts)
    masked = None
    summary = {} if summary is None else summary
    if judge is not None:
        judged = transcripts
        if judge.mask_cues:  # condition-blind judging; the records keep the original text
            masked = [mask_transcript(t) for t in transcripts]
            judged = [m.transcript for m in masked]
        judgements = judge_transcripts(judged, judge, cache=cache, progress=progress, summary=summary,
                                       counts=judge_counts)
        info = judge.public_dict()
        if masked is not None:
            summary["masked_cues"] = sum(m.masked for m in masked)
    else:
        judgements = [missing_judgements(t, FailureKind.JUDGE_DISABLED, "judge disabled") for t in transcripts]
        info = dict(JUDGE_DISABLED_INFO)
        summary.update(summarize_judgements(judgements))
        summary["calls"] = CallCounts("judge").to_dict()  # no judge call was made
    summary["by_level"] = missing_by_level(transcripts, judgements)
    header = task_header(info, run_provenance) if provenances is None else None
    records = []
    for i, (t, js) in enumerate(zip(transcripts, judgements)):
        prov = None
        if provenances is not None:
            prov = rejudged_provenance(provenances[i] or {}, info)
        records.append(build_record(t, js, judge_info=info, document=documents[i], provenance=prov, header=header,
                                    masked_cues=masked[i].masked if masked is not None else None,
                                    posttest=posttests[i] if posttests is not None else None))
    return records


__all__ = ["judge_and_build"]
