"""Headless Chromium driven by selenium, for the HTML report's browser test and benchmark: Debian's
``chromium`` + ``chromium-driver`` (or any Chrome/chromedriver on PATH). ``tests/helpers/extras.py``
decides whether the ``browser`` marker's tests can run."""

from __future__ import annotations

import shutil
import time

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def chrome(width: int = 1400, height: int = 1000):
    """A headless Chrome session that records the page's console (``driver.get_log("browser")``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-extensions",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    binary = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if binary:
        options.binary_location = binary
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def wait_ready(driver, view: str, timeout: float = 30.0) -> float:
    """Wait until the viewer has rendered ``view`` (body data-view / data-ready); returns seconds."""
    t0 = time.perf_counter()
    script = "return document.body && document.body.getAttribute('data-ready') === '1' && document.body.getAttribute('data-view')"
    while time.perf_counter() - t0 < timeout:
        if driver.execute_script(script) == view:
            return time.perf_counter() - t0
        time.sleep(0.02)
    raise TimeoutError(f"the page did not render {view!r} within {timeout} s (now: {driver.execute_script(script)!r}, "
                       f"console: {driver.get_log('browser')[-5:]})")


def console_errors(driver) -> list[dict]:
    """The console entries of level SEVERE since the last call (errors, uncaught exceptions, failed loads)."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def full_page_screenshot(driver, path, width: int = 1400) -> None:
    """A screenshot of the whole page (the window grown to the document's height, then restored)."""
    size = driver.get_window_size()
    height = driver.execute_script("return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    driver.set_window_size(width, min(int(height) + 120, 12000))
    driver.save_screenshot(str(path))
    driver.set_window_size(size["width"], size["height"])


def click(driver, element) -> None:
    """Click ``element`` as a user would: scrolled to the middle of the window first (a plain
    ``click()`` scrolls it to the top edge, under the page's sticky breadcrumb bar)."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
    element.click()
