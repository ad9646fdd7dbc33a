"""Files a full disk cut. The writer side (``lmeval.outputs``): lm-eval's own save
methods wrapped on a tracker that writes the way lm-eval 0.4.13 does, onto a full disk (a tmpfs of
200 KiB filled to a few KiB where the test can mount one, else the ENOSPC write shim of
``tests/helpers/enospc_shim`` loaded in-process), leave nothing that looks complete and raise one
line. The reader side (``runlog.layout``): a cut samples or results file is named with how to
recover, and a rerun's whole files in the same folder are read without deleting anything."""

from __future__ import annotations

import errno
import json
import logging
from pathlib import Path

import pytest

from edufair_metrics.errors import EduFairError
from edufair_metrics.lmeval.outputs import guard_output_files
from edufair_metrics.runlog import load_run
from edufair_metrics.runlog.layout import RESULTS_RE, SAMPLES_RE
from tests.helpers.full_disk import fill, small_disk
from tests.helpers.synthetic_runs import make_scores, write_run

TS = ("2025-01-01T00-00-00.0", "2025-02-01T00-00-00.0")


class _Config:
    model_name_sanitized = "org__tutor"


class LmEvalLikeTracker:
    """The write path of lm-eval 0.4.13's ``EvaluationTracker`` (results with ``write_text``,
    samples appended line by line; every error caught and logged at INFO), writing through
    ``opener`` so a test can make the disk full."""

    def __init__(self, output_path: Path, opener=open) -> None:
        self.output_path = str(output_path)
        self.general_config_tracker = _Config()
        self.opener = opener
        self.log = logging.getLogger("lm_eval.loggers.evaluation_tracker")

    def save_results_aggregated(self, results, samples=None):
        try:
            self.date_id = "2026-01-01T00-00-00.000001"
            path = Path(self.output_path) / self.general_config_tracker.model_name_sanitized
            path.mkdir(parents=True, exist_ok=True)
            with self.opener(path / f"results_{self.date_id}.json", "w") as fh:
                fh.write(json.dumps(results, indent=2))
        except Exception as e:  # noqa: BLE001 - as lm-eval does
            self.log.warning("Could not save results aggregated")
            self.log.info(repr(e))

    def save_results_samples(self, task_name, samples):
        try:
            path = Path(self.output_path) / self.general_config_tracker.model_name_sanitized
            with self.opener(path / f"samples_{task_name}_{self.date_id}.jsonl", "a") as fh:
                for s in samples:
                    fh.write(json.dumps(s) + "\n")
        except Exception as e:  # noqa: BLE001
            self.log.warning("Could not save sample results")
            self.log.info(repr(e))


def _budget_opener(budget: int):
    """The shim's effect in-process: writes past ``budget`` bytes raise ENOSPC."""
    left = [budget]

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def write(self, text):
            data = text.encode()
            if len(data) > left[0]:
                self.fh.write(data[: left[0]].decode(errors="ignore"))
                left[0] = 0
                raise OSError(errno.ENOSPC, "No space left on device")
            left[0] -= len(data)
            return self.fh.write(text)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    return lambda path, mode: Full(open(path, mode))


def _looks_complete(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if RESULTS_RE.match(p.name) or SAMPLES_RE.match(p.name)]


SAMPLES = [{"doc_id": i, "complete_dialogues": {"text": "x" * 2000}} for i in range(60)]  # ~120 KB
RESULTS = {"results": {"t1": {"m": 1.0}}, "configs": {"t1": {"task": "t1"}}}


@pytest.mark.parametrize("leave", [8 * 1024, 40 * 1024])  # results cut / results whole, samples cut
def test_a_full_output_disk_raises_one_line_and_leaves_nothing_that_looks_complete(tmp_path, leave):
    """tmpfs of 200 KiB filled to ``leave`` bytes (or the in-process ENOSPC opener without mount)."""
    disk = tmp_path / "disk"
    with small_disk(disk, "200k") as mounted:
        out = disk / "out"
        filler = fill(disk, leave) if mounted else None
        tracker = LmEvalLikeTracker(out, open if mounted else _budget_opener(leave))
        guard_output_files(tracker)
        with pytest.raises(EduFairError) as err:
            tracker.save_results_aggregated(results=json.loads(json.dumps(RESULTS)) | {"pad": "r" * 20000},
                                            samples={"t1": SAMPLES})
            tracker.save_results_samples(task_name="t1", samples=SAMPLES)
        line = str(err.value)
        assert "\n" not in line and line.startswith("could not write ") and " free on " in line, line
        assert "No space left on device" in line and "run the same command again" in line
        assert _looks_complete(out) == []
        assert [p.name for p in out.rglob("*") if p.is_file()] == []  # the cut files are gone: space for the rerun
        # space freed: the same writes into the same folder are whole
        if filler is not None:
            filler.unlink()
        tracker = LmEvalLikeTracker(out)
        guard_output_files(tracker)
        tracker.save_results_aggregated(results=json.loads(json.dumps(RESULTS)), samples={"t1": SAMPLES})
        assert _looks_complete(out) == []  # the results file waits hidden until its samples are whole
        tracker.save_results_samples(task_name="t1", samples=SAMPLES)
        assert sorted(_looks_complete(out)) == ["results_2026-01-01T00-00-00.000001.json",
                                                "samples_t1_2026-01-01T00-00-00.000001.jsonl"]


def test_without_samples_the_results_file_is_in_place_at_once(tmp_path):
    tracker = LmEvalLikeTracker(tmp_path / "out")
    guard_output_files(tracker)
    tracker.save_results_aggregated(results=dict(RESULTS), samples=None)
    assert _looks_complete(tmp_path / "out") == ["results_2026-01-01T00-00-00.000001.json"]


def _cut(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def test_report_names_a_cut_samples_file_and_reads_the_rerun_in_the_same_folder(tmp_path, caplog):
    scores = make_scores(conditions=("explicit",), n_questions=4, seed=1)
    model = write_run(tmp_path / "o", "org/m", scores=scores, timestamp=TS[0])
    cut = next(model.glob("samples_*.jsonl"))
    _cut(cut)
    with pytest.raises(EduFairError) as err:
        load_run(tmp_path / "o")
    msg = str(err.value)
    assert str(cut) in msg and "is cut" in msg and "run the same lm_eval command again into the same folder" in msg
    write_run(tmp_path / "o", "org/m", scores=scores, timestamp=TS[1])  # the rerun, after space was freed
    with caplog.at_level(logging.WARNING, logger="edufair"):
        run = load_run(tmp_path / "o")
    assert len(run.scores) == len(scores)
    assert cut.exists() and any(str(cut) in r.getMessage() and "cut" in r.getMessage() for r in caplog.records)


def test_report_names_a_cut_results_file(tmp_path):
    scores = make_scores(conditions=("explicit",), n_questions=4, seed=1)
    model = write_run(tmp_path / "o", "org/m", scores=scores, timestamp=TS[0])
    results = next(model.glob("results_*.json"))
    _cut(results)
    with pytest.raises(EduFairError) as err:
        load_run(tmp_path / "o")
    assert str(results) in str(err.value) and "is cut" in str(err.value)
    write_run(tmp_path / "o", "org/m", scores=scores, timestamp=TS[1])
    assert len(load_run(tmp_path / "o").scores) == len(scores)
