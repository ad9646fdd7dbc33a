"""Stage 4, the run log: dialogue records on disk, pure (no model is called here). The ONLY code that
knows lm-eval's output folders (``layout``: ``results_*.json``, ``samples_*.jsonl``,
``configs.<task>.metadata``, model args) and the record's JSON (``read``: the one reader of record
lines, any record version, completed on the same pass; ``build``: the one place a record is made;
``scorers``: the registered dialogue scorers and their ``complete()`` loop; ``rewrite``: a run folder
rewritten from its stored records, the one records writer (each run header once per file) and the one
results writer). ``runs`` loads runs for the reports (each samples file read once, pooling checks);
``labels`` the blind labelling sample. Judging, re-judging and the post-test's student calls are
``edufair_metrics.run``'s."""

from edufair_metrics.runlog.build import build_record
from edufair_metrics.runlog.layout import find_run_folders, find_samples, newest_outputs, tutor_name
from edufair_metrics.runlog.read import ReadStats, RecordLine, StoredLine, complete_record, iter_lines, iter_records, read_records
from edufair_metrics.runlog.rewrite import RecordWriter, record_dicts
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
from edufair_metrics.runlog.scorers import SCORERS, complete

__all__ = [
    "Failure", "ReadStats", "RecordLine", "RecordWriter", "Run", "SCORERS", "StoredLine", "build_record",
    "check_compatible", "compat_fields", "complete", "complete_record", "domain_labels", "find_run_folders",
    "find_samples", "iter_lines", "iter_records", "load_records", "load_run", "load_runs", "newest_outputs",
    "parse_labels", "read_records", "record_dicts", "record_files", "run_inputs", "tutor_name",
]
