"""The noise floor in the reports: every number read against its noise. On synthetic runs with a known
truth — three tutors with NO bias (identical score distributions, different random draws) and one
with an injected bias — ``edufair report``, ``leaderboard`` and ``compare`` show the paper's |r̄| and
raw violations beside the mean excess |r̄| and the FDR violations, the power line, the ``†``
marker, and rank intervals with ties; the lm-eval aggregations give the same numbers."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from edufair_metrics.lmeval import aggregations
from edufair_metrics.analysis.noise import noise_headline
from edufair_metrics.analysis.params import StatParams, analyse, analyse_frame
from edufair_metrics.cli import main as cli
from edufair_metrics.records import PEDAGOGICAL_METRICS
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.runlog import load_runs
from tests.helpers.synthetic_runs import make_scores, write_run

KW = dict(domains=("mathematics", "physics"), n_questions=40)
NULL = ("org/null-a", "org/null-b", "org/null-c")
BIASED = "org/biased"
# a moderate bias on every metric at two levels (rates of a few judged turns: shifts of ~1 turn in 5)
BIAS = {("explicit", "female", "*"): 0.2, ("implicit", "michael", "*"): 0.2}
B = 200


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("noise") / "out"
    for k, tutor in enumerate(NULL):
        write_run(root, tutor, seed=30 + k, **KW)
    write_run(root, BIASED, seed=40, bias=BIAS, **KW)
    return root


@pytest.fixture(scope="module")
def report(runs_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "rep"
    assert cli(["report", str(runs_dir), "--out", str(out), "--n-boot", str(B), "--no-figures"]) == 0
    return out


@pytest.fixture(scope="module")
def expected(runs_dir):
    """The library's numbers for the same runs and parameters (what the report must show)."""
    df, grid, units = analyse(load_runs([runs_dir]), StatParams(n_boot=B))
    return df, grid, units, noise_headline(units, kind="pedagogical").set_index("tutor")


def _headline_rows(summary: str) -> pd.DataFrame:
    block = summary.split("### Headline per tutor", 1)[1].strip().split("\n\n", 1)[0].splitlines()
    cols = [c.strip().replace("\\|", "|") for c in block[0].strip("|").split(" | ")]
    rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in block[2:]]
    return pd.DataFrame(rows, columns=cols).set_index("tutor")


def test_summary_shows_raw_and_fdr_violations_and_excess(report, expected):
    *_, ped = expected
    head = _headline_rows((report / "summary.md").read_text())
    for tutor in NULL + (BIASED,):
        row, exp = head.loc[tutor], ped.loc[tutor]
        assert float(row["ped |r̄|"]) == pytest.approx(exp["abs_r"], abs=5e-4)
        assert float(row["ped excess |r̄|"]) == pytest.approx(exp["excess_abs_r"], abs=5e-4)
        assert int(row["ped viol."]) == exp["violations"] and int(row["ped FDR viol."]) == exp["violations_fdr"]
    # known truth: no bias -> raw "violations" appear by chance, FDR ones (almost) never
    raw_null = sum(int(head.loc[t, "ped viol."]) for t in NULL)
    fdr_null = sum(int(head.loc[t, "ped FDR viol."]) for t in NULL)
    units_null = sum(int(head.loc[t, "ped units"]) for t in NULL)
    assert raw_null >= 3 and fdr_null <= 0.01 * units_null
    assert all(abs(float(head.loc[t, "ped excess |r̄|"])) < 0.03 for t in NULL)  # ≈ 0 without bias
    # the injected bias is found after FDR and stands out in excess |r̄|
    assert int(head.loc[BIASED, "ped FDR viol."]) >= 10
    assert float(head.loc[BIASED, "ped excess |r̄|"]) > 0.1


def test_summary_power_per_metric_and_domain(report, expected):
    """One MDE per metric and domain (min–max over the cell's contrasts), not one pooled power line."""
    from edufair_metrics.analysis.verdicts import mde_from_null_var

    _, grid, units, _ = expected
    summary = (report / "summary.md").read_text()
    block = summary.split("### Power: smallest flaggable |r| per metric and domain (pedagogical)", 1)[1]
    lines = [x for x in block.strip().split("\n\n")[0].splitlines() if x.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split(" | ")]
    rows = [[c.strip() for c in x.strip("|").split(" | ")] for x in lines[1:]]
    assert len(rows) == 4 * 2  # tutor × domain
    row = next(r for r in rows if r[0] == NULL[0] and r[1].startswith("physics"))
    g = grid[(grid["tutor"] == NULL[0]) & (grid["domain"] == "physics") & grid["headline"] & grid["sufficient"]
             & (grid["metric"] == "actionability")]
    cell = row[header.index("actionability")]
    lo, _, hi = cell.split(" [")[0].partition("–")
    assert float(lo) == pytest.approx(round(g["mde_r"].min(), 2)) and float(hi or lo) == pytest.approx(round(g["mde_r"].max(), 2))
    # mde_r is the closed-form power of the row's own null variance at the flag level α / (m · k)
    fam = units[(units["tutor"] == NULL[0]) & units["headline"] & (units["metric_kind"] == "pedagogical")
                & units["sufficient"]]
    k = g["unit_pairs"].to_numpy()
    assert g["mde_r"].to_numpy() == pytest.approx(mde_from_null_var(g["null_var_r"].to_numpy(), 0.05 / (len(fam) * k)))
    assert "Power (pedagogical headline contrasts" not in summary  # the pooled line is gone


def test_summary_verdicts_per_tutor_never_just_none(report, expected):
    *_, units, _ = expected
    summary = (report / "summary.md").read_text()
    assert "### Verdicts per tutor (margin ±0.10)" in summary
    for tutor in NULL:
        line = next(x for x in summary.splitlines() if x.startswith(f"- {tutor}: pedagogical headline units:"))
        assert "certified within ±0.10" in line and "inconclusive" in line and "not certified" in line
    u = units[(units["tutor"] == BIASED) & units["headline"] & (units["metric_kind"] == "pedagogical")]
    line = next(x for x in summary.splitlines() if x.startswith(f"- {BIASED}: pedagogical headline units:"))
    assert line.split(": pedagogical headline units: ")[1].startswith(f"{int((u['verdict'] == 'flag').sum())} flagged")
    assert "### Flagged units" in summary and "\nNone.\n" not in summary
    assert "as printed in the paper (not noise-corrected)" in summary


def test_grid_csv_has_noise_columns_and_tables_mark_fdr(report, expected):
    grid = pd.read_csv(report / "grid.csv")
    assert {"null_abs_r", "excess_abs_r", "p_perm", "q_value", "violation_fdr"} <= set(grid.columns)
    assert (grid.loc[grid["violation_fdr"], "violation"]).all()  # FDR violations are raw violations too
    assert (grid["excess_abs_r"] - (grid["abs_r"] - grid["null_abs_r"])).abs().max() < 1e-12
    units = pd.read_csv(report / "units.csv")
    assert {"null_abs_r", "excess_abs_r", "violation_fdr"} <= set(units.columns)
    t9 = pd.read_csv(report / "table9_gender_paper.csv")  # the paper's marks
    biased = t9[t9["Model"] == BIASED]
    null = t9[t9["Model"].isin(NULL)]
    cells = lambda df: [c for col in df.columns if "↑" in col or "↓" in col for c in df[col]]  # noqa: E731
    assert sum(c.endswith("*†") for c in cells(biased)) >= 5
    assert not any(c.endswith("†") for c in cells(null))
    # the marker is exactly the grid's violation_fdr
    g = grid[(grid["condition"] == "explicit") & (grid["dimension"] == "gender") & grid["metric"].isin(PEDAGOGICAL_METRICS)]
    assert sum(c.endswith("†") for c in cells(t9)) == int(g["violation_fdr"].sum())
    assert "†: also an FDR violation" in (report / "table9_gender_paper.md").read_text()
    # the verdict view: each cell carries its row's verdict
    tv = pd.read_csv(report / "table9_gender.csv")
    assert sum(c.endswith(" flag") for c in cells(tv)) == int((g["verdict"] == "flag").sum()) >= 5


def test_leaderboard_ranks_by_unbiased_abs_r_with_rank_intervals_and_ties(runs_dir, expected, tmp_path):
    from edufair_metrics.analysis.verdicts import verdict_headline

    *_, units, ped = expected
    out = tmp_path / "lb"
    assert cli(["leaderboard", str(runs_dir), "--out", str(out), "--n-boot", str(B)]) == 0
    lb = pd.read_csv(out / "leaderboard.csv")
    assert list(lb.columns[:5]) == ["rank", "tutor", "ped unbiased |r̄|", "rank 95% interval", "tied with"]
    assert {"ped |r̄|", "ped excess |r̄|", "ped viol.", "ped FDR viol.", "ped flagged", "ped certified",
            "ped inconclusive", "ped family certified", "ped median n"} <= set(lb.columns)
    # ranked by the stated primary quantity
    v = verdict_headline(units, kind="pedagogical").set_index("tutor")
    assert list(lb["ped unbiased |r̄|"]) == sorted(lb["ped unbiased |r̄|"])
    assert list(lb["tutor"]) == list(v["unbiased_abs_r"].sort_values().index)
    assert lb.iloc[-1]["tutor"] == BIASED and lb.iloc[-1]["rank 95% interval"] == "4"
    assert lb.iloc[-1]["tied with"] == "—"
    null = lb[lb["tutor"].isin(NULL)]
    assert (null["tied with"] != "—").all()  # identical tutors: the data do not order them
    for row in null.itertuples(index=False):
        assert set(row[4].split(", ")) <= set(NULL) - {row.tutor}
        lo, _, hi = row[3].partition("–")
        assert 1 <= int(lo) < int(hi or lo) <= 3
    md = (out / "leaderboard.md").read_text()
    assert "Ranked by ped unbiased |r̄| (primary; lower = fairer)" in md and "tied with" in md
    assert "Warning: the tutors were compared on different numbers of questions" not in md  # same n for all
    man = json.loads((out / "leaderboard_manifest.json").read_text())
    assert man["primary_quantity"]["column"] == "ped unbiased |r̄|"


def test_compare_reports_the_change_in_excess_beside_the_change_in_abs_r(runs_dir, tmp_path, capsys):
    base, cand = runs_dir / "org__null-a", runs_dir / "org__biased"
    out = tmp_path / "c"
    rc = cli(["compare", "--baseline", str(base), "--candidate", str(cand), "--n-boot", str(B), "--out", str(out)])
    assert rc == 1  # the injected bias fails the (unchanged) gate
    man = json.loads((out / "compare_manifest.json").read_text())
    h = man["headline"]
    assert h["delta_excess"] == pytest.approx(h["excess_candidate"] - h["excess_baseline"])
    assert h["delta_excess"] > 0.1 and h["delta_excess_ci_low"] > 0
    # Δ excess = Δ |r̄| − Δ noise floor; its CI is the Δ CI shifted by the same amount
    shift = h["delta"] - h["delta_excess"]
    assert h["delta_excess_ci_low"] == pytest.approx(h["delta_ci_low"] - shift)
    assert h["violations_fdr_candidate"] > h["violations_fdr_baseline"] == 0
    assert h["violations_baseline"] >= h["violations_fdr_baseline"]
    text = capsys.readouterr().out
    assert "Δ excess" in text and "(FDR)" in text
    units = pd.read_csv(out / "compare.csv")
    assert {"delta_excess", "excess_abs_r_baseline", "violation_fdr_candidate"} <= set(units.columns)


def test_compare_of_a_run_with_itself_changes_nothing(runs_dir, tmp_path):
    run = runs_dir / "org__null-b"
    out = tmp_path / "c"
    assert cli(["compare", "--baseline", str(run), "--candidate", str(run), "--n-boot", "50", "--out", str(out)]) == 0
    h = json.loads((out / "compare_manifest.json").read_text())["headline"]
    assert h["delta"] == 0 and h["delta_excess"] == 0
    assert h["violations_fdr_baseline"] == h["violations_fdr_candidate"]


def test_aggregations_use_the_same_functions():
    scores = make_scores(conditions=("explicit",), n_questions=30, seed=7, bias={("explicit", "female", "*"): 0.3})
    items = [s.to_dict() for s in scores] + [None]
    grid, units = analyse_frame(scores_frame(scores), StatParams())
    ped = noise_headline(units.assign(tutor=""), kind="pedagogical")
    assert aggregations.agg_ped_excess_abs_r(items) == pytest.approx(float(ped["excess_abs_r"].iloc[0]))
    assert aggregations.agg_ped_abs_r(items) == pytest.approx(float(ped["abs_r"].iloc[0]))
    head = units[units["headline"] & units["sufficient"]]
    assert aggregations.agg_violations_fdr(items) == float(head["violation_fdr"].sum()) >= 1
    assert aggregations.agg_violations_fdr(items) <= aggregations.agg_violations(items)
    few = [s.to_dict() for s in make_scores(conditions=("explicit",), n_questions=5)]
    assert math.isnan(aggregations.agg_ped_excess_abs_r(few)) and math.isnan(aggregations.agg_violations_fdr(few))


def test_fdr_method_holm_is_offered_and_stricter(runs_dir, report, tmp_path):
    from edufair_metrics.analysis.noise import adjust_p

    out = tmp_path / "holm"
    assert cli(["report", str(runs_dir), "--out", str(out), "--n-boot", str(B), "--no-figures", "--fdr-method", "holm"]) == 0
    bh, holm = pd.read_csv(report / "grid.csv"), pd.read_csv(out / "grid.csv")
    pd.testing.assert_series_equal(bh["r"], holm["r"])  # only the multiplicity columns change
    assert (holm["q_value"].fillna(1) >= bh["q_value"].fillna(1) - 1e-12).all()
    assert holm["violation_fdr"].sum() <= bh["violation_fdr"].sum()
    # one family (a tutor's pedagogical headline rows) adjusted by Holm, recomputed here
    fam = holm[(holm["tutor"] == BIASED) & (holm["metric_kind"] == "pedagogical") & holm["headline"] & holm["sufficient"]]
    assert fam["q_value"].to_numpy() == pytest.approx(adjust_p(fam["p"].to_numpy(), "holm"))
    assert json.loads((out / "report_manifest.json").read_text())["parameters"]["fdr_method"] == "holm"
    assert "multiplicity correction Holm (family-wise)" in (out / "summary.md").read_text()
    with pytest.raises(SystemExit) as exc:  # argparse: not a method on offer
        cli(["report", str(runs_dir), "--out", str(tmp_path / "x"), "--fdr-method", "bonferroni"])
    assert exc.value.code == 2


def test_aggregations_count_units_by_verdict_like_the_report():
    from edufair_metrics.analysis.verdicts import verdict_headline

    scores = make_scores(conditions=("explicit",), n_questions=30, seed=7, bias={("explicit", "female", "*"): 0.3})
    items = [s.to_dict() for s in scores] + [None]
    _, units = analyse_frame(scores_frame(scores), aggregations.STAT_PARAMS)
    # tutor-side (pedagogical) headline units only: the other kinds have headline units too
    assert (units["headline"] & (units["metric_kind"] != "pedagogical") & units["sufficient"]).any()
    head = units[units["headline"] & (units["metric_kind"] == "pedagogical")]
    assert aggregations.agg_flagged_units(items) == float((head["verdict"] == "flag").sum()) >= 1
    assert aggregations.agg_certified_units(items) == float((head["verdict"] == "certify").sum())
    assert aggregations.agg_inconclusive_units(items) == float((head["verdict"] == "inconclusive").sum()) >= 1
    v = verdict_headline(units[units["sufficient"]].assign(tutor=""))
    assert aggregations.agg_ped_unbiased_abs_r(items) == pytest.approx(float(v["unbiased_abs_r"].iloc[0]))
    # the margin comes from the task's statistics parameters (edufair.statistics; bound by the task)
    wide = aggregations.agg_certified_units(items, params=StatParams(equivalence_margin=0.9))
    assert wide > float((head["verdict"] == "certify").sum()) and wide > 0
    few = [s.to_dict() for s in make_scores(conditions=("explicit",), n_questions=5)]
    assert math.isnan(aggregations.agg_flagged_units(few)) and math.isnan(aggregations.agg_ped_unbiased_abs_r(few))


def test_template_names_the_verdict_aggregations():
    from lm_eval_tasks import task as task_module
    from tests.helpers.synthetic_runs import task_template

    metrics = {m["metric"]: m["aggregation"] for m in task_template()["metric_list"]}
    for metric in ("flagged_units", "certified_units", "inconclusive_units", "ped_unbiased_abs_r"):
        fn = metrics[metric].split(".")[-1]
        assert hasattr(task_module, fn) and fn in task_module.__all__


def test_report_margin_and_simultaneous(runs_dir, report, tmp_path):
    out = tmp_path / "wide"
    assert cli(["report", str(runs_dir), "--out", str(out), "--n-boot", str(B), "--no-figures", "--margin", "0.45",
                "--simultaneous"]) == 0
    narrow, wide = pd.read_csv(report / "units.csv"), pd.read_csv(out / "units.csv")
    assert (wide["verdict"] == "certify").sum() > (narrow["verdict"] == "certify").sum()
    assert "verdict_sim" in wide.columns and "verdict_sim" not in narrow.columns
    grid = pd.read_csv(out / "grid.csv")
    assert {"sim_ci_low", "sim_ci_high", "sim_flagged", "sim_certified", "verdict_sim"} <= set(grid.columns)
    summary = (out / "summary.md").read_text()
    assert "Simultaneous verdicts (family-wise over the whole grid)" in summary and "margin ±0.45" in summary
    man = json.loads((out / "report_manifest.json").read_text())
    assert man["parameters"]["equivalence_margin"] == 0.45 and man["parameters"]["simultaneous"] is True
    with pytest.raises(SystemExit):
        cli(["report", str(runs_dir), "--out", str(tmp_path / "bad"), "--margin", "abc"])
    assert cli(["report", str(runs_dir), "--out", str(tmp_path / "bad2"), "--margin", "1.5"]) == 2


def test_leaderboard_warns_when_tutors_have_very_different_n(tmp_path):
    root = tmp_path / "runs"
    write_run(root, "org/small", seed=1, conditions=("explicit",), domains=("physics",), n_questions=20)
    write_run(root, "org/large", seed=2, conditions=("explicit",), domains=("physics",), n_questions=45)
    out = tmp_path / "lb"
    assert cli(["leaderboard", str(root), "--out", str(out), "--n-boot", "50", "--margin", "0.2", "--simultaneous"]) == 0
    md = (out / "leaderboard.md").read_text()
    assert {"ped sim. flagged", "ped sim. certified"} <= set(pd.read_csv(out / "leaderboard.csv").columns)
    assert "Warning: the tutors were compared on different numbers of questions" in md
    assert "org/small 20" in md and "Margin: ±0.20" in md
    assert json.loads((out / "leaderboard_manifest.json").read_text())["sample_size_warning"]
