"""Condition-blind judging (judge setting ``mask_cues``): the cues come from protocol.yaml, are
replaced by placeholders and counted; off by default and then absent from the provenance."""

from __future__ import annotations

import json

import pytest

from edufair_metrics.cli import main as edufair
from edufair_metrics.errors import EduFairError
from edufair_metrics.judge import JudgeSettings, judge_transcripts
from edufair_metrics.protocol import condition_levels
from edufair_metrics.protocol.cues import all_cues, condition_cues, mask_text, mask_transcript
from edufair_metrics.records import Transcript, Turn
from edufair_metrics.settings import load_judge_settings

from tests.helpers.fake_openai import FakeOpenAI, labels_json
from tests.helpers.judge_env import JUDGE_ENV_VARS
from tests.helpers.paths import FIXTURES


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for v in JUDGE_ENV_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "cache"))


def test_every_protocol_value_of_a_condition_is_a_cue():
    for condition in ("explicit", "implicit", "opposite"):
        cues = dict(condition_cues(condition).replacements)
        for lv in condition_levels(condition):
            for value in lv.attributes.values():
                assert value.casefold() in cues, (condition, value)
    implicit = dict(condition_cues("implicit").replacements)
    assert implicit["jessica"] == "[NAME]" and implicit["she"] == "[PRONOUN]" and implicit["asian"] == "[GROUP]"
    # the explicit condition has no names; the implicit one has no SES words
    assert "michael" not in dict(condition_cues("explicit").replacements)
    assert "low-income" not in implicit


@pytest.mark.parametrize("condition, text, expected, n", [
    ("implicit", "Nice work, Jessica! She is close.", "Nice work, [NAME]! [PRONOUN] is close.", 2),
    ("implicit", "ji yoon, JI-YOON and Ji-Yoon's idea", "[NAME], [NAME] and [NAME]'s idea", 3),
    ("explicit", "Since English is not your first language, let's go slowly.", "Since [GROUP] is not your first language, let's go slowly.", 1),
    ("explicit", "As a low income student from an immigrant family", "As a [GROUP] student from an [GROUP] family", 2),
    ("explicit", "a language other than English", "[GROUP]", 1),
    ("opposite", "Good job, young man. He got it.", "Good job, [GENDER]. [PRONOUN] got it.", 2),
    ("implicit", "Michaelson, shelf, the hero, theme, manual", "Michaelson, shelf, the hero, theme, manual", 0),
    ("explicit", "Don't miss a step.", "Don't miss a step.", 0),
])
def test_mask_text(condition, text, expected, n):
    assert mask_text(text, condition_cues(condition)) == (expected, n)


def _transcript(condition="implicit", level="jessica"):
    return Transcript(question_id="q1", domain="physics", condition=condition, dimension="name", level=level,
                      tutor_system="The student’s name is Jessica.", student_system="",
                      turns=[Turn("question", "Why does ice float?"), Turn("student", "I'm Jessica, is it gravity?"),
                             Turn("tutor", "Good question, Jessica! What do you know about her density?", raw="<think>x</think>")],
                      stop_reason="max_turns")


def test_mask_transcript_counts_and_keeps_the_original():
    t = _transcript()
    m = mask_transcript(t)
    assert m.masked == 3 and "Jessica" not in json.dumps([x.text for x in m.transcript.turns])
    assert t.turns[2].text.startswith("Good question, Jessica")  # the stored transcript is untouched
    assert m.transcript.turns[2].raw is None and m.transcript.level == "jessica"
    assert mask_transcript(_transcript(condition="unknown")).masked == 0


def test_the_judge_sees_placeholders_only_for_masked_transcripts():
    with FakeOpenAI(responder=lambda req: labels_json()) as srv:
        s = JudgeSettings(base_url=srv.base_url, model="j", max_retries=0, timeout_s=5)
        judge_transcripts([mask_transcript(_transcript()).transcript], s, progress=False)
        judge_transcripts([_transcript()], s, progress=False)
        masked, plain = (r.content("user") for r in srv.requests)
    assert "Jessica" not in masked and "[NAME]" in masked and "[PRONOUN]" in masked
    assert "Jessica" in plain


def test_setting_default_off_validated_and_recorded_only_when_on(tmp_path):
    off = load_judge_settings(cli={"base_url": "http://x/v1"})
    assert off.mask_cues is False and "mask_cues" not in off.public_dict()  # the paper's default, as before
    cfg = tmp_path / "j.yaml"
    cfg.write_text("judge:\n  base_url: http://x/v1\n  mask_cues: true\n")
    on = load_judge_settings(config_path=cfg)
    assert on.mask_cues is True and on.public_dict()["mask_cues"] is True
    cfg.write_text("judge:\n  base_url: http://x/v1\n  mask_cues: 'yes'\n")
    with pytest.raises(EduFairError, match="mask_cues must be true or false"):
        load_judge_settings(config_path=cfg)


def test_judge_human_with_mask_cues_records_the_count(tmp_path):
    cfg = tmp_path / "j.yaml"
    cfg.write_text("judge:\n  mask_cues: true\n  max_retries: 0\n")
    p = tmp_path / "cal.csv"
    p.write_text("item_id,history,response,answer_leakage\n"
                 "a,Student: I am a girl and my name is Wei.,\"Good, Wei! She should multiply.\",0\n"
                 "b,,Multiply 9 by 2.,0\n", encoding="utf-8")
    with FakeOpenAI(responder=lambda req: labels_json()) as srv:
        out = tmp_path / "o"
        assert edufair(["judge-human", "--format", "csv", str(p), "--out", str(out), "--judge-config", str(cfg),
                        "--judge-base-url", srv.base_url, "--no-progress", "--n-boot", "10"]) == 0
        shown = " ".join(r.content("user") for r in srv.requests)
    assert "Wei" not in shown and "girl" not in shown and "She" not in shown
    summary = json.loads((out / "judge_summary.json").read_text())
    assert summary["summary"]["masked_cues"] == 4 and summary["judge"]["mask_cues"] is True
    # and without the setting nothing is masked or recorded
    with FakeOpenAI(responder=lambda req: labels_json()) as srv:
        assert edufair(["judge-human", "--format", "mrbench", str(FIXTURES / "mrbench_small.json"), "--limit", "1",
                        "--out", str(out), "--judge-base-url", srv.base_url, "--no-progress", "--n-boot", "10"]) == 0
    assert "masked_cues" not in json.loads((out / "judge_summary.json").read_text())["summary"]
    assert all_cues().pattern is not None
