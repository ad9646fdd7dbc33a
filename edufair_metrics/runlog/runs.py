"""Loading runs: one tutor's lm-eval output folder (or the folder ``edufair judge --out`` writes)
read into per-dialogue scores, failures and the provenance fields that must agree to pool runs.
Each samples file is read ONCE (:func:`~edufair_metrics.runlog.read.iter_records`); a caller that
needs more of each record than the scores (the report's judge-validity views) passes ``visit``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from edufair_metrics import PROTOCOL_VERSION
from edufair_metrics.bank import domain_label
from edufair_metrics.cache import model_identity
from edufair_metrics.errors import EduFairError
from edufair_metrics.failures import FailureKind
from edufair_metrics.records import JUDGE_MISSING, RECORD_KEY, DialogueRecord, DialogueScores, failed_stage
from edufair_metrics.runlog.layout import (
    RunFolder,
    find_run_folders,
    find_samples,
    is_results_file,
    is_samples_file,
    run_files,
)
from edufair_metrics.runlog.read import ReadStats, RecordLine, iter_records, read_records

# ``visit(run label, record line)``: called for every record while a run is read
RecordVisitor = Callable[[str, RecordLine], None]


class Failure(NamedTuple):
    """One failure of a run: a dialogue ended by a failed call (stage student/tutor) or a missing
    judge label (stage judge), with its FailureKind value."""

    task: str
    condition: str
    level: str
    stage: str
    kind: str
    question_id: str = ""
    turn_index: int | None = None  # the judged tutor turn (judge failures)
    detail: str = ""  # the recorded reason, as the record states it


@dataclass
class Run:
    """One tutor's run (one model folder)."""

    label: str  # tutor identity used in tables
    model_dir: Path
    results_files: list[Path]
    samples_files: dict[str, Path]  # task -> samples file used
    scores: list[DialogueScores]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # task -> lm-eval metrics
    # task -> per-role model-call counts of the run (results_*.json configs.<task>.metadata.edufair_calls)
    call_counts: dict[str, dict[str, Any]] = field(default_factory=dict)
    model_name: str | None = None
    # task -> EduFair's version and lm-eval plugin entries when the run was made
    # (results_*.json configs.<task>.metadata.edufair_provenance; empty for older runs)
    package: dict[str, dict[str, Any]] = field(default_factory=dict)
    protocol_versions: set[str] = field(default_factory=set)
    skipped_lines: int = 0  # samples lines without an EduFair record
    # provenance fields that must agree to pool runs: field -> {value: where first seen}
    compat: dict[str, dict[str, str]] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)  # every failure, one row each
    # bank source(s) per domain (sciq | socrateach | gsm8k-proxy), from the records; empty when the
    # records do not say (older runs)
    sources: dict[str, set[str]] = field(default_factory=dict)
    transcripts: int = 0  # records that store their transcript (not only scores)

    def describe(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "model_name": self.model_name,
            "model_dir": str(self.model_dir),
            "results_files": [str(p) for p in self.results_files],
            "samples_files": {t: str(p) for t, p in sorted(self.samples_files.items())},
            "dialogues": len(self.scores),
            "skipped_lines": self.skipped_lines,
            "protocol_versions": sorted(self.protocol_versions),
        }


def record_failures(record: DialogueRecord) -> list[Failure]:
    """Failures of one record, from its structured ``error_kind`` / ``kind`` fields (a record
    written before they existed counts as "other")."""
    s, t = record.scores, record.transcript
    where = (s.task, s.condition, s.level)
    out = []
    if s.failed:  # a failure stop reason, or any recorded error (empty_visible_turn, ...)
        out.append(Failure(*where, failed_stage(t.stop_reason), str(t.error_kind or FailureKind.OTHER.value),
                           str(s.question_id), None, str(t.error or "")))
    for j in record.judgements:
        if j.status == JUDGE_MISSING:
            out.append(Failure(*where, "judge", str(j.kind or FailureKind.OTHER.value), str(s.question_id), j.turn_index,
                               str(j.reason or "")))
    return out


def compat_fields(prov: dict[str, Any]) -> dict[str, str]:
    """The provenance fields that must be identical across everything pooled into one report."""
    out: dict[str, str] = {}
    for name in ("protocol_version", "protocol_sha256", "judge_prompts_sha256"):
        if prov.get(name) is not None:
            out[name] = str(prov[name])
    judge = (prov.get("models") or {}).get("judge")
    if judge:
        out["judge model"] = str(judge.get("model"))
    jdec = (prov.get("decoding") or {}).get("judge")
    if jdec:
        out["judge settings"] = json.dumps(jdec, sort_keys=True)
    m = (prov.get("models") or {}).get("student")
    if m:  # the identity: lm-eval model class and answer-determining args, never where it is served
        # (older records may still hold base_url or concurrency in model_args)
        args = m.get("model_args") if isinstance(m.get("model_args"), dict) else {"model_args": m.get("model_args")}
        out["student model"] = json.dumps(model_identity(str(m.get("kind")), args), sort_keys=True)
    d = (prov.get("decoding") or {}).get("student")
    if d:
        out["student decoding"] = json.dumps(d, sort_keys=True)
    bank = prov.get("bank") or {}
    if bank.get("sha256"):
        out[f"bank sha256 ({bank.get('domain')})"] = str(bank["sha256"])
    if prov.get("max_tutor_turns") is not None:
        out["max_tutor_turns"] = str(prov["max_tutor_turns"])
    return out


def _add(run: Run, line: RecordLine) -> None:
    record = line.record
    ds = record.scores
    ds.tutor = run.label
    run.scores.append(ds)
    run.transcripts += int(record.has_transcript)
    source = (record.provenance.get("bank") or {}).get("source") if isinstance(record.provenance.get("bank"), dict) else None
    source = source or record.document.source
    if source:
        run.sources.setdefault(ds.domain, set()).add(str(source))
    run.failures.extend(record_failures(record))
    pv = record.provenance.get("protocol_version")
    if pv:
        run.protocol_versions.add(str(pv))
    for name, value in compat_fields(record.provenance).items():
        run.compat.setdefault(name, {}).setdefault(value, line.where)


def _load_folder(folder: RunFolder, labels: dict[Path, str], origin: Path, visit: RecordVisitor | None) -> Run:
    files = run_files(folder)
    label = None
    for key in (folder.path.resolve(), origin.resolve(), *(f.resolve() for f in files.results_files)):
        if key in labels:
            label = labels[key]
            break
    label = label or files.facts.model_name or folder.path.name
    run = Run(label, folder.path, files.results_files, files.samples, [], files.facts.metrics, files.facts.call_counts,
              files.facts.model_name, package=files.facts.package)
    for task, sf in sorted(files.samples.items()):
        stats = ReadStats()
        for line in iter_records(sf, stats=stats):
            if not line.record.scores.task:
                line.record.scores.task = task
            _add(run, line)
            if visit is not None:
                visit(run.label, line)
        run.skipped_lines += stats.skipped
    if not run.scores:
        raise EduFairError(f"{folder.path}: samples files hold no '{RECORD_KEY}' records (not an EduFair run?)")
    return run


def run_inputs(paths: Sequence[str | Path] | None, labels: Sequence[str] | None) -> tuple[list[str], dict[Path, str]]:
    """The runs of a command line: the positional ``paths`` plus every ``--label NAME=DIR`` whose
    DIR is not among them (a labelled folder is a run), and the labels by resolved folder."""
    label_map = parse_labels(labels)
    out = [str(p) for p in paths or []]
    given = {Path(p).expanduser().resolve() for p in out}
    out += [str(d) for d in label_map if d not in given]
    if not out:
        raise EduFairError("no run given: name one or more lm-eval output folders (or --label NAME=DIR)")
    return out, label_map


def parse_labels(items: Sequence[str] | None) -> dict[Path, str]:
    """``NAME=DIR`` strings -> {resolved DIR: NAME}."""
    out: dict[Path, str] = {}
    for item in items or []:
        if "=" not in item:
            raise EduFairError(f"--label expects NAME=DIR, got {item!r}")
        name, path = item.split("=", 1)
        if not name.strip() or not path.strip():
            raise EduFairError(f"--label expects NAME=DIR, got {item!r}")
        out[Path(path).expanduser().resolve()] = name.strip()
    return out


def load_runs(paths: Iterable[str | Path], labels: dict[Path, str] | None = None, *,
              visit: RecordVisitor | None = None, check: bool = True) -> list[Run]:
    """Every run folder under ``paths`` (each samples file read once; ``visit`` sees every record).
    Tutor labels must be unique; runs must share the protocol version this EduFair implements and
    agree on every provenance field that changes scores (``check``: :func:`check_compatible`)."""
    labels = labels or {}
    runs: list[Run] = []
    for path in paths:
        for folder in find_run_folders(path):
            runs.append(_load_folder(folder, labels, Path(path).expanduser(), visit))
    seen: dict[str, Path] = {}
    for r in runs:
        if r.label in seen:
            raise EduFairError(f"tutor {r.label!r} appears twice ({seen[r.label]} and {r.model_dir}); use --label NAME=DIR")
        seen[r.label] = r.model_dir
    if check:
        check_protocol(runs)
        check_compatible(runs)
    return runs


def load_run(path: str | Path, label: str | None = None, *, visit: RecordVisitor | None = None) -> Run:
    """Exactly one tutor's run from an OUT folder, a model folder or a results JSON."""
    folders = find_run_folders(path)
    if len(folders) != 1:
        names = ", ".join(str(f.path) for f in folders[:6]) + (", ..." if len(folders) > 6 else "")
        raise EduFairError(f"{path} holds {len(folders)} runs; pass one of them: {names}")
    labels = {folders[0].path.resolve(): label} if label else {}
    return _load_folder(folders[0], labels, Path(path).expanduser(), visit)


def check_protocol(runs: Sequence[Run]) -> None:
    """Refuse runs of different protocol versions, or of another version than this EduFair's."""
    versions = set().union(*(r.protocol_versions for r in runs)) if runs else set()
    if len(versions) > 1:
        raise EduFairError(f"runs use different protocol versions ({', '.join(sorted(versions))}); refusing to pool them")
    if versions and versions != {str(PROTOCOL_VERSION)}:
        where = next(str(r.model_dir) for r in runs if r.protocol_versions)
        raise EduFairError(
            f"{where}: results use protocol version {', '.join(sorted(versions))}, this edufair implements "
            f"{PROTOCOL_VERSION}; refusing to report them (use the matching edufair release)"
        )


def check_compatible(runs: Sequence[Run]) -> None:
    """Refuse, in one line, to pool records whose provenance disagrees on anything that changes
    scores (protocol, prompts, judge model/settings, student, bank, turn budget)."""
    seen: dict[str, dict[str, str]] = {}
    for r in runs:
        for name, values in r.compat.items():
            seen.setdefault(name, {}).update({v: w for v, w in values.items() if v not in seen.get(name, {})})
    for name, values in sorted(seen.items()):
        if len(values) > 1:
            (v1, w1), (v2, w2) = list(values.items())[:2]
            raise EduFairError(
                f"runs are not comparable: {name} differs ({_short(v1)} at {w1} vs {_short(v2)} at {w2}); refusing to pool them"
            )


def _short(v: str, n: int = 80) -> str:
    return v if len(v) <= n else v[: n - 3] + "..."


def domain_labels(runs: Iterable[Run]) -> dict[str, str]:
    """{domain: the name reports print for it}: ``bank.domain_label`` of the runs' bank source
    (mathematics from the GSM8K stand-in reads "mathematics (GSM8K proxy)" in every table)."""
    out: dict[str, str] = {}
    for r in runs:
        for domain, sources in r.sources.items():
            for source in sorted(sources):
                label = domain_label(domain, source)
                if label != domain or domain not in out:
                    out[domain] = label
    return out


def record_files(path: str | Path) -> tuple[str, list[Path]]:
    """(label, samples files) of a judged run: an lm-eval output folder / model folder / results
    JSON (the newest samples file per task, as :func:`load_run` reads it), or a folder of samples
    files without a results JSON (what ``edufair judge --out DIR`` wrote before it kept one), or
    one samples file."""
    p = Path(path).expanduser()
    if not p.exists():
        raise EduFairError(f"no such file or directory: {p}")
    if p.is_file() and is_samples_file(p):
        return p.parent.name, [p]
    has_results = p.is_file() and is_results_file(p) or p.is_dir() and any(is_results_file(f) for f in p.rglob("results_*.json"))
    if has_results:
        folders = find_run_folders(p)
        if len(folders) != 1:
            raise EduFairError(f"{p} holds several model folders; pass one of them")
        files = run_files(folders[0])
        return files.facts.model_name or folders[0].path.name, [files.samples[t] for t in sorted(files.samples)]
    return p.name, find_samples([str(p)])


def load_records(path: str | Path) -> tuple[str, list[DialogueRecord]]:
    """(label, every record with a transcript) of one judged run (see :func:`record_files`), in
    memory: for comparing two judgings of the same transcripts."""
    label, files = record_files(path)
    records = [line.record for line in read_records(files)]
    for r in records:
        r.scores.tutor = label
    return label, records
