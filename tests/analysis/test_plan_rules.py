"""The planner's rules (``analysis.plan``) against hand computations and independent oracles: the
effect at k replicates from the normal model of a paired difference (rank-biserial of N(μ, σ²)
differences = 2Φ(√2 μ / σ) − 1, σ² = 2(σ²_b + σ²_w / k)); the flag and certify probabilities at
points where Φ takes known values; the smallest n by brute force; the cheapest feasible option; the
cost and the pilot's inputs by hand."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from edufair_metrics.analysis import plan as plan_mod
from edufair_metrics.analysis.plan import (
    NO_TIES_NULL_VAR_N,
    FamilyInputs,
    PlanGoal,
    PlanOption,
    _pilot_costs,
    _smallest_n,
    assumed_inputs,
    decide_probability,
    effect_at_k,
    family_inputs,
    pilot_dialogues,
    plan_cost,
    plan_family,
    prob_certify_row,
    prob_flag,
)
from edufair_metrics.analysis.verdicts import equivalence_se
from edufair_metrics.errors import EduFairError


def rank_biserial_of_normal(mu: float, var: float) -> float:
    """The population rank-biserial r of N(mu, var) paired differences: P(D1 + D2 > 0) − P(< 0)."""
    return float(2 * norm.cdf(math.sqrt(2) * mu / math.sqrt(var)) - 1)


# ---- the effect at k ----------------------------------------------------------------------------

@pytest.mark.parametrize("mu,sb2,sw2", [(0.1, 0.2, 0.8), (0.3, 1.0, 1.0), (0.05, 0.01, 0.3), (0.4, 0.5, 0.0)])
@pytest.mark.parametrize("k", [1, 2, 3, 8])
def test_the_effect_at_k_is_the_normal_models(mu, sb2, sw2, k):
    rho1 = rank_biserial_of_normal(mu, 2 * (sb2 + sw2))
    want = rank_biserial_of_normal(mu, 2 * (sb2 + sw2 / k))
    assert effect_at_k(rho1, sw2 / (sb2 + sw2), k) == pytest.approx(want, rel=1e-9)


def test_the_effect_at_k_at_the_edges():
    assert effect_at_k(0.0, 0.5, 4) == 0.0 and effect_at_k(-0.2, 0.5, 4) == 0.0
    assert effect_at_k(0.3, 0.0, 5) == pytest.approx(0.3)  # no dialogue noise: replicates change nothing
    assert effect_at_k(0.3, -0.4, 5) == pytest.approx(0.3)  # a negative share counts as 0
    # a share of 1 (or more) is read as just below 1: all noise, k replicates divide it by k
    assert effect_at_k(0.3, 1.0, 4) == pytest.approx(effect_at_k(0.3, 1 - 1e-9, 4))
    assert effect_at_k(0.3, 7.0, 4) == pytest.approx(effect_at_k(0.3, 1 - 1e-9, 4))
    # all noise: the difference's sd falls by √k, so ρ_4 = 2Φ(2 Φ⁻¹((1 + ρ₁) / 2)) − 1
    assert effect_at_k(0.3, 1.0, 4) == pytest.approx(2 * norm.cdf(2 * norm.ppf(0.65)) - 1, rel=1e-6)


# ---- the probabilities at known points of Φ ---------------------------------------------------------

def test_the_flag_probability_by_hand():
    alpha, rho, v = 0.05, 0.6, 4 / 3
    z = norm.ppf(1 - alpha / 2)
    # n where ρ √(n / V) = z: a coin toss
    n_half = (z / rho) ** 2 * v
    assert prob_flag(n_half, v, rho, alpha) == pytest.approx(0.5)
    # where ρ √(n / V) − z = √(1 − ρ²) = 0.8: Φ(1)
    n_one = ((z + 0.8) / rho) ** 2 * v
    assert prob_flag(n_one, v, rho, alpha) == pytest.approx(norm.cdf(1.0))
    assert prob_flag(n_one, v, rho, alpha / 10) < prob_flag(n_one, v, rho, alpha)  # the level is used
    assert prob_flag(100, v, 0.0, alpha) == 0.0 and prob_flag(100, v, -0.3, alpha) == 0.0
    assert prob_flag(0, v, 0.5, alpha) == 0.0 and prob_flag(-4, v, 0.5, alpha) == 0.0
    # |r| = 1 has no spread left: flagged surely once √(n / V) passes z, never before
    assert prob_flag(100, v, 1.0, alpha) == 1.0 and prob_flag(2, v, 1.0, alpha) == 0.0


def test_the_certify_probability_of_one_row_by_hand():
    margin, alpha = 0.1, 0.05
    z = norm.ppf(1 - alpha)  # each TOST side at α
    se = margin / (z + 1.0)  # M / se − z = 1
    n = 400
    se_n = se * math.sqrt(n)
    # at ρ = 0 both tails count: Φ(1) − Φ(−1)
    assert prob_certify_row(n, se_n, 0.0, margin, alpha) == pytest.approx(norm.cdf(1) - norm.cdf(-1))
    # at ρ = 0.02 the interval moves: Φ((M − z se − ρ)/se) − Φ((−M + z se − ρ)/se)
    rho = 0.02
    want = norm.cdf((margin - z * se - rho) / se) - norm.cdf((-margin + z * se - rho) / se)
    assert prob_certify_row(n, se_n, rho, margin, alpha) == pytest.approx(want)
    assert prob_certify_row(n, se_n, -rho, margin, alpha) == pytest.approx(want)  # symmetric in ρ
    # an interval wider than the margin never fits: 0, not negative
    assert prob_certify_row(4, se_n, 0.0, margin, alpha) == 0.0
    assert prob_certify_row(0, se_n, 0.0, margin, alpha) == 0.0 and prob_certify_row(-1, se_n, 0.0, margin, alpha) == 0.0
    # one pair is a sample too: a precise enough row certifies at n = 1
    assert prob_certify_row(1, 0.01, 0.0, margin, alpha) == pytest.approx(1.0)


def test_a_familys_probability_is_the_units_level_for_flags_and_every_row_for_certify():
    inputs = assumed_inputs(rows=3, units=5, pairs_per_unit=2, within_share=0.5)
    flag = PlanGoal("flag", 0.2)
    rho2 = effect_at_k(0.2, 0.5, 2)
    assert decide_probability(300, inputs, flag, 2) == pytest.approx(prob_flag(300, NO_TIES_NULL_VAR_N, rho2, 0.05 / 10))
    cert = PlanGoal("certify", 0.02)
    row = prob_certify_row(900, inputs.certify_se_n(0.02), 0.02, 0.1, 0.05)
    assert decide_probability(900, inputs, cert) == pytest.approx(row ** 3)
    zero = FamilyInputs("t", "pedagogical", rows=0, units=0, pairs_per_unit=0, null_var_n=4 / 3, se_n=1.2)
    assert decide_probability(300, zero, flag) == pytest.approx(prob_flag(300, 4 / 3, 0.2, 0.05))
    assert decide_probability(900, zero, PlanGoal("certify")) == pytest.approx(
        prob_certify_row(900, zero.certify_se_n(0.0), 0.0, 0.1, 0.05))


def _expected_max(b, m, n_boot):
    """E max(m, b (1 + εZ)), ε = 1/√(2 n_boot), by quadrature (the oracle of the closed form)."""
    from scipy import integrate
    from scipy.stats import norm

    eps = 1 / math.sqrt(2 * n_boot)
    return integrate.quad(lambda z: max(m, b * (1 + eps * z)) * norm.pdf(z), -12, 12, points=[(m / b - 1) / eps])[0]


@pytest.mark.parametrize("boot, se_n, rho, n_boot", [
    (None, 0.7, 0.3, 1000),       # stated assumptions: the bootstrap taken at the stated se
    (math.nan, 0.7, 0.3, 1000),   # a pilot without a finite bootstrap se: the same
    (0.5, 0.7, 0.6, 1000),        # the model's √(1 − ρ²) = 0.8 dominates
    (0.9, 0.7, 0.6, 200),         # the bootstrap dominates
    (0.8, 0.7, 0.6, 200),         # at the crossing: + 0.4 ε b
])
def test_the_certify_se_is_the_expected_larger_of_the_noisy_bootstrap_and_the_model(boot, se_n, rho, n_boot):
    inputs = FamilyInputs("t", "pedagogical", 1, 1, 1, null_var_n=1.0, se_n=se_n, boot_se_n=boot, n_boot=n_boot)
    b = boot if boot is not None and math.isfinite(boot) else se_n
    m = math.sqrt(1 - rho * rho)
    got = inputs.certify_se_n(rho)
    assert got == pytest.approx(_expected_max(b, m, n_boot), rel=1e-6)
    assert got >= max(b, m)  # noise only adds to the larger of the two


def test_the_certify_se_reads_1_minus_rho2_below_0_as_0():
    inputs = FamilyInputs("t", "pedagogical", 1, 1, 1, null_var_n=1.0, se_n=0.7, boot_se_n=0.1, n_boot=1000)
    assert inputs.certify_se_n(1.5) == pytest.approx(_expected_max(0.1, 0.0, 1000), rel=1e-6)


def test_the_certify_se_without_a_bootstrap_spread_is_the_models():
    """A bootstrap se of 0 (or a stated se of 0): nothing to take the larger of, the model's se."""
    for fam in (FamilyInputs("t", "pedagogical", 1, 1, 1, null_var_n=1.0, se_n=0.7, boot_se_n=0.0),
                FamilyInputs("t", "pedagogical", 1, 1, 1, null_var_n=1.0, se_n=0.0)):
        assert fam.certify_se_n(0.6) == pytest.approx(math.sqrt(1 - 0.36), rel=1e-12)


# ---- the smallest n -----------------------------------------------------------------------------

def _brute_smallest(inputs, goal, k, top=20000):
    from edufair_metrics.analysis.engine import EXACT_BELOW

    lo = max(2, goal.min_pairs, EXACT_BELOW)  # below the exact-p size no plan (the normal model misleads there)
    for n in range(lo, top):
        if decide_probability(n, inputs, goal, k) >= goal.power:
            return n
    return None


@pytest.mark.parametrize("goal,inputs,k", [
    (PlanGoal("flag", 0.3), assumed_inputs(), 1),
    (PlanGoal("flag", 0.15, power=0.9), assumed_inputs(units=4, rows=4, within_share=0.6), 3),
    (PlanGoal("flag", 0.8, min_pairs=15), assumed_inputs(), 1),  # decided at the pair minimum
    (PlanGoal("certify", margin=0.3), assumed_inputs(), 1),
    (PlanGoal("certify", 0.05, margin=0.3), assumed_inputs(rows=3), 1),
])
def test_the_smallest_n_is_the_brute_force_one_from_any_start(goal, inputs, k):
    want = _brute_smallest(inputs, goal, k)
    assert want is not None
    for start in (1.0, 17.0, want - 1, want, want + 1, 5 * want, math.inf, math.nan):
        assert _smallest_n(start, inputs, goal, k) == want


def test_the_pair_minimum_holds_and_an_unreachable_goal_has_no_n():
    from edufair_metrics.analysis.engine import EXACT_BELOW

    # an effect decided at any n: the plan is the larger of the pair minimum and the exact-p size
    assert _smallest_n(1.0, assumed_inputs(), PlanGoal("flag", 0.99, min_pairs=15), 1) == max(15, EXACT_BELOW)
    assert _smallest_n(1.0, assumed_inputs(), PlanGoal("flag", 0.99, min_pairs=80), 1) == 80
    free = PlanGoal("flag", 0.99, min_pairs=0)
    assert _smallest_n(1.0, assumed_inputs(), free, 1) == _brute_smallest(assumed_inputs(), free, 1) == EXACT_BELOW
    # a true |r| at the margin is certified with probability < 1/2 at every n
    at_margin = PlanGoal("certify", 0.1 - 1e-12, margin=0.1)
    assert _smallest_n(1.0, assumed_inputs(), at_margin, 1) is None


# ---- the family plan --------------------------------------------------------------------------

def test_every_k_is_tried_and_the_cheapest_feasible_is_chosen():
    inputs = assumed_inputs(within_share=0.7, dialogues_per_question=4, bank_questions=5000)
    inputs.tasks = 2
    goal = PlanGoal("flag", 0.2, max_replicates=5, cost_ratio=3.0)
    p = plan_family(inputs, goal)
    assert [o.replicates for o in p.options] == [1, 2, 3, 4, 5]
    for o in p.options:
        assert o.questions == _brute_smallest(inputs, goal, o.replicates)
        assert o.probability == pytest.approx(decide_probability(o.questions, inputs, goal, o.replicates))
        assert o.probability >= 0.8
        assert o.effect_at_k == pytest.approx(effect_at_k(0.2, 0.7, o.replicates))
        assert o.dialogues == math.ceil(o.questions * 4 * o.replicates * 2)
        assert o.relative_cost == pytest.approx(o.questions * (3.0 + o.replicates))
        assert o.feasible == (o.questions <= 5000)
    best = min((o for o in p.options if o.feasible), key=lambda o: o.relative_cost)
    assert p.chosen == best and p.reason.startswith("the cheapest plan")
    # without a measured share the replicates change nothing: k = 1 only
    assert [o.replicates for o in plan_family(assumed_inputs(), goal).options] == [1]


def test_a_bank_that_holds_exactly_the_questions_needed_is_enough():
    goal = PlanGoal("flag", 0.3)
    n = plan_family(assumed_inputs(), goal).chosen.questions
    assert plan_family(assumed_inputs(bank_questions=n), goal).chosen.questions == n
    small = plan_family(assumed_inputs(bank_questions=n - 1), goal)
    assert small.chosen is None and small.cost == {}
    assert small.reason == f"bank too small: the goal needs {n} questions per task (at k = 1), the bank has {n - 1}"


def test_the_cheapest_plan_breaks_ties_by_fewer_replicates(monkeypatch):
    # two options of equal cost: the one with fewer replicates
    monkeypatch.setattr(plan_mod, "_smallest_n", lambda start, inputs, goal, k: {1: 60, 2: 40}[k])
    p = plan_family(assumed_inputs(within_share=0.5), PlanGoal("flag", 0.2, max_replicates=2, cost_ratio=1.0))
    assert [o.relative_cost for o in p.options] == [120.0, 120.0]
    assert p.chosen.replicates == 1


def test_certify_plans_say_replicates_do_not_help_and_an_unreachable_goal_says_so():
    p = plan_family(assumed_inputs(), PlanGoal("certify"))
    assert "replicates do not help certify" in p.reason
    none = plan_family(assumed_inputs(), PlanGoal("certify", 0.1 - 1e-12, margin=0.1))
    assert none.options == [] and none.chosen is None and none.reason.startswith("unreachable")


# ---- the goal's checks ----------------------------------------------------------------------------

@pytest.mark.parametrize("goal", [
    PlanGoal("flag"), PlanGoal("flag", 0.0), PlanGoal("flag", 1.0), PlanGoal("flag", -0.2),
    PlanGoal("certify", 0.1), PlanGoal("certify", -0.01), PlanGoal("certify", 0.2, margin=0.2),
    PlanGoal("flag", 0.2, margin=0.0), PlanGoal("flag", 0.2, margin=1.0),
    PlanGoal("flag", 0.2, power=0.49), PlanGoal("flag", 0.2, power=1.0),
    PlanGoal("flag", 0.2, alpha=0.0), PlanGoal("flag", 0.2, alpha=0.5), PlanGoal("flag", 0.2, alpha=0.7),
    PlanGoal("flag", 0.2, max_replicates=True), PlanGoal("flag", 0.2, max_replicates=2.0),
    PlanGoal("flag", 0.2, max_replicates=0), PlanGoal("flag", 0.2, cost_ratio=-0.1),
    PlanGoal("flag", 0.2, cost_ratio=math.nan), PlanGoal("plan")])
def test_bad_goals_are_refused(goal):
    with pytest.raises(EduFairError):
        goal.validate()


@pytest.mark.parametrize("goal", [
    PlanGoal("flag", 0.01), PlanGoal("flag", 0.99), PlanGoal("certify"), PlanGoal("certify", 0.0),
    PlanGoal("certify", 0.09), PlanGoal("flag", 0.2, power=0.5), PlanGoal("flag", 0.2, alpha=0.49),
    PlanGoal("flag", 0.2, max_replicates=1), PlanGoal("flag", 0.2, cost_ratio=0.0)])
def test_goals_at_the_edges_are_valid(goal):
    assert goal.validate() is goal
    assert goal.true_effect == (goal.effect or 0.0)


def test_stated_assumptions_by_hand_and_their_checks():
    a = assumed_inputs()
    assert (a.rows, a.units, a.pairs_per_unit, a.within_share, a.source) == (1, 1, 1, 0.0, "assumptions")
    assert a.null_var_n == pytest.approx(4 / 3) and a.se_n == pytest.approx(math.sqrt(4 / 3))
    # two dialogues per question (a binary contrast's two levels), no bank limit, the default bootstrap
    assert (a.dialogues_per_question, a.bank_questions, a.n_boot) == (2.0, None, plan_mod.DEFAULT_N_BOOT)
    assert a.within_source == "not measured" and assumed_inputs(within_share=0.2).within_source == "stated"
    assert assumed_inputs(rows=4).units == 4 and assumed_inputs(rows=4, units=2).units == 2
    for bad in (dict(rows=0), dict(units=0), dict(pairs_per_unit=0), dict(within_share=1.0),
                dict(within_share=-0.1)):
        with pytest.raises(EduFairError):
            assumed_inputs(**bad)


def test_a_family_built_without_a_within_share_has_none():
    """FamilyInputs' defaults: no within-question share measured (0), so a plan tries k = 1 only."""
    fam = FamilyInputs("t", "pedagogical", rows=1, units=1, pairs_per_unit=1, null_var_n=4 / 3, se_n=1.2)
    assert (fam.within_share, fam.within_source) == (0.0, "not measured")
    assert (fam.dialogues_per_question, fam.tasks, fam.bank_questions) == (2.0, 1, None)  # one binary task
    goal = PlanGoal("flag", 0.3, max_replicates=4)
    assert [o.replicates for o in plan_family(fam, goal).options] == [1]
    assert effect_at_k(0.3, fam.within_share, 4) == pytest.approx(0.3)


# ---- the cost -----------------------------------------------------------------------------------

def test_the_cost_by_hand():
    inputs = assumed_inputs()
    inputs.per_dialogue = {"tutor": {"calls": 3, "prompt_tokens": 200, "completion_tokens": 100},
                           "student": {"calls": 2, "prompt_tokens": 50, "completion_tokens": 25},
                           "judge": {"calls": 4, "prompt_tokens": 1000, "completion_tokens": 10}}
    option = PlanOption(replicates=1, questions=50, probability=0.9, effect_at_k=0.2, dialogues=100,
                        relative_cost=100.0, feasible=True)
    c = plan_cost(inputs, option, throughput=50.0, gpu_price=3.0, judge_price=2.0)
    assert c["dialogues"] == 100
    assert (c["tutor_calls"], c["student_calls"], c["judge_calls"]) == (300, 200, 400)
    assert (c["tutor_tokens"], c["student_tokens"], c["judge_tokens"]) == (30000, 7500, 101000)
    assert c["gpu_hours"] == pytest.approx(37500 / 50 / 3600)  # the judge is not served on the GPU
    assert c["gpu_dollars"] == pytest.approx(c["gpu_hours"] * 3.0)
    assert c["judge_dollars"] == pytest.approx(101000 / 1e6 * 2.0, rel=1e-12)  # $ per million tokens
    assert c["dollars"] == pytest.approx(c["gpu_dollars"] + c["judge_dollars"])
    # without a throughput: no hours; without prices: no dollars
    bare = plan_cost(inputs, option)
    assert "gpu_hours" not in bare and "dollars" not in bare and bare["tutor_tokens"] == 30000
    judge_only = plan_cost(inputs, option, judge_price=2.0)
    assert judge_only["dollars"] == pytest.approx(judge_only["judge_dollars"]) and "gpu_dollars" not in judge_only
    gpu_only = plan_cost(inputs, option, throughput=50.0, gpu_price=3.0)
    assert gpu_only["dollars"] == pytest.approx(gpu_only["gpu_dollars"])
    assert plan_cost(inputs, None) == {}


def test_a_role_without_counts_or_with_unknown_calls():
    inputs = assumed_inputs()
    inputs.per_dialogue = {"tutor": {"prompt_tokens": 10, "completion_tokens": 5}, "student": {}}
    option = PlanOption(1, 10, 0.9, 0.2, 20, 20.0, True)
    c = plan_cost(inputs, option, throughput=1.0)
    assert c["tutor_calls"] is None and c["tutor_tokens"] == 300
    assert "student_calls" not in c and "judge_tokens" not in c
    assert c["gpu_hours"] == pytest.approx(300 / 3600)
    assert "judge_dollars" not in plan_cost(inputs, option, judge_price=5.0)
    # a count of one token kind missing: those tokens count 0 (the other kind still counts)
    inputs.per_dialogue = {"tutor": {"calls": 1, "prompt_tokens": 10}, "student": {"calls": 1, "completion_tokens": 4}}
    c = plan_cost(inputs, option)
    assert (c["tutor_tokens"], c["student_tokens"]) == (200, 80)


# ---- the pilot's inputs ---------------------------------------------------------------------------

def _grid():
    rows = []
    spec = [  # tutor, kind, domain, contrast, metric, n, v0, r, boot, headline, sufficient
        ("a", "pedagogical", "physics", "Gender", "m1", 40, 0.035, 0.1, 0.16, True, True),
        ("a", "pedagogical", "physics", "Race", "m1", 50, 0.03, -0.2, 0.12, True, True),
        ("a", "pedagogical", "physics", "Race", "m1", 60, 0.02, 0.05, 0.15, True, True),
        ("a", "pedagogical", "biology", "Gender", "m2", 30, 0.05, 0.3, 0.2, True, True),
        ("a", "pedagogical", "biology", "Gender", "m9", 10, 0.5, 0.9, 0.9, True, False),  # insufficient
        ("a", "pedagogical", "biology", "Gender", "m8", 30, 0.4, 0.9, 0.9, False, True),  # not headline
        ("a", "style", "physics", "Gender", "s1", 40, 0.03, 0.1, 0.1, True, True),
        ("b", "pedagogical", "physics", "Gender", "m1", 20, 0.07, 0.0, 0.25, True, True),
    ]
    for t, kind, dom, con, met, n, v0, r, boot, head, suff in spec:
        rows.append({"tutor": t, "metric_kind": kind, "domain": dom, "condition": "explicit", "contrast": con,
                     "dimension": con.lower(), "kind": "levels", "metric": met, "n_pairs": n, "null_var_r": v0,
                     "r": r, "boot_sd": boot, "headline": head, "sufficient": suff, "unit_pairs": 3})
    return pd.DataFrame(rows)


def test_a_pilots_family_inputs_by_hand():
    grid = _grid()
    comp = pd.DataFrame({"tutor": ["a", "a", "a", "b"], "metric": ["m1", "m2", "zz", "m1"],
                         "share_within": [0.2, 0.6, 0.99, math.nan], "source": ["replicates", "placebo", "x", "y"]})
    fams = family_inputs(grid, comp)
    assert [(f.tutor, f.kind) for f in fams] == [("a", "pedagogical"), ("b", "pedagogical")]
    a, b = fams
    use = grid.iloc[:4]
    n, v0 = use["n_pairs"].to_numpy(float), use["null_var_r"].to_numpy(float)
    assert (a.rows, a.units, a.pairs_per_unit) == (4, 3, 3)
    assert a.null_var_n == pytest.approx(np.median(v0 * n))
    se = equivalence_se(use["r"].to_numpy(float), n, use["boot_sd"].to_numpy(float), v0)
    assert a.se_n == pytest.approx(np.median(se * np.sqrt(n)))
    assert a.boot_se_n == pytest.approx(np.median(use["boot_sd"].to_numpy(float) * np.sqrt(n)))
    assert a.pilot_questions == pytest.approx(45.0)
    # the within share: the median over the family's metrics' components; their sources named
    assert a.within_share == pytest.approx(0.4) and a.within_source == "placebo, replicates"
    assert b.within_share == 0.0 and b.within_source == "not measured"  # no share measured
    assert a.dialogues_per_question == 2 * 2 and a.bank_questions is None and a.per_dialogue == {}
    # the style family only when asked for
    style = family_inputs(grid, None, kinds=("style",))
    assert [(f.tutor, f.kind, f.rows, f.within_share) for f in style] == [("a", "style", 1, 0.0)]
    assert family_inputs(grid, comp.iloc[0:0])[0].within_share == 0.0
    # a grid without the pairs per unit: one pair per unit
    assert family_inputs(grid.drop(columns=["unit_pairs"]), None)[0].pairs_per_unit == 1


def test_a_pilots_costs_by_hand():
    grid = _grid()
    fam = grid.iloc[:4]
    dialogues = {"t1": {"questions": 10, "dialogues": 40, "actual": 80, "tutor_calls": 160, "tutor_prompt_tokens": 8000,
                        "judge_calls": 80},
                 "t2": {"questions": 0, "dialogues": 6, "tutor_calls": 20, "tutor_prompt_tokens": 1000}}
    per_q, per_role, bank = _pilot_costs(fam, dialogues, {"t1": 900, "t2": 700})
    assert per_q == pytest.approx(40 / 10 + 6 / 1)  # a task without questions counts as one
    total = 80 + 6  # dialogues actually run (replicates included); "dialogues" where not given
    assert per_role["tutor"] == pytest.approx({"calls": 180 / total, "prompt_tokens": 9000 / total,
                                               "completion_tokens": 0.0})
    assert per_role["judge"] == pytest.approx({"calls": 80 / total, "prompt_tokens": 0.0, "completion_tokens": 0.0})
    assert "student" not in per_role and bank == 700
    assert _pilot_costs(fam, None, None) == (float(2 * 2), {}, None)
    assert _pilot_costs(fam, dialogues, None)[2] is None
    # a pilot that ran no dialogue has no per-dialogue counts
    ran_none = {"t1": {"questions": 3, "dialogues": 0, "actual": 0, "tutor_calls": 0}}
    assert _pilot_costs(fam, ran_none, None) == (0.0, {}, None)


def test_a_pilot_runs_dialogues_and_calls_per_task():
    def s(task, q, rep):
        return SimpleNamespace(task=task, question_id=q, replicate=rep)
    scores = [s("t1", q, r) for q in ("q1", "q2") for r in (1, 2) for _ in range(3)] + [s("t2", "q1", 1)] * 2
    run = SimpleNamespace(scores=scores, call_counts={
        "t1": {"tutor": {"requests": 12, "prompt_tokens": 600, "completion_tokens": None},
               "student": {"requests": None}, "other": {"requests": 5}, "judge": "n/a"}})
    out = pilot_dialogues(run)
    assert out["t1"] == {"questions": 2, "dialogues": 6.0, "actual": 12, "tutor_calls": 12.0,
                         "tutor_prompt_tokens": 600.0, "student_calls": 0.0}
    assert out["t2"] == {"questions": 1, "dialogues": 2.0, "actual": 2}
    assert list(out) == ["t1", "t2"]


def test_bank_sizes_per_task_and_a_domain_without_a_bank(tmp_path):
    from edufair_metrics.analysis.plan import bank_sizes
    from tests.helpers.bank import write_bank

    from edufair_metrics.bank import load_bank

    bank = write_bank(tmp_path / "bank")  # physics only
    n = len(load_bank("physics", str(bank)))
    scores = [SimpleNamespace(task=t, domain=d) for t, d in
              (("p1", "physics"), ("b1", "biology"), ("p2", "physics"), ("p1", "physics"))]
    assert bank_sizes(SimpleNamespace(scores=scores), str(bank)) == {"p1": n, "p2": n}
    first = [SimpleNamespace(task="b1", domain="biology"), SimpleNamespace(task="p1", domain="physics")]
    assert bank_sizes(SimpleNamespace(scores=first), str(bank)) == {"p1": n}  # a missing bank skips only its tasks
