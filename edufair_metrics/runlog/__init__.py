"""Stage 4, the run log: dialogue records on disk. The ONLY code that knows lm-eval's output folders
(``layout``: ``results_*.json``, ``samples_*.jsonl``, ``configs.<task>.metadata``, model args) and
the record's JSON (``read``: one streaming reader that understands every record version and
completes old records; ``build``: the one place a record is made, with its scores, detector
metrics and provenance). ``runs`` loads runs for the reports (each samples file read once, pooling
checks); ``rejudge`` judges stored transcripts again into a folder every command reads as a run."""

from edufair_metrics.runlog.build import build_record, judge_and_build
from edufair_metrics.runlog.layout import find_run_folders, find_samples, newest_outputs, tutor_name
from edufair_metrics.runlog.read import ReadStats, RecordLine, complete_record, iter_records, read_records
from edufair_metrics.runlog.runs import (
    Failure,
    Run,
    check_compatible,
    compat_fields,
    domain_labels,
    load_records,
    load_run,
    load_runs,
    parse_labels,
    record_files,
    run_inputs,
)

__all__ = [
    "Failure", "ReadStats", "RecordLine", "Run", "build_record", "check_compatible", "compat_fields", "complete_record",
    "domain_labels", "find_run_folders", "find_samples", "iter_records", "judge_and_build", "load_records", "load_run",
    "load_runs", "newest_outputs", "parse_labels", "read_records", "record_files", "run_inputs", "tutor_name",
]
