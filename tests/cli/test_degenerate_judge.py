"""A judge whose labels cannot show any difference (the same labels on every turn) or that
contradicts the deterministic detector on nearly every turn is flagged, in the lm-eval log and in
summary.md; an ordinary judge is not."""

from __future__ import annotations

import pytest

from edufair_metrics.analysis.judge_validity import degenerate_judge

from tests.helpers.bank import write_bank
from tests.helpers.edufair_cli import PY, EduFairFake, cli_env, lm_eval_argv, role_of, run_cli
from tests.helpers.fake_openai import Reply, labels_json


def test_the_rule():
    const = {"answer_leakage": {0: 12}, "actionability": {0: 6, 1: 6}}
    assert degenerate_judge(const, [], []) == ["answer_leakage: the judge gave 0 on all 12 labelled turns"]
    assert degenerate_judge({"answer_leakage": {0: 9}}, [], []) == []  # too few turns to say
    many = degenerate_judge({}, [1] * 10, [0] * 9 + [1])
    assert many == ["answer_leakage: the judge disagrees with the deterministic detector on 90% of 10 turns"]
    assert degenerate_judge({}, [1] * 10, [0] * 8 + [1, 1]) == []


@pytest.mark.slow
def test_a_constant_judge_is_flagged_in_the_log_and_the_summary(tmp_path):
    bank = write_bank(tmp_path / "bank", n=2)

    def constant_judge(req, n):
        return Reply(labels_json(mistake=True, tone=1, recog=1, leak=0, scaffold=1, action=1)) if role_of(req) == "judge" else None

    with EduFairFake(constant_judge) as fake:
        out = tmp_path / "out"
        env = cli_env(tmp_path / "cache")
        r = run_cli(lm_eval_argv(fake.url, bank, out, limit=18, max_turns=2), env, tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "degenerate judge: step_scaffolded: the judge gave 1 on all" in r.stderr
        rep = tmp_path / "rep"
        r = run_cli([PY, "-m", "edufair_metrics.cli", "report", str(out), "--out", str(rep), "--n-boot", "20",
                     "--no-figures"], env, tmp_path)
        assert r.returncode == 0, r.stderr[-2000:]
    summary = (rep / "summary.md").read_text()
    assert "**Degenerate judge:" in summary and "actionability: the judge gave 1 on all" in summary


@pytest.mark.slow
def test_an_ordinary_judge_is_not_flagged(tmp_path):
    bank = write_bank(tmp_path / "bank", n=2)
    with EduFairFake() as fake:  # labels vary with the request
        r = run_cli(lm_eval_argv(fake.url, bank, tmp_path / "out", limit=18, max_turns=2), cli_env(tmp_path / "cache"),
                    tmp_path)
    assert r.returncode == 0 and "degenerate judge" not in r.stderr, r.stderr[-2000:]
