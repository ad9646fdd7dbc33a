"""Transcripts for the HTML report, written while the samples files are read (``runlog.load_runs``'s
one pass): no transcript stays in memory after its line is read.

Each dialogue (:func:`edufair_metrics.analysis.evidence.dialogue_evidence`) becomes one line
``EF.d("<key>",{...});`` appended to ``t/<tutor index>/<task>/<bucket>.js``, where ``bucket`` is
:func:`bucket_of` its question id: the dialogues of one question (every condition level of one task)
share a file, which the page loads with a ``<script>`` element when a twin view needs it (that works
from ``file://``; ``fetch`` of local files does not). Each line is a whole statement, so a file can
be appended to at any time and read back by ``tests`` line by line. About 30 questions share a file
at the full bank (907 / :data:`BUCKETS`).

System prompts are the same for every question of a level: each distinct prompt is stored once
(:attr:`EvidenceSpool.prompts`, with its cue spans) and the dialogues refer to it by number. The
question texts are kept per (domain, question id), a few thousand strings at paper size."""

from __future__ import annotations

import json
import shutil
import tempfile
import weakref
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

from edufair_metrics.analysis.evidence import cue_spans, dialogue_evidence, turn_keys
from edufair_metrics.protocol.placebo import split_replicate_level
from edufair_metrics.records import DialogueRecord

BUCKETS = 32
MAX_OPEN = 64  # open bucket files at once (a samples file's records go to one task's buckets)


def js_json(obj: Any) -> str:
    """``obj`` as a JavaScript literal: compact JSON, with "</" escaped so that it can sit inside an
    HTML ``<script>`` element as well as in a file of its own."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")


def bucket_of(question_id: str) -> int:
    """The transcript file of a question within its (tutor, task): crc32 of its id mod BUCKETS."""
    return zlib.crc32(str(question_id).encode("utf-8")) % BUCKETS


def transcript_file(tutor_index: int, task: str, bucket: int) -> str:
    """The path, relative to the viewer folder, of a (tutor, task, bucket)'s transcripts."""
    return f"t/{tutor_index}/{task}/{bucket}.js"


class EvidenceSpool:
    """Collects the dialogues of a report's runs into the viewer's transcript files under
    ``root`` (a folder of its own, holding ``<tutor>/<task>/<bucket>.js``; :meth:`move_to` puts it in
    place, as ``viewer/t``, once the report is written).
    ``root`` None: a temporary folder, removed when the spool is garbage-collected unless moved."""

    def __init__(self, root: str | Path | None = None) -> None:
        if root is None:
            root = Path(tempfile.mkdtemp(prefix="edufair-evidence-"))
            self._cleanup = weakref.finalize(self, shutil.rmtree, str(root), True)
        else:
            root = Path(root)
            if root.exists():
                shutil.rmtree(root)
            root.mkdir(parents=True)
            self._cleanup = None
        self.root = root
        self.tutors: dict[str, int] = {}  # run label -> index (the t/<index>/ folder)
        self.dialogues: dict[tuple[int, str], int] = {}  # (tutor index, task) -> dialogues written
        self.prompts: dict[str, int] = {}  # system prompt text -> id
        self.prompt_spans: list[list[list[int]]] = []  # id -> cue spans [[start, end], ...]
        self.questions: dict[str, dict[str, str]] = {}  # domain -> {question id: question text}
        self.gold: dict[str, dict[str, str]] = {}  # domain -> {question id: gold answer}
        # (tutor index, task) with a placebo replicate level: where the placebo pairs part is read back
        # from their files (placebo_hashes), so no per-dialogue hashes stay in memory
        self.replicated: set[tuple[int, str]] = set()
        self._open: OrderedDict[Path, Any] = OrderedDict()
        self.closed = False

    # ---- writing ------------------------------------------------------------------------------
    def _prompt(self, text: str, condition: str, level: str, domain: str, role: str) -> int:
        pid = self.prompts.get(text)
        if pid is None:
            pid = self.prompts[text] = len(self.prompt_spans)
            self.prompt_spans.append(cue_spans(text, condition, level, domain, role))
        return pid

    def _file(self, rel: str):
        path = self.root / rel
        fh = self._open.get(path)
        if fh is not None:
            self._open.move_to_end(path)
            return fh
        if len(self._open) >= MAX_OPEN:
            _, old = self._open.popitem(last=False)
            old.close()
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = self._open[path] = open(path, "a", encoding="utf-8")
        return fh

    def add(self, tutor: str, record: DialogueRecord, detection=None) -> None:
        """Write one record's dialogue (``detection``: its turn-level detector labels, when the
        caller computed them; None: none, e.g. no gold forms)."""
        if not record.has_transcript:
            return
        ti = self.tutors.setdefault(tutor, len(self.tutors))
        t = record.transcript
        ev = dialogue_evidence(record, detection)
        ev["ts"] = self._prompt(ev.pop("tutor_system") or "", t.condition, t.level, t.domain, "tutor")
        ev["ss"] = self._prompt(ev.pop("student_system") or "", t.condition, t.level, t.domain, "student")
        qid = ev["q"]
        if t.turns and t.turns[0].role == "question":
            self.questions.setdefault(t.domain, {}).setdefault(qid, t.turns[0].text)
        if ev.get("gold") is not None:
            self.gold.setdefault(t.domain, {}).setdefault(qid, ev["gold"])
        del ev["gold"]
        task = ev["task"] or f"{t.condition}_{t.domain}"
        if split_replicate_level(t.level)[1] > 1:
            self.replicated.add((ti, task))
        key = f"{ti}/{task}/{bucket_of(qid)}"
        line = js_json(ev)
        self._file(f"{key}.js").write(f'EF.d("{key}",{line});\n')  # under root: <tutor>/<task>/<bucket>.js
        self.dialogues[(ti, task)] = self.dialogues.get((ti, task), 0) + 1

    def close(self) -> None:
        while self._open:
            _, fh = self._open.popitem(last=False)
            fh.close()
        self.closed = True

    def move_to(self, dest: str | Path) -> Path:
        """Close the files and move the transcript folder to ``dest`` (replaced if it exists)."""
        self.close()
        dest = Path(dest)
        if dest.resolve() == self.root.resolve():  # already there (a report written twice from one read)
            return dest
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(self.root), str(dest))
        if self._cleanup is not None:
            self._cleanup.detach()
        self.root = dest
        return dest

    def placebo_hashes(self) -> dict[tuple[int, str, str, str], list[str]]:
        """(tutor index, task, question id, level) -> the turns as comparable keys
        (``analysis.evidence.turn_keys``) of every dialogue of the tasks holding a placebo
        replicate, read back from the written files."""
        self.close()
        out: dict[tuple[int, str, str, str], list[str]] = {}
        for ti, task in sorted(self.replicated):
            for path in sorted((self.root / str(ti) / task).glob("*.js")):
                for line in path.read_text(encoding="utf-8").splitlines():
                    if not line.startswith("EF.d("):
                        continue
                    ev = json.loads(line[line.index(",") + 1: line.rindex(")")])
                    out[(ti, task, str(ev["q"]), str(ev["lv"]))] = turn_keys(ev.get("turns") or [])
        return out

    @property
    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.root.rglob("*.js"))
