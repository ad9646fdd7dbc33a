"""Lean samples through the real lm_eval CLI: each dialogue is stored once, in ``complete_dialogues``
(lm-eval's ``resps`` / ``filtered_resps`` hold a short reference to it), and a turn keeps ``raw``
only where it differs from ``text`` (a tutor turn whose reasoning was stripped), and the scores are
stored once (the ten score aggregations' fields hold a reference to them); the report reads it back. ``tests/cli/bench_lean_samples.py`` measures the size at full scale."""

from __future__ import annotations

import json

import pytest

from edufair_metrics.runlog import load_records
from tests.helpers.bank import write_bank
from tests.helpers.edufair_cli import TASK, EduFairFake, answer, call_key, cli_env, lm_eval_argv, run_cli
from tests.helpers.fake_openai import Reply

pytestmark = pytest.mark.slow

AGGREGATE_FIELDS = ("ped_abs_r", "conv_abs_r", "violations", "ped_excess_abs_r", "violations_fdr", "flagged_units",
                    "certified_units", "inconclusive_units", "ped_unbiased_abs_r", "missing_label_rate")


def test_each_turn_is_stored_once_and_raw_only_where_it_differs(tmp_path):
    def behaviour(req, n):  # the tutor thinks aloud first
        return Reply("<think>plan the hint</think>" + answer(req)) if call_key(req)[0] == "tutor" else None

    with EduFairFake(behaviour=behaviour) as fake:
        out = tmp_path / "out"
        r = run_cli(lm_eval_argv(fake.url, write_bank(tmp_path / "bank", n=1), out), cli_env(tmp_path / "cache"), tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
    lines = next(out.rglob("samples_*.jsonl")).read_text().splitlines()
    assert len(lines) == 9
    for line in lines:
        obj = json.loads(line)
        assert all(len(json.dumps(x)) < 200 for x in (obj["resps"], obj["filtered_resps"])), (obj["resps"], obj["filtered_resps"])
        # the scores are stored once, in the record; the ten score aggregations' fields refer to them
        doc_id = obj["complete_dialogues"]["transcript"]["doc_id"]
        for field in AGGREGATE_FIELDS:
            assert obj[field] == f"edufair-scores:{TASK}:{doc_id}", (field, str(obj[field])[:80])
        scores_text = json.dumps(obj["complete_dialogues"]["scores"], ensure_ascii=False)
        assert line.count(scores_text) == 1
        turns = obj["complete_dialogues"]["transcript"]["turns"]
        for t in turns:
            if t["role"] == "student":
                assert "raw" not in t  # identical to text: not stored again
                same = sum(x["text"] == t["text"] for x in turns)  # (the fake student repeats itself)
                assert line.count(json.dumps(t["text"])[1:-1]) == same
            if t["role"] == "tutor":
                assert t["raw"] == "<think>plan the hint</think>" + t["text"]  # differs: kept
    _, records = load_records(out)
    student = [t for rec in records for t in rec.transcript.turns if t.role == "student"]
    assert student and all(t.raw == t.text for t in student)
