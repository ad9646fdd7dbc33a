"""Human labels on a run's own tutor turns: the blind labelling sample (``edufair label-sample``),
the labels file the viewer's label mode appends to (``edufair view RUN --label``) and their checks
(``edufair judge-human --format edufair``). Both files live in the run folder, under
``edufair-labels/``:

``sample.json`` (written once, atomically)
    ``run_id`` (:func:`run_identity`), the seed, the strata and the items in labelling order. The
    design (what ``analysis.ppi`` assumes): the strata are the run's tasks (one domain × condition);
    within a stratum a uniform random subset of the questions that have a usable dialogue (not
    failed, at least one judge-labelled tutor turn) at every level of the task, and for each of them
    one uniformly drawn judge-labelled tutor turn of every level's dialogue, so that every level is
    equally represented and every contrast pair is labelled on both sides of the same questions.
    Each turn carries all five metrics' questions. The turns are split over the strata in
    proportion to their weights, 2 for a stratum holding a flagged unit of the run's report
    (``units.csv``, verdict flag), 1 otherwise: the flagged units are over-sampled so that the
    labels can confirm or overturn them (each unit is estimated within its own stratum, where the
    sampling is uniform, so no reweighting is needed).
``labels.jsonl`` (appended, one line per answer set, fsync'd)
    ``{"run_id", "turn_id", "labels": {metric: "yes" | "no" | "na"}, "at"}``; a later line for the
    same turn replaces an earlier one (a corrected answer). The viewer knows the items only by their
    position in the sample, never by their level.

A turn id is ``task|level|question_id|turn_index``. A run's identity hashes every tutor turn's id
and text, so a sample or a label file from another run (other dialogues, or the same ones
re-generated) is refused.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import atomic_write_text
from edufair_metrics.records import JUDGE_FIELD_FOR_METRIC, JUDGE_OK, PEDAGOGICAL_METRICS, DialogueRecord

LABELS_DIR = "edufair-labels"
SAMPLE_FILE = "sample.json"
LABELS_FILE = "labels.jsonl"
SAMPLE_FORMAT = "edufair-label-sample"
FLAGGED_WEIGHT = 2
ANSWERS = ("yes", "no", "na")
_ANSWER_VALUE = {"yes": 1, "no": 0, "na": None}


def turn_id(record: DialogueRecord, turn_index: int) -> str:
    task, _, level, qid = record.key
    return f"{task}|{level}|{qid}|{turn_index}"


def run_identity(records: Iterable[DialogueRecord]) -> str:
    """A short hash of every tutor turn's id and text: equal for the same stored dialogues."""
    lines = sorted(f"{turn_id(r, i)}\t{r.transcript.turns[i].text}" for r in records
                   for i in r.transcript.tutor_turn_indices())
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]


def judged_turns(record: DialogueRecord) -> list[int]:
    """The tutor turns of a record the judge labelled (status ok)."""
    ok = {j.turn_index for j in record.judgements if j.status == JUDGE_OK and j.labels is not None}
    return [i for i in record.transcript.tutor_turn_indices() if i in ok]


def usable(record: DialogueRecord) -> bool:
    return record.has_transcript and not record.scores.failed and bool(judged_turns(record))


@dataclass(frozen=True)
class SampleItem:
    turn_id: str
    task: str
    domain: str
    condition: str
    level: str
    question_id: str
    turn_index: int


@dataclass(frozen=True)
class Stratum:
    task: str
    domain: str
    condition: str
    levels: list[str]
    questions: int  # with a usable dialogue at every level
    sampled_questions: int
    flagged: bool
    flagged_units: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LabelSample:
    run_id: str
    tutor: str
    seed: int
    n_requested: int
    strata: list[Stratum]
    items: list[SampleItem]

    def to_dict(self) -> dict[str, Any]:
        return {"format": SAMPLE_FORMAT, "version": 1, "run_id": self.run_id, "tutor": self.tutor, "seed": self.seed,
                "n_requested": self.n_requested, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "strata": [asdict(s) for s in self.strata], "items": [asdict(i) for i in self.items]}

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "sample") -> "LabelSample":
        if not isinstance(d, dict) or d.get("format") != SAMPLE_FORMAT:
            raise EduFairError(f"{where}: not an EduFair labelling sample (written by `edufair label-sample`)")
        try:
            return cls(str(d["run_id"]), str(d.get("tutor", "")), int(d["seed"]), int(d["n_requested"]),
                       [Stratum(**s) for s in d["strata"]], [SampleItem(**i) for i in d["items"]])
        except (KeyError, TypeError, ValueError) as exc:
            raise EduFairError(f"{where}: malformed labelling sample ({exc})") from None

    @property
    def by_turn(self) -> dict[str, SampleItem]:
        return {i.turn_id: i for i in self.items}


def sampleable(records: Sequence[DialogueRecord]) -> dict[str, dict[str, dict[str, DialogueRecord]]]:
    """task -> question -> level -> record, for the questions usable at every level of their task."""
    by_task: dict[str, dict[str, dict[str, DialogueRecord]]] = {}
    levels: dict[str, set[str]] = {}
    for r in records:
        task, _, level, qid = r.key
        levels.setdefault(task, set()).add(level)
        if usable(r):
            by_task.setdefault(task, {}).setdefault(qid, {})[level] = r
    return {task: {q: lv for q, lv in qs.items() if set(lv) == levels[task]} for task, qs in by_task.items()}


def allocate(costs: dict[str, int], capacity: dict[str, int], weights: dict[str, float], n: int) -> dict[str, int]:
    """Questions per stratum: one at a time to the stratum whose labelled turns per weight are
    fewest (ties by name), while it has questions left and its cost fits in what is left of ``n``."""
    q = {h: 0 for h in costs}
    left = n
    while True:
        open_ = [h for h in costs if q[h] < capacity[h] and costs[h] <= left]
        if not open_:
            return q
        h = min(open_, key=lambda s: (q[s] * costs[s] / weights[s], s))
        q[h] += 1
        left -= costs[h]


def draw_sample(records: Sequence[DialogueRecord], n: int, *, seed: int = 0, tutor: str = "",
                flagged: dict[tuple[str, str], list[str]] | None = None) -> LabelSample:
    """The blind labelling sample of ``n`` tutor turns (module docstring). ``flagged``: (domain,
    condition) -> the flagged units there ("contrast: metric"). A sample larger than the run (more
    turns than one per usable dialogue) or smaller than one question's dialogues is refused."""
    flagged = flagged or {}
    pool = sampleable(records)
    if n < 1:
        raise EduFairError(f"--n must be >= 1, got {n}")
    meta: dict[str, tuple[str, str, list[str]]] = {}
    for task, qs in pool.items():
        any_r = next(iter(next(iter(qs.values())).values())) if qs else None
        if any_r is not None:
            t = any_r.transcript
            meta[task] = (t.domain, t.condition, sorted(next(iter(qs.values()))))
    costs = {task: len(m[2]) for task, m in meta.items()}
    capacity = {task: len(pool[task]) for task in meta}
    most = sum(costs[h] * capacity[h] for h in meta)
    if n > most:
        raise EduFairError(f"a sample of {n} turns is larger than the run: it has {most} tutor turns to sample (one per "
                           f"usable dialogue of {sum(capacity.values())} questions complete at every level)")
    if not meta or n < min(costs.values()):
        fewest = min(costs.values()) if costs else 0
        raise EduFairError(f"a sample of {n} turns cannot cover one question at every level (it takes {fewest} turns)")
    weights = {h: float(FLAGGED_WEIGHT if flagged.get(meta[h][:2]) else 1) for h in meta}
    per = allocate(costs, capacity, weights, n)
    rng = random.Random(seed)
    items: list[SampleItem] = []
    strata: list[Stratum] = []
    for task in sorted(meta):
        domain, condition, levels = meta[task]
        chosen = rng.sample(sorted(pool[task]), per[task])
        for qid in sorted(chosen):
            for level in levels:
                rec = pool[task][qid][level]
                turn = rng.choice(judged_turns(rec))
                items.append(SampleItem(turn_id(rec, turn), task, domain, condition, level, qid, turn))
        strata.append(Stratum(task, domain, condition, levels, capacity[task], per[task],
                              bool(flagged.get((domain, condition))), list(flagged.get((domain, condition), []))))
    rng.shuffle(items)  # labelling order: levels and questions mixed, so the order says nothing
    return LabelSample(run_identity(records), tutor, seed, n, strata, items)


def flagged_units(units_csv: str | Path) -> dict[tuple[str, str], list[str]]:
    """(domain, condition) -> "contrast: metric" of the judge-labelled (pedagogical) units a report
    flagged (units.csv): the ones human labels can confirm or overturn."""
    out: dict[tuple[str, str], list[str]] = {}
    with open(units_csv, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            if row.get("verdict") == "flag" and row.get("metric") in PEDAGOGICAL_METRICS:  # what the judge labels
                out.setdefault((row.get("domain", ""), row.get("condition", "")), []).append(
                    f"{row.get('contrast', '')}: {row.get('metric', '')}")
    return out


def labels_folder(run_dir: str | Path) -> Path:
    return Path(run_dir) / LABELS_DIR


def run_folder(path: str | Path) -> Path:
    """The folder a run's labels live in: its model folder (the one folder with a results file
    under ``path``), a folder of samples files itself, or a samples file's folder."""
    from edufair_metrics.runlog.layout import find_run_folders, is_results_file

    p = Path(path).expanduser()
    if not p.exists():
        raise EduFairError(f"no such file or directory: {p}")
    if p.is_file():
        return p.parent
    if any(is_results_file(f) for f in p.rglob("results_*.json")):
        folders = find_run_folders(p)
        if len(folders) != 1:
            raise EduFairError(f"{p} holds {len(folders)} runs; pass one of them")
        return folders[0].path
    return p


def write_sample(sample: LabelSample, run_dir: str | Path, *, overwrite: bool = False) -> Path:
    path = labels_folder(run_dir) / SAMPLE_FILE
    if path.exists() and not overwrite:
        raise EduFairError(f"{path} exists (its labels would no longer match); pass --force to draw a new sample")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(sample.to_dict(), ensure_ascii=False, indent=1) + "\n")
    return path


def read_sample(path: str | Path) -> LabelSample:
    path = Path(path)
    if path.is_dir():
        path = path / SAMPLE_FILE if (path / SAMPLE_FILE).is_file() else labels_folder(path) / SAMPLE_FILE
    if not path.is_file():
        raise EduFairError(f"no labelling sample at {path} (draw one with `edufair label-sample RUN --n N`)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EduFairError(f"cannot read {path}: {exc}") from None
    return LabelSample.from_dict(data, str(path))


def append_label(path: str | Path, run_id: str, tid: str, labels: dict[str, str]) -> dict[str, Any]:
    """Append one answer set (checked) as one line, flushed and fsync'd before returning."""
    for metric, value in labels.items():
        if metric not in PEDAGOGICAL_METRICS:
            raise EduFairError(f"unknown metric {metric!r} (one of {', '.join(PEDAGOGICAL_METRICS)})")
        if value not in ANSWERS:
            raise EduFairError(f"{metric}: answer must be one of {', '.join(ANSWERS)}, got {value!r}")
    line = {"run_id": run_id, "turn_id": tid, "labels": dict(labels), "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return line


@dataclass(frozen=True)
class HumanLabel:
    turn_id: str
    values: dict[str, int | None]  # metric -> 1 / 0 / None (not applicable); absent: not answered
    raw: dict[str, str]


def read_labels(path: str | Path, *, run_id: str, run_turns: set[str] | None = None,
                sample: LabelSample | None = None) -> dict[str, HumanLabel]:
    """The labels of ``path`` by turn id (the last line for a turn wins). One-line errors: a line
    from another run (``run_id``), a turn not in the run (``run_turns``) or not in the sample, an
    unknown metric or answer, a malformed line."""
    path = Path(path)
    if not path.is_file():
        raise EduFairError(f"no such file: {path}")
    in_sample = sample.by_turn if sample is not None else None
    out: dict[str, HumanLabel] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                obj = json.loads(text)
            except ValueError:
                raise EduFairError(f"{where}: not a JSON line") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("labels"), dict) or not isinstance(obj.get("turn_id"), str):
                raise EduFairError(f"{where}: expected {{\"run_id\", \"turn_id\", \"labels\": {{metric: yes|no|na}}}}")
            if obj.get("run_id") != run_id:
                raise EduFairError(f"{where}: labels from another run (run id {obj.get('run_id')!r}, this run is {run_id})")
            tid = obj["turn_id"]
            if run_turns is not None and tid not in run_turns:
                raise EduFairError(f"{where}: label for a turn not in the run: {tid}")
            if in_sample is not None and tid not in in_sample:
                raise EduFairError(f"{where}: label for a turn not in the labelling sample: {tid}")
            values: dict[str, int | None] = {}
            raw: dict[str, str] = {}
            for metric, v in obj["labels"].items():
                if metric not in PEDAGOGICAL_METRICS:
                    raise EduFairError(f"{where}: label for an unknown metric {metric!r} (one of {', '.join(PEDAGOGICAL_METRICS)})")
                key = str(v).strip().casefold() if v is not None else "na"
                key = {"1": "yes", "0": "no", "true": "yes", "false": "no", "n/a": "na", "-1": "na"}.get(key, key)
                if key not in _ANSWER_VALUE:
                    raise EduFairError(f"{where}: {metric}: unknown answer {v!r} (yes, no or na)")
                values[metric], raw[metric] = _ANSWER_VALUE[key], str(v)
            out[tid] = HumanLabel(tid, values, raw)
    return out


def run_turn_ids(records: Iterable[DialogueRecord]) -> set[str]:
    return {turn_id(r, i) for r in records for i in r.transcript.tutor_turn_indices()}


def judge_turn_value(record: DialogueRecord, turn_index: int, metric: str) -> int | None:
    """The judge's 0/1 for one turn and metric; None when missing or not applicable (-1)."""
    for j in record.judgements:
        if j.turn_index == turn_index:
            if j.status != JUDGE_OK or j.labels is None:
                return None
            v = j.labels.get(JUDGE_FIELD_FOR_METRIC[metric])
            return None if v is None or v == -1 or isinstance(v, bool) else int(v)
    return None


__all__ = [
    "ANSWERS", "FLAGGED_WEIGHT", "HumanLabel", "LABELS_DIR", "LABELS_FILE", "LabelSample", "SAMPLE_FILE", "SampleItem",
    "Stratum", "allocate", "append_label", "draw_sample", "flagged_units", "judge_turn_value", "judged_turns",
    "labels_folder", "read_labels", "read_sample", "run_folder", "run_identity", "run_turn_ids", "sampleable", "turn_id", "usable",
    "write_sample",
]
