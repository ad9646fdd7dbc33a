"""Shards that merge, through the real lm_eval CLI: one task's questions split over k = 3 runs with
``edufair.shard`` (each with its own output folder and call cache, like k hosts of a SLURM array),
and ``edufair report`` on the three folders gives exactly the report of the unsharded run: the same
records (documents, doc ids, transcripts, labels, scores), a byte-identical grid.csv / units.csv,
and the model calls of the three runs summed. A missing shard is named."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from edufair_metrics.bank.shard import shard_of
from tests.helpers.edufair_cli import PY, TASK, EduFairFake, cli_env, comparable, lm_eval_argv, run_cli
from tests.helpers.stored import with_provenance

pytestmark = pytest.mark.slow

LEVELS = ["female", "male"]
K = 3


def _bank(d: Path, n: int = 4) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    golds = ["gravity", "friction", "inertia", "velocity", "mass", "energy"]
    with open(d / "physics.jsonl", "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"shard-q{i}", "domain": "physics", "grade": 8, "question": f"Question {i}: which quantity?",
                                 "answer": golds[i], "answer_forms": [golds[i]], "source": "sciq"}) + "\n")
    assert {shard_of(f"shard-q{i}", K) for i in range(n)} == set(range(K)), "every shard needs a question"
    return d


def _records(out: Path) -> list[dict]:
    files = sorted(out.rglob(f"samples_{TASK}_*.jsonl"))
    out_lines = []
    for f in files:  # each file's run headers resolved (schema v3 stores each once per file)
        lines = [json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()]
        recs = with_provenance(x["complete_dialogues"] for x in lines)
        out_lines += [{**x, "complete_dialogues": r} for x, r in zip(lines, recs)]
    return out_lines


def _report(inputs: list[Path], dest: Path) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "edufair_metrics.cli", "report", *map(str, inputs), "--out", str(dest),
                           "--n-boot", "50", "--no-figures"], capture_output=True, text=True, timeout=180,
                          env=cli_env(dest.parent / "cache-report"))


def test_three_shards_pooled_are_the_unsharded_run(tmp_path):
    bank = _bank(tmp_path / "bank")
    outs = []
    with EduFairFake() as fake:
        whole = tmp_path / "whole"
        r = run_cli(lm_eval_argv(fake.url, bank, whole, limit=100, max_turns=2, extra={"levels": LEVELS}),
                    cli_env(tmp_path / "cache-whole"), tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        for index in range(K):
            out = tmp_path / f"host{index}"
            r = run_cli(lm_eval_argv(fake.url, bank, out, limit=100, max_turns=2,
                                     extra={"levels": LEVELS, "shard": {"index": index, "count": K}}),
                        cli_env(tmp_path / f"cache-{index}"), tmp_path)
            assert r.returncode == 0, r.stderr[-3000:]
            outs.append(out)

    a = _records(whole)
    shards = [_records(o) for o in outs]
    assert all(shards) and sum(map(len, shards)) == len(a) == 4 * len(LEVELS)
    for index, recs in enumerate(shards):  # a shard holds whole questions: every level of each
        qs = [x["complete_dialogues"]["transcript"]["question_id"] for x in recs]
        assert all(shard_of(q, K) == index and qs.count(q) == len(LEVELS) for q in qs)
        assert {x["complete_dialogues"]["provenance"]["execution"]["shard"]["index"] for x in recs} == {index}
    pooled = [x for recs in shards for x in recs]
    assert sorted(x["doc_id"] for x in pooled) == sorted(x["doc_id"] for x in a)
    assert comparable([x["complete_dialogues"] for x in pooled]) == comparable([x["complete_dialogues"] for x in a])

    r1, r2 = _report([whole], tmp_path / "rep-whole"), _report(outs, tmp_path / "rep-shards")
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr[-2000:] + r2.stderr[-2000:]
    for name in ("grid.csv", "units.csv", "levels.md"):
        assert (tmp_path / "rep-whole" / name).read_bytes() == (tmp_path / "rep-shards" / name).read_bytes(), name
    # the model calls of the three runs, summed (failures.md), are the unsharded run's
    calls = [line for line in (tmp_path / "rep-whole" / "failures.md").read_text().splitlines() if line.startswith("| tutor |")]
    assert calls == [line for line in (tmp_path / "rep-shards" / "failures.md").read_text().splitlines()
                     if line.startswith("| tutor |")]

    # a missing shard is named, and nothing is written
    r = _report(outs[:1] + outs[2:], tmp_path / "rep-missing")
    assert r.returncode != 0
    assert "shard(s) 1 of 3 missing (found 0, 2)" in r.stderr.strip().splitlines()[-1]
