"""The audit planner (``analysis.plan``, ``edufair plan``): questions x replicates that decide
with the requested probability, their cost, the bank-too-small answer and refused pilots."""

from __future__ import annotations

import dataclasses
import math

import pytest

from edufair_metrics.analysis import plan as plan_mod
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.analysis.plan import (
    PlanGoal, assumed_inputs, check_pilot, decide_probability, effect_at_k, plan_family, plan_from_pilot,
)
from edufair_metrics.errors import EduFairError
from edufair_metrics.runlog import load_run

from edufair_metrics.cli import main as cli_main
from tests.helpers.synthetic_runs import write_run


def test_certifying_a_fair_row_needs_about_1200_questions_at_margin_0_10():
    """The issue's measured figure: ~1,200 paired questions per contrast for 80% row certification."""
    inputs = assumed_inputs()
    p = plan_family(inputs, PlanGoal("certify"))
    n = p.chosen.questions
    assert 1000 < n < 1300 and p.chosen.replicates == 1
    assert decide_probability(n, inputs, p.goal) >= 0.8 > decide_probability(n - 1, inputs, p.goal)


def test_the_whole_headline_needs_more_than_one_row_and_calls_the_verdicts_formulas(monkeypatch):
    calls = []
    real = plan_mod.n_for_certify

    def spy(*a, **kw):
        calls.append((a, kw))
        return real(*a, **kw)
    monkeypatch.setattr(plan_mod, "n_for_certify", spy)
    one = plan_family(assumed_inputs(rows=1), PlanGoal("certify")).chosen.questions
    many = plan_family(assumed_inputs(rows=40), PlanGoal("certify")).chosen.questions
    assert many > 2 * one and calls


def test_replicates_pay_off_only_where_dialogue_noise_dominates_and_only_for_flags():
    noisy = assumed_inputs(within_share=0.8)
    quiet = assumed_inputs(within_share=0.0)
    goal = PlanGoal("flag", 0.2)
    assert plan_family(noisy, goal).chosen.replicates > 1
    assert plan_family(quiet, goal).chosen.replicates == 1
    assert effect_at_k(0.2, 0.8, 4) > effect_at_k(0.2, 0.8, 1) == pytest.approx(0.2)
    # the null of r does not depend on k: certification never asks for replicates
    assert plan_family(noisy, PlanGoal("certify")).chosen.replicates == 1


def test_bank_too_small_is_said_with_what_the_goal_needs():
    p = plan_family(assumed_inputs(bank_questions=500), PlanGoal("certify"))
    assert p.chosen is None and "bank too small" in p.reason and "500" in p.reason
    assert all(not o.feasible for o in p.options)


def test_cost_from_measured_tokens_throughput_and_price():
    inputs = assumed_inputs(dialogues_per_question=2)
    inputs.per_dialogue = {"tutor": {"calls": 5, "prompt_tokens": 1000, "completion_tokens": 500},
                           "student": {"calls": 5, "prompt_tokens": 800, "completion_tokens": 200},
                           "judge": {"calls": 5, "prompt_tokens": 3000, "completion_tokens": 100}}
    p = plan_family(inputs, PlanGoal("flag", 0.3), throughput=1000.0, gpu_price=2.0, judge_price=1.0)
    c, n = p.cost, p.chosen.questions
    assert c["dialogues"] == 2 * n and c["tutor_calls"] == 10 * n and c["judge_tokens"] == 2 * n * 3100
    assert c["gpu_hours"] == pytest.approx(2 * n * 2500 / 1000 / 3600)
    assert c["dollars"] == pytest.approx(c["gpu_hours"] * 2 + c["judge_tokens"] / 1e6)


@pytest.mark.parametrize("goal", [PlanGoal("flag"), PlanGoal("flag", 1.5), PlanGoal("certify", 0.2),
                                  PlanGoal("nothing"), PlanGoal("flag", 0.2, power=0.3),
                                  PlanGoal("flag", 0.2, max_replicates=0)])
def test_bad_goals_are_errors(goal):
    with pytest.raises(EduFairError):
        goal.validate()


def test_plan_from_a_pilot_and_pilots_of_another_judge_or_protocol_are_refused(tmp_path):
    folder = write_run(tmp_path / "pilot", "tutor-a", n_questions=40, provenance={}, seed=1)
    run = load_run(folder)
    plans = plan_from_pilot(run, PlanGoal("flag", 0.3), StatParams(n_boot=100))
    assert plans and all(p.inputs.rows > 1 and p.inputs.dialogues_per_question > 0 for p in plans)
    assert all(p.chosen is not None and p.chosen.probability >= 0.8 for p in plans)
    check_pilot(run, judge_model="judge-llm")
    with pytest.raises(EduFairError, match="judged by judge-llm") as ei:
        check_pilot(run, judge_model="another-judge")
    assert "\n" not in str(ei.value)
    other = write_run(tmp_path / "old", "tutor-b", n_questions=20, provenance={"protocol_version": "0.0-old"})
    with pytest.raises(EduFairError, match="protocol version"):
        check_pilot(load_run(other), judge_model=None)


def test_cli_plan_prints_the_plan_and_exits_1_when_the_bank_is_too_small(capsys):
    assert cli_main(["plan", "--goal", "certify", "--rows", "1"]) == 0
    out = capsys.readouterr().out
    assert "<- plan" in out and "questions per task" in out
    assert cli_main(["plan", "--goal", "certify", "--bank-questions", "300"]) == 1
    assert "bank too small" in capsys.readouterr().out
    assert cli_main(["plan", "--goal", "flag", "--effect", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "edufair plan: error:" in err


def test_certify_plans_count_the_bootstrap_noise_of_the_verdicts():
    """The verdicts' se is max(bootstrap, model): with B resamples the bootstrap se carries
    Monte-Carlo noise ε = 1/√(2B), so the max is larger on average (at b = m by φ(0)·ε) and a plan
    that ignores it promises more than it delivers (sim_plan)."""
    from scipy.stats import norm

    inputs = assumed_inputs(n_boot=200)
    m = inputs.certify_se_n(0.0)
    assert m == pytest.approx(inputs.se_n * (1 + norm.pdf(0) / math.sqrt(400)), rel=1e-9)
    few = plan_family(assumed_inputs(n_boot=200), PlanGoal("certify")).chosen.questions
    many = plan_family(assumed_inputs(n_boot=1000), PlanGoal("certify")).chosen.questions
    exact = plan_family(assumed_inputs(n_boot=10 ** 9), PlanGoal("certify")).chosen.questions
    assert few > many > exact and exact == pytest.approx(1142, abs=2)  # the noise-free TOST figure
    # a pilot whose bootstrap se is far above the model's: the max is the bootstrap's
    far = dataclasses.replace(inputs, boot_se_n=3 * m)
    assert far.certify_se_n(0.0) == pytest.approx(3 * m, rel=1e-6)
