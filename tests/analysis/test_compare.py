"""``edufair compare``: the CI gate's exit status."""

import pytest

from edufair_metrics.cli import main as cli
from edufair_metrics.analysis.compare import compare_frames
from edufair_metrics.analysis.frames import scores_frame
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
def test_no_regression_passes(runs, tmp_path):
    rc = cli(["compare", "--baseline", str(runs / "base"), "--candidate", str(runs / "same"),
              "--n-boot", "200", "--out", str(tmp_path / "c")])
    assert rc == 0
    assert (tmp_path / "c" / "compare.csv").exists() and (tmp_path / "c" / "compare.md").exists()


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
    assert h["delta"] > 0.05 and h["delta_ci_low"] > 0 and res.failed
    same = compare_frames(base, base, n_boot=100)
    assert same.headline["delta"] == 0 and not same.failed
    assert same.headline["delta_ci_low"] == 0 == same.headline["delta_ci_high"]


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
