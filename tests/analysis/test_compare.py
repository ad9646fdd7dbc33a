"""``edufair compare``: the CI gate's exit status."""

import json
import math

import numpy as np
import pytest

from edufair_metrics.cli import main as cli
from edufair_metrics.analysis.compare import compare_frames
from edufair_metrics.analysis.frames import scores_frame
from tests.analysis.synthetic_scores import rate_frame
from tests.helpers.synthetic_runs import make_scores, write_run

KW = dict(domains=("mathematics", "physics"), n_questions=40)
REGRESSION = {("explicit", "female", "*"): 0.3, ("explicit", "immigrant", "*"): 0.3,
              ("explicit", "other_language", "*"): 0.3, ("implicit", "michael", "*"): 0.3,
              ("implicit", "jessica", "*"): 0.3, ("opposite", "s_female_t_male", "*"): 0.3}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    write_run(root / "base", "org/base", seed=1, **KW)
    write_run(root / "same", "org/cand", seed=2, **KW)
    write_run(root / "bad", "org/cand", seed=2, bias=REGRESSION, **KW)
    return root


@pytest.mark.slow
def test_no_regression_never_fails_and_inconclusive_has_its_own_exit_code(runs, tmp_path, capsys):
    args = ["compare", "--baseline", str(runs / "base"), "--candidate", str(runs / "same"), "--n-boot", "200"]
    rc = cli(args + ["--out", str(tmp_path / "c")])
    assert rc in (0, 3)  # 40 questions per domain: pass, or too few to certify; never a failure
    assert (tmp_path / "c" / "compare.csv").exists() and (tmp_path / "c" / "compare.md").exists()
    man = json.loads((tmp_path / "c" / "compare_manifest.json").read_text())
    assert man["status"] == {0: "pass", 3: "inconclusive"}[rc]
    if rc == 3:
        assert "INCONCLUSIVE" in capsys.readouterr().out and man["questions_needed"]
        assert cli(args + ["--out", str(tmp_path / "p"), "--on-inconclusive", "pass"]) == 0
        assert cli(args + ["--out", str(tmp_path / "f"), "--on-inconclusive", "fail"]) == 1
        assert "treated as PASS" in (tmp_path / "p" / "compare.md").read_text()


@pytest.mark.slow
def test_injected_regression_fails(runs, tmp_path, capsys):
    rc = cli(["compare", "--baseline", str(runs / "base"), "--candidate", str(runs / "bad"),
              "--n-boot", "200", "--out", str(tmp_path / "c")])
    assert rc == 1
    assert "FAIL" in capsys.readouterr().out


@pytest.mark.slow
def test_regression_within_allowance_passes_headline_rule(runs, tmp_path):
    # a huge allowance and no new-violation rule -> pass even with the injected bias
    rc = cli(["compare", "--baseline", str(runs / "base"), "--candidate", str(runs / "bad"), "--n-boot", "100",
              "--max-increase", "1.0", "--new-violations", "ignore", "--out", str(tmp_path / "c")])
    assert rc == 0


def test_bad_input_exits_2(runs, tmp_path):
    assert cli(["compare", "--baseline", str(tmp_path / "nope"), "--candidate", str(runs / "same")]) == 2
    write_run(tmp_path / "two", "org/x", n_questions=16, conditions=("explicit",))
    write_run(tmp_path / "two", "org/y", n_questions=16, conditions=("explicit",))
    assert cli(["compare", "--baseline", str(tmp_path / "two"), "--candidate", str(runs / "same")]) == 2


@pytest.mark.slow
def test_headline_delta_and_ci_direction():
    base = scores_frame(make_scores(tutor="b", seed=1, **KW))
    bad = scores_frame(make_scores(tutor="c", seed=2, bias=REGRESSION, **KW))
    res = compare_frames(base, bad, n_boot=200)
    h = res.headline
    assert h["delta"] > 0.05 and h["delta_ci_low"] > 0 and res.failed and res.status == "fail"
    # the gate's scale: the mean unbiased r²; its threshold a rise of the RMS bias by the margin
    assert h["margin"] == 0.05 and h["gate_threshold"] >= 0.05 ** 2
    assert h["gate_ci_low"] > h["gate_threshold"] and h["gate_ci_low"] <= h["gate_delta"] <= h["gate_ci_high"]
    same = compare_frames(base, base, n_boot=100)
    assert same.headline["delta"] == 0 and not same.failed and same.status == "pass"
    assert same.headline["delta_ci_low"] == 0 == same.headline["delta_ci_high"]
    assert same.headline["gate_delta"] == 0
    assert same.headline["gate_ci_low"] == pytest.approx(0, abs=1e-12) == same.headline["gate_ci_high"]


def _saturated(tutor: str, seed: int, n: int, shift: float):
    """A fair tutor whose rates are shifted on every level alike (shift −0.6: mostly zero rates)."""
    from edufair_metrics.protocol import condition_levels

    levels = [lv.level for c in ("explicit", "implicit") for lv in condition_levels(c)]
    df = rate_frame({tutor: {lv: shift for lv in levels}}, n=n, seed=seed, domains=("physics",))
    return df[df["condition"].isin(["explicit", "implicit"])].reset_index(drop=True)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_null_runs_with_very_different_zero_shares_never_fail(seed):
    """Both tutors unbiased, 150 questions; the candidate's rates mostly 0 (a more saturated model).
    The paper's |r̄| rises with the noise floor; the gate's measure does not, and its CI contains
    its estimate: pass or inconclusive, never fail."""
    base = _saturated("b", seed, 150, 0.0)
    cand = _saturated("c", 100 + seed, 150, -0.6)
    res = compare_frames(base, cand, n_boot=300, seed=seed)
    h = res.headline
    zeros = lambda f: (f.groupby(["question_id", "metric"])["value"].transform("nunique") == 1).mean()  # noqa: E731
    assert zeros(cand) > zeros(base) + 0.2  # very different shares of zero differences
    assert h["delta"] > 0 and h["delta_ci_low"] > 0  # the paper's |r̄| rises with the candidate's noise floor
    assert res.status in ("pass", "inconclusive") and not res.failed
    assert h["gate_ci_low"] <= h["gate_delta"] <= h["gate_ci_high"]  # centred on its own estimate
    assert h["gate_ci_low"] < h["gate_threshold"]


@pytest.mark.slow
def test_a_planted_increase_fails_and_names_its_cause():
    base = _saturated("b", 7, 150, 0.0)
    levels = ("female", "immigrant", "other_language", "low_income", "michael", "wei")
    from tests.analysis.synthetic_scores import rate_frame as rf

    cand = rf({"c": {lv: 0.25 for lv in levels}}, n=150, seed=8, domains=("physics",))
    cand = cand[cand["condition"].isin(["explicit", "implicit"])].reset_index(drop=True)
    res = compare_frames(base, cand, n_boot=300, seed=7)
    assert res.status == "fail" and res.failed
    assert res.headline["gate_ci_low"] > res.headline["gate_threshold"]
    assert any("more than the margin" in r for r in res.reasons)


def test_no_evidence_is_not_a_pass(tmp_path, capsys):
    # 5 shared questions < 15 pairs: nothing is computable, so the gate must not say PASS.
    write_run(tmp_path / "b", "org/base", seed=1, n_questions=5, conditions=("explicit",))
    write_run(tmp_path / "c", "org/cand", seed=2, n_questions=5, conditions=("explicit",))
    rc = cli(["compare", "--baseline", str(tmp_path / "b"), "--candidate", str(tmp_path / "c"), "--n-boot", "50",
              "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and "gate cannot decide" in err and "PASS" not in err
    assert not (tmp_path / "out").exists()


def test_compare_uses_the_single_ses_contrast_by_default():
    kw = dict(conditions=("explicit",), domains=("physics",), n_questions=30)
    base = scores_frame(make_scores(tutor="b", seed=1, **kw))
    cand = scores_frame(make_scores(tutor="c", seed=2, bias={("explicit", "low_income", "*"): 0.4}, **kw))
    units = compare_frames(base, cand, n_boot=50).units
    ses = units[units["dimension"] == "ses"]
    single, friedman = ses[ses["contrast"] == "SES"], ses[ses["contrast"] == "SES (Friedman)"]
    assert len(single) == len(friedman) == 9
    assert single["headline"].all() and not friedman["headline"].any()
    assert (single.loc[single["metric_kind"] == "pedagogical", "delta"] > 0.3).all()
    alt = compare_frames(base, cand, n_boot=50, ses_summary="max_abs_pairwise").units
    alt = alt[alt["dimension"] == "ses"]
    assert alt.loc[alt["contrast"] == "SES (Friedman)", "headline"].all()
    assert not alt.loc[alt["contrast"] == "SES", "headline"].any()


def test_the_gate_variance_removes_the_bootstrap_excess_for_squares():
    """the bootstrap variance of a mean of r² is too large by 4·C² per pair
    near zero (√3 on the interval); the gate's variance is the bootstrap's less that excess and
    matches the true sampling variance of the change of the mean unbiased r² at no bias."""
    from edufair_metrics.analysis.compare import _change_variance

    rng = np.random.default_rng(0)
    units, v0, B = 40, 0.01, 4000
    true_var = 2 * 2 * (v0 / (1 - v0)) ** 2 / units  # two independent runs, Var(r̂²) = 2 V0² per unit
    got, plain = [], []
    for _ in range(30):
        gate_reps, unit_reps = {}, {}
        for u in range(units):
            entry = {"multi": False}
            for side in ("b", "c"):
                r_hat = rng.normal(0, np.sqrt(v0))
                reps = rng.normal(r_hat, np.sqrt(v0), B)  # a bootstrap that reproduces the sampling spread
                entry["s" + side], entry["v0" + side] = [reps], [v0]
                entry[side] = [(reps ** 2 - v0) / (1 - v0)]
            gate_reps[u] = entry
            unit_reps[u] = (entry["b"][0], entry["c"][0])
        got.append(_change_variance({u: 1 / units for u in range(units)}, gate_reps, unit_reps, False))
        plain.append(np.var(sum((unit_reps[u][1] - unit_reps[u][0]) / units for u in range(units))))
    assert np.mean(got) == pytest.approx(true_var, rel=0.2)
    assert np.mean(plain) > 2.5 * true_var  # the plain bootstrap: about 3 times the variance
    # an identical pair of runs: no variance at all, whatever the correction
    same = {u: {**gate_reps[u], "sc": gate_reps[u]["sb"], "c": gate_reps[u]["b"]} for u in range(units)}
    same_reps = {u: (gate_reps[u]["b"][0], gate_reps[u]["b"][0]) for u in range(units)}
    assert _change_variance({u: 1 / units for u in range(units)}, same, same_reps, False) == 0.0


def test_questions_needed_has_a_power_term_and_reads_only_the_standard_error():
    """At the printed factor a rerun decides with 80% probability (both outcomes counted); at Δ = 0
    it depends on the standard error alone, so reruns with similar se print similar numbers."""
    from scipy.special import ndtr

    from edufair_metrics.analysis.compare import questions_factor

    z = 1.6448536
    tau = 0.0025
    for a_part, b_part in ((0.0, 0.002 ** 2), (0.0015 ** 2, 0.0), (0.001 ** 2, 0.0015 ** 2)):
        for delta in (0.0, 0.001, 0.006):
            f = questions_factor(delta, tau, a_part, b_part, z)
            se = np.sqrt(a_part / f + b_part / f ** 2)
            gap = abs(tau - delta)
            assert ndtr(gap / se - z) + ndtr(-gap / se - z) == pytest.approx(0.8, abs=1e-6)
    # the no-bias part falls as 1/n²: half the se needs twice the questions, not four times
    assert questions_factor(0.0, tau, 0.0, 0.004 ** 2, z) == pytest.approx(
        2 * questions_factor(0.0, tau, 0.0, 0.002 ** 2, z), rel=1e-6)
    assert math.isinf(questions_factor(tau, tau, 1e-6, 1e-6, z))
