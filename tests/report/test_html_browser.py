"""The HTML report in a real browser (headless Chromium, selenium): from ``edufair report`` to the
twin transcripts behind a flagged cell in two clicks, opened from ``file://``, with no console
error. Screenshots of each view are saved under the test's temporary folder (``screenshots/``;
CI keeps them as artefacts). Skipped, with the reason, where Chromium, chromedriver or selenium is
missing (``tests/helpers/extras.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edufair_metrics.cli import main as cli

from tests.helpers.evidence_runs import write_evidence_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    write_evidence_run(root / "runs", n_questions=20, conditions=("explicit", "implicit"), leak_levels=("female", "jessica"),
                       failed=[(3, "male")])
    write_evidence_run(root / "runs", "org/tutor-fair", n_questions=20, leak_levels=(), seed=5)
    assert cli(["report", str(root / "runs"), "--out", str(root / "report"), "--n-boot", "200", "--no-figures"]) == 0
    return root / "report"


@pytest.fixture(scope="module")
def browser():
    from tests.helpers.browser import chrome

    driver = chrome()
    yield driver
    driver.quit()


def test_two_clicks_from_the_report_to_the_twin_transcripts_of_a_flagged_cell(report, browser, tmp_path):
    from selenium.webdriver.common.by import By

    from tests.helpers.browser import click, console_errors, full_page_screenshot, wait_ready

    shots = tmp_path / "screenshots"
    shots.mkdir()
    browser.get((report / "index.html").as_uri())  # file://, as a user opens it
    wait_ready(browser, "overview")
    full_page_screenshot(browser, shots / "1-overview.png")
    flagged = browser.find_elements(By.CSS_SELECTOR, 'td.cell[data-verdict="flag"]')
    assert flagged, "no flagged cell in the grid"
    assert browser.find_elements(By.CSS_SELECTOR, "#flagged .flag-item")  # the flagged list above the grid
    leak = [c for c in flagged if c.get_attribute("title").startswith("Answer leakage · female − male")]
    assert leak, [c.get_attribute("title").splitlines()[0] for c in flagged]

    # click 1: the flagged cell -> its paired differences and the questions by |d|
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", leak[0])
    click(browser, leak[0])
    wait_ready(browser, "cell")
    assert "Flag" in browser.find_element(By.ID, "verdict").text
    assert browser.find_elements(By.CSS_SELECTOR, "#hist rect")
    rows = browser.find_elements(By.CSS_SELECTOR, "#qtable tbody tr")
    assert len(rows) >= 15
    full_page_screenshot(browser, shots / "2-cell.png")

    # click 2: the question with the largest |d| -> the two dialogues side by side
    click(browser, rows[0].find_element(By.CSS_SELECTOR, "td.qtext a"))
    wait_ready(browser, "twin")
    heads = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#twin .colhead .lv")]
    assert heads == ["female", "male"]
    cues = [m.text for m in browser.find_elements(By.CSS_SELECTOR, "#twin .promptline > span > mark.cue")]
    assert "This is a Grade 8 female student taking a physics class." in cues
    assert "This is a Grade 8 male student taking a physics class." in cues
    stops = browser.find_elements(By.CSS_SELECTOR, "#twin .turn.stopped mark.stop")
    assert stops and stops[0].text  # the gold answer the tutor stated, highlighted
    assert browser.find_elements(By.CSS_SELECTOR, '#twin .lab.focus[data-field="answer_leakage"]')
    assert browser.find_elements(By.CSS_SELECTOR, '#twin .lab[data-det="leak"]')
    # both dialogues first; every score of both after them, collapsed until asked for
    assert browser.execute_script("return !!(document.getElementById('twin').compareDocumentPosition("
                                  "document.getElementById('scores-box')) & Node.DOCUMENT_POSITION_FOLLOWING)")
    box = browser.find_element(By.ID, "scores-box")
    assert box.get_attribute("open") is None
    click(browser, box.find_element(By.TAG_NAME, "summary"))
    assert browser.find_element(By.ID, "scores").text.count("Answer leakage") == 1
    raw = browser.find_element(By.CSS_SELECTOR, "#twin details.judge-raw")
    click(browser, raw.find_element(By.TAG_NAME, "summary"))
    assert "answer_leakage" in raw.find_element(By.TAG_NAME, "pre").text  # the judge's raw output, on demand
    full_page_screenshot(browser, shots / "3-twin.png")

    # the next question by |d|, then the failures page and a failed dialogue
    click(browser, browser.find_element(By.ID, "next-q"))
    wait_ready(browser, "twin")
    browser.get((report / "index.html").as_uri() + "#failures")
    wait_ready(browser, "failures")
    full_page_screenshot(browser, shots / "4-failures.png")
    click(browser, browser.find_element(By.CSS_SELECTOR, "a.failed-link"))
    wait_ready(browser, "dialogue")
    assert "http_5xx" in browser.find_element(By.CSS_SELECTOR, ".endnote").text
    full_page_screenshot(browser, shots / "5-failed-dialogue.png")
    assert console_errors(browser) == []
    print(f"screenshots: {shots}")
    assert sorted(p.name for p in shots.iterdir()) == ["1-overview.png", "2-cell.png", "3-twin.png", "4-failures.png",
                                                        "5-failed-dialogue.png"]


def test_implicit_twin_shows_the_name_cue(report, browser):
    from selenium.webdriver.common.by import By

    from tests.helpers.browser import click, console_errors, wait_ready

    browser.get((report / "index.html").as_uri())
    wait_ready(browser, "overview")
    cells = [c for c in browser.find_elements(By.CSS_SELECTOR, 'table.vgrid[data-condition="implicit"] td.cell')
             if c.get_attribute("title").startswith("Answer leakage · michael − jessica")]
    assert cells
    row = cells[0].get_attribute("data-row")
    browser.get((report / "index.html").as_uri() + f"#cell/{row}")
    wait_ready(browser, "cell")
    click(browser, browser.find_element(By.CSS_SELECTOR, "#qtable tbody tr td.qtext a"))
    wait_ready(browser, "twin")
    cues = [m.text for m in browser.find_elements(By.CSS_SELECTOR, "#twin .promptline > span > mark.cue")]
    assert cues == ["The student’s name is Michael.", "The student’s name is Jessica."]
    # the tutor repeats the name in its turns: marked as a repeated cue
    assert {w.text for w in browser.find_elements(By.CSS_SELECTOR, "#twin span.cueword")} == {"Michael", "Jessica"}
    assert console_errors(browser) == []


def test_the_page_works_over_http_from_edufair_view(report, browser):
    """``edufair view`` serves the same files; the page and its on-demand files load over HTTP too."""
    import threading

    from selenium.webdriver.common.by import By

    from edufair_metrics.cli.view import serve

    from tests.helpers.browser import click, console_errors, wait_ready

    server = serve(Path(report))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        browser.get(base)
        wait_ready(browser, "overview")
        row = browser.find_element(By.CSS_SELECTOR, 'td.cell[data-verdict="flag"]').get_attribute("data-row")
        browser.get(f"{base}#cell/{row}")
        wait_ready(browser, "cell")
        click(browser, browser.find_element(By.CSS_SELECTOR, "#qtable tbody tr td.qtext a"))
        wait_ready(browser, "twin")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#twin .colhead")) == 2
        assert console_errors(browser) == []
    finally:
        server.shutdown()
        server.server_close()


def test_the_page_shows_every_banner_of_the_summary_and_the_glossary(tmp_path, browser):
    """The banners summary.md opens with (not testable, missing labels, every contrast insufficient)
    are drawn over the overview with the same words; the glossary page lists every term."""
    import json
    import re

    from selenium.webdriver.common.by import By

    from tests.helpers.browser import click, console_errors, wait_ready
    from tests.helpers.synthetic_runs import write_run

    write_run(tmp_path / "runs", "org/tutor-a", conditions=("explicit",), domains=("physics",), n_questions=4,
              missing_rate=0.6, seed=1)
    assert cli(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "rep"), "--n-boot", "20", "--no-figures"]) == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    data = json.loads(re.search(r"EF\.data = (\{.*?\});\n</script>", page, re.S).group(1))
    assert {b["key"] for b in data["banners"]} >= {"not_testable", "missing_labels", "all_insufficient"}
    browser.get((tmp_path / "rep" / "index.html").as_uri())
    wait_ready(browser, "overview")
    for b in data["banners"]:
        shown = " ".join(browser.find_element(By.ID, f"banner-{b['key']}").text.split())
        assert shown == b["text"], b["key"]
    click(browser, browser.find_element(By.ID, "glossary-link"))
    wait_ready(browser, "glossary")
    terms = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#glossary dt")]
    assert terms == [g[0] for g in data["glossary"]] and "ped excess |r̄|" not in terms and "excess |r̄|" in terms
    assert console_errors(browser) == []


def test_the_leaderboard_is_ranked_by_the_leaderboards_quantity(report, browser):
    from selenium.webdriver.common.by import By

    from tests.helpers.browser import wait_ready

    browser.get((report / "index.html").as_uri())
    wait_ready(browser, "overview")
    sec = browser.find_element(By.ID, "leaderboard")
    assert "ranked by ped unbiased |r̄|" in sec.find_element(By.TAG_NAME, "h2").text
    heads = [th.text for th in sec.find_elements(By.CSS_SELECTOR, "thead th")]
    assert heads[:3] == ["rank", "tutor", "ped unbiased |r̄|"] and "ped excess |r̄|" not in heads
