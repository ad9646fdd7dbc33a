"""Every term a table of the report uses is defined in the glossary (glossary.md, the HTML view's
#glossary page, linked from summary.md and index.html): the columns of summary.md's tables, the
leaderboard's, the verdict words and the marks of the tables' notes."""

from __future__ import annotations

import re

from edufair_metrics.analysis.params import StatParams
from edufair_metrics.report.glossary import GLOSSARY_FILE, define, glossary_rows
from edufair_metrics.report.html import VERDICTS
from edufair_metrics.report.leaderboard import DECIDING
from edufair_metrics.report.write import read_report_inputs, write_report

from tests.helpers.synthetic_runs import write_run


def _headers(md: str) -> set[str]:
    lines = md.splitlines()
    out = set()
    for line, below in zip(lines, lines[1:]):
        if line.startswith("| ") and below.startswith("|---"):
            out |= {c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])}
    return out


def test_the_rule():
    assert define("ped excess |r̄|").startswith("excess |r̄| of the pedagogical metrics: ")
    assert define("conv FDR viol.").startswith("FDR viol. of the conversation metrics: ")
    assert define("answer_leakage") and "↓" in define("answer_leakage")
    assert define("ped nonsense") is None and define("xyz |r̄|") is None
    terms = [t for t, _ in glossary_rows()]
    assert len(terms) == len(set(terms)) and all(text for _, text in glossary_rows())


def test_every_column_of_summary_md_and_the_leaderboard_and_every_verdict_word_is_defined(tmp_path):
    root = tmp_path / "runs"
    write_run(root, "org/tutor-b", seed=2, bias={("explicit", "female", "*"): 0.5}, conditions=("explicit",),
              domains=("physics",), n_questions=16, missing_rate=0.05)
    write_report(read_report_inputs([root], evidence=False), tmp_path / "rep", StatParams(n_boot=20), figures=False)
    summary = (tmp_path / "rep" / "summary.md").read_text()
    assert GLOSSARY_FILE in summary.split("### Headline")[0]  # linked from the top
    tutors = {"org/tutor-b"}  # the run card's columns are the tutors: data, not terms
    used = (_headers(summary) - tutors) | set(DECIDING) | {v for v in VERDICTS} | {"—", "fl.", "‡", "§", "✓", "†", "*"}
    undefined = sorted(t for t in used if define(t) is None)
    assert not undefined, undefined
    glossary = (tmp_path / "rep" / GLOSSARY_FILE).read_text()
    assert "- **ped**: " in glossary and "- **FDR viol.**: " in glossary
    page = (tmp_path / "rep" / "index.html").read_text()
    assert '"glossary":[["r",' in page and 'href: "#glossary"' in page
