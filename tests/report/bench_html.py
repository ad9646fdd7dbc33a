"""Benchmark (a script, not a test): the HTML report at paper size. Builds the synthetic set of
``bench_report_memory.py`` (5 tutors × 9 tasks × the full bank, 32,419 dialogues per tutor with
6 judged tutor turns each), runs ``edufair report`` on it, and reports

* the size on disk of index.html and of viewer/ (per-cell differences, transcripts), file counts;
* the time to write the report, with the HTML part on its own (the manifest's ``viewer.seconds``:
  cell files and index.html; the transcripts are written while the samples are read), and the
  report's peak RSS; ``--baseline`` also runs ``edufair report --no-html`` for the difference;
* in headless Chromium, from ``file://``: the time until the first view (the verdict grid) is
  interactive, and the time to open a cell and a twin view.

    python tests/report/bench_html.py [--scale 1.0] [--tutors 5] [--keep DIR] [--baseline]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from edufair_metrics.bank import load_bank  # noqa: E402
from tests.helpers.synthetic_runs import make_scores, write_run  # noqa: E402
from tests.report.bench_report_memory import dialogue  # noqa: E402


def build(runs: Path, scale: float, tutors: int) -> int:
    n = 0
    for t in range(tutors):
        scores = []
        for domain in ("mathematics", "physics", "chemistry"):
            q = max(15, int(len(load_bank(domain)) * scale))
            bias = {("explicit", "female", "answer_leakage"): 0.15} if t == 0 else None  # one tutor with a bias
            scores += make_scores(domains=(domain,), n_questions=q, seed=t * 10 + len(domain), bias=bias)
        n += len(scores)
        write_run(runs, f"org/tutor-{t}", scores=scores, stop_reason=lambda s: "max_turns", dialogue=dialogue)
    return n


def report(runs: Path, out: Path, *extra: str) -> tuple[float, float, subprocess.CompletedProcess]:
    t0 = time.time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = subprocess.run([sys.executable, "-m", "edufair_metrics.cli", "report", str(runs), "--out", str(out), *extra],
                       capture_output=True, text=True)
    peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 2**20  # KiB -> GiB (Linux)
    return time.time() - t0, peak, r


def size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def browse(out: Path) -> dict[str, float]:
    """Seconds until the overview is interactive, then to open a flagged (or any) cell and its first twin."""
    from selenium.webdriver.common.by import By

    from tests.helpers.browser import chrome, console_errors, wait_ready

    driver = chrome()
    try:
        t0 = time.perf_counter()
        driver.get((out / "index.html").as_uri())
        wait_ready(driver, "overview", timeout=120)
        first = time.perf_counter() - t0
        in_page = driver.execute_script("return EF.readyAt") / 1000  # since navigation start, in the page's clock
        cells = driver.find_elements(By.CSS_SELECTOR, 'td.cell[data-verdict="flag"]') or driver.find_elements(By.CSS_SELECTOR, "td.cell")
        t0 = time.perf_counter()
        driver.execute_script("arguments[0].click()", cells[0])
        wait_ready(driver, "cell", timeout=120)
        cell = time.perf_counter() - t0
        t0 = time.perf_counter()
        driver.execute_script("arguments[0].click()", driver.find_element(By.CSS_SELECTOR, "#qtable tbody tr td.qtext a"))
        wait_ready(driver, "twin", timeout=120)
        twin = time.perf_counter() - t0
        errors = console_errors(driver)
    finally:
        driver.quit()
    return {"first_view_s": first, "first_view_in_page_s": in_page, "cell_s": cell, "twin_s": twin, "console_errors": len(errors)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of each domain's bank (1.0 = full)")
    ap.add_argument("--tutors", type=int, default=5)
    ap.add_argument("--keep", help="write the runs and report here instead of a temporary folder")
    ap.add_argument("--baseline", action="store_true", help="also time `edufair report --no-html`")
    ap.add_argument("--no-browser", action="store_true", help="skip the Chromium timings")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="edufair-bench-html-"))
    runs = work / "runs"
    t0 = time.time()
    if not any(runs.rglob("samples_*.jsonl")) if runs.exists() else True:
        n = build(runs, args.scale, args.tutors)
    else:
        n = sum(1 for p in runs.rglob("samples_*.jsonl") for _ in p.open())
    samples = sum(p.stat().st_size for p in runs.rglob("samples_*.jsonl"))
    print(f"{n:,} dialogues ({args.tutors} tutors, scale {args.scale}), samples {samples / 2**30:.2f} GiB, "
          f"built in {time.time() - t0:.0f} s", flush=True)
    if args.baseline:
        wall, peak, r = report(runs, work / "report-nohtml", "--no-figures", "--no-html")
        print(f"edufair report --no-html: exit {r.returncode}, {wall:.0f} s, peak RSS {peak:.2f} GiB", flush=True)
    wall, peak, r = report(runs, work / "report", "--no-figures")
    print(f"edufair report: exit {r.returncode}, {wall:.0f} s, peak RSS {peak:.2f} GiB", flush=True)
    if r.returncode != 0:
        print(r.stderr[-3000:])
        return r.returncode
    out = work / "report"
    viewer = json.loads((out / "report_manifest.json").read_text())["viewer"]
    index = (out / "index.html").stat().st_size
    n_cells, cells = size(out / "viewer" / "c")
    n_t, transcripts = size(out / "viewer" / "t")
    print(f"index.html {index / 2**20:.2f} MiB; viewer/c {n_cells} files {cells / 2**20:.1f} MiB; viewer/t {n_t} files "
          f"{transcripts / 2**20:.0f} MiB ({viewer['transcripts']:,} dialogues, {transcripts / max(1, viewer['transcripts']):.0f} B each); "
          f"HTML part written in {viewer['seconds']:.1f} s after the read", flush=True)
    if not args.no_browser:
        b = browse(out)
        print(f"Chromium (headless, file://): first view interactive {b['first_view_s']:.2f} s "
              f"({b['first_view_in_page_s']:.2f} s after navigation start), a cell {b['cell_s']:.2f} s, "
              f"its first twin {b['twin_s']:.2f} s; console errors: {b['console_errors']}")
    print(f"(kept in {work})" if args.keep else f"(in {work}; remove it when done)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
