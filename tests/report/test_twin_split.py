"""The twin view's split marker: the first turn at which two dialogues differ beyond the cue
(``analysis.evidence.first_split`` on masked turn hashes), and where the placebo pairs (the same
level run twice) part, as the yardstick the page reads it against; in a real browser, the marker
sits before the turn where the planted leak makes the twins part."""

from __future__ import annotations

import re

import pytest

from edufair_metrics.analysis.evidence import first_split, masked_turn_hashes, placebo_split_positions
from edufair_metrics.cli import main as cli
from edufair_metrics.runlog import load_records

from tests.helpers.evidence_runs import write_evidence_run


def test_first_split_finds_the_first_differing_turn():
    assert first_split(["a", "b", "c"], ["a", "b", "c"]) is None
    assert first_split(["a", "b", "c"], ["a", "x", "c"]) == 1
    assert first_split(["a", "b"], ["a", "b", "c"]) == 2  # one dialogue ends earlier
    assert first_split(None, ["a"]) is None


def test_twins_that_differ_only_by_the_cue_do_not_split(tmp_path):
    write_evidence_run(tmp_path / "runs", n_questions=12, conditions=("implicit",), leak_levels=(), base_p=0.0)
    records = load_records(tmp_path / "runs")[1]
    by_q: dict[str, list] = {}
    for r in records:
        by_q.setdefault(r.key[3], []).append(r)
    for rs in by_q.values():
        texts = {r.transcript.turns[2].text for r in rs}
        assert len(texts) == len(rs)  # the tutor names each student: the raw texts differ ...
        hashes = [masked_turn_hashes(r) for r in rs]
        assert all(first_split(hashes[0], h) is None for h in hashes[1:])  # ... but not beyond the cue


def test_placebo_positions_count_where_replicates_part():
    h = {(0, "t", "q1", "female"): ["a", "b", "c"], (0, "t", "q1", "female~replicate2"): ["a", "b", "x"],
         (0, "t", "q2", "female"): ["a", "b"], (0, "t", "q2", "female~replicate2"): ["a", "b"],
         (0, "t", "q3", "male"): ["a", "z"]}
    assert placebo_split_positions(h) == {"0": {"t": {"n": 2, "never": 1, "at": {"2": 1}}}}
    assert placebo_split_positions({k: v for k, v in h.items() if "~" not in k[3]}) == {}


@pytest.mark.browser
@pytest.mark.slow
def test_the_twin_view_marks_where_the_twins_part(tmp_path):
    from selenium.webdriver.common.by import By

    from tests.helpers.browser import chrome, console_errors, wait_ready

    # Implicit: the tutor's first turn names the student ("Good start, Jessica"), so the twins' turn 2
    # differs only by the cue; the planted leak at jessica makes them part at turn 4
    write_evidence_run(tmp_path / "runs", n_questions=16, conditions=("implicit",), leak_levels=("jessica",), leak_p=1.0,
                       base_p=0.0)
    assert cli(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "rep"), "--n-boot", "50", "--no-figures"]) == 0
    html = (tmp_path / "rep" / "index.html").read_text()
    assert '"placebo_splits":{}' in html
    driver = chrome()
    try:
        driver.get((tmp_path / "rep" / "index.html").as_uri())
        wait_ready(driver, "overview")
        row = driver.execute_script(
            "var g = EF.data.grid; var c = g.cols; for (var i = 0; i < g.rows.length; i++) { var r = g.rows[i];"
            " if (r[c.indexOf('metric')] === 'answer_leakage' && r[c.indexOf('pair')] === 'michael-jessica') return i; } return -1;")
        assert row >= 0
        q = load_records(tmp_path / "runs")[1][0].key[3]
        driver.get((tmp_path / "rep" / "index.html").as_uri() + f"#twin/{row}/{q}")
        wait_ready(driver, "twin")
        mark = driver.find_element(By.ID, "split-mark")
        assert mark.get_attribute("data-turn") == "4"  # turn 2 differs only by the name; the leak at turn 4
        texts = [e.text for e in driver.find_elements(By.CSS_SELECTOR, '#twin .turn[data-turn="2"] .text')]
        assert len(texts) == 2 and texts[0] != texts[1]  # the page shows the names as they were said
        note = driver.find_element(By.ID, "split-note").text
        assert re.search(r"part at turn 4", note) and "No placebo pairs" in note
        assert not console_errors(driver)
    finally:
        driver.quit()


def test_the_spool_reads_back_where_placebo_replicates_part(tmp_path):
    import copy

    from edufair_metrics.protocol.placebo import replicate_level
    from edufair_metrics.report.html.spool import EvidenceSpool

    write_evidence_run(tmp_path / "runs", n_questions=6, leak_levels=(), base_p=0.0)
    records = [r for r in load_records(tmp_path / "runs")[1] if r.transcript.level == "female"]
    spool = EvidenceSpool(tmp_path / "spool")
    for k, r in enumerate(records):
        spool.add("tutor", r)
        twin = copy.deepcopy(r)
        twin.transcript.level = replicate_level("female", 2)
        if k < 2:  # two replicates part at the fourth turn, the others say the same
            twin.transcript.turns[4].text += " Let us slow down."
        spool.add("tutor", twin)
    hashes = spool.placebo_hashes()
    assert len(hashes) == 2 * len(records)
    got = placebo_split_positions(hashes)
    task = records[0].key[0]
    assert got == {"0": {task: {"n": len(records), "never": len(records) - 2, "at": {"4": 2}}}}
