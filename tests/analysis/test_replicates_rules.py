"""The replicate statistics' rules (``analysis.replicates``) on tables small enough to compute by
hand: a question's replicates are averaged within its level (missing values left out, turn counts
summed); the within-question variance is the mean replicate variance of a (question, level), or
half the mean squared difference of a placebo level's two runs; the between part is the two-way
ANOVA residual mean square of the question means minus within / k, at least 0; the most efficient
k is Cochran's sqrt((c_q / c_r) within / between), at least 1."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from edufair_metrics.analysis.replicates import (
    COMPONENT_COLUMNS,
    REPLICATE_COLUMN,
    _anova_residual,
    average_replicates,
    k_star,
    variance_components,
    whole_k,
)

TASK = "edufair_physics_explicit"


def frame(values: dict[tuple[str, str], list[float]], *, tutor="t", metric="tutor_turns", replicated=True):
    """A long frame: ``values[(question, level)]`` = the replicates' values (replicate 1, 2, ...)."""
    rows = []
    for (q, lv), vs in values.items():
        for r, v in enumerate(vs, 1):
            row = {"tutor": tutor, "task": TASK, "domain": "physics", "condition": "explicit", "dimension": "gender",
                   "level": lv, "question_id": q, "metric": metric, "value": v}
            if replicated:
                row[REPLICATE_COLUMN] = r
            rows.append(row)
    return pd.DataFrame(rows)


# ---- averaging ------------------------------------------------------------------------------------

def test_replicates_are_averaged_within_level_leaving_missing_values_out():
    long = frame({("q1", "female"): [1.0, 2.0, 6.0], ("q1", "male"): [0.0, math.nan, 1.0],
                  ("q2", "female"): [math.nan, math.nan, math.nan], ("q2", "male"): [4.0, 4.0, 7.0]})
    long["n_applicable"] = [1, 2, 3, 1, 1, 1, math.nan, math.nan, math.nan, 2, 0, 2]
    out = average_replicates(long)
    assert REPLICATE_COLUMN not in out.columns and len(out) == 4
    got = out.set_index(["question_id", "level"])
    assert got.loc[("q1", "female"), "value"] == pytest.approx(3.0)
    assert got.loc[("q1", "male"), "value"] == pytest.approx(0.5)  # the missing replicate is not a 0
    assert math.isnan(got.loc[("q2", "female"), "value"])
    assert got.loc[("q2", "male"), "value"] == pytest.approx(5.0)
    # turn counts add up over the replicates; none counted stays missing, not 0
    assert got.loc[("q1", "female"), "n_applicable"] == 6 and got.loc[("q2", "male"), "n_applicable"] == 4
    assert math.isnan(got.loc[("q2", "female"), "n_applicable"])


def test_a_frame_without_replicates_is_returned_as_it_is():
    long = frame({("q1", "female"): [1.0], ("q1", "male"): [2.0]}, replicated=False)
    assert average_replicates(long) is long


def test_a_missing_grouping_field_keeps_its_rows():
    long = frame({("q1", "female"): [1.0, 3.0], ("q2", "female"): [5.0, 7.0]})
    long["dimension"] = [None, None, "gender", "gender"]  # e.g. a condition without a dimension
    out = average_replicates(long).set_index("question_id")["value"]
    assert out.to_dict() == {"q1": 2.0, "q2": 6.0}


def test_averaging_keeps_tutors_and_metrics_apart():
    a = frame({("q1", "female"): [1.0, 3.0]}, tutor="a")
    b = frame({("q1", "female"): [10.0, 30.0]}, tutor="b")
    c = frame({("q1", "female"): [100.0, 300.0]}, tutor="a", metric="other")
    out = average_replicates(pd.concat([a, b, c], ignore_index=True)).set_index(["tutor", "metric"])["value"]
    assert out.loc[("a", "tutor_turns")] == 2.0 and out.loc[("b", "tutor_turns")] == 20.0
    assert out.loc[("a", "other")] == 200.0


# ---- the ANOVA residual, k* --------------------------------------------------------------------

def test_the_anova_residual_by_hand():
    m = np.array([[1.0, 2.0], [3.0, 7.0], [5.0, 6.0]])
    # residuals m - row mean - column mean + grand mean; their squares over (q - 1)(l - 1)
    resid = m - m.mean(axis=1, keepdims=True) - m.mean(axis=0, keepdims=True) + m.mean()
    assert _anova_residual(m) == (pytest.approx(float((resid ** 2).sum() / 2)), 3)
    # a two-level table: the residual mean square is half the variance of the paired differences
    d = m[:, 1] - m[:, 0]
    assert _anova_residual(m)[0] == pytest.approx(np.var(d, ddof=1) / 2)
    # additive (no question x level interaction): 0
    assert _anova_residual(np.array([[1.0, 4.0, 5.0], [2.0, 5.0, 6.0]]))[0] == pytest.approx(0.0)
    q_one, n = _anova_residual(np.array([[1.0, 2.0]]))
    assert math.isnan(q_one) and n == 1
    lv_one, n = _anova_residual(np.array([[1.0], [2.0], [4.0]]))
    assert math.isnan(lv_one) and n == 3


@pytest.mark.parametrize("within,between,ratio,want", [
    (0.16, 0.04, 1.0, 2.0), (0.16, 0.04, 4.0, 4.0), (0.09, 0.01, 1.0, 3.0), (0.01, 0.04, 1.0, 1.0),
    (0.04, 0.04, 0.25, 1.0), (0.5, 0.02, 0.5, 3.5355339059327378)])
def test_k_star_is_cochrans_optimum_at_least_one(within, between, ratio, want):
    assert k_star(within, between, ratio) == pytest.approx(want)


def test_by_default_a_new_question_costs_one_dialogue():
    from edufair_metrics.analysis.replicates import DEFAULT_COST_RATIO

    assert DEFAULT_COST_RATIO == 1.0
    assert k_star(0.16, 0.04) == pytest.approx(2.0)
    assert variance_components(frame(SPREAD)).iloc[0]["k_star"] == pytest.approx(
        variance_components(frame(SPREAD), cost_ratio=1.0).iloc[0]["k_star"])
    # within 1, between 3/8 (by hand: replicate variances 1/2, 1/2, 0, 1/2, 0, 9/2; ANOVA residual 7/8)
    row = variance_components(frame(SPREAD)).iloc[0]
    assert (row["within_var"], row["between_var"]) == pytest.approx((1.0, 0.375))
    assert row["k_star"] == pytest.approx(math.sqrt(1 / 0.375)) and row["k_star_whole"] == 2.0


def test_k_star_at_the_edges():
    assert k_star(0.1, 0.0) == math.inf  # only replicates buy precision
    assert k_star(0.1, -0.0) == math.inf
    assert k_star(0.1, -0.02) == math.inf  # a negative between estimate counts as 0
    assert k_star(0.0, 0.1) == 1.0 and k_star(0.0, 0.0) == 1.0  # no dialogue noise: one dialogue
    assert k_star(-0.01, 0.1) == 1.0 and k_star(-0.01, 0.0) == 1.0  # nor with a negative estimate of it
    assert math.isnan(k_star(math.nan, 0.1)) and math.isnan(k_star(0.1, math.nan))
    assert math.isnan(k_star(math.inf, 0.1)) and math.isnan(k_star(0.1, math.inf))


@pytest.mark.parametrize("k,want", [(1.0, 1.0), (1.4, 1.0), (1.6, 2.0), (2.49, 2.0), (2.51, 3.0), (7.2, 7.0),
                                    (0.3, 1.0)])
def test_the_whole_k_is_the_nearest_whole_number_at_least_one(k, want):
    assert whole_k(k) == want


def test_the_whole_k_of_an_unknown_or_infinite_k_stays_so():
    assert whole_k(math.inf) == math.inf and math.isnan(whole_k(math.nan))


# ---- the variance components by hand -------------------------------------------------------------

TABLE = {("q1", "female"): [1.0, 3.0], ("q1", "male"): [0.0, 0.0],
         ("q2", "female"): [2.0, 2.0], ("q2", "male"): [5.0, 9.0],
         ("q3", "female"): [4.0, 6.0], ("q3", "male"): [1.0, 2.0]}


# much dialogue noise, little question x level heterogeneity: k* > 1
SPREAD = {("q1", "female"): [2.0, 3.0], ("q1", "male"): [4.0, 5.0], ("q2", "female"): [0.0, 0.0],
          ("q2", "male"): [4.0, 5.0], ("q3", "female"): [1.0, 1.0], ("q3", "male"): [5.0, 2.0]}


def _by_hand(table, k):
    var = [np.var(v, ddof=1) for v in table.values()]
    within = float(np.mean(var))
    qs = sorted({q for q, _ in table})
    means = np.array([[np.mean(table[(q, lv)]) for lv in ("female", "male")] for q in qs])
    resid, _ = _anova_residual(means)
    return within, max(0.0, resid - within / k)


def test_components_from_replicates_by_hand():
    (row,) = variance_components(frame(TABLE)).to_dict("records")
    within, between = _by_hand(TABLE, 2)
    assert set(row) == set(COMPONENT_COLUMNS)
    assert (row["source"], row["k"], row["questions"], row["levels"]) == ("replicates", 2, 3, 2)
    assert row["within_var"] == pytest.approx(within) and row["between_var"] == pytest.approx(between)
    assert between > 0
    assert row["share_within"] == pytest.approx(within / (within + between))
    assert row["k_star"] == pytest.approx(max(1.0, math.sqrt(within / between)))
    assert row["k_star_whole"] == whole_k(row["k_star"])
    assert (row["tutor"], row["domain"], row["condition"], row["metric"]) == ("t", "physics", "explicit", "tutor_turns")


def test_the_cost_ratio_scales_k_star_only():
    plain = variance_components(frame(TABLE)).iloc[0]
    dear = variance_components(frame(TABLE), cost_ratio=9.0).iloc[0]
    assert dear["within_var"] == plain["within_var"] and dear["between_var"] == plain["between_var"]
    assert dear["k_star"] == pytest.approx(max(1.0, 3 * math.sqrt(plain["within_var"] / plain["between_var"])))


def test_the_between_part_is_clipped_at_zero():
    # pure dialogue noise around one mean: the ANOVA residual is below within / k
    table = {("q1", "female"): [0.0, 4.0], ("q1", "male"): [4.0, 0.0], ("q2", "female"): [0.0, 4.0],
             ("q2", "male"): [4.0, 0.0], ("q3", "female"): [4.0, 0.0], ("q3", "male"): [0.0, 4.0]}
    (row,) = variance_components(frame(table)).to_dict("records")
    assert row["within_var"] == pytest.approx(8.0) and row["between_var"] == 0.0
    assert row["share_within"] == 1.0 and row["k_star"] == math.inf


def test_a_question_missing_a_level_or_a_value_is_left_out_where_it_must_be():
    table = dict(TABLE)
    table[("q4", "female")] = [1.0, 5.0]  # q4 has no male dialogue: not a complete question
    long = frame(table)
    # a missing third replicate: no value, so no variance and no k of 3
    long = pd.concat([long, frame({("q1", "female"): [math.nan]}).assign(**{REPLICATE_COLUMN: 3})], ignore_index=True)
    (row,) = variance_components(long).to_dict("records")
    within = float(np.mean([np.var(v, ddof=1) for v in table.values()]))  # q4's replicates count here
    means = np.array([[np.mean(TABLE[(q, lv)]) for lv in ("female", "male")] for q in ("q1", "q2", "q3")])
    resid, _ = _anova_residual(means)
    assert row["k"] == 2 and row["within_var"] == pytest.approx(within)
    assert row["questions"] == 3  # the ANOVA reads complete questions only
    assert row["between_var"] == pytest.approx(max(0.0, resid - within / 2))


def test_no_variance_at_all_has_no_share_and_needs_one_dialogue():
    table = {(q, lv): [3.0, 3.0] for q in ("q1", "q2", "q3") for lv in ("female", "male")}
    (row,) = variance_components(frame(table)).to_dict("records")
    assert (row["within_var"], row["between_var"]) == (0.0, 0.0)
    assert math.isnan(row["share_within"]) and row["k_star"] == 1.0


def test_one_replicate_per_question_in_a_replicated_frame_measures_nothing():
    long = frame({("q1", "female"): [1.0], ("q1", "male"): [2.0], ("q2", "female"): [3.0], ("q2", "male"): [1.0]})
    assert len(variance_components(long)) == 0


def test_components_from_a_placebo_by_hand():
    # a k = 1 run with a placebo replicate of the female level: within = mean squared difference / 2
    rows = []
    vals = {"q1": (1.0, 0.0, 3.0), "q2": (2.0, 5.0, 2.0), "q3": (4.0, 1.0, 1.0), "q4": (0.0, 2.0, 1.0)}
    for q, (f, m, f2) in vals.items():
        for lv, v in (("female", f), ("male", m), ("female~replicate2", f2)):
            rows.append({"tutor": "t", "task": TASK, "domain": "physics", "condition": "explicit",
                         "dimension": "gender", "level": lv, "question_id": q, "metric": "tutor_turns", "value": v})
    long = pd.DataFrame(rows)
    (row,) = variance_components(long).to_dict("records")
    d = np.array([f - f2 for f, _, f2 in vals.values()])
    within = float(np.mean(d ** 2) / 2)
    means = np.array([[f, m] for f, m, _ in vals.values()])
    resid, _ = _anova_residual(means)
    assert (row["source"], row["k"], row["questions"], row["levels"]) == ("placebo", 1, 4, 2)
    assert row["within_var"] == pytest.approx(within)
    assert row["between_var"] == pytest.approx(max(0.0, resid - within))
    # a placebo run whose placebo dialogues match no plain (question, level): nothing measured
    unmatched = long.copy()
    unmatched.loc[unmatched["level"] == "female~replicate2", "question_id"] = "q9"
    assert len(variance_components(unmatched)) == 0


def test_nothing_to_measure_gives_the_empty_table():
    empty = variance_components(None)
    assert list(empty.columns) == COMPONENT_COLUMNS and len(empty) == 0
    assert len(variance_components(frame(TABLE).iloc[0:0])) == 0
    assert len(variance_components(frame(TABLE, replicated=False))) == 0


def test_one_row_per_tutor_and_metric():
    a = frame(TABLE, tutor="a")
    b = frame({key: [v * 2 for v in vs] for key, vs in TABLE.items()}, tutor="b")
    comp = variance_components(pd.concat([a, b], ignore_index=True)).set_index("tutor")
    assert list(comp.index) == ["a", "b"]
    # doubling every value multiplies both variances by 4 and leaves k* and the share alone
    assert comp.loc["b", "within_var"] == pytest.approx(4 * comp.loc["a", "within_var"])
    assert comp.loc["b", "between_var"] == pytest.approx(4 * comp.loc["a", "between_var"])
    assert comp.loc["b", "k_star"] == pytest.approx(comp.loc["a", "k_star"])


def test_the_share_and_k_star_do_not_depend_on_the_scores_scale():
    small = {key: [v / 100 for v in vs] for key, vs in SPREAD.items()}  # total variance ~1e-4
    a = variance_components(frame(SPREAD)).iloc[0]
    b = variance_components(frame(small)).iloc[0]
    assert b["within_var"] + b["between_var"] < 1e-3
    assert b["share_within"] == pytest.approx(a["share_within"]) and b["k_star"] == pytest.approx(a["k_star"])
