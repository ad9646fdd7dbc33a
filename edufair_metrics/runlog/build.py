"""Building dialogue records: the ONE place a :class:`~edufair_metrics.records.DialogueRecord` is
made, with its scores (the nine judged and conversation metrics, the detector and the student
metrics, and with a post-test the outcome metrics), flags,
judge settings and provenance. Used by the task run (``edufair_metrics.run``) and by re-judging."""

from __future__ import annotations

import math
from typing import Any, Sequence

from edufair_metrics.cache import CallCache
from edufair_metrics.detectors import DETECTOR_VERSION, STORED_METRICS, all_scores
from edufair_metrics.detectors.outcome import score_posttest, stored_outcome
from edufair_metrics.failures import CallCounts, FailureKind
from edufair_metrics.judge.run import judge_transcripts, missing_by_level, missing_judgements, summarize_judgements
from edufair_metrics.judge.settings import JudgeSettings
from edufair_metrics.protocol import protocol_hash
from edufair_metrics.protocol.cues import mask_transcript
from edufair_metrics.provenance import record_provenance
from edufair_metrics.records import DialogueRecord, DocumentFacts, PostTest, RecordFlags, Transcript, TurnJudgement
from edufair_metrics.scores import TURN_COUNTS_VERSION, score_dialogue

# the judge field of records whose labels were not asked for (--predict_only, judge.enabled: false)
JUDGE_DISABLED_INFO: dict[str, Any] = {"enabled": False}


def build_record(transcript: Transcript, judgements: list[TurnJudgement], *, judge_info: dict[str, Any] | None,
                 document: DocumentFacts | None = None, run_provenance: dict[str, Any] | None = None,
                 provenance: dict[str, Any] | None = None, masked_cues: int | None = None,
                 posttest: PostTest | None = None) -> DialogueRecord:
    """The record of one dialogue. ``provenance``: the record's full provenance as is (re-judging
    keeps the generating run's); else it is made from ``run_provenance`` (the part fixed when the
    task's dialogues started) and the judge's settings. ``posttest``: the dialogue's post-test
    (``dialogue.posttest``), scored here (``detectors.outcome``) into the outcome metrics."""
    document = document or DocumentFacts()
    scores = score_dialogue(transcript, judgements)
    scores.stop_reason = transcript.stop_reason or None
    det = all_scores(transcript, document.answer_forms)  # the detector and student metrics
    scores.scores.update({m: det[m] for m in STORED_METRICS if not math.isnan(det[m])})
    if posttest is not None:
        posttest = score_posttest(transcript, posttest, document.answer_forms)
        scores.scores.update(stored_outcome(posttest))
    flags = RecordFlags(incomplete=not transcript.complete, stop_reason=transcript.stop_reason, error=transcript.error,
                        error_kind=transcript.error_kind, masked_cues=masked_cues)
    if provenance is None:
        provenance = record_provenance(judge_info, run_provenance, protocol_hash())
    return DialogueRecord(transcript, list(judgements), scores, flags, judge_info, provenance, document,
                          DETECTOR_VERSION, turn_counts_version=TURN_COUNTS_VERSION, posttest=posttest)


def rejudged_provenance(old: dict[str, Any], judge_info: dict[str, Any] | None) -> dict[str, Any]:
    """A re-judged record's provenance: the generating run's (bank, tutor, student, decoding,
    seeds, protocol), with the judge's part replaced by the new judge's."""
    base = {k: v for k, v in (old or {}).items() if k not in ("package_version", "protocol_version", "protocol_sha256")}
    new = record_provenance(judge_info, base, str((old or {}).get("protocol_sha256") or protocol_hash()))
    if (old or {}).get("protocol_version"):
        new["protocol_version"] = old["protocol_version"]  # the dialogues were generated under it
    return new


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
    ``run_provenance``. ``summary`` (a dict) receives the judging summary: counts, missing labels
    by kind and by condition level (``by_level``), the judge's call counts (``calls``) and, with
    ``mask_cues``, the number of masked cues. ``judge_counts``: the judge's CallCounts to count
    into while it runs (so that a caller can read them before the judging ends). ``posttests``: one
    post-test (or None) per transcript, kept in its record."""
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
    records = []
    for i, (t, js) in enumerate(zip(transcripts, judgements)):
        prov = None
        if provenances is not None:
            prov = rejudged_provenance(provenances[i] or {}, info)
        records.append(build_record(t, js, judge_info=info, document=documents[i], run_provenance=run_provenance,
                                    provenance=prov, masked_cues=masked[i].masked if masked is not None else None,
                                    posttest=posttests[i] if posttests is not None else None))
    return records
