"""Pair accounting (``analysis.pairloss``): pairs kept of all pairs per contrast row, the exact McNemar
test of "pair lost" by cause, and the caveat beside a flagged verdict; planted differential loss is
caught, symmetric loss is not."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from edufair_metrics.analysis.pairloss import exact_mcnemar_p, level_loss_table, loss_cells, pair_accounting
from edufair_metrics.analysis.params import StatParams, analyse
from tests.helpers.synthetic_runs import lose_values, make_scores

PARAMS = StatParams(n_boot=100)


def test_exact_mcnemar_is_scipys_binomial_test():
    for m in range(0, 41):
        for k in range(0, m + 1):
            want = 1.0 if m == 0 else binomtest(k, m, 0.5).pvalue
            assert exact_mcnemar_p(k, m - k) == pytest.approx(want, rel=1e-12, abs=1e-15), (k, m)


def _scores(n=60, seed=0, conditions=("explicit",), **kw):
    return make_scores(tutor="t", domains=("mathematics",), conditions=conditions, n_questions=n, seed=seed, **kw)


def _lose(scores, level, share, metric="mistake_recognize", *, seed=1, how="no_value", condition="explicit"):
    """Take ``metric``'s value away from a share of ``level``'s dialogues, by the cause ``how``."""
    return lose_values(scores, level, share, rng=np.random.default_rng(seed), metric=metric, how=how,
                       condition=condition)


def _row(grid, contrast, metric, pair=None):
    g = grid[(grid["contrast"] == contrast) & (grid["metric"] == metric)]
    if pair is not None:
        g = g[g["pair"] == pair]
    assert len(g) == 1
    return g.iloc[0]


@pytest.mark.parametrize("how", ["no_value", "missing_label", "failed"])
def test_planted_loss_is_counted_and_tested_by_cause(how):
    scores = _lose(_scores(), "female", 0.4, how=how)
    _, grid, units = analyse(scores, PARAMS)
    row = _row(grid, "Gender", "mistake_recognize")
    lost_a = row[f"lost_a_{how}"]
    assert lost_a > 10 and row[f"lost_b_{how}"] == 0 and row["pairs_all"] == 60
    assert row["pairs_kept"] == row["n_pairs"] == 60 - lost_a
    assert row["differential_loss"] and row["loss_cause"].startswith(f"{how} {lost_a} vs 0 lost")
    assert row[f"loss_p_{how}"] == pytest.approx(binomtest(int(lost_a), int(lost_a), 0.5).pvalue)
    assert row["loss_p"] == pytest.approx(row[f"loss_p_{how}"])  # one cause occurs: k = 1
    other = _row(grid, "Immigration", "mistake_recognize")
    assert not other["differential_loss"] and other["pairs_kept"] == other["pairs_all"] == 60
    if how == "failed":  # a failed dialogue is lost for every metric of its pairs
        assert _row(grid, "Gender", "tutor_turns")["lost_a_failed"] == lost_a
    unit = units[(units["contrast"] == "Gender") & (units["metric"] == "mistake_recognize")].iloc[0]
    assert unit["differential_loss"] and unit["pairs_kept"] == row["pairs_kept"]


def test_kept_failed_dialogues_are_not_lost():
    scores = _lose(_scores(), "female", 0.4, how="failed")
    _, grid, _ = analyse(scores, dataclasses.replace(PARAMS, keep_failed_dialogues=True))
    row = _row(grid, "Gender", "mistake_recognize")
    assert row["lost_a_failed"] == 0 and not row["differential_loss"] and row["pairs_kept"] == 60


def test_symmetric_loss_and_no_loss_stay_quiet():
    """Both levels lose 20% at random: the exact McNemar test fires at its nominal rate (4% of 200
    seeds when measured; here ≤ 10% of 40)."""
    rng_rows = []
    for seed in range(40):
        scores = _lose(_lose(_scores(seed=seed), "female", 0.2, seed=100 + seed), "male", 0.2, seed=200 + seed)
        acc = pair_accounting(loss_cells(scores, metrics=["mistake_recognize"]))
        rng_rows.append(acc[acc["contrast"] == "Gender"].iloc[0])
    assert sum(bool(r["differential_loss"]) for r in rng_rows) <= 4
    acc = pair_accounting(loss_cells(_scores()))
    assert not acc["differential_loss"].any() and (acc["loss_p"] == 1).all() and (acc["pairs_kept"] == acc["pairs_all"]).all()


def test_a_flag_with_differential_loss_says_so_beside_its_verdict():
    """A level that loses its low-rate dialogues (an unfavourable selection): the contrast is
    flagged and the caveat names the loss; a flag without loss carries no caveat."""
    scores = _scores(n=80, bias={("explicit", "female", "mistake_recognize"): 0.3})
    scores = _lose(scores, "female", 0.35)
    _, grid, units = analyse(scores, PARAMS)
    row = _row(grid, "Gender", "mistake_recognize")
    assert row["verdict"] == "flag" and row["differential_loss"]
    assert row["caveats"].startswith("differential loss: no_value ")
    cols = list(grid.columns)
    assert cols.index("caveats") == cols.index("verdict") + 1  # beside the verdict
    unit = units[(units["contrast"] == "Gender") & (units["metric"] == "mistake_recognize")].iloc[0]
    assert unit["caveats"].startswith("differential loss: no_value ")
    clean = _scores(n=80, bias={("explicit", "female", "mistake_recognize"): 0.3})
    _, grid2, _ = analyse(clean, PARAMS)
    row2 = _row(grid2, "Gender", "mistake_recognize")
    assert row2["verdict"] == "flag" and row2["caveats"] == "" and not row2["differential_loss"]


def test_averaged_sides_and_friedman_rows():
    """Opposite's averaged side is lost when any of its levels is; an SES Friedman pair counts the
    questions with every level of its family and is Bonferroni-adjusted over the family's pairs."""
    scores = _lose(_scores(conditions=("explicit", "opposite")), "s_female_t_female", 0.4, condition="opposite")
    scores = _lose(scores, "middle_class", 0.4, seed=3)
    acc = pair_accounting(loss_cells(scores, metrics=["mistake_recognize"]))
    by = acc.set_index(["contrast", "pair"])
    lost = int(by.loc[("Correct", "s_female_t_female-s_male_t_male"), "lost_a_no_value"])
    assert lost > 10
    for contrast in ("Tutor effect", "Student effect", "S×T interaction"):  # FF is on side a of each
        row = acc[acc["contrast"] == contrast].iloc[0]
        assert row["lost_a_no_value"] == lost and row["lost_b_no_value"] == 0 and row["differential_loss"]
    ses = acc[acc["contrast"] == "SES (Friedman)"].set_index("pair")
    n_mid = int(ses.loc["low_income-middle_class", "lost_b_no_value"])
    assert n_mid > 10 and (ses["pairs_kept"] == 60 - n_mid).all() and (ses["pairs_all"] == 60).all()
    # the pair without the middle level loses nothing on its own two levels: no discordance there
    row = ses.loc["low_income-high_income"]
    assert row["lost_a_no_value"] == row["lost_b_no_value"] == 0 and row["loss_p"] == 1
    p_raw = ses.loc["low_income-middle_class", "loss_p_no_value"]
    assert ses.loc["low_income-middle_class", "loss_p"] == pytest.approx(min(1.0, 3 * p_raw))
    single = acc[acc["contrast"] == "SES"].iloc[0]  # the binary SES contrast is not touched by middle_class
    assert single["pairs_kept"] == single["pairs_all"] == 60


def test_level_loss_table_shares():
    scores = _lose(_lose(_scores(), "female", 0.5), "male", 0.25, how="failed", seed=4)
    t = level_loss_table(scores).set_index("level")
    f, m = t.loc["female"], t.loc["male"]
    assert f["failed"] == 0 and f["no_value_mistake_recognize"] == pytest.approx(f["nan_mistake_recognize"])
    assert 0.3 < f["nan_mistake_recognize"] < 0.7 and f["nan_actionability"] == 0
    assert 0.1 < m["failed"] < 0.4 and m["nan_actionability"] == pytest.approx(m["failed"])
    assert t.loc["immigrant", "nan_mistake_recognize"] == 0


def test_report_shows_the_nan_share_and_the_lost_pairs(tmp_path):
    from edufair_metrics.report.write import read_report_inputs, write_report
    from tests.helpers.synthetic_runs import write_run

    scores = _lose(_scores(n=40), "female", 0.5)
    write_run(tmp_path / "runs", "org/t", scores=scores)
    write_report(read_report_inputs([tmp_path / "runs"]), tmp_path / "rep", PARAMS, figures=False, html=False)
    levels = (tmp_path / "rep" / "levels.md").read_text()
    assert "NaN share per level" in levels
    lv = pd.read_csv(tmp_path / "rep" / "levels.csv").set_index("level")
    assert lv.loc["female", "nan_mistake_recognize"] > 0.3 and lv.loc["male", "nan_mistake_recognize"] == 0
    summary = (tmp_path / "rep" / "summary.md").read_text()
    assert "## Lost pairs (pair accounting)" in summary and "exact McNemar" in summary
    grid = pd.read_csv(tmp_path / "rep" / "grid.csv")
    row = grid[(grid["contrast"] == "Gender") & (grid["metric"] == "mistake_recognize")].iloc[0]
    assert row["differential_loss"] and row["pairs_kept"] == row["n_pairs"]
    assert "McNemar" in (tmp_path / "rep" / "failures.md").read_text()
