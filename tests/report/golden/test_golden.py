"""The report folder, the leaderboard and the CI gate, byte for byte, on stored runs (see golden.py
for what is normalised and why). A change that moves a number, a word or a file of these outputs
fails here; regenerate expected/ only for an intended change (``python -m tests.report.golden.golden``)
and say in the commit what changed."""

from __future__ import annotations

import difflib

import pytest

from tests.report.golden.golden import COMMANDS, expected, produce


@pytest.mark.slow
def test_outputs_match_the_golden(tmp_path):
    want = expected()
    assert want, "tests/report/golden/expected/ is empty: run python -m tests.report.golden.golden"
    got = produce(tmp_path)
    assert sorted(got) == sorted(want), (f"files only produced: {sorted(set(got) - set(want))}; "
                                         f"only expected: {sorted(set(want) - set(got))}")
    changed = [name for name in sorted(want) if got[name] != want[name]]
    if changed:
        first = changed[0]
        try:
            diff = "".join(list(difflib.unified_diff(want[first].decode().splitlines(True),
                                                     got[first].decode().splitlines(True), "expected", "got"))[:60])
        except UnicodeDecodeError:
            diff = "(binary)"
        pytest.fail(f"{len(changed)} file(s) differ from the golden: {changed[:20]}\n{first}:\n{diff}", pytrace=False)


def test_the_golden_covers_the_report_and_its_figures():
    want = expected()
    assert {n.split("/")[0] for n in want} >= {c for c, _ in COMMANDS}
    for f in ("summary.md", "index.html", "index.html.page.json", "grid.csv", "units.csv", "tables.md",
              "report_manifest.json", "levels.csv", "failures.md"):
        assert f"report_evidence/{f}" in want, f
    assert {"report_evidence/fig2_metric_heatmap.png", "report_evidence/fig_levels.png"} <= set(want)
    assert any(n.startswith("report_evidence/viewer/") for n in want)
