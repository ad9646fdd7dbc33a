"""Reading lm-eval output directories of EduFair tasks into per-dialogue scores.

``lm_eval --output_path OUT --log_samples`` writes ``OUT/<model_name_sanitized>/results_<ts>.json``
and ``samples_<task>_<ts>.jsonl``. :func:`load_run` accepts OUT (with exactly one model folder),
a model folder, or one results JSON. Inside a model folder every task is taken from the *newest*
timestamp that has a samples file for it (so tasks run separately into one OUT are all found,
and a re-run replaces the older one); a results JSON given explicitly pins that timestamp.

Each samples line carries the whole dialogue record under the metric key ``edufair_record``
(``{"transcript", "judgements", "scores", "provenance"}``); the scores are
``DialogueScores.from_dict(record["scores"])``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Sequence

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import iter_jsonl, read_json
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.cache import model_identity
from edufair_metrics.failures import FailureKind
from edufair_metrics.judge.run import failed_stage
from edufair_metrics.records import JUDGE_MISSING, DialogueScores
from edufair_metrics.scores import transcript_failed

RECORD_KEY = "edufair_record"
_RESULTS_RE = re.compile(r"^results_(?P<ts>.+)\.json$")
_SAMPLES_RE = re.compile(r"^samples_(?P<task>.+)_(?P<ts>[^_]+)\.jsonl$")


@dataclass
class Run:
    """One tutor's lm-eval output (one model folder)."""

    label: str  # tutor identity used in tables
    model_dir: Path
    results_files: list[Path]
    samples_files: dict[str, Path]  # task -> samples file used
    scores: list[DialogueScores]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # task -> lm-eval metrics
    # task -> per-role model-call counts of the run (results_*.json configs.<task>.metadata.edufair_calls)
    call_counts: dict[str, dict[str, Any]] = field(default_factory=dict)
    model_name: str | None = None
    protocol_versions: set[str] = field(default_factory=set)
    skipped_lines: int = 0  # samples lines without an EduFair record
    # provenance fields that must agree to pool runs: field -> {value: where first seen}
    compat: dict[str, dict[str, str]] = field(default_factory=dict)
    # transcript stop_reason per dialogue, parallel to ``scores`` (None: the record has none)
    stop_reasons: list[str | None] = field(default_factory=list)
    failures: list["Failure"] = field(default_factory=list)  # every failure, one row each
    # bank source(s) per domain (sciq | socrateach | gsm8k-proxy), from the provenance or the logged
    # documents; empty when the records do not say (older runs)
    sources: dict[str, set[str]] = field(default_factory=dict)

    def frame(self, keep_failed: bool = False):
        """Long DataFrame (see ``stats.LONG_COLUMNS``) of this run's scores (dialogues ended by a
        failed call left out unless ``keep_failed``)."""
        return scores_frame([self], keep_failed=keep_failed)

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


def tutor_name(results: dict[str, Any]) -> str | None:
    """Tutor identity from an lm-eval results JSON: ``model_name``, else ``pretrained=`` /
    ``model=`` (or peft/path/engine) in ``config.model_args`` (string or dict)."""
    name = results.get("model_name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    args = (results.get("config") or {}).get("model_args")
    keys = ("peft", "delta", "pretrained", "model", "path", "engine")
    if isinstance(args, dict):
        for k in keys:
            if args.get(k):
                return str(args[k])
    elif isinstance(args, str):
        parts = dict(p.split("=", 1) for p in args.split(",") if "=" in p)
        for k in keys:
            if parts.get(k):
                return parts[k].strip()
    model = (results.get("config") or {}).get("model")
    return str(model) if model else None


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


def _read_json(path: Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise EduFairError(f"{path}: not an lm-eval results file")
    return data


def _has_results(d: Path) -> bool:
    return any(_RESULTS_RE.match(p.name) for p in d.iterdir() if p.is_file())


def find_model_dirs(path: str | Path) -> list[tuple[Path, Path | None]]:
    """(model folder, pinned results file or None) for an OUT folder, a model folder or a
    results JSON."""
    p = Path(path).expanduser()
    if not p.exists():
        raise EduFairError(f"no such file or directory: {p}")
    if p.is_file():
        if not _RESULTS_RE.match(p.name):
            raise EduFairError(f"{p}: expected an lm-eval results_<timestamp>.json file")
        return [(p.parent, p)]
    if _has_results(p):
        return [(p, None)]
    subs = sorted(d for d in p.iterdir() if d.is_dir() and _has_results(d))
    if not subs:
        raise EduFairError(f"no lm-eval results_*.json in {p} or its subfolders (run lm_eval with --output_path and --log_samples)")
    return [(d, None) for d in subs]


def _load_model_dir(model_dir: Path, pinned: Path | None, labels: dict[Path, str], origin: Path) -> Run:
    results_files = sorted((f for f in model_dir.iterdir() if _RESULTS_RE.match(f.name)),
                           key=lambda f: _RESULTS_RE.match(f.name).group("ts"))
    if pinned is not None:
        results_files = [pinned]
    samples_by_ts: dict[str, dict[str, Path]] = {}
    for f in model_dir.iterdir():
        m = _SAMPLES_RE.match(f.name)
        if m:
            samples_by_ts.setdefault(m.group("ts"), {})[m.group("task")] = f
    chosen: dict[str, Path] = {}
    used: list[Path] = []
    results: dict[str, dict[str, Any]] = {}
    call_counts: dict[str, dict[str, Any]] = {}
    model_name = None
    for rf in reversed(results_files):  # newest first
        ts = _RESULTS_RE.match(rf.name).group("ts")
        tasks = samples_by_ts.get(ts, {})
        new = {t: f for t, f in tasks.items() if t not in chosen}
        if not new:
            continue
        data = _read_json(rf)
        model_name = model_name or tutor_name(data)
        for t in new:
            results[t] = (data.get("results") or {}).get(t, {})
            meta = (((data.get("configs") or {}).get(t) or {}).get("metadata") or {})
            if isinstance(meta.get("edufair_calls"), dict):
                call_counts[t] = meta["edufair_calls"]
        chosen.update(new)
        used.append(rf)
    if not chosen:
        raise EduFairError(f"{model_dir}: no samples_<task>_<timestamp>.jsonl next to the results file (run lm_eval with --log_samples)")
    label = None
    for key in (model_dir.resolve(), origin.resolve(), *(f.resolve() for f in used)):
        if key in labels:
            label = labels[key]
            break
    label = label or model_name or model_dir.name
    run = Run(label, model_dir, used, chosen, [], results, call_counts, model_name)
    for task, sf in sorted(chosen.items()):
        for lineno, obj in iter_jsonl(sf):
            rec = obj.get(RECORD_KEY) if isinstance(obj, dict) else None
            if not isinstance(rec, dict) or not isinstance(rec.get("scores"), dict):
                run.skipped_lines += 1
                continue
            try:
                ds = DialogueScores.from_dict(rec["scores"])
            except (TypeError, ValueError) as exc:
                raise EduFairError(f"{sf}:{lineno}: invalid scores record ({exc})") from exc
            ds.tutor = label
            ds.task = ds.task or task
            transcript = rec.get("transcript") if isinstance(rec.get("transcript"), dict) else None
            ds.failed = bool(ds.failed or transcript_failed(transcript))
            source = record_source(obj, rec)
            if source:
                run.sources.setdefault(ds.domain, set()).add(source)
            run.scores.append(ds)
            stop = (rec.get("transcript") or {}).get("stop_reason") if isinstance(rec.get("transcript"), dict) else None
            run.stop_reasons.append(str(stop) if stop else None)
            run.failures.extend(record_failures(rec, ds))
            pv = (rec.get("provenance") or {}).get("protocol_version")
            if pv:
                run.protocol_versions.add(str(pv))
            for name, value in compat_fields(rec.get("provenance") or {}).items():
                run.compat.setdefault(name, {}).setdefault(value, f"{sf}:{lineno}")
    if not run.scores:
        raise EduFairError(f"{model_dir}: samples files hold no '{RECORD_KEY}' records (not an EduFair run?)")
    return run


def load_runs(paths: Iterable[str | Path], labels: dict[Path, str] | None = None) -> list[Run]:
    """Every model folder under ``paths``; tutor labels must be unique."""
    labels = labels or {}
    runs: list[Run] = []
    for path in paths:
        for model_dir, pinned in find_model_dirs(path):
            runs.append(_load_model_dir(model_dir, pinned, labels, Path(path).expanduser()))
    seen: dict[str, Path] = {}
    for r in runs:
        if r.label in seen:
            raise EduFairError(f"tutor {r.label!r} appears twice ({seen[r.label]} and {r.model_dir}); use --label NAME=DIR")
        seen[r.label] = r.model_dir
    versions = set().union(*(r.protocol_versions for r in runs)) if runs else set()
    if len(versions) > 1:
        raise EduFairError(f"runs use different protocol versions ({', '.join(sorted(versions))}); refusing to pool them")
    from edufair_metrics import PROTOCOL_VERSION

    if versions and versions != {str(PROTOCOL_VERSION)}:
        where = next(str(r.model_dir) for r in runs if r.protocol_versions)
        raise EduFairError(
            f"{where}: results use protocol version {', '.join(sorted(versions))}, this edufair implements "
            f"{PROTOCOL_VERSION}; refusing to report them (use the matching edufair release)"
        )
    check_compatible(runs)
    return runs


# Provenance fields that must be identical across everything pooled into one report.
def compat_fields(prov: dict[str, Any]) -> dict[str, str]:
    import json as _json

    out: dict[str, str] = {}
    for name in ("protocol_version", "protocol_sha256", "judge_prompts_sha256"):
        if prov.get(name) is not None:
            out[name] = str(prov[name])
    judge = (prov.get("models") or {}).get("judge")
    if judge:
        out["judge model"] = str(judge.get("model"))
    jdec = (prov.get("decoding") or {}).get("judge")
    if jdec:
        out["judge settings"] = _json.dumps(jdec, sort_keys=True)
    for who in ("student",):
        m = (prov.get("models") or {}).get(who)
        if m:  # the identity: lm-eval model class and answer-determining args, never where it is
            # served (older records may still hold base_url or concurrency in model_args)
            args = m.get("model_args") if isinstance(m.get("model_args"), dict) else {"model_args": m.get("model_args")}
            out[f"{who} model"] = _json.dumps(model_identity(str(m.get("kind")), args), sort_keys=True)
        d = (prov.get("decoding") or {}).get(who)
        if d:
            out[f"{who} decoding"] = _json.dumps(d, sort_keys=True)
    bank = prov.get("bank") or {}
    if bank.get("sha256"):
        out[f"bank sha256 ({bank.get('domain')})"] = str(bank["sha256"])
    if prov.get("max_tutor_turns") is not None:
        out["max_tutor_turns"] = str(prov["max_tutor_turns"])
    return out


def record_source(line: dict[str, Any], rec: dict[str, Any]) -> str | None:
    """The bank source of one samples line: the record's ``provenance.bank.source`` when present,
    else the logged document's ``source`` (every EduFair document carries it)."""
    bank = (rec.get("provenance") or {}).get("bank") if isinstance(rec.get("provenance"), dict) else None
    if isinstance(bank, dict) and bank.get("source"):
        return str(bank["source"])
    doc = line.get("doc")
    if isinstance(doc, dict) and doc.get("source"):
        return str(doc["source"])
    return None


def domain_labels(runs: Iterable[Run]) -> dict[str, str]:
    """{domain: the name reports print for it}: ``bank.domain_label`` of the runs' bank source
    (mathematics from the GSM8K stand-in reads "mathematics (GSM8K proxy)" in every table)."""
    from edufair_metrics.bank import domain_label

    out: dict[str, str] = {}
    for r in runs:
        for domain, sources in r.sources.items():
            for source in sorted(sources):
                label = domain_label(domain, source)
                if label != domain or domain not in out:
                    out[domain] = label
    return out


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


def load_run(path: str | Path, label: str | None = None) -> Run:
    """Exactly one tutor's run from an OUT folder, a model folder or a results JSON."""
    dirs = find_model_dirs(path)
    if len(dirs) != 1:
        raise EduFairError(f"{path} holds {len(dirs)} model folders; pass one of them")
    model_dir, pinned = dirs[0]
    labels = {model_dir.resolve(): label} if label else {}
    return _load_model_dir(model_dir, pinned, labels, Path(path).expanduser())


class Failure(NamedTuple):
    """One failure of a run: a dialogue ended by a failed call (stage student/tutor) or a missing
    judge label (stage judge), with its FailureKind value."""

    task: str
    condition: str
    level: str
    stage: str
    kind: str


def record_failures(rec: dict[str, Any], ds: DialogueScores) -> list[Failure]:
    """Failures of one record, from the structured ``error_kind`` / ``kind`` fields (a record
    written before they existed counts as "other")."""
    out = []
    where = (ds.task, ds.condition, ds.level)
    transcript = rec.get("transcript") if isinstance(rec.get("transcript"), dict) else {}
    stop = str(transcript.get("stop_reason") or "")
    if transcript_failed(transcript):  # a failure stop reason, or any recorded error (empty_visible_turn, ...)
        out.append(Failure(*where, failed_stage(stop), str(transcript.get("error_kind") or FailureKind.OTHER.value)))
    for j in rec.get("judgements") or []:
        if isinstance(j, dict) and j.get("status") == JUDGE_MISSING:
            out.append(Failure(*where, "judge", str(j.get("kind") or FailureKind.OTHER.value)))
    return out


def failure_table(runs: Iterable[Run]):
    """Failures counted by kind per tutor, task and condition level."""
    import pandas as pd

    cols = ["tutor", "task", "condition", "level", "stage", "kind"]
    rows = [(r.label, *f) for r in runs for f in r.failures]
    if not rows:
        return pd.DataFrame(columns=cols + ["count"])
    return pd.DataFrame(rows, columns=cols).groupby(cols, sort=True).size().reset_index(name="count")


MISSING_LABEL_COLUMNS = ["dialogues", "sent_turns", "labelled_turns", "missing_turns", "missing_rate"]


def missing_label_table(runs_or_scores: Iterable[Run] | Iterable[DialogueScores]):
    """Missing judge labels per tutor, task, condition and level. ``sent_turns``: tutor turns sent
    to the judge (missing ones included; called ``judged_turns`` before), ``labelled_turns``: those
    labelled, ``missing_turns``: those not, ``missing_rate`` = missing_turns / sent_turns."""
    import pandas as pd

    scores: list[DialogueScores] = []
    for x in runs_or_scores:
        scores.extend(x.scores if isinstance(x, Run) else [x])
    cols = ["tutor", "task", "condition", "dimension", "level"]
    if not scores:
        return pd.DataFrame(columns=cols + MISSING_LABEL_COLUMNS)
    df = pd.DataFrame([{**{c: getattr(s, c) for c in cols}, "missing_turns": s.missing_turns,
                        "sent_turns": s.sent_turns} for s in scores])
    out = df.groupby(cols, sort=True).agg(
        dialogues=("missing_turns", "size"), sent_turns=("sent_turns", "sum"),
        missing_turns=("missing_turns", "sum")).reset_index()
    out.insert(len(cols) + 2, "labelled_turns", out["sent_turns"] - out["missing_turns"])
    out["missing_rate"] = out["missing_turns"] / out["sent_turns"].where(out["sent_turns"] > 0)
    return out
