"""The viewer's label mode in a real browser (headless Chromium, selenium): ``edufair view RUN
--label`` serves the run's labelling sample one tutor turn at a time with the cues masked as the
judge saw them, answers by keyboard go to labels.jsonl as they are given, the progress reads
"k of N", and a second session resumes where the first stopped. Skipped, with the reason, where
Chromium, chromedriver or selenium is missing (``tests/helpers/extras.py``)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

import pytest

from edufair_metrics.protocol.cues import NAME_PLACEHOLDER
from edufair_metrics.runlog.labels import LABELS_DIR, LABELS_FILE

from tests.helpers.label_runs import labelled_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _serve(run):
    proc = subprocess.Popen([sys.executable, "-m", "edufair_metrics.cli", "view", str(run), "--label"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"(http://127\.0\.0\.1:\d+/label\.html)", line)
    if not m:
        proc.kill()
        raise AssertionError(line + proc.stderr.read())
    return proc, m.group(1), line


def _stop(proc):
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130 and "Traceback" not in err


def test_label_by_keyboard_saved_as_given_and_resumed(tmp_path):
    from selenium.webdriver.common.by import By

    from tests.helpers.browser import chrome, console_errors

    folder, sample, labels = labelled_run(tmp_path / "runs", n=8, n_questions=6, conditions=("implicit",))
    proc, url, first_line = _serve(tmp_path / "runs")
    driver = chrome()
    try:
        assert "(0 done)" in first_line
        driver.get(url)
        _wait(driver, lambda d: d.execute_script("return document.body.getAttribute('data-ready')") == "1")
        assert driver.find_element(By.ID, "progress").text == "0 of 8"
        assert driver.find_element(By.ID, "where").text == "Turn 1 of 8"
        assert len(driver.find_elements(By.CSS_SELECTOR, ".q")) == 5
        assert "directly addresses the student" in driver.find_element(By.CSS_SELECTOR, '.q[data-metric="mistake_recognize"]').text
        # the cues are masked: no condition name anywhere in the sample, the placeholder where the tutor used one
        items = driver.execute_script("return fetch('api/sample').then(r => r.json())")
        text = json.dumps(items["items"])
        assert not re.search(r"\b(Michael|Jessica|Wei|Ji-yoon|Ji-Yoon)\b", text) and NAME_PLACEHOLDER in text
        assert driver.find_elements(By.CSS_SELECTOR, ".turn.judged")
        body = driver.find_element(By.TAG_NAME, "body")
        for key in "ynaya":  # five answers: the first item is complete, the page moves on
            body.send_keys(key)
        _wait(driver, lambda d: d.execute_script("return document.body.getAttribute('data-saved')") == "5")
        assert driver.find_element(By.ID, "progress").text == "1 of 8"
        assert driver.execute_script("return document.body.getAttribute('data-item')") == "1"
        lines = [json.loads(x) for x in (folder / LABELS_DIR / LABELS_FILE).read_text().splitlines()]
        assert len(lines) == 5 and lines[0]["labels"] == {"corrective_tone": "yes"}  # saved as given, one answer at a time
        assert lines[-1]["labels"] == {"corrective_tone": "yes", "mistake_recognize": "no", "answer_leakage": "na",
                                       "step_scaffolded": "yes", "actionability": "na"}
        assert lines[-1]["turn_id"] == sample.items[0].turn_id and lines[-1]["run_id"] == sample.run_id
        body.send_keys("n")  # one answer on the second item, then the tab closes
        _wait(driver, lambda d: d.execute_script("return document.body.getAttribute('data-saved')") == "6")
        assert not [e for e in console_errors(driver) if "favicon" not in e.get("message", "")]
        _stop(proc)
        proc, url, first_line = _serve(tmp_path / "runs")  # a second session
        assert "(1 done)" in first_line
        driver.get(url)
        _wait(driver, lambda d: d.execute_script("return document.body.getAttribute('data-ready')") == "1")
        assert driver.execute_script("return document.body.getAttribute('data-item')") == "1"  # resumes
        assert driver.find_element(By.ID, "progress").text == "1 of 8"
        on = driver.find_elements(By.CSS_SELECTOR, '.q[data-metric="corrective_tone"] button.on')
        assert [b.get_attribute("data-answer") for b in on] == ["no"]  # the partial answer is kept
        driver.find_element(By.TAG_NAME, "body").send_keys("\ue012")  # arrow left: back to the first item
        assert driver.execute_script("return document.body.getAttribute('data-item')") == "0"
    finally:
        driver.quit()
        if proc.poll() is None:
            _stop(proc)


def _wait(driver, cond, timeout: float = 20.0):
    import time

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if cond(driver):
            return
        time.sleep(0.05)
    raise TimeoutError(f"condition not met within {timeout} s; console: {driver.get_log('browser')[-5:]}")
