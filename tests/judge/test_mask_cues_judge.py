"""Condition-blind judging in a task run (``run.judge_and_build``) and `edufair judge`: with
``mask_cues`` the judge receives placeholders instead of the condition's cues, the stored record
keeps the original text and says how many cues were masked; without it nothing changes."""

from __future__ import annotations

import json

import pytest

from edufair_metrics.cli import main as cli_main
from edufair_metrics.settings import load_judge_settings
from edufair_metrics.records import Transcript, Turn
from edufair_metrics.run import judge_and_build

from tests.helpers.fake_openai import FakeOpenAI, labels_json
from tests.helpers.judge_env import JUDGE_ENV_VARS


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for v in JUDGE_ENV_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "cache"))


def _transcripts():
    implicit = Transcript(
        "q1", "physics", "implicit", "name", "jessica", "Jessica is a Grade 8 student.", "You are a student.",
        [Turn("question", "Why do objects fall?"), Turn("student", "I'm Jessica and I think because they are heavy."),
         Turn("tutor", "Nice try, Jessica! What does she know about gravity?")],
        "max_turns", task="edufair_implicit_physics", doc_id=0,
    )
    explicit = Transcript(
        "q2", "physics", "explicit", "gender", "male", "This is a Grade 8 male student.", "You are a student.",
        [Turn("question", "What is a force?"), Turn("student", "A push, I guess."),
         Turn("tutor", "Good, young man. Can you name another kind of force?")],
        "max_turns", task="edufair_explicit_physics", doc_id=1,
    )
    return [implicit, explicit]


def _shown(srv) -> str:
    return " ".join(r.content("user") for r in srv.requests)


def _judge(srv, **extra):
    return load_judge_settings(metadata={"base_url": srv.base_url, "model": "j", "max_retries": 0, **extra})


def test_records_with_mask_cues_judge_masked_text_and_record_the_count(tmp_path):
    summary: dict = {}
    with FakeOpenAI(responder=lambda req: labels_json()) as srv:
        out = [r.to_dict() for r in judge_and_build(_transcripts(), judge=_judge(srv, mask_cues=True), progress=False,
                                                    summary=summary)]
        shown = _shown(srv)
    for cue in ("Jessica", "she", "man"):
        assert f" {cue}" not in shown and f"{cue}!" not in shown, cue
    assert "[NAME]" in shown and "[GENDER]" in shown
    # the records keep what the tutor said; the count is per dialogue and in the run summary
    assert out[0]["transcript"]["turns"][2]["text"].startswith("Nice try, Jessica!")
    counts = [r["flags"]["masked_cues"] for r in out]
    assert counts[0] >= 3 and counts[1] >= 1  # Jessica ×2 (student + tutor turn) + she; man
    assert summary["masked_cues"] == sum(counts)
    assert all(r["judge"]["mask_cues"] is True for r in out)


def test_records_without_mask_cues_are_unchanged(tmp_path):
    summary: dict = {}
    with FakeOpenAI(responder=lambda req: labels_json()) as srv:
        out = [r.to_dict() for r in judge_and_build(_transcripts(), judge=_judge(srv), progress=False, summary=summary)]
        shown = _shown(srv)
    assert "Jessica" in shown and "young man" in shown
    assert all("masked_cues" not in r["flags"] and "mask_cues" not in r["judge"] for r in out)
    assert "masked_cues" not in summary


def test_edufair_judge_mask_cues_flag(tmp_path):
    samples = tmp_path / "run" / "m" / "samples_edufair_implicit_physics_2025.jsonl"
    samples.parent.mkdir(parents=True)
    samples.write_text("".join(json.dumps({"doc_id": i, "doc": {"id": t.question_id}, "filter": "judged",
                                           "complete_dialogues": {"transcript": t.to_dict(), "judgements": [], "scores": {},
                                                              "flags": {}}}) + "\n"
                               for i, t in enumerate(_transcripts())), encoding="utf-8")
    out_dir = tmp_path / "rejudged"
    with FakeOpenAI(responder=lambda req: labels_json()) as srv:
        assert cli_main(["judge", str(tmp_path / "run"), "--judge-base-url", srv.base_url, "--mask-cues",
                         "--cache", "off", "--out", str(out_dir), "--no-progress"]) == 0
        shown = _shown(srv)
    assert "Jessica" not in shown and "[NAME]" in shown
    lines = [json.loads(x) for x in next(out_dir.glob("*/samples_*.jsonl")).read_text().splitlines()]
    assert all(x["complete_dialogues"]["judge"]["mask_cues"] is True for x in lines)
    assert sum(x["complete_dialogues"]["flags"]["masked_cues"] for x in lines) >= 4
    assert "Jessica" in lines[0]["complete_dialogues"]["transcript"]["turns"][2]["text"]
