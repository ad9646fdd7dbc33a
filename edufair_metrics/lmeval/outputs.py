"""lm-eval's results and samples files, written so that none looks complete unless it is.

lm-eval 0.4.13 writes them itself, after the whole job (``EvaluationTracker.save_results_aggregated``
writes ``results_<ts>.json``, then ``save_results_samples`` appends each task's
``samples_<task>_<ts>.jsonl`` line by line), and catches every error of those writes: a full disk
logs ``OSError(28, ...)`` at INFO, leaves a cut samples file next to a complete results file, and
the run exits 0. EduFair wraps the two methods of the running evaluation's tracker (the one
``simple_evaluate`` received; installed when the first EduFair task is built):

* the results file, once written and read back whole, is renamed to a hidden name
  (``.results_<ts>.json.writing``) until every samples file of that results file has been written
  and checked (one line per logged document, the last one ended); then it is renamed back. A run
  folder therefore shows a results file only when its samples files are whole, and a process killed
  in between leaves only a hidden file (no reader looks at names starting with a dot).
* a file that could not be written completely is removed (it would only take the space the rerun
  needs; the call cache holds every answer), with this run's hidden results file, and the run
  stops with one line naming the file, the reason and the free space (exit status 1). The same
  command, after space is freed, writes a new timestamp's files into the same folder.

Readers (``runlog.layout``) still recognise a cut samples or results file that another writer
left (an older EduFair, a kill in the middle of the samples) and say which file is cut and how
to recover. Contract test: ``tests/lmeval/test_contracts.py`` (the methods and attributes used).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

from edufair_metrics.errors import EduFairError
from edufair_metrics.runlog.layout import results_path, samples_path

_TRACKER_LOGGER = "lm_eval.loggers.evaluation_tracker"
HIDDEN_RESULTS = ".{name}.writing"


class _Captured(logging.Handler):
    """The messages lm-eval logs while it writes (it logs the exception's repr at INFO)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception:  # noqa: BLE001 - a message that does not format is not needed
            pass

    def reason(self) -> str | None:
        for msg in reversed(self.messages):
            if "Error(" in msg or "Exception(" in msg or "No space" in msg:
                return msg.strip()[:200]
        return None


def _logged(call, *args, **kwargs) -> _Captured:
    logger = logging.getLogger(_TRACKER_LOGGER)
    handler = _Captured()
    old_level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        call(*args, **kwargs)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    return handler


def free_space(path: Path) -> str:
    """``N KiB free on <mount point>`` for the file system holding ``path``."""
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        free = shutil.disk_usage(probe).free
    except OSError:
        return "free space unknown"
    mount = probe.resolve()
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    return f"{_size(free)} free on {mount}"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def whole_lines(path: Path, expected: int) -> str | None:
    """Why ``path`` is not a whole JSONL file of ``expected`` lines (None when it is): missing, cut
    in a line (no final newline), or fewer lines."""
    if not path.is_file():
        return "it was not written"
    size = path.stat().st_size
    if expected and size == 0:
        return "it is empty"
    with open(path, "rb") as fh:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
        if size:
            fh.seek(size - 1)
            if fh.read(1) != b"\n":
                return f"it is cut at {size} bytes, in line {lines + 1}"
    if lines != expected:
        return f"it holds {lines} of {expected} lines"
    return None


def whole_json(path: Path) -> str | None:
    """Why ``path`` is not a whole JSON file (None when it is)."""
    import json

    if not path.is_file():
        return "it was not written"
    try:
        json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return f"it is cut at {path.stat().st_size} bytes"
    return None


class _Guard:
    """The state of one tracker's writes: this run's results file and the samples still due."""

    def __init__(self, tracker: Any) -> None:
        self.tracker = tracker
        self.results: Path | None = None  # where lm-eval wrote the results file
        self.hidden: Path | None = None  # where it waits until the samples are whole
        self.due: set[str] = set()

    def _model_folder(self) -> str:
        return str(self.tracker.general_config_tracker.model_name_sanitized)

    def results_path(self) -> Path:
        return results_path(self.tracker.output_path, self._model_folder(), self.tracker.date_id)

    def samples_path(self, task_name: str) -> Path:
        return samples_path(self.tracker.output_path, self._model_folder(), task_name, self.tracker.date_id)

    def fail(self, target: Path, why: str, reason: str | None) -> None:
        """Remove what this run wrote and stop with one line."""
        removed = [target] if target.exists() else []
        for p in (target, self.hidden):
            if p is not None and p.exists():
                p.unlink()
        if self.hidden is not None:
            removed.append(self.results or self.hidden)
        self.hidden, self.results, self.due = None, None, set()
        cause = f" ({reason})" if reason else ""
        gone = f"; removed {', '.join(p.name for p in removed)}" if removed else ""
        raise EduFairError(
            f"could not write {target} completely: {why}{cause}; {free_space(target.parent)}{gone}, so nothing of "
            f"this run looks complete in {target.parent}: free space and run the same command again (every answer "
            "is in the call cache; the rerun writes new files into the same folder)")

    def after_results(self, reason: str | None, with_samples: bool, tasks: list[str]) -> None:
        if getattr(self.tracker, "date_id", None) is None:
            raise EduFairError(f"could not write the results file under {self.tracker.output_path}"
                               f"{f' ({reason})' if reason else ''}; {free_space(Path(self.tracker.output_path))}")
        target = self.results_path()
        problem = whole_json(target)
        if problem is not None:
            self.fail(target, problem, reason)
        if with_samples and tasks:
            self.results = target
            self.hidden = target.with_name(HIDDEN_RESULTS.format(name=target.name))
            os.replace(target, self.hidden)
            self.due = set(tasks)

    def after_samples(self, task_name: str, n_samples: int, reason: str | None) -> None:
        target = self.samples_path(task_name)
        problem = whole_lines(target, n_samples)
        if problem is not None:
            self.fail(target, problem, reason)
        self.due.discard(task_name)
        if not self.due and self.hidden is not None:
            os.replace(self.hidden, self.results)
            self.hidden = self.results = None


def guard_output_files(tracker: Any) -> None:
    """Wrap ``tracker``'s two save methods (see the module doc); once per tracker, and only when
    it writes files (an ``output_path``)."""
    if tracker is None or not getattr(tracker, "output_path", None) or getattr(tracker, "_edufair_guard", None):
        return
    if not (callable(getattr(tracker, "save_results_aggregated", None))
            and callable(getattr(tracker, "save_results_samples", None))):
        return
    guard = _Guard(tracker)
    save_results, save_samples = tracker.save_results_aggregated, tracker.save_results_samples

    def save_results_aggregated(results: dict, samples: dict | None = None, **kwargs) -> None:
        captured = _logged(save_results, results=results, samples=samples, **kwargs)
        tasks = list((results or {}).get("configs") or {}) if samples else []
        guard.after_results(captured.reason(), bool(samples), tasks)

    def save_results_samples(task_name: str, samples: Any, **kwargs) -> None:
        n = len(samples) if samples is not None else 0
        captured = _logged(save_samples, task_name=task_name, samples=samples, **kwargs)
        guard.after_samples(task_name, n, captured.reason())

    tracker.save_results_aggregated = save_results_aggregated
    tracker.save_results_samples = save_results_samples
    tracker._edufair_guard = guard
