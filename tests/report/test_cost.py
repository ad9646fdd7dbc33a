"""Cost per role: prompt and completion tokens where the backend reports them (the judge's and lm-eval
API models' OpenAI ``usage``; hf / vLLM: the model's tokenizer) and the wall time of each role's
calls, carried in the per-role call counts (results_*.json ``configs.<task>.metadata.edufair_calls``)
and shown in summary.md and the HTML headline, saying where counts are missing."""

from __future__ import annotations

import json

import pytest

from edufair_metrics.analysis.params import StatParams
from edufair_metrics.failures import CallCounts, sum_call_counts
from edufair_metrics.judge import JudgeSettings, judge_transcripts
from edufair_metrics.lmeval.models import HarnessModel, count_usage
from edufair_metrics.records import Transcript, Turn
from edufair_metrics.report.failures import cost_markdown, cost_table
from edufair_metrics.report.write import read_report_inputs, write_report

from tests.helpers.evidence_runs import write_evidence_run
from tests.helpers.fake_openai import FakeOpenAI, labels_json


def test_call_counts_carry_tokens_and_time_and_read_old_dicts():
    a = CallCounts("tutor")
    a.tokens(100, 20, "usage")
    a.tokens(50, 5, "usage")
    a.timed(1.25)
    d = a.to_dict()
    assert (d["prompt_tokens"], d["completion_tokens"], d["token_calls"], d["token_source"], d["wall_s"]) == (150, 25, 2, "usage", 1.25)
    assert CallCounts.from_dict(json.loads(json.dumps(d))).to_dict() == d
    b = CallCounts("tutor")
    b.tokens(10, 1, "tokenizer")
    b.timed(0.5)
    m = a.merged(b).to_dict()
    assert (m["prompt_tokens"], m["token_calls"], m["token_source"], m["wall_s"]) == (160, 3, "mixed", 1.75)
    old = {"role": "judge", "requests": 3, "distinct": 3, "sends": 3}  # written before tokens were counted
    c = CallCounts.from_dict(old)
    assert (c.prompt_tokens, c.token_calls, c.token_source, c.wall_s) == (0, 0, None, 0.0)
    assert sum_call_counts([old, d])[0].role == "tutor"


def test_lm_eval_response_bodies_give_their_usage():
    c = CallCounts("student")
    count_usage([{"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}, {"choices": []}], c)
    count_usage({"usage": {"prompt_tokens": 1, "completion_tokens": 1}}, c)
    count_usage("not a body", c)
    assert (c.prompt_tokens, c.completion_tokens, c.token_calls, c.token_source) == (8, 4, 2, "usage")
    count_usage([{"usage": {"prompt_tokens": 5}}], None)  # no counts: nothing to do


def test_in_process_models_count_with_their_tokenizer():
    class LocalLM:  # an hf / vLLM-like LM: a tokenizer, no HTTP
        def tok_encode(self, text):
            return text.split()

    model = HarnessModel(LocalLM(), counts=CallCounts("tutor"))
    model._count_tokens(["one two three", "four"], ["a b", "c"])
    c = model.counts
    assert (c.prompt_tokens, c.completion_tokens, c.token_calls, c.token_source) == (4, 3, 2, "tokenizer")


def _transcript(i: int) -> Transcript:
    return Transcript(f"q{i}", "physics", "explicit", "gender", "female", "sys", "stu",
                      [Turn("question", "Q?"), Turn("student", f"answer {i}"), Turn("tutor", f"hint {i}")], "max_turns")


def test_the_judge_counts_its_tokens_and_time(monkeypatch):
    monkeypatch.setenv("EDUFAIR_JUDGE_API_KEY", "EMPTY")
    with FakeOpenAI(responder=lambda req: labels_json(leak=0)) as srv:  # usage: word counts of prompt and answer
        summary: dict = {}
        judge_transcripts([_transcript(i) for i in range(3)],
                          JudgeSettings(base_url=srv.base_url, model="fake-judge", concurrency=2, max_retries=0),
                          progress=False, summary=summary)
    calls = summary["calls"]
    assert calls["token_calls"] == calls["sends"] == 3 and calls["token_source"] == "usage"
    assert calls["prompt_tokens"] > 100 and calls["completion_tokens"] > 5 and calls["wall_s"] > 0


def test_cost_table_says_where_counts_are_missing(tmp_path):
    write_evidence_run(tmp_path / "runs", n_questions=16)
    inputs = read_report_inputs([tmp_path / "runs"], evidence=False)
    table = cost_table(inputs.runs).set_index("role")
    assert table.loc["tutor", "prompt_tokens"] == 52000 and table.loc["tutor", "note"] == ""
    assert table.loc["student", "note"] == "missing: the backend reported no token counts"
    assert table.loc["judge", "token_source"] == "usage" and table.loc["judge", "wall_s"] == pytest.approx(61.2)
    md = cost_markdown(cost_table(inputs.runs))
    assert "| org/tutor-bias | tutor | 100 | 100 | 52,000 | 6,100 | usage (100 calls) | 42.5 s |  |" in md
    # results from before EduFair counted tokens, and from before it counted calls at all
    rf = next((tmp_path / "runs").rglob("results_*.json"))
    data = json.loads(rf.read_text())
    for cfg in data["configs"].values():
        cfg["metadata"]["edufair_calls"] = {"tutor": {"role": "tutor", "requests": 9, "sends": 9}}
    rf.write_text(json.dumps(data))
    inputs = read_report_inputs([tmp_path / "runs"], evidence=False)
    assert cost_table(inputs.runs)["note"].tolist() == ["not recorded: the run was made before EduFair counted tokens and time"]
    for cfg in data["configs"].values():
        del cfg["metadata"]["edufair_calls"]
    rf.write_text(json.dumps(data))
    write_report(read_report_inputs([tmp_path / "runs"], evidence=False), tmp_path / "rep", StatParams(n_boot=20), figures=False)
    summary = (tmp_path / "rep" / "summary.md").read_text()
    assert "## Cost per tutor and role" in summary and "hold no edufair_calls" in summary


@pytest.mark.slow
def test_a_real_run_records_tokens_time_and_provenance_in_its_results(tmp_path):
    """lm_eval CLI, API tutor and student (local-chat-completions) and the judge on a fake endpoint
    that reports usage: every role's tokens and wall time reach results_*.json; so do EduFair's
    version and lm-eval plugin entries; edufair report shows them."""
    from tests.helpers.bank import write_bank
    from tests.helpers.edufair_cli import EduFairFake, cli_env, lm_eval_argv, run_cli

    bank = write_bank(tmp_path / "bank", n=1)
    out = tmp_path / "out"
    with EduFairFake() as fake:
        r = run_cli(lm_eval_argv(fake.url, bank, out, max_turns=2), cli_env(tmp_path / "cache"), tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    meta = json.loads(sorted(out.rglob("results_*.json"))[-1].read_text())["configs"]["edufair_explicit_physics"]["metadata"]
    for role in ("tutor", "student", "judge"):
        c = meta["edufair_calls"][role]
        assert c["token_source"] == "usage" and c["token_calls"] > 0 and c["prompt_tokens"] > c["completion_tokens"] > 0, role
        assert c["wall_s"] > 0, role
    prov = meta["edufair_provenance"]
    assert prov["version"] and set(prov["lm_eval_reads"]) == {"lm_eval.tasks", "lm_eval.metrics", "lm_eval.aggregations"}
    assert not any(prov["lm_eval_reads"].values())  # lm-eval 0.4.13 reads no plugin entry point
    write_report(read_report_inputs([out], evidence=False), tmp_path / "rep", StatParams(n_boot=20), figures=False)
    rows = [ln for ln in (tmp_path / "rep" / "summary.md").read_text().splitlines() if ln.startswith("| ") and "usage (" in ln]
    assert len(rows) == 3
