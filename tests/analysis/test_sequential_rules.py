"""The group-sequential rules (``analysis.sequential``) against independent oracles: the spending
function's closed form; each look's boundary spends exactly its share of α, checked with scipy's
multivariate normal (the looks' z statistics of Brownian motion in information time are jointly
normal with corr(Z_i, Z_j) = sqrt(t_i / t_j)), not with the module's own grid integration; and one
look's decision counts (flags, certifications, the goal ``until``) by hand."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import multivariate_normal, norm

from edufair_metrics.analysis import sequential
from edufair_metrics.analysis.sequential import (
    FLAG_SPENDING,
    LookDecision,
    boundaries,
    look_decision,
    nominal_levels,
    obf_spent,
)
from edufair_metrics.errors import EduFairError


@pytest.mark.parametrize("t,alpha", [(0.25, 0.05), (0.5, 0.05), (0.8, 0.1), (1.0, 0.05), (1.0, 0.01), (0.1, 0.2)])
def test_the_spending_is_the_obrien_fleming_closed_form(t, alpha):
    want = 2 - 2 * norm.cdf(norm.ppf(1 - alpha / 2) / math.sqrt(t))
    assert obf_spent(t, alpha) == pytest.approx(want, rel=1e-12, abs=1e-300)


def test_the_spending_before_the_start_and_past_the_end():
    assert obf_spent(0.0, 0.05) == 0.0 and obf_spent(-0.3, 0.05) == 0.0
    assert obf_spent(1.5, 0.05) == pytest.approx(0.05)  # the fraction is capped at 1: all of α, no more
    assert obf_spent(1.0, 0.05) == pytest.approx(0.05)


def _inside(c, t):
    """P(|Z_1| < c_1, ..., |Z_k| < c_k) for the z statistics at fractions t (scipy's mvn)."""
    t = np.asarray(t, dtype=float)
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    c = np.asarray(c, dtype=float)
    if c.size == 1:
        return float(2 * norm.cdf(c[0]) - 1)
    return float(multivariate_normal(mean=np.zeros(c.size), cov=cov).cdf(c, lower_limit=-c))


@pytest.mark.parametrize("t,alpha", [([0.5, 1.0], 0.05), ([0.3, 0.7], 0.05), ([0.4, 1.0], 0.1),
                                     ([0.25, 0.6, 1.0], 0.05)])
def test_each_look_spends_exactly_its_share_of_alpha(t, alpha):
    looks = boundaries(t, alpha)
    c = [lk.boundary for lk in looks]
    for j in range(len(t)):
        # stopping by look j: 1 - P(inside at every look up to j) = the α spent by t_j
        assert 1 - _inside(c[: j + 1], t[: j + 1]) == pytest.approx(obf_spent(t[j], alpha), abs=4e-4)
        assert looks[j].spent == pytest.approx(obf_spent(t[j], alpha))
        assert looks[j].fraction == t[j]
        assert looks[j].nominal_alpha == pytest.approx(2 * norm.sf(c[j]))
    # the first look is a fixed-n test at the α spent by then
    assert c[0] == pytest.approx(norm.isf(obf_spent(t[0], alpha) / 2), rel=1e-6)


def test_the_level_argument_is_used_and_more_alpha_lowers_every_boundary():
    strict = boundaries([0.5, 1.0], 0.01)
    loose = boundaries([0.5, 1.0], 0.10)
    assert all(a.boundary > b.boundary for a, b in zip(strict, loose))
    assert strict[-1].spent == pytest.approx(0.01) and loose[-1].spent == pytest.approx(0.10)
    # the audit's flag looks: two-sided, at the audit's (O'Brien-Fleming) spending, and the level is used there too
    audit_loose = boundaries([0.5, 1.0], 0.10, spending=FLAG_SPENDING)
    assert nominal_levels([0.5, 1.0], 0.10) == pytest.approx([lk.nominal_alpha for lk in audit_loose])
    assert all(a < b for a, b in zip(nominal_levels([0.5, 1.0], 0.01), nominal_levels([0.5, 1.0], 0.10)))


def test_a_look_with_nothing_to_spend_can_never_stop():
    # by t = 1e-4 the O'Brien-Fleming function has spent ~0: no boundary, level 0
    first, last = boundaries([1e-4, 1.0])
    assert first.boundary == math.inf and first.nominal_alpha == 0.0
    assert last.boundary == pytest.approx(norm.isf(0.025), rel=1e-4)  # the whole α is left for the end


def test_fractions_are_capped_at_one_and_bad_ones_refused():
    (look,) = boundaries([1.0 + 1e-13])
    assert look.fraction == 1.0
    assert boundaries([]) == [] and nominal_levels([]) == []
    for bad in ([0.5, 0.5], [0.6, 0.2], [-0.1, 1.0], [1.01], [0.0]):
        with pytest.raises(EduFairError):
            boundaries(bad)


# ---- one look's decision --------------------------------------------------------------------

PARAMS = SimpleNamespace(n_boot=10, seed=0, min_pairs=15, ses_summary="mean_abs_pairwise", fdr_method="bh",
                         equivalence_margin=0.1)


def _units(rows):
    """A unit table: (headline, kind, verdict, certified) per unit."""
    return pd.DataFrame(rows, columns=["headline", "metric_kind", "verdict", "certified"])


@pytest.fixture
def fake_units(monkeypatch):
    """look_decision's grid and units replaced by a given unit table (what the look reads of them)."""
    from edufair_metrics.analysis import grid, noise

    state = {}

    def contrast_grid(df, **kw):
        state["fdr_alpha"] = kw["fdr_alpha"]
        return pd.DataFrame({"row": [1]})

    monkeypatch.setattr(grid, "contrast_grid", contrast_grid)
    monkeypatch.setattr(grid, "dimension_summary", lambda g, **kw: g)
    monkeypatch.setattr(noise, "unit_noise", lambda summary, g, **kw: state["units"])
    return state


DF = pd.DataFrame({"question_id": ["q1", "q2", "q2", "q3"], "value": [1.0, 2.0, 3.0, 4.0]})


@pytest.mark.parametrize("until,units,reached,status", [
    ("flag", [(True, "pedagogical", "flag", False)], True, "flagged"),
    ("flag", [(True, "pedagogical", "certify", True)], False, "open"),
    ("flag", [(False, "pedagogical", "flag", False), (True, "pedagogical", "inconclusive", False)], False, "open"),
    ("flag", [(True, "style", "flag", False)], False, "open"),  # another kind's flag is not this family's
    ("certify", [(True, "pedagogical", "certify", True), (True, "pedagogical", "certify", True)], True, "certified"),
    ("certify", [(True, "pedagogical", "certify", True), (True, "pedagogical", "inconclusive", False)], False, "open"),
    ("certify", [(True, "pedagogical", "flag", True)], False, "open"),  # a flagged unit is not certified
    ("certify", [], False, "open"),
    ("units", [(True, "pedagogical", "flag", False), (True, "pedagogical", "certify", True)], True,
     "every unit decided"),
    ("units", [(True, "pedagogical", "flag", True), (True, "pedagogical", "inconclusive", False)], False, "open"),
    ("units", [], False, "open"),
    ("gate", [(True, "pedagogical", "flag", False)], False, "open (the gate decides)"),
])
def test_a_looks_goal_by_hand(fake_units, until, units, reached, status):
    fake_units["units"] = _units(units) if units else _units([(False, "pedagogical", "flag", False)])
    got = look_decision(DF, nominal_alpha=0.01, params=PARAMS, until=until)
    assert (got.reached, got.status) == (reached, status)
    assert fake_units["fdr_alpha"] == 0.01  # the look's level is the grid's level
    assert got.questions == 3 and got.nominal_alpha == 0.01


def test_a_look_counts_a_flagged_unit_once(fake_units):
    fake_units["units"] = _units([(True, "pedagogical", "flag", True), (True, "pedagogical", "certify", True),
                                  (True, "pedagogical", "certify", False), (False, "pedagogical", "flag", False),
                                  (True, "style", "certify", True), (True, "pedagogical", "flag", False)])
    got = look_decision(DF, nominal_alpha=0.02, params=PARAMS, until="units")
    assert (got.units, got.flagged, got.certified, got.decided) == (4, 2, 1, 3)
    assert not got.reached
    style = look_decision(DF, nominal_alpha=0.02, params=PARAMS, until="certify", kind="style")
    assert (style.units, style.flagged, style.certified, style.reached) == (1, 0, 1, True)
    assert got.to_dict()["flagged"] == 2


def test_a_look_without_data_or_level_decides_nothing(fake_units, monkeypatch):
    fake_units["units"] = _units([(True, "pedagogical", "flag", False)])
    none = look_decision(DF.iloc[0:0], nominal_alpha=0.05, params=PARAMS, until="flag")
    assert none == LookDecision(0, 0.05, 0, 0, 0, False, "open")
    zero = look_decision(DF, nominal_alpha=0.0, params=PARAMS, until="flag")  # a look that cannot stop
    assert zero == LookDecision(3, 0.0, 0, 0, 0, False, "open")
    from edufair_metrics.analysis import grid

    monkeypatch.setattr(grid, "contrast_grid", lambda df, **kw: pd.DataFrame())
    empty = look_decision(DF, nominal_alpha=0.05, params=PARAMS, until="flag")
    assert empty == LookDecision(3, 0.05, 0, 0, 0, False, "open")


def test_an_unknown_goal_is_an_error():
    with pytest.raises(EduFairError, match="--until"):
        look_decision(DF, nominal_alpha=0.05, params=PARAMS, until="everything")
    assert sequential.UNTIL == ("flag", "certify", "units", "gate")


# ---- the audit's spending functions (analysis.sequential: FLAG_SPENDING, CERTIFY_SPENDING) ------

def test_the_power_family_by_hand():
    from edufair_metrics.analysis.sequential import Spending

    f = Spending("power", start=0.3, rho=0.5)
    assert f(0.65, 0.05) == pytest.approx(0.05 * math.sqrt(0.5))  # u = (0.65 - 0.3) / 0.7 = 1/2
    assert f(0.3, 0.05) == 0.0 and f(0.2, 0.05) == 0.0  # nothing at or before the start
    assert f(1.0, 0.05) == pytest.approx(0.05) and f(1.7, 0.05) == pytest.approx(0.05)  # all of α, no more
    part = Spending("power", start=0.3, rho=0.5, share=0.8)  # a share of α: the same shape, scaled
    assert part(0.65, 0.05) == pytest.approx(0.8 * f(0.65, 0.05)) and part(1.7, 0.05) == pytest.approx(0.04)
    assert Spending("obf", share=0.5)(0.6, 0.05) == pytest.approx(0.5 * Spending("obf")(0.6, 0.05))
    assert Spending("power")(0.4, 0.1) == pytest.approx(0.04)  # rho = 1, start 0: linear α·t
    assert sequential.spent(0.4, 0.1, "linear") == pytest.approx(0.04)
    # O'Brien-Fleming type from a start: the closed form on u
    assert Spending("obf", start=0.5)(0.75, 0.05) == pytest.approx(2 - 2 * norm.cdf(norm.ppf(0.975) / math.sqrt(0.5)))
    for bad in (dict(kind="pocock"), dict(start=1.0), dict(start=-0.1), dict(rho=0.0), dict(share=0.0),
                dict(share=1.2)):
        with pytest.raises(EduFairError):
            Spending(**bad)


def test_the_audits_design_is_the_stated_one():
    """Flags: O'Brien-Fleming type from the first question, two-sided α (α/2 per sign, as the
    fixed-n two-sided test); each TOST side: the power family with rho = 1/2 from 30% of the
    budget, 0.8·α in all; the gate's pass bound: linear, its fail bound: O'Brien-Fleming type; budgets
    of 1.3x the plan (1.4x for the gate). audit.json records them."""
    from edufair_metrics.analysis.sequential import (CERTIFY_SPENDING, FLAG_SPENDING, GATE_FAIL_SPENDING, GATE_SPENDING,
                                                     Spending, design)

    from edufair_metrics.analysis.sequential import BUDGET_MULTIPLE, GATE_BUDGET_MULTIPLE

    assert FLAG_SPENDING == Spending("obf", 0.0, 1.0)
    assert CERTIFY_SPENDING == Spending("power", 0.3, 0.5, 0.8)
    assert GATE_SPENDING == Spending("power", 0.0, 1.0)
    assert GATE_FAIL_SPENDING == Spending("obf", 0.0, 1.0)
    assert design()["certify"] == {"kind": "power", "start": 0.3, "rho": 0.5, "share": 0.8}
    assert design()["gate_fail"] == {"kind": "obf", "start": 0.0, "rho": 1.0, "share": 1.0}
    assert (BUDGET_MULTIPLE, GATE_BUDGET_MULTIPLE) == (1.3, 1.4)


@pytest.mark.parametrize("sides,looks_fn,total", [(2, "flag_looks", 0.05), (1, "certify_looks", 0.04),
                                                  (1, "gate_looks", 0.05)])
def test_the_audits_levels_never_spend_more_than_alpha(sides, looks_fn, total):
    """Every look's spent α is the spending function's, non-decreasing, at most α, and all of its
    total at the budget (the certification: 0.8·α); each nominal level is at most the α spent so
    far (a look's own test is stricter than the fixed-n one at the same α)."""
    t = [0.2, 0.31, 0.64, 1.0]
    looks = getattr(sequential, looks_fn)(t, 0.05)
    spent = [lk.spent for lk in looks]
    assert all(b >= a for a, b in zip(spent, spent[1:])) and max(spent) <= 0.05 + 1e-12
    assert spent[-1] == pytest.approx(total)
    assert all(lk.nominal_alpha <= lk.spent + 1e-12 for lk in looks)
    assert all(lk.nominal_alpha == pytest.approx(sides * norm.sf(lk.boundary)) for lk in looks if np.isfinite(lk.boundary))


def test_a_look_before_the_start_spends_nothing_and_the_rest_their_share():
    """Certification looks at 0.2 (before the start), 0.65 and 1.0: the first never certifies
    (boundary inf); P(Z_0.65 >= c) = α(0.65) and P(cross by 1.0) = 0.8·α, all it spends (scipy's
    bivariate normal, corr sqrt(0.65))."""
    from edufair_metrics.analysis.sequential import CERTIFY_SPENDING, certify_looks

    first, mid, last = certify_looks([0.2, 0.65, 1.0])
    assert first.boundary == math.inf and first.spent == 0.0
    assert norm.sf(mid.boundary) == pytest.approx(CERTIFY_SPENDING(0.65, 0.05), rel=1e-4)
    inside = multivariate_normal(mean=[0, 0], cov=[[1, math.sqrt(0.65)], [math.sqrt(0.65), 1]]).cdf(
        [mid.boundary, last.boundary], lower_limit=[-np.inf, -np.inf])
    assert 1 - inside == pytest.approx(0.04, abs=4e-4)


def test_a_look_with_no_flag_level_certifies_but_never_flags(fake_units, monkeypatch):
    """Flag level 0 (nothing to spend) and a certification level > 0: the grid is read at the
    certification's level, a unit that would read "flag" is not flagged, a certified one counts."""
    seen = []
    monkeypatch.setattr(sequential, "recertify", lambda grid, alpha, margin: seen.append(alpha) or grid)
    fake_units["units"] = _units([(True, "pedagogical", "flag", True), (True, "pedagogical", "certify", True)])
    got = look_decision(DF, nominal_alpha=0.0, certify_alpha=0.01, params=PARAMS, until="units")
    assert fake_units["fdr_alpha"] == 0.01
    assert (got.units, got.flagged, got.certified, got.reached) == (2, 0, 2, True)
    assert seen == [0.01]  # the TOST redone at the certification's own level
    none = look_decision(DF, nominal_alpha=0.0, certify_alpha=0.0, params=PARAMS, until="units")
    assert none == LookDecision(3, 0.0, 0, 0, 0, False, "open")


def test_the_gates_fail_bound_spends_obrien_fleming_and_its_pass_bound_linearly():
    """Each gate bound is its own one-sided test at α: the pass bound spends α·t, the fail bound
    the O'Brien–Fleming type (almost nothing early: an early look's change of squares is far from
    normal, the sequential gate failed unchanged candidates there); an unknown bound is an error."""
    t = [0.1, 0.2, 0.4, 0.7, 1.0]
    passes, fails = sequential.gate_looks(t), sequential.gate_looks(t, bound="fail")
    assert [lk.spent for lk in passes] == pytest.approx([0.05 * x for x in t])
    assert [lk.spent for lk in fails] == pytest.approx([sequential.Spending("obf")(x, 0.05) for x in t])
    assert fails[-1].spent == pytest.approx(0.05) and fails[0].nominal_alpha < 1e-6 < passes[0].nominal_alpha
    assert all(f.nominal_alpha <= p.nominal_alpha for f, p in zip(fails[:3], passes[:3]))
    with pytest.raises(EduFairError, match="gate bound"):
        sequential.gate_looks(t, bound="both")
