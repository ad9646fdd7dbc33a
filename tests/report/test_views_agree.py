"""The views of one audit agree: index.html shows every banner summary.md shows,
from one source (``report/sections/banners.py``); one ranking quantity in the report's HTML
leaderboard and ``edufair leaderboard``; a leaderboard a person can read (the columns that decide,
every column in the CSV); no ``<NA>`` in the verdicts table; the placebo's cost is computed from the
run; one level order in every table (the protocol data's)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pandas as pd

from edufair_metrics.analysis.params import StatParams
from edufair_metrics.analysis.placebo import placebo_cost
from edufair_metrics.cli import main as cli
from edufair_metrics.protocol import condition_levels
from edufair_metrics.protocol.placebo import replicate_level
from edufair_metrics.report.leaderboard import DECIDING, PRIMARY
from edufair_metrics.report.placebo import cost_sentence
from edufair_metrics.report.sections.banners import plain_text
from edufair_metrics.report.write import read_report_inputs, write_report

from tests.helpers.synthetic_runs import make_scores, write_run


def page_data(report: Path) -> dict:
    html = (report / "index.html").read_text(encoding="utf-8")
    m = re.search(r"EF\.data = (\{.*?\});\n</script>", html, re.S)
    assert m, "no inline data"
    return json.loads(m.group(1))


def _table_header(md: str) -> list[str]:
    line = next(ln for ln in md.splitlines() if ln.startswith("| "))
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]


def test_every_banner_of_summary_md_is_in_the_html_view(tmp_path):
    """Four banners at once (too few questions, most labels missing, a constant judge): summary.md's
    top is exactly the page's banners, in the same order, with the same words."""
    write_run(tmp_path / "runs", "org/tutor-a", conditions=("explicit",), domains=("physics",), n_questions=4,
              missing_rate=0.6, seed=1)
    inputs = read_report_inputs([tmp_path / "runs"], evidence=False)
    inputs.scans[0].values["answer_leakage"] = {0: 40}  # the judge gave 0 on every labelled turn
    write_report(inputs, tmp_path / "rep", StatParams(n_boot=20), figures=False)
    banners = page_data(tmp_path / "rep")["banners"]
    assert [b["key"] for b in banners] == ["not_testable", "degenerate_judge", "missing_labels", "all_insufficient"]
    summary = (tmp_path / "rep" / "summary.md").read_text()
    top = summary.split("\n\n", 1)[1].split("### Run card")[0]
    assert top == "".join(b["markdown"] + "\n\n" for b in banners)  # nothing in summary.md the page lacks
    for b in banners:
        assert b["text"] == plain_text(b["markdown"]) and b["level"] in ("fail", "warn", "info")
    degenerate = next(b for b in banners if b["key"] == "degenerate_judge")["text"]
    assert "org/tutor-a: answer_leakage: the judge gave 0 on all 40 labelled turns" in degenerate
    missing = next(b for b in banners if b["key"] == "missing_labels")["text"]
    rates = pd.read_csv(tmp_path / "rep" / "missing_labels.csv")
    share = rates["missing_turns"].sum() / rates["sent_turns"].sum()
    assert f"org/tutor-a {share:.1%} ({int(rates['missing_turns'].sum()):,} of" in missing


def test_the_page_renders_the_banners_it_is_given():
    """viewer.js draws D.banners (the Markdown marks summary.md uses) and no banner text of its own."""
    js = (Path(__file__).resolve().parents[2] / "edufair_metrics" / "report" / "html" / "assets" / "viewer.js").read_text()
    assert "bannerBoxes().forEach" in js and "D.banners" in js
    assert "exchangeability check failed" not in js and "Not testable\"" not in js  # no second wording
    assert "ranked by ped excess" not in js and "h[\"ped excess |r̄|\"]" not in js


def test_one_ranking_quantity_in_the_html_view_and_the_leaderboard(tmp_path):
    root = tmp_path / "runs"
    kw = dict(conditions=("explicit",), domains=("physics",), n_questions=15)
    write_run(root, "org/fair", seed=1, **kw)
    write_run(root, "org/biased", seed=2, bias={("explicit", "female", "*"): 0.4}, **kw)
    assert cli(["leaderboard", str(root), "--out", str(tmp_path / "lb"), "--n-boot", "20"]) == 0
    board = pd.read_csv(tmp_path / "lb" / "leaderboard.csv")
    write_report(read_report_inputs([root], evidence=False), tmp_path / "rep", StatParams(n_boot=20), figures=False)
    page = page_data(tmp_path / "rep")
    shown = pd.DataFrame(page["leaderboard"]["rows"], columns=page["leaderboard"]["cols"])
    assert page["rank_column"] == PRIMARY == "ped unbiased |r̄|"
    assert list(shown.columns) == [c for c in DECIDING if c in board.columns]  # the short table
    assert list(shown["tutor"]) == list(board["tutor"]) == ["org/fair", "org/biased"]
    assert list(shown[PRIMARY].round(6)) == list(board[PRIMARY].round(6))
    assert list(board[PRIMARY]) == sorted(board[PRIMARY])  # ranked by it
    # the report writes the same full table
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "rep" / "leaderboard.csv"), board)
    md = (tmp_path / "lb" / "leaderboard.md").read_text()
    assert _table_header(md) == list(shown.columns) and "every column" in md
    assert list(board.columns[:len(shown.columns)]) == list(shown.columns)  # the CSV: the deciding ones first
    assert {"ped excess |r̄|", "ped |r̄|", "ped viol.", "explicit", "step_scaffolded"} <= set(board.columns)
    assert len(shown.columns) <= 12 < len(board.columns)


def test_the_verdicts_table_says_dash_never_na(tmp_path):
    write_run(tmp_path / "runs", "org/tutor-a", conditions=("explicit",), domains=("physics",), n_questions=3)
    write_report(read_report_inputs([tmp_path / "runs"], evidence=False), tmp_path / "rep", StatParams(n_boot=10),
                 figures=False, html=False)
    summary = (tmp_path / "rep" / "summary.md").read_text()
    assert "<NA>" not in summary
    verdicts = summary.split("### Verdicts per tutor")[1].split("\n\n")[1]
    row = verdicts.splitlines()[2].split(" | ")
    assert row[-4:] == ["—", "—", "—", "— |"]  # unbiased |r̄|, median n, median MDE, more questions


def _scores_of(levels, n_questions=6, placebo=None):
    scores = [s for s in make_scores(domains=("physics",), conditions=("explicit",), n_questions=n_questions)
              if s.level in levels]
    if placebo:
        scores += [dataclasses.replace(s, level=replicate_level(placebo, 2)) for s in scores if s.level == placebo]
    return scores


class _Run:
    def __init__(self, label, scores):
        self.label, self.scores = label, scores


def test_the_placebo_cost_is_its_dialogues_over_the_main_run():
    # two Explicit levels, one replicated: 6 extra dialogues over 12 = +50% (not "+11%", 1 of 9 levels)
    paid = placebo_cost([_Run("t", _scores_of({"female", "male"}, placebo="female"))])
    assert paid.iloc[0][["dialogues", "main", "placebo"]].tolist() == [18, 12, 6]
    assert cost_sentence(paid) == "Cost: the placebo replicate added 6 dialogues, +50% over the main run's 12."
    # no replicate: one replicate of female would add its 6 dialogues to the 9 levels' 54: +11%
    hint = cost_sentence(placebo_cost([_Run("t", _scores_of({lv.level for lv in condition_levels("explicit")}))]))
    assert hint == "one replicate of female adds 6 dialogues, +11% over this run's 54"


def test_every_table_lists_levels_in_the_protocol_order(tmp_path):
    write_run(tmp_path / "runs", "org/tutor-a", conditions=("explicit", "implicit"), domains=("physics",),
              n_questions=3, missing_rate=0.3, seed=3)
    write_report(read_report_inputs([tmp_path / "runs"], evidence=False), tmp_path / "rep", StatParams(n_boot=10),
                 figures=False, html=False)
    protocol = {c: [lv.level for lv in condition_levels(c)] for c in ("explicit", "implicit")}
    for name in ("levels.csv", "missing_labels.csv"):
        t = pd.read_csv(tmp_path / "rep" / name)
        for cond, want in protocol.items():
            assert list(t.loc[t["condition"] == cond, "level"]) == want, (name, cond)
        assert list(dict.fromkeys(t["condition"])) == ["explicit", "implicit"], name


def test_the_implicit_names_report_raises_no_warning(tmp_path):
    """The many-names report (names.csv, its two tables, the spread and name checks) with missing
    labels and few questions, every warning an error (a pandas RuntimeWarning was seen there once)."""
    import warnings

    scores = make_scores(domains=("physics",), conditions=("implicit_names",), n_questions=5, seed=3, missing_rate=0.3)
    write_run(tmp_path / "runs", "org/ext", scores=scores)
    inputs = read_report_inputs([tmp_path / "runs"], evidence=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_report(inputs, tmp_path / "rep", StatParams(n_boot=10, min_pairs=4), figures=False, html=False)
    assert pd.read_csv(tmp_path / "rep" / "names.csv")["name"].nunique() > 2
    assert (tmp_path / "rep" / "table_implicit_names_spread.md").is_file()
