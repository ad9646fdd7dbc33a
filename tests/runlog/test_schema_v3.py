"""Record schema v3: a typed run header stored once per file (and process), each record with only its
own provenance delta, one stamp per dialogue scorer and the scorers' per-turn output; records of
schema v1 and v2 read exactly as the reader of commit cfc799f (the last one writing v2) read them."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from edufair_metrics.detectors import detect_turns, record_detection, stored_detection
from edufair_metrics.errors import EduFairError
from edufair_metrics.records import (
    DETECTOR_METRICS,
    OUTCOME_METRICS,
    RECORD_KEY,
    RECORD_SCHEMA_VERSION,
    STUDENT_METRICS,
    ALL_METRICS,
    DialogueRecord,
    RunHeader,
    merge_provenance,
    provenance_delta,
)
from edufair_metrics.runlog import SCORERS, complete, iter_lines, iter_records, record_dicts
from edufair_metrics.runlog.rewrite import RecordWriter
from edufair_metrics.runlog.scorers import score_record

DATA = Path(__file__).parent / "data"
V2 = DATA / "v2" / "samples_edufair_explicit_physics_2026-12-01T00-00-00.000000.jsonl"
EXPECTED = json.loads((DATA / "v2" / "expected_read_cfc799f.json").read_text(encoding="utf-8"))
STORED = sorted((DATA / "shapes").glob("samples_*.jsonl")) + [V2]


def _same_value(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _comparable(rec: DialogueRecord) -> dict:
    """What a reader of a record uses, as plain data (the version counters are schema-specific)."""
    d = rec.to_dict()
    post = d.get("posttest")
    return {"transcript": d["transcript"], "judgements": d["judgements"], "scores": d["scores"], "flags": d["flags"],
            "judge": d["judge"], "document": d["document"], "provenance": rec.provenance,
            "posttest": post, "detector_version": rec.detector_version,
            "turn_counts_version": rec.turn_counts_version}


def _expected(old: dict) -> dict:
    post = old.get("posttest")
    if post is not None:
        post = {k: v for k, v in post.items() if k != "scored_version"}
    return {"transcript": old["transcript"], "judgements": old["judgements"], "scores": old["scores"],
            "flags": old["flags"], "judge": old["judge"], "document": old["document"], "provenance": old["provenance"],
            "posttest": post, "detector_version": old["detector_version"],
            "turn_counts_version": old["turn_counts_version"]}


@pytest.mark.parametrize("path", STORED, ids=lambda p: p.stem)
def test_v1_and_v2_records_read_as_before(path):
    """Every stored line, completed on the read, is what cfc799f's reader made of it: transcripts,
    labels, every score (detector and student metrics recomputed for v1, the rest as stored),
    turn counts, provenance, post-test verdicts."""
    got = [_comparable(line.record) for line in iter_records(path)]
    want = [_expected(d) for d in EXPECTED[path.name]]
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        assert g == w


def _v2_records() -> list[DialogueRecord]:
    return [line.record for line in iter_records(V2)]


def test_v3_stores_the_run_header_once_and_each_record_its_delta(tmp_path):
    records = _v2_records()
    dicts = record_dicts(records)
    assert all(d["schema_version"] == RECORD_SCHEMA_VERSION == 3 for d in dicts)
    digests = []
    for d, rec in zip(dicts, records):
        head = rec.header()
        if head.digest in digests:
            assert d["run"] == {"ref": head.digest}
        else:
            assert d["run"] == head.to_dict() and sorted(d["run"]) == sorted(rec.provenance)
            digests.append(head.digest)
        assert d["provenance"] == {}  # a task's record has no provenance of its own
    # the fixture holds two runs (a judged one and one with a post-test): two headers, each in full once
    assert len(digests) == 2 and sum("ref" not in d["run"] for d in dicts) == 2
    # the stored v3 lines read back as the v2 ones did
    out = tmp_path / V2.name
    out.write_text("".join(json.dumps({"doc_id": i, RECORD_KEY: d}) + "\n" for i, d in enumerate(dicts)))
    back = [line.record for line in iter_records(out)]
    assert [_comparable(r) for r in back] == [_comparable(r) for r in records]
    assert back[0].run is not None and back[0].run.models == records[0].provenance["models"]
    # one header object per run header of the file, shared by its records
    assert len({id(r.run) for r in back}) == 2


def test_a_reference_to_a_header_no_earlier_line_holds_is_an_error(tmp_path):
    dicts = record_dicts(_v2_records())
    out = tmp_path / V2.name
    out.write_text("".join(json.dumps({RECORD_KEY: d}) + "\n" for d in dicts[1:]))  # the header's line cut off
    with pytest.raises(EduFairError, match=rf"{out.name}:1: malformed EduFair record .*run header"):
        list(iter_lines(out))


def test_a_records_own_provenance_is_its_delta():
    rec = _v2_records()[0]
    mine = copy.deepcopy(rec.provenance)
    mine["models"]["judge"]["model"] = "another-judge"
    mine["posttest"] = {"prompt": "p"}
    del mine["seeds"]
    delta = provenance_delta(mine, rec.provenance)
    assert delta == {"models": {"judge": {"model": "another-judge"}}, "posttest": {"prompt": "p"}, "_unset": ["seeds"]}
    assert merge_provenance(rec.provenance, delta) == mine
    head = rec.header()  # a v2 record's header, made from its provenance
    other = DialogueRecord(rec.transcript, rec.judgements, rec.scores, rec.flags, rec.judge, mine, rec.document,
                           rec.scorers, posttest=rec.posttest, run=head, per_turn=rec.per_turn)
    writer = RecordWriter()
    first, second = writer.to_dict(rec), writer.to_dict(other)
    assert second["run"] == {"ref": head.digest} and second["provenance"] == delta
    headers = {head.digest: RunHeader.from_dict(first["run"])}
    assert DialogueRecord.from_dict(second, headers=headers).provenance == mine


def test_the_scorers_are_registered_with_versions_and_disjoint_metrics():
    names = [s.name for s in SCORERS]
    assert names == ["judge", "conversation", "detectors", "student", "outcome"]
    metrics = [m for s in SCORERS for m in s.metrics]
    assert len(metrics) == len(set(metrics))
    assert set(metrics) == set(ALL_METRICS) | set(DETECTOR_METRICS) | set(STUDENT_METRICS) | set(OUTCOME_METRICS)
    assert all(isinstance(s.version, int) and s.version >= 1 for s in SCORERS)
    rec = _v2_records()[2]  # a record with a post-test: every scorer stamped
    assert set(rec.scorers) == set(names)


def test_complete_returns_a_new_record_and_leaves_the_stored_one():
    rec = _v2_records()[0]
    stored = copy.deepcopy(rec.to_dict())
    stored["scorers"]["detectors"]["version"] = 0
    stored["scores"]["scores"]["partial_reveal_rate"] = 0.5
    old = DialogueRecord.from_dict(stored)
    before = old.to_dict()
    new, ran = complete(old)
    assert ran == ("detectors",) and new is not old and old.to_dict() == before
    assert new.scores.scores["partial_reveal_rate"] == rec.scores.scores["partial_reveal_rate"]
    assert new.scorers["detectors"].version == rec.scorers["detectors"].version
    assert complete(new) == (new, ())


def test_stored_per_turn_detector_hits_equal_a_fresh_detection():
    """The detectors' per-turn output stored in a record stands for exactly what ``detect_turns``
    finds (what the report's judge-validity scan and twin view read instead of detecting again)."""
    n = 0
    for path in STORED:
        for line in iter_records(path):
            rec = line.record
            forms = rec.document.answer_forms
            if not forms or not rec.has_transcript:
                continue
            scored = score_record(rec)  # as a record made today stores it
            assert stored_detection(rec.transcript, scored.per_turn["detectors"]) == detect_turns(rec.transcript, forms)
            assert record_detection(scored) == record_detection(rec) == detect_turns(rec.transcript, forms)
            n += 1
    assert n >= 10
    # the student monitor's labels per student turn are stored when it scores
    rec = _v2_records()[0]
    built = complete(DialogueRecord.from_dict({**rec.to_dict(), "scorers": {}}))[0]
    assert set(built.per_turn["student"]) == {"reasoning", "asks_answer", "correct_answer", "wrong_answer", "refusal"}
    students = [i for i, t in enumerate(rec.transcript.turns) if t.role == "student"]
    assert all(set(v) <= set(students) for v in built.per_turn["student"].values())
