"""The post-test from stored transcripts (``edufair posttest``): outcome fairness for runs made
without ``edufair.posttest``, without re-generating any dialogue.

Reads every ``samples_*.jsonl`` given (or found under given folders); for each finished dialogue the
student answers its question once more (``dialogue.posttest``: the dialogue in the student's
context, the post-test prompt appended), all files in one batched student call through the call
cache. The student must be the one that held the dialogues: its identity (lm-eval model class and
the arguments that determine its answers, ``cache.model_identity``) must equal the records'
``provenance.models.student``, and the call uses the records' own student decoding
(``provenance.decoding.student``). Each record is rebuilt (``runlog.build``: the judge's labels kept,
the post-test scored into the outcome metrics, ``provenance.posttest`` added) and written, in
lm-eval's layout, as a run folder per input model folder, so that every command reads it:

    OUT/<model folder>/samples_<task>_<ts>.jsonl   the same lines, the record (``records.RECORD_KEY``) replaced
    OUT/<model folder>/results_<ts>.json           the run's results file (or a minimal one), its
                                                   student call counts plus the post-test's
    OUT/posttest_summary.json                      the student, counts, post-tests by verdict

Inputs are never modified; every file is written atomically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edufair_metrics.cache import CallCache, model_identity
from edufair_metrics.dialogue.generation import CachedGenerator, ChatModel
from edufair_metrics.dialogue.posttest import run_posttests
from edufair_metrics.errors import EduFairError, Interrupted
from edufair_metrics.io import atomic_write_json
from edufair_metrics.protocol import posttest_prompt, posttest_provenance
from edufair_metrics.records import ALL_METRICS, OUTCOME_METRICS, DialogueRecord
from edufair_metrics.runlog.build import build_record
from edufair_metrics.runlog.rewrite import ResultsWriter, read_stored_run, write_rebuilt

POSTTEST_KEY = "edufair_posttest"  # in a results file written here: what got a post-test


@dataclass(frozen=True)
class PostTestResult:
    files: list[Path]
    outputs: list[str]
    dialogues: int
    posttests: int
    by_verdict: dict[str, int]
    counts: dict[str, Any]


def _identity_json(identity: dict[str, Any] | None) -> str:
    ident = identity or {}
    args = ident.get("model_args") if isinstance(ident.get("model_args"), dict) else {}
    kind = ident.get("kind", ident.get("model"))  # records of older versions name the class under "model"
    return json.dumps(model_identity(str(kind), args), sort_keys=True)


def records_student(records: list[tuple[str, DialogueRecord]], identity: dict[str, Any]) -> dict[str, Any]:
    """The student decoding of ``records`` (``(where, record)``), after checking that ``identity``
    is the student that held their dialogues and that they agree on its decoding."""
    want = _identity_json(identity)
    decoding: dict[str, Any] | None = None
    for where, rec in records:
        prov = rec.provenance or {}
        stored = (prov.get("models") or {}).get("student")
        if not stored:
            raise EduFairError(f"{where}: the record names no student (provenance.models.student); the post-test "
                               "needs the student that held the dialogue")
        if _identity_json(stored) != want:
            raise EduFairError(f"{where}: the dialogue was held by the student {_identity_json(stored)}, the settings "
                               f"give {want}: the post-test must be answered by the same student (set "
                               "--student-model / --config)")
        dec = (prov.get("decoding") or {}).get("student")
        if not isinstance(dec, dict):
            raise EduFairError(f"{where}: the record stores no student decoding (provenance.decoding.student)")
        if decoding is None:
            decoding = dec
        elif dec != decoding:
            raise EduFairError(f"{where}: student decoding {json.dumps(dec, sort_keys=True)} differs from "
                               f"{json.dumps(decoding, sort_keys=True)} of the other records; run the post-test per run")
    return decoding or {}


def posttest_samples(inputs: list[str], out_dir: Path, *, student: ChatModel, identity: dict[str, Any],
                     cache: CallCache | None = None) -> PostTestResult:
    """Give every finished dialogue of lm-eval samples files (or folders of them) its post-test and
    write them, as a run folder per input model folder, into ``out_dir`` (module docstring)."""
    out_dir = Path(out_dir)
    run = read_stored_run(inputs, out_dir, "run the post-test on")
    files, records = run.files, run.records
    decoding = records_student(records, identity)
    generator = CachedGenerator(student, "student", model_identity(str(identity.get("kind")), identity.get("model_args")),
                                cache)
    if hasattr(student, "counts"):
        student.counts = generator.counts  # HTTP attempts, incl. lm-eval's silent retries
    transcripts = [r.transcript for _, r in records]
    docs = [{"question_id": t.question_id, "level": t.level} for t in transcripts]
    try:
        posttests = run_posttests(generator, transcripts, docs, decoding, posttest_prompt)
    except KeyboardInterrupt:
        raise Interrupted(dialogues=len(records), labels=0) from None
    prov_extra = posttest_provenance()
    rebuilt = []
    for (_, rec), post in zip(records, posttests):
        prov = dict(rec.provenance)
        if post is not None:
            prov["posttest"] = prov_extra
        rebuilt.append(build_record(rec.transcript, rec.judgements, judge_info=rec.judge, document=rec.document,
                                    provenance=prov, masked_cues=rec.flags.masked_cues, posttest=post))
    counts = generator.counts.to_dict()
    written = []
    results = ResultsWriter(POSTTEST_KEY, "posttest")
    for f, path in write_rebuilt(run, rebuilt, ALL_METRICS + OUTCOME_METRICS):
        written.append(path)
        # the task's student call counts plus the post-test's (given once per call, with the first file's task)
        results.write(f, run.targets[f], {"from": str(f), "student": identity},
                      add_calls=counts if f == files[0] else None)
    by_verdict: dict[str, int] = {}
    for r in rebuilt:
        if r.posttest is not None:
            key = r.posttest.verdict or f"failed ({r.posttest.error_kind})"
            by_verdict[key] = by_verdict.get(key, 0) + 1
    n_post = sum(by_verdict.values())
    atomic_write_json(out_dir / "posttest_summary.json", {
        "inputs": [str(f) for f in files], "outputs": written, "student": identity, "decoding": decoding,
        "posttest": prov_extra, "dialogues": len(rebuilt), "posttests": n_post, "by_verdict": by_verdict,
        "calls": counts})
    return PostTestResult(files, written, len(rebuilt), n_post, by_verdict, counts)


__all__ = ["POSTTEST_KEY", "PostTestResult", "posttest_samples", "records_student"]
