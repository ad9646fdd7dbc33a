"""The one results writer of a rewritten run folder (``edufair judge``, ``edufair posttest``):
the input run's results file marked per task, the tasks of one run sharing one file, a role's call
counts added once, an earlier call's marks kept and its counts never added twice."""

from __future__ import annotations

import json

from edufair_metrics.runlog.layout import CALL_COUNTS_KEY
from edufair_metrics.runlog.rewrite import ResultsWriter

TS = "2026-01-01T00-00-00.000000"


def _run(tmp_path):
    src = tmp_path / "in" / "org__tutor"
    src.mkdir(parents=True)
    results = {"results": {"t1": {"x": 1}}, "configs": {"t1": {"task": "t1", "metadata": {
        CALL_COUNTS_KEY: {"student": {"role": "student", "requests": 10, "sends": 10}}}}}, "model_name": "org/tutor"}
    (src / f"results_{TS}.json").write_text(json.dumps(results))
    files = [src / f"samples_{t}_{TS}.jsonl" for t in ("t1", "t2")]
    for f in files:
        f.write_text("")
    out = tmp_path / "out" / "org__tutor"
    return files, [out / f.name for f in files], out / f"results_{TS}.json"


def test_tasks_of_one_run_share_the_results_file_and_counts_are_added_once(tmp_path):
    files, targets, dest = _run(tmp_path)
    for _ in range(2):  # a second call into the same folder: the same file, nothing added twice
        writer = ResultsWriter("edufair_posttest", "posttest")
        writer.write(files[0], targets[0], {"from": str(files[0])},
                     add_calls={"role": "student", "requests": 4, "sends": 4})
        writer.write(files[1], targets[1], {"from": str(files[1])})
        data = json.loads(dest.read_text())
        assert data["results"] == {"t1": {"x": 1}} and data["model_name"] == "org/tutor"  # the run's own file
        assert set(data["edufair_posttest"]) == {"t1", "t2"}
        student = data["configs"]["t1"]["metadata"][CALL_COUNTS_KEY]["student"]
        assert student["requests"] == 14 and student["sends"] == 14


def test_an_earlier_calls_marks_are_kept_and_a_run_without_results_gets_a_minimal_file(tmp_path):
    files, targets, dest = _run(tmp_path)
    ResultsWriter("edufair_rejudged", "rejudged").write(files[0], targets[0], {"judge_model": "a"})
    ResultsWriter("edufair_rejudged", "rejudged").write(files[1], targets[1], {"judge_model": "b"})
    assert json.loads(dest.read_text())["edufair_rejudged"] == {"t1": {"judge_model": "a"}, "t2": {"judge_model": "b"}}
    (files[0].parent / f"results_{TS}.json").unlink()
    lone = tmp_path / "out2" / "org__tutor" / files[0].name
    written = ResultsWriter("edufair_rejudged", "rejudged").write(files[0], lone, {"judge_model": "c"})
    data = json.loads(written.read_text())
    assert data == {"model_name": "org__tutor", "results": {}, "configs": {}, "edufair_rejudged": {"t1": {"judge_model": "c"}}}
