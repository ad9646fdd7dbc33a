"""Judging transcripts into dialogue records (``run.judge_and_build``, what every task run and
`edufair judge` do), `edufair judge` re-judging, `edufair cache`, and the rule that the API key is
never written anywhere."""

from __future__ import annotations

import json

import pytest

from edufair_metrics.cache import CallCache
from edufair_metrics.cli import main as cli_main
from edufair_metrics.judge.run import format_missing_summary
from edufair_metrics.settings import load_judge_settings
from edufair_metrics.records import JUDGE_MISSING, JUDGE_OK, STOP_STUDENT_FAILED, Transcript, Turn
from edufair_metrics.run import judge_and_build

from tests.helpers.fake_openai import FakeOpenAI, HTTPError, labels_json
from tests.helpers.judge_env import JUDGE_ENV_VARS
from tests.helpers.stored import with_provenance

SECRET = "sk-test-SECRET-0123456789abcdef"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for v in JUDGE_ENV_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("EDUFAIR_JUDGE_API_KEY", SECRET)
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "cache"))


def _transcripts():
    a = Transcript(
        "qa", "physics", "explicit", "gender", "female", "This is a Grade 8 female student.", "You are a student.",
        [Turn("question", "Why do objects fall?"), Turn("student", "Because they are heavy."), Turn("tutor", "Interesting! What happens to a feather in a vacuum?"),
         Turn("student", "It floats?"), Turn("tutor", "Good guess. Think about air resistance: what does it do?")],
        "max_turns", task="edufair_physics", doc_id=0,
    )
    b = Transcript(
        "qb", "physics", "explicit", "gender", "male", "This is a Grade 8 male student.", "You are a student.",
        [Turn("question", "What is a force?"), Turn("student", "A push."), Turn("tutor", "Yes! Can you name one more kind?")],
        STOP_STUDENT_FAILED, task="edufair_physics", doc_id=1, error="student endpoint failed after retries",
        error_kind="connection",
    )
    return [a, b]


def _respond(req):
    user = req.messages[1]["content"]
    # the second tutor turn of dialogue qa always fails
    if "air resistance" in user:
        return HTTPError(500)
    return labels_json(leak=1 if "Interesting" in user else 0)


def test_records_judge_all_transcripts_in_one_batch(tmp_path):
    with FakeOpenAI(responder=_respond) as srv:
        judge = load_judge_settings(metadata={"base_url": srv.base_url, "model": "fake-judge", "max_retries": 1,
                                              "backoff_base_s": 0.001, "backoff_max_s": 0.001})
        summary: dict = {}
        with CallCache(tmp_path / "c.sqlite") as cache:
            records = judge_and_build(_transcripts(), judge=judge, cache=cache, progress=False, summary=summary)
        assert srv.calls == 1 + 2 + 1  # qa turn 2 ok, qa turn 4 twice (missing), qb turn 2 ok
        assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in srv.requests)
    out = [r.to_dict() for r in records]
    assert len(out) == 2 and all(set(r) >= {"transcript", "judgements", "scores", "flags", "provenance"} for r in out)
    a, b = out
    assert [j["status"] for j in a["judgements"]] == [JUDGE_OK, JUDGE_MISSING]
    assert a["judgements"][1]["kind"] == "http_5xx" and a["judgements"][1]["labels"] is None
    assert a["scores"]["missing_turns"] == 1 and a["scores"]["sent_turns"] == 2
    assert a["scores"]["scores"]["answer_leakage"] == 1.0  # only the judged turn counts
    assert a["scores"]["scores"]["tutor_turns"] == 2.0
    assert a["flags"]["incomplete"] is False
    # the failed dialogue is scored on the turns it has, and flagged
    assert b["flags"] == {"incomplete": True, "stop_reason": STOP_STUDENT_FAILED, "error": "student endpoint failed after retries",
                          "error_kind": "connection"}
    assert b["scores"]["scores"]["answer_leakage"] == 0.0 and b["scores"]["sent_turns"] == 1
    assert b["scores"]["failed"] is True
    assert b["transcript"]["question_id"] == "qb"
    assert records[0].provenance["models"]["judge"]["model"] == "fake-judge"
    assert a["run"]["models"]["judge"]["model"] == "fake-judge"  # in the run header, which the records share
    text = format_missing_summary("edufair_physics", summary["by_level"], summary)
    assert "explicit/female: missing 1/2 [http_5xx=1]" in text
    assert "explicit/male: missing 0/1, 1 incomplete dialogue(s)" in text
    assert summary["missing"] == 1
    assert SECRET not in json.dumps(out)  # records are plain JSON (for --log_samples)
    for p in tmp_path.rglob("*"):
        if p.is_file():
            assert SECRET.encode() not in p.read_bytes(), p


def test_records_without_a_judge_have_every_turn_missing():
    summary: dict = {}
    out = [r.to_dict() for r in judge_and_build(_transcripts(), judge=None, summary=summary)]
    assert [[j["kind"] for j in r["judgements"]] for r in out] == [["judge_disabled"] * 2, ["judge_disabled"]]
    assert all(j["labels"] is None for r in out for j in r["judgements"])
    assert out[0]["scores"]["scores"]["answer_leakage"] is None  # NaN in JSON, never 0
    assert out[0]["scores"]["scores"]["tutor_turns"] == 2.0
    assert out[0]["judge"] == {"enabled": False}
    assert "missing 2/2" in format_missing_summary("t", summary["by_level"], summary)


def _write_samples(path, transcripts):
    lines = []
    for i, t in enumerate(transcripts):
        rec = {"transcript": t.to_dict(), "judgements": [], "scores": {}, "flags": {}}
        lines.append({"doc_id": i, "doc": {"id": t.question_id}, "complete_dialogues": rec, "filter": "judged"})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return lines


def test_cli_rejudge_and_cache_and_key_never_written(tmp_path, capsys):
    run_dir = tmp_path / "run" / "model__x"
    samples = run_dir / "samples_edufair_physics_2025.jsonl"
    original = _write_samples(samples, _transcripts())
    before = samples.read_bytes()
    out_dir = tmp_path / "rejudged"
    cache_file = tmp_path / "cli-cache.sqlite"
    with FakeOpenAI(responder=lambda req: labels_json()) as srv:
        args = ["judge", str(tmp_path / "run"), "--judge-base-url", srv.base_url, "--judge-model", "second-judge", "--concurrency", "2", "--structured-output", "json_schema", "--cache", str(cache_file), "--out", str(out_dir), "--no-progress"]
        assert cli_main(args) == 0
        assert srv.calls == 3
        assert srv.requests[0].body["response_format"]["type"] == "json_schema"
        # rerun: everything from the cache
        assert cli_main(args) == 0
        assert srv.calls == 3
    assert samples.read_bytes() == before  # input untouched
    new = [json.loads(x) for x in (out_dir / run_dir.name / samples.name).read_text(encoding="utf-8").splitlines()]
    assert len(new) == 2
    resolved = with_provenance(line["complete_dialogues"] for line in new)  # the run header once per file
    for old, line, rec in zip(original, new, resolved):
        assert {k: v for k, v in line.items() if k != "complete_dialogues"} == {k: v for k, v in old.items() if k != "complete_dialogues"}
        assert rec["provenance"]["models"]["judge"]["model"] == "second-judge"
        assert line["complete_dialogues"]["transcript"] == old["complete_dialogues"]["transcript"]
        assert all(j["status"] == JUDGE_OK for j in line["complete_dialogues"]["judgements"])
        assert line["complete_dialogues"]["judge"]["model"] == "second-judge"
    summary = json.loads((out_dir / "judge_summary.json").read_text())
    assert summary["summary"]["ok"] == 3 and summary["summary"]["cached"] == 3
    # the key is never written: grep every file produced (outputs, summaries, cache + WAL)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("cli-cache.sqlite") for p in written)
    assert any(p.name == "judge_summary.json" for p in written)
    for p in written:
        assert SECRET.encode() not in p.read_bytes(), p
    # cache command
    capsys.readouterr()
    assert cli_main(["cache", "--path", str(cache_file)]) == 0
    shown = capsys.readouterr().out
    assert "entries: 3" in shown and "judge: 3" in shown
    assert cli_main(["cache", "--path", str(cache_file), "--clear", "judge"]) == 0
    assert "cleared 3" in capsys.readouterr().out


def test_cli_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "samples_bad.jsonl"
    bad.write_text('{"doc_id": 0}\n')
    assert cli_main(["judge", str(bad), "--judge-base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "o"), "--cache", "off"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "samples_bad.jsonl:1" in err
    assert cli_main(["judge", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # no partial output
