"""Loading runs: one tutor's lm-eval output folder (or the folder ``edufair judge --out`` writes)
read into per-dialogue scores, failures and the provenance fields that must agree to pool runs.
Each samples file is read ONCE (:func:`~edufair_metrics.runlog.read.iter_records`); a caller that
needs more of each record than the scores (the report's judge-validity views) passes ``visit``.

One tutor's run may come from several samples files per task, in one folder or several (the
folders of one tutor label are pooled): shards (``edufair.shard``), documents split by hand, a
re-run. :func:`choose_samples` decides which files to pool; reading them refuses a dialogue that
appears twice and names the shards that are missing; nothing is dropped silently."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from edufair_metrics import EXTENSION_PROTOCOL_VERSION, PROTOCOL_VERSION
from edufair_metrics.bank import domain_label
from edufair_metrics.cache import model_identity
from edufair_metrics.errors import EduFairError
from edufair_metrics.failures import FailureKind, sum_call_counts
from edufair_metrics.records import (
    EXTENSION_CONDITIONS,
    JUDGE_MISSING,
    RECORD_KEY,
    DialogueRecord,
    DialogueScores,
    failed_stage,
)
from edufair_metrics.runlog.layout import (
    RunFiles,
    RunFolder,
    SamplesFile,
    find_run_folders,
    find_samples,
    is_results_file,
    is_samples_file,
    run_files,
)
from edufair_metrics.runlog.read import ReadStats, RecordLine, iter_records, read_records

log = logging.getLogger("edufair")

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
    samples_files: dict[str, list[Path]]  # task -> the samples files pooled (several: shards, parts)
    scores: list[DialogueScores]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # task -> lm-eval metrics
    # task -> per-role model-call counts of the run (results_*.json configs.<task>.metadata.edufair_calls)
    call_counts: dict[str, dict[str, Any]] = field(default_factory=dict)
    model_name: str | None = None
    # task -> EduFair's version and lm-eval plugin entries when the run was made
    # (results_*.json configs.<task>.metadata.edufair_provenance; empty for older runs)
    package: dict[str, dict[str, Any]] = field(default_factory=dict)
    protocol_versions: set[str] = field(default_factory=set)
    # the protocol versions by scope: "paper" (the paper's conditions) and "extension" (EduFair's
    # extension conditions, records.EXTENSION_CONDITIONS); each scope has its own version
    protocol_scopes: dict[str, set[str]] = field(default_factory=dict)
    skipped_lines: int = 0  # samples lines without an EduFair record
    # provenance fields that must agree to pool runs: field -> {value: where first seen}
    compat: dict[str, dict[str, str]] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)  # every failure, one row each
    # bank source(s) per domain (sciq | socrateach | gsm8k-proxy), from the records; empty when the
    # records do not say (older runs)
    sources: dict[str, set[str]] = field(default_factory=dict)
    transcripts: int = 0  # records that store their transcript (not only scores)
    model_dirs: list[Path] = field(default_factory=list)  # every folder pooled into this run (model_dir first)

    def describe(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "model_name": self.model_name,
            "model_dir": str(self.model_dir),
            "results_files": [str(p) for p in self.results_files],
            "model_dirs": [str(p) for p in self.model_dirs or [self.model_dir]],
            "samples_files": {t: [str(p) for p in ps] for t, ps in sorted(self.samples_files.items())},
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
    extension = prov.get("protocol_extensions_sha256") is not None  # an extension condition's record
    for name in ("protocol_version", "protocol_sha256", "judge_prompts_sha256", "protocol_extensions_sha256"):
        if prov.get(name) is not None:
            # the paper's and the extensions' protocol versions differ by design: each is compared
            # within its own scope (check_protocol says which version each scope must have)
            key = "protocol_version (extension conditions)" if name == "protocol_version" and extension else name
            out[key] = str(prov[name])
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
    draw = prov.get("names_draw")
    if isinstance(draw, dict):  # the names of a names task: two draws are two sets of levels, not one population
        out["names draw"] = json.dumps(draw, sort_keys=True, ensure_ascii=False)
    if prov.get("max_tutor_turns") is not None:
        out["max_tutor_turns"] = str(prov["max_tutor_turns"])
        # dialogues per question and level (edufair.replicates; absent = 1): a question's mean over k
        # dialogues has another variance than one dialogue's score, so runs of different k never pool
        out["replicates (dialogues per question and level)"] = str(prov.get("replicates", 1))
    world_size = (prov.get("execution") or {}).get("world_size")
    if world_size is not None and samples_tutor((prov.get("decoding") or {}).get("tutor")):
        # a sampling tutor under lm-eval's sharding draws other transcripts with each process count
        # (the batches, and with them the random streams, differ): such runs are not one population
        out["world size (sampling tutor)"] = str(world_size)
    return out


def samples_tutor(decoding: Any) -> bool:
    """Whether the tutor's decoding settings sample (temperature > 0 or do_sample), as lm-eval's
    backends read them: a positive temperature samples unless do_sample is false."""
    if not isinstance(decoding, dict):
        return False
    if decoding.get("do_sample") is False:
        return False
    try:
        return bool(decoding.get("do_sample")) or float(decoding.get("temperature") or 0) > 0
    except (TypeError, ValueError):
        return False


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
        scope = "extension" if ds.condition in EXTENSION_CONDITIONS else "paper"
        run.protocol_scopes.setdefault(scope, set()).add(str(pv))
    for name, value in compat_fields(record.provenance).items():
        run.compat.setdefault(name, {}).setdefault(value, line.where)


def _folder_label(folder: RunFolder, files: RunFiles, labels: dict[Path, str], origin: Path) -> str:
    for key in (folder.path.resolve(), origin.resolve(), *(f.resolve() for f in files.results_files)):
        if key in labels:
            return labels[key]
    return files.facts.model_name or folder.path.name


def _dialogue_keys(path: Path) -> set[tuple[str, str, str, str]]:
    """The dialogues (``DialogueRecord.key``) of one samples file."""
    return {line.record.key for line in iter_records(path, complete=False)}


def choose_samples(task: str, folders: Sequence[tuple[RunFolder, list[SamplesFile]]]) -> list[SamplesFile]:
    """The samples files of ``task`` to pool, from one or more run folders of one tutor (each
    folder's files newest first). Inside a folder, a file whose dialogues are all in newer files is
    replaced by them (a re-run; said on stderr, never silently), a file that shares none with them
    is pooled (a shard, a part of the documents run by hand), and one that shares some but not
    all is refused: nothing decides which copy to keep. Files of different folders are all pooled;
    reading them refuses any dialogue that appears twice."""
    out: list[SamplesFile] = []
    for folder, files in folders:
        if len(files) == 1:
            out.extend(files)
            continue
        kept: list[tuple[SamplesFile, set]] = []
        for sf in files:  # newest first
            keys = _dialogue_keys(sf.path)
            held = {k for _, ks in kept for k in ks}
            shared = keys & held
            if not shared:
                kept.append((sf, keys))
            elif shared == keys:
                newer = ", ".join(k.path.name for k, ks in kept if ks & keys)
                log.warning("edufair: %s: %s is replaced by the newer %s (a re-run of the same %d dialogue(s))",
                            task, sf.path, newer, len(keys))
            else:
                other = next(k for k, ks in kept if ks & keys)
                example = "/".join(sorted(shared)[0])
                raise EduFairError(
                    f"{task}: {sf.path.name} and the newer {other.path.name} in {folder.path} share {len(shared)} of "
                    f"{len(keys)} dialogue(s) (e.g. {example}), and the newer file(s) lack the other "
                    f"{len(keys - held)}: refusing to guess which copy to keep; move one of the files out of the folder")
        out.extend(sf for sf, _ in kept)
    return out


class _ShardCheck:
    """The shards (provenance ``execution.shard``) a task's records came from: all of one count,
    none missing (a shard the records name ``empty``, holding none of the run's questions, is not
    missing), never mixed with records of an unsharded run."""

    def __init__(self, task: str) -> None:
        self.task = task
        self.seen: dict[int, dict[int, str]] = {}  # count -> index -> first file
        self.empty: set[int] = set()  # shards that hold none of the run's questions (the records say)
        self.unsharded: str | None = None

    def add(self, provenance: dict[str, Any], where: str) -> None:
        shard = (provenance.get("execution") or {}).get("shard") if isinstance(provenance.get("execution"), dict) else None
        if isinstance(shard, dict) and shard.get("count") is not None:
            self.seen.setdefault(int(shard["count"]), {}).setdefault(int(shard.get("index", -1)), where)
            self.empty.update(int(i) for i in shard.get("empty") or [] if isinstance(i, int))
        elif self.unsharded is None:
            self.unsharded = where

    def check(self) -> None:
        if not self.seen:
            return
        if len(self.seen) > 1:
            counts = " and ".join(f"{c} (e.g. {next(iter(w.values()))})" for c, w in sorted(self.seen.items()))
            raise EduFairError(f"{self.task}: records of shard counts {counts}: pool the shards of one split only")
        (count, have), = self.seen.items()
        if self.unsharded is not None:
            raise EduFairError(f"{self.task}: records of shards of {count} pooled with records of an unsharded run "
                               f"({self.unsharded}): they hold the same questions; report them separately")
        # completeness against the question set: a shard that holds none of the questions is not missing
        missing = sorted(set(range(count)) - set(have) - self.empty)
        if missing:
            raise EduFairError(
                f"{self.task}: shard(s) {', '.join(map(str, missing))} of {count} missing (found "
                f"{', '.join(map(str, sorted(have)))}): run edufair.shard index {missing[0]} (of count {count}) too, "
                "or pass its output folder")


def _load_group(label: str, members: Sequence[tuple[RunFolder, RunFiles]], visit: RecordVisitor | None) -> Run:
    """One tutor's run from one or more run folders (e.g. the shards of a SLURM array)."""
    model_name = next((f.facts.model_name for _, f in members if f.facts.model_name), None)
    run = Run(label, members[0][0].path, [], {}, [], {}, {}, model_name)
    run.model_dirs = [folder.path for folder, _ in members]
    for _, files in members:
        for task, package in files.facts.package.items():
            run.package.setdefault(task, package)
    tasks = sorted({t for _, files in members for t in files.samples})
    for task in tasks:
        chosen = choose_samples(task, [(folder, files.samples[task]) for folder, files in members if task in files.samples])
        run.samples_files[task] = [sf.path for sf in chosen]
        run.results_files += [sf.results for sf in chosen if sf.results is not None and sf.results not in run.results_files]
        run.results[task] = chosen[0].metrics
        counts = [c for sf in chosen if sf.call_counts for c in sf.call_counts.values() if isinstance(c, dict) and c.get("role")]
        if counts:
            run.call_counts[task] = {c.role: _summed_counts(c, [p for p in counts if p.get("role") == c.role])
                                     for c in sum_call_counts(counts)}
        seen: dict[tuple, Path] = {}
        shards = _ShardCheck(task)
        for sf in chosen:
            stats = ReadStats()
            for line in iter_records(sf.path, stats=stats):
                if not line.record.scores.task:
                    line.record.scores.task = task
                key = line.record.key
                if key in seen:
                    raise EduFairError(
                        f"{task}: dialogue {'/'.join(key[1:])} of tutor {label!r} is in {seen[key]} and again at "
                        f"{line.where}: the same dialogue twice (a shard run twice, or two runs of the same tutor: "
                        "report those side by side with --label NAME=DIR)")
                seen[key] = sf.path
                shards.add(line.record.provenance, line.where)
                _add(run, line)
                if visit is not None:
                    visit(run.label, line)
            run.skipped_lines += stats.skipped
        shards.check()
    if not run.scores:
        where = ", ".join(str(folder.path) for folder, _ in members)
        raise EduFairError(f"{where}: samples files hold no '{RECORD_KEY}' records (not an EduFair run?)")
    return run


# what results files written before EduFair counted cost lack (report.failures.cost_table says
# "not recorded" for them rather than "missing")
_COST_FIELDS = ("prompt_tokens", "completion_tokens", "token_calls", "token_source", "wall_s")


def _summed_counts(total, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One role's counts summed over the pooled files, without the cost fields when no file had them."""
    out = total.to_dict()
    if not any("token_calls" in p for p in parts):
        for name in _COST_FIELDS:
            out.pop(name, None)
    return out


def _groups(paths: Iterable[str | Path], labels: dict[Path, str]) -> dict[str, list[tuple[RunFolder, RunFiles]]]:
    """The run folders under ``paths`` by tutor label (a folder named twice counts once)."""
    groups: dict[str, list[tuple[RunFolder, RunFiles]]] = {}
    done: set[tuple[Path, Path | None]] = set()
    for path in paths:
        for folder in find_run_folders(path):
            ident = (folder.path.resolve(), folder.pinned.resolve() if folder.pinned else None)
            if ident in done:
                continue
            done.add(ident)
            files = run_files(folder)
            groups.setdefault(_folder_label(folder, files, labels, Path(path).expanduser()), []).append((folder, files))
    return groups


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
    The folders of one tutor label are pooled into one run (shards, parts of the documents; a
    dialogue twice is an error); runs must share the protocol version this EduFair implements and
    agree on every provenance field that changes scores (``check``: :func:`check_compatible`)."""
    labels = labels or {}
    runs = [_load_group(label, members, visit) for label, members in _groups(paths, labels).items()]
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
    files = run_files(folders[0])
    return _load_group(_folder_label(folders[0], files, labels, Path(path).expanduser()), [(folders[0], files)], visit)


# the protocol version each scope of records must carry (a paper condition's or an extension condition's)
SCOPE_VERSIONS = {"paper": PROTOCOL_VERSION, "extension": EXTENSION_PROTOCOL_VERSION}


def check_protocol(runs: Sequence[Run]) -> None:
    """Refuse runs of different protocol versions, or of another version than this EduFair's: the
    records of the paper's conditions must carry ``PROTOCOL_VERSION``, those of EduFair's extension
    conditions ``EXTENSION_PROTOCOL_VERSION`` (any other version, or a version of the other scope, is
    refused)."""
    for scope, expected in SCOPE_VERSIONS.items():
        holders = [r for r in runs if _scope_versions(r).get(scope)]
        versions = set().union(*(_scope_versions(r)[scope] for r in holders)) if holders else set()
        if len(versions) > 1:
            raise EduFairError(f"runs use different protocol versions ({', '.join(sorted(versions))}); refusing to pool them")
        if versions and versions != {str(expected)}:
            what = "" if scope == "paper" else " for its extension conditions"
            raise EduFairError(
                f"{holders[0].model_dir}: results use protocol version {', '.join(sorted(versions))}, this edufair "
                f"implements {expected}{what}; refusing to report them (use the matching edufair release)"
            )


def _scope_versions(run: Run) -> dict[str, set[str]]:
    """A run's protocol versions by scope (a Run built without scopes: all of them the paper's)."""
    if run.protocol_scopes:
        return run.protocol_scopes
    return {"paper": set(run.protocol_versions)} if run.protocol_versions else {}


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
        chosen = [sf.path for t in sorted(files.samples) for sf in choose_samples(t, [(folders[0], files.samples[t])])]
        return files.facts.model_name or folders[0].path.name, chosen
    return p.name, find_samples([str(p)])


def load_records(path: str | Path) -> tuple[str, list[DialogueRecord]]:
    """(label, every record with a transcript) of one judged run (see :func:`record_files`), in
    memory: for comparing two judgings of the same transcripts."""
    label, files = record_files(path)
    records = [line.record for line in read_records(files)]
    for r in records:
        r.scores.tutor = label
    return label, records
