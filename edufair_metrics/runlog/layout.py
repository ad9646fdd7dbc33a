"""Where lm-eval puts a run's files, and what its results files say about it: the ONE place that
knows ``lm_eval --output_path OUT --log_samples``'s layout.

lm-eval writes ``OUT/<model_name_sanitized>/results_<ts>.json`` and, per task,
``samples_<task>_<ts>.jsonl`` (one line per document, the EduFair record under ``complete_dialogues``; ``edufair_record`` in
files of older versions).
A *run folder* is one model folder. Every samples file that belongs to a results file is found, per
task (tasks run separately into one OUT, shards of a task, re-runs); ``runlog.runs`` decides which
of a task's files to pool (shards, disjoint parts) and which a newer file replaces (a re-run of the
same dialogues). A results file given explicitly pins its timestamp.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import read_json

RESULTS_RE = re.compile(r"^results_(?P<ts>.+)\.json$")
SAMPLES_RE = re.compile(r"^samples_(?P<task>.+)_(?P<ts>[^_]+)\.jsonl$")
# results_*.json: configs.<task>.metadata.<CALL_COUNTS_KEY> holds the task's per-role call counts,
# <PACKAGE_KEY> EduFair's version and lm-eval plugin entries (lmeval.task.results_provenance)
CALL_COUNTS_KEY = "edufair_calls"
PACKAGE_KEY = "edufair_provenance"
log = logging.getLogger("edufair")


@dataclass(frozen=True)
class RunFolder:
    """One model folder of an lm-eval output, and the results file that pins it (or None)."""

    path: Path
    pinned: Path | None = None


def output_folder(output_path: str | Path, model_folder: str) -> Path:
    """The folder lm-eval writes a run's files into: ``OUT/<model_name_sanitized>``, or the
    folder of an ``--output_path`` ending in ``.json``."""
    path = Path(output_path)
    return path.parent if path.suffix == ".json" else path / model_folder


def results_path(output_path: str | Path, model_folder: str, timestamp: str) -> Path:
    """The results file lm-eval writes (``results_<ts>.json``, or ``<stem>_<ts>.json`` for an
    ``--output_path`` ending in ``.json``)."""
    path = Path(output_path)
    if path.suffix == ".json":
        return path.with_name(f"{path.stem}_{timestamp}.json")
    return path / model_folder / f"results_{timestamp}.json"


def samples_path(output_path: str | Path, model_folder: str, task: str, timestamp: str) -> Path:
    """The samples file of ``task`` lm-eval writes next to its results file."""
    return output_folder(output_path, model_folder) / f"samples_{task}_{timestamp}.jsonl"


def is_results_file(path: Path) -> bool:
    return bool(RESULTS_RE.match(path.name))


def is_samples_file(path: Path) -> bool:
    return bool(SAMPLES_RE.match(path.name))


def samples_task(path: Path) -> str | None:
    """The task name in a samples file's name (None for other files)."""
    m = SAMPLES_RE.match(path.name)
    return m.group("task") if m else None


def _has_results(d: Path) -> bool:
    return any(is_results_file(p) for p in d.iterdir() if p.is_file())


# how deep below a given folder run folders are looked for (OUT/<model>/ is 1; a folder of OUT
# folders, e.g. results/, is 2; one more level for results/<experiment>/<tutor>/<model>/)
MAX_DEPTH = 3


def find_run_folders(path: str | Path) -> list[RunFolder]:
    """The run folders of an OUT folder, a model folder, a results JSON, or a parent folder of
    several runs (every folder up to ``MAX_DEPTH`` levels below that holds a results file; the
    search does not descend into a run folder)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise EduFairError(f"no such file or directory: {p}")
    if p.is_file():
        if not is_results_file(p):
            raise EduFairError(f"{p}: expected an lm-eval results_<timestamp>.json file")
        return [RunFolder(p.parent, p)]
    found: list[RunFolder] = []
    level = [p]
    for _ in range(MAX_DEPTH + 1):
        below = []
        for d in level:
            if _has_results(d):
                found.append(RunFolder(d))
            else:
                below.extend(sorted(c for c in d.iterdir() if c.is_dir() and not c.name.startswith(".")))
        level = below
        if not level:
            break
    if not found:
        raise EduFairError(f"no lm-eval results_*.json in {p} or up to {MAX_DEPTH} folders below it "
                           "(run lm_eval with --output_path and --log_samples)")
    return sorted(found, key=lambda f: str(f.path))


@dataclass
class ResultsFacts:
    """What EduFair reads from the results files of one run folder."""

    model_name: str | None = None
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)  # task -> lm-eval metrics (newest file)
    call_counts: dict[str, dict[str, Any]] = field(default_factory=dict)  # task -> per-role counts
    package: dict[str, dict[str, Any]] = field(default_factory=dict)  # task -> EduFair version and plugin entries


@dataclass(frozen=True)
class SamplesFile:
    """One samples file of a run folder: its task, its timestamp, and what the results file of the
    same timestamp says about that task (None without one)."""

    path: Path
    task: str
    timestamp: str
    results: Path | None
    metrics: dict[str, Any] = field(default_factory=dict, compare=False)
    call_counts: dict[str, Any] | None = field(default=None, compare=False)


@dataclass
class RunFiles:
    """The files of one run folder that a report reads: per task EVERY samples file that belongs to
    a results file (newest first; several when the task ran more than once into the folder, e.g.
    shards or a re-run: ``runlog.runs`` decides which to pool), and the results files."""

    folder: RunFolder
    samples: dict[str, list[SamplesFile]]
    results_files: list[Path]
    facts: ResultsFacts


def run_files(folder: RunFolder) -> RunFiles:
    """Per task the samples files of every results file of the folder (or of the pinned one),
    newest first, with what each results file says about its tasks."""
    model_dir = folder.path
    results_files = sorted((f for f in model_dir.iterdir() if is_results_file(f)),
                           key=lambda f: RESULTS_RE.match(f.name).group("ts"))
    if folder.pinned is not None:
        results_files = [folder.pinned]
    samples_by_ts: dict[str, dict[str, Path]] = {}
    for f in model_dir.iterdir():
        m = SAMPLES_RE.match(f.name)
        if m:
            samples_by_ts.setdefault(m.group("ts"), {})[m.group("task")] = f
    chosen: dict[str, list[SamplesFile]] = {}
    used: list[Path] = []
    facts = ResultsFacts()
    cut: list[tuple[Path, str, list[str]]] = []  # (file, how it is cut, its tasks)
    for rf in reversed(results_files):  # newest first
        ts = RESULTS_RE.match(rf.name).group("ts")
        mine = samples_by_ts.get(ts, {})
        if not mine:
            continue
        how = cut_json(rf)
        if how is not None:
            cut.append((rf, how, sorted(mine)))
            continue
        data = read_json(rf)
        if not isinstance(data, dict):
            raise EduFairError(f"{rf}: not an lm-eval results file")
        facts.model_name = facts.model_name or tutor_name(data)
        for t, path in sorted(mine.items()):
            how = cut_lines(path)
            if how is not None:
                cut.append((path, how, [t]))
                continue
            meta = ((data.get("configs") or {}).get(t) or {}).get("metadata") or {}
            counts = meta.get(CALL_COUNTS_KEY) if isinstance(meta.get(CALL_COUNTS_KEY), dict) else None
            metrics = (data.get("results") or {}).get(t, {})
            chosen.setdefault(t, []).append(SamplesFile(path, t, ts, rf, metrics, counts))
            facts.metrics.setdefault(t, metrics)
            if isinstance(meta.get(PACKAGE_KEY), dict):
                facts.package.setdefault(t, meta[PACKAGE_KEY])
        used.append(rf)
    for path, how, tasks in cut:
        if all(t in chosen for t in tasks):  # another run's whole files hold these tasks: read those
            log.warning("edufair: %s is cut (%s): skipped, the other whole file(s) of %s in this folder are read; "
                        "move it out of the folder to silence this", path, how, ", ".join(tasks))
            continue
        raise EduFairError(f"{path} is cut ({how}): the run that wrote it could not finish writing (a full disk?); "
                           f"{RECOVER}")
    if not chosen:
        raise EduFairError(f"{model_dir}: no samples_<task>_<timestamp>.jsonl next to the results file (run lm_eval with --log_samples)")
    return RunFiles(folder, chosen, used, facts)


# how to recover from a cut file, the same words wherever one is met
RECOVER = ("free space and run the same lm_eval command again into the same folder (it resumes from the call "
           "cache and writes new, whole files, which are read instead), or move the cut file out of the folder")


def cut_lines(path: Path) -> str | None:
    """How a samples file is cut (its last line has no end: a write that stopped in the middle),
    or None. Reads one byte."""
    size = path.stat().st_size
    if size == 0:
        return None
    with open(path, "rb") as fh:
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return None
    return f"its last line ends at byte {size} without a line end"


def cut_json(path: Path) -> str | None:
    """How a results file is cut (it does not parse as JSON), or None."""
    import json

    try:
        json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return f"it does not parse as JSON; {path.stat().st_size} bytes"
    except OSError:
        return None  # read_json says why it cannot be read
    return None


# model_args keys that name the tutor, most specific first
_NAME_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")


def tutor_name(results: dict[str, Any]) -> str | None:
    """Tutor identity from an lm-eval results JSON: ``model_name``, else ``pretrained=`` /
    ``model=`` (or peft/path/engine) in ``config.model_args``, a mapping or a ``k=v,...`` string
    read by lm-eval's own parser."""
    name = results.get("model_name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    args = (results.get("config") or {}).get("model_args")
    if isinstance(args, str):
        from lm_eval.utils import simple_parse_args_string  # lazy: lm-eval's import costs ~0.2 s

        try:
            args = simple_parse_args_string(args)
        except (ValueError, TypeError):
            args = {}
    if isinstance(args, dict):
        for k in _NAME_KEYS:
            if args.get(k):
                return str(args[k]).strip()
    model = (results.get("config") or {}).get("model")
    return str(model) if model else None


def find_samples(inputs: list[str]) -> list[Path]:
    """Every samples file given, or found recursively under given folders (each once)."""
    files: list[Path] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            found = sorted(f for f in p.rglob("samples_*.jsonl") if is_samples_file(f))
            if not found:
                raise EduFairError(f"{p}: no samples_*.jsonl files in this directory")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            raise EduFairError(f"{p}: no such file or directory")
    seen: set[Path] = set()
    unique = []
    for f in files:
        r = f.resolve()
        if r not in seen:
            seen.add(r)
            unique.append(f)
    return unique


def newest_outputs(out: Path) -> tuple[list[Path], list[Path]]:
    """The results and samples files under an lm-eval output folder (sorted by name)."""
    return (sorted(f for f in out.glob("*/results_*.json") if is_results_file(f)),
            sorted(f for f in out.glob("*/samples_*.jsonl") if is_samples_file(f)))
