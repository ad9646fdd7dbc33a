"""The task's split over processes and shards, and the guard rails of lm-eval's multi-process runs,
on the task object itself (no processes started; ``test_sharded.py`` runs the real thing):
every process gets contiguous whole questions, shards partition a run's questions, and what would
hang, crash or repeat the whole job in every process is refused before any dialogue, in one line."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from lm_eval.tasks import TaskManager

from edufair_metrics.bank.shard import Shard, shard_of
from edufair_metrics.errors import EduFairError
from edufair_metrics.settings import resolve_runner_settings
from lm_eval_tasks import TASKS_DIR
from tests.helpers.fake_lms import ScriptedChatLM

TASK = "edufair_explicit_physics"
LEVELS = 9


def write_bank(d: Path, n: int) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "physics.jsonl", "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"par-{i}", "domain": "physics", "grade": 8, "question": f"Question {i}?",
                                 "answer": "gravity", "answer_forms": ["gravity"], "source": "sciq"}) + "\n")
    return d


def make_task(bank: Path, **edufair):
    meta = {"edufair": {"bank_dir": str(bank), "student": {"model": "edufair-fake-student"}, "judge": {"enabled": False},
                        "preflight": False, **edufair}}
    tm = TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta)
    return tm.load([TASK])["tasks"][TASK]


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    return write_bank(tmp_path_factory.mktemp("bank"), 7)


def _questions(pairs):
    return [d["question_id"] for _, d in pairs]


def test_each_process_gets_contiguous_whole_questions(bank):
    task = make_task(bank)
    everything = list(task.doc_iterator(rank=0, world_size=1))
    assert len(everything) == 7 * LEVELS
    for world in (2, 3):
        parts = [list(task.doc_iterator(rank=r, world_size=world)) for r in range(world)]
        assert sorted(i for p in parts for i, _ in p) == list(range(7 * LEVELS))  # each document once
        for p in parts:
            qs = _questions(p)
            assert len(qs) % LEVELS == 0 and all(qs.count(q) == LEVELS for q in qs)  # every level of its questions
            ids = [i for i, _ in p]
            assert ids == list(range(ids[0], ids[-1] + 1))  # contiguous
        sizes = [len(p) // LEVELS for p in parts]
        assert max(sizes) - min(sizes) <= 1
    # lm-eval's --limit and --samples still apply first (and --samples keeps lm-eval's numbering)
    assert len(list(task.doc_iterator(rank=1, world_size=2, limit=4 * LEVELS))) == 2 * LEVELS
    assert [i for i, _ in task.doc_iterator(rank=0, world_size=1, samples=[9, 10])] == [0, 1]


def test_shards_partition_the_questions_never_the_levels(bank):
    whole = {(i, d["level"]) for i, d in make_task(bank).doc_iterator(world_size=1)}
    got = []
    for index in range(3):
        task = make_task(bank, shard={"index": index, "count": 3})
        pairs = list(task.doc_iterator(world_size=1))
        assert all(shard_of(q, 3) == index for q in _questions(pairs))
        assert all(_questions(pairs).count(q) == LEVELS for q in _questions(pairs))
        got += [(i, d["level"]) for i, d in pairs]
    assert sorted(got) == sorted(whole)  # the same doc_ids: pooled shards are the unsharded run


def test_shard_setting_is_checked():
    with pytest.raises(EduFairError, match=r"edufair.shard index must be below count \(0 … 2\)"):
        resolve_runner_settings({}, {"edufair": {"student": {"model": "x"}, "judge": {"enabled": False},
                                                 "shard": {"index": 3, "count": 3}}})
    with pytest.raises(EduFairError, match="unknown edufair setting 'shard.idx'"):
        resolve_runner_settings({}, {"edufair": {"student": {"model": "x"}, "shard": {"idx": 0, "count": 3}}})
    assert Shard(index=0, count=1).holds("anything")


class Tutor(ScriptedChatLM):
    def __init__(self, batch_size="8", world_size=1, **attrs):
        super().__init__()
        self.batch_size = batch_size
        self._world = world_size
        self.__dict__.update(attrs)

    @property
    def world_size(self):
        return self._world


def test_auto_batch_size_under_several_processes_is_refused(bank):
    task = make_task(bank)
    for bs in ("auto", "auto:4"):
        with pytest.raises(EduFairError, match=rf"--batch_size {bs} with 2 processes hangs") as ei:
            task.check_parallelism(Tutor(batch_size=bs), world_size=2)
        assert "\n" not in str(ei.value)
    task.check_parallelism(Tutor(batch_size="auto"), world_size=1)  # one process: fine
    task.check_parallelism(Tutor(batch_size="8"), world_size=2)


def test_fewer_questions_than_processes_is_refused(bank):
    task = make_task(bank)
    with pytest.raises(EduFairError, match=r"1 question\(s\) for 2 processes"):
        task.check_parallelism(Tutor(), world_size=2, limit=LEVELS)
    task.check_parallelism(Tutor(), world_size=2, limit=2 * LEVELS)


def test_a_launcher_with_a_tutor_lm_eval_does_not_shard_is_refused(bank, monkeypatch):
    task = make_task(bank)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "0")
    with pytest.raises(EduFairError, match=r"lm_eval runs in 2 processes .* would run the whole task in every process"):
        task.check_parallelism(Tutor(), world_size=1)
    task.check_parallelism(Tutor(world_size=2), world_size=2)  # hf, sharded by lm-eval


def test_vllm_data_parallelism_is_warned_about(bank, caplog):
    task = make_task(bank)
    with caplog.at_level(logging.WARNING, logger="edufair"):
        task.check_parallelism(Tutor(data_parallel_size=2), world_size=1)
    assert any("data_parallel_size=2 rebuilds every replica's engine" in r.getMessage() for r in caplog.records)


@pytest.mark.hf
def test_an_in_process_hf_student_with_auto_batch_size_is_refused(bank):
    task = make_task(bank, student={"model": "hf", "model_args": {"pretrained": "x"}, "batch_size": "auto"})
    with pytest.raises(EduFairError, match="in-process hf student's batch size auto with 2 processes hangs"):
        task.check_parallelism(Tutor(), world_size=2)
