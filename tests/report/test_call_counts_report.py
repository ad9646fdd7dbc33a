"""failures.md shows the per-role call counts stored in results_*.json (the task config's
``metadata.edufair_calls``), so failures that a retry absorbed are still visible."""

from __future__ import annotations

import json

from edufair_metrics.analysis.params import StatParams
from edufair_metrics.report.write import read_report_inputs, write_report

from tests.helpers.synthetic_runs import make_scores, write_run


def test_failures_md_has_call_counts_per_role(tmp_path):
    model_dir = write_run(tmp_path / "runs", "org/tutor-a", scores=make_scores(domains=("physics",), n_questions=20))
    rf = next(model_dir.glob("results_*.json"))
    data = json.loads(rf.read_text())
    for i, task in enumerate(sorted(data["results"])):
        data["configs"][task].setdefault("metadata", {})["edufair_calls"] = {
            "tutor": {"role": "tutor", "requests": 10, "distinct": 10, "sends": 12, "retried": 2, "recovered": 2,
                      "failed_attempts_by_kind": {"http_5xx": 2}, "http_attempts": 15, "http_failed_by_kind": {"http_5xx": 5}},
            "judge": {"role": "judge", "requests": 20, "coalesced": 4, "distinct": 16, "sends": 17, "retried": 1,
                      "failed": 1 if i == 0 else 0, "failed_by_kind": {"invalid_json": 1} if i == 0 else {}},
        }
    rf.write_text(json.dumps(data))
    write_report(read_report_inputs([tmp_path / "runs"]), tmp_path / "report", StatParams(n_boot=50), figures=False)
    md = (tmp_path / "report" / "failures.md").read_text()
    n_tasks = len(data["results"])
    assert "## Model calls per role: org/tutor-a" in md
    section = md[md.index("## Model calls per role"):].splitlines()
    tutor_row = next(ln for ln in section if ln.startswith("| tutor |"))
    cells = [c.strip() for c in tutor_row.split("|")[1:-1]]
    assert cells[1] == str(10 * n_tasks) and cells[6] == str(2 * n_tasks) and cells[7] == str(2 * n_tasks)
    assert cells[11] == str(15 * n_tasks) and cells[12] == f"http_5xx={5 * n_tasks}"
    assert cells[13:] == ["0", "0"]  # client timeouts, cancelled: none
    judge_row = next(ln for ln in section if ln.startswith("| judge |"))
    assert "invalid_json=1" in judge_row


def test_old_results_without_counts_say_so(tmp_path):
    write_run(tmp_path / "runs", "org/tutor-a", scores=make_scores(domains=("physics",), n_questions=20))
    write_report(read_report_inputs([tmp_path / "runs"]), tmp_path / "report", StatParams(n_boot=50), figures=False)
    assert "hold no `edufair_calls`" in (tmp_path / "report" / "failures.md").read_text()
