"""The one reader of the record's JSON reads every record shape EduFair has written so far (real
samples files of earlier versions, tests/runlog/data/shapes/), completes them on the same pass, and
round-trips what it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edufair_metrics.detectors import DETECTOR_METRICS, DETECTOR_VERSION, STUDENT_METRICS
from edufair_metrics.records import LEGACY_RECORD_KEYS, RECORD_KEY, RECORD_SCHEMA_VERSION, DialogueRecord, record_in_line
from edufair_metrics.runlog import ReadStats, iter_records

SHAPES = sorted((Path(__file__).parent / "data" / "shapes").glob("samples_*.jsonl"))


def test_there_is_a_fixture_for_every_shape():
    assert {p.stem.split("_")[1] for p in SHAPES} == {"588d028", "331374c", "353d2ec", "579964b", "a75e775"}


@pytest.mark.parametrize("path", SHAPES, ids=lambda p: p.stem)
def test_every_written_shape_reads_and_completes(path):
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    stats = ReadStats()
    lines = list(iter_records(path, stats=stats))
    assert len(lines) == len(raw) == 2 and stats.skipped == 0 and stats.completed == 2
    for line, obj in zip(lines, raw):
        rec, stored = line.record, record_in_line(obj)
        assert RECORD_KEY not in obj and LEGACY_RECORD_KEYS[0] in obj  # the key every version so far wrote
        t = rec.transcript
        assert t.turns and t.stop_reason == stored["transcript"]["stop_reason"]
        tutor_turns = len(t.tutor_turn_indices())
        # judged_turns (old name) and sent_turns read as one field
        assert rec.scores.sent_turns == tutor_turns == len(rec.judgements)
        assert rec.scores.sent_turns == stored["scores"].get("sent_turns", stored["scores"].get("judged_turns"))
        assert rec.scores.stop_reason == t.stop_reason and rec.scores.task == "edufair_explicit_physics"
        assert rec.flags.stop_reason == t.stop_reason and rec.flags.incomplete == (not t.complete)
        # the gold of older records comes from the logged document
        assert rec.document.answer_forms == obj["doc"]["answer_forms"] and rec.document.source == obj["doc"]["source"]
        # completed on the read: the detector and student metrics of this version
        assert rec.detector_version == DETECTOR_VERSION and set(DETECTOR_METRICS) <= set(rec.scores.scores)
        assert set(STUDENT_METRICS) <= set(rec.scores.scores) and "leak_rate_det" not in rec.scores.scores
        assert rec.provenance.get("protocol_version") == stored["provenance"]["protocol_version"]
        # what a record stores it keeps: the nine metrics and the judge labels
        for m, v in stored["scores"]["scores"].items():
            assert rec.scores.scores[m] == pytest.approx(v, nan_ok=True) if v is not None else rec.scores.scores[m] != rec.scores.scores[m]
        assert [j.labels for j in rec.judgements] == [j.get("labels") for j in stored["judgements"]]
        # round trip: what this version writes, it reads back unchanged
        again = DialogueRecord.from_dict(json.loads(json.dumps(rec.to_dict())))
        assert again.to_dict() == rec.to_dict() and again.schema_version == RECORD_SCHEMA_VERSION


def test_a_score_only_record_reads_as_a_turnless_transcript():
    rec = DialogueRecord.from_dict({"scores": {"question_id": "q1", "domain": "physics", "condition": "explicit",
                                               "dimension": "gender", "level": "female", "scores": {"tutor_turns": 2.0},
                                               "judged_turns": 2, "missing_turns": 0}})
    assert not rec.has_transcript and rec.scores.sent_turns == 2 and rec.transcript.question_id == "q1"


@pytest.mark.parametrize("bad, match", [
    ({"transcript": "x", "scores": {}}, "transcript is not an object"),
    ({"scores": []}, "scores is not an object"),
    ({}, "neither a transcript nor scores"),
    ({"schema_version": RECORD_SCHEMA_VERSION + 1, "scores": {"question_id": "q"}}, "newer than this EduFair"),
])
def test_malformed_records_are_errors(bad, match):
    with pytest.raises((TypeError, ValueError), match=match):
        DialogueRecord.from_dict(bad)


def test_a_malformed_line_names_the_file_and_line(tmp_path):
    from edufair_metrics.errors import EduFairError

    f = tmp_path / "samples_edufair_explicit_physics_2026.jsonl"
    f.write_text(json.dumps({"doc_id": 0}) + "\n" + json.dumps({RECORD_KEY: {"transcript": {"turns": 3}, "scores": {}}}) + "\n")
    stats = ReadStats()
    with pytest.raises(EduFairError, match=r"samples_edufair_explicit_physics_2026.jsonl:2: malformed EduFair record"):
        list(iter_records(f, stats=stats))
    assert stats.skipped == 1  # the line without a record was skipped first


def test_a_turn_stores_raw_only_where_it_differs_from_text():
    from edufair_metrics.records import Transcript, Turn

    turns = [Turn("question", "Q?", None), Turn("student", "I think so.", "I think so."),
             Turn("tutor", "Good.", "<think>they are right</think>Good.")]
    t = Transcript("q", "physics", "explicit", "gender", "female", "T", "S", turns, "max_turns")
    stored = t.to_dict()["turns"]
    assert stored == [{"role": "question", "text": "Q?", "raw": None}, {"role": "student", "text": "I think so."},
                      {"role": "tutor", "text": "Good.", "raw": "<think>they are right</think>Good."}]
    assert Transcript.from_dict(json.loads(json.dumps(t.to_dict()))).turns == turns
    # records written before store raw on every turn; they read the same
    for path in SHAPES:
        obj = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        rec = next(iter_records(path)).record
        assert [(x.text, x.raw) for x in rec.transcript.turns] == \
            [(x["text"], x.get("raw")) for x in record_in_line(obj)["transcript"]["turns"]]
