"""Several samples files of one task (shards, documents split by hand, a re-run), in one run folder or
in several folders of one tutor: ``edufair report`` pools what belongs together, refuses a dialogue
that appears twice, names the shards that are missing, and never keeps only the newest file
silently."""

from __future__ import annotations

import logging

import pytest

from edufair_metrics.bank.shard import shard_of
from edufair_metrics.errors import EduFairError
from edufair_metrics.runlog import load_run, load_runs
from tests.helpers.synthetic_runs import make_scores, write_run

TS = ("2025-01-01T00-00-00.0", "2025-02-01T00-00-00.0", "2025-03-01T00-00-00.0")
N = 20


def _scores(n=N):
    return make_scores(conditions=("explicit",), n_questions=n, seed=1)


def _part(scores, questions):
    return [s for s in scores if s.question_id in questions]


def _ids(scores):
    return sorted({s.question_id for s in scores})


def test_documents_split_by_hand_into_one_folder_are_pooled(tmp_path):
    scores = _scores()
    ids = _ids(scores)
    out = tmp_path / "o"
    write_run(out, "org/m", scores=_part(scores, ids[:10]), timestamp=TS[0])
    write_run(out, "org/m", scores=_part(scores, ids[10:]), timestamp=TS[1])
    run = load_run(out)
    assert len(run.scores) == len(scores) == N * 9  # before: only the newest file, half of them, exit 0
    assert len(run.samples_files["edufair_explicit_math"]) == 2 and len(run.results_files) == 2


def test_a_rerun_replaces_the_older_file_and_says_so(tmp_path, caplog):
    scores = _scores()
    out = tmp_path / "o"
    write_run(out, "org/m", scores=_part(scores, _ids(scores)[:5]), timestamp=TS[0])
    write_run(out, "org/m", scores=scores, timestamp=TS[1])
    with caplog.at_level(logging.WARNING, logger="edufair"):
        run = load_run(out)
    assert len(run.scores) == N * 9
    assert any("is replaced by the newer" in r.getMessage() and TS[0] in r.getMessage() for r in caplog.records)


def test_files_that_overlap_in_part_are_refused(tmp_path):
    scores = _scores()
    ids = _ids(scores)
    out = tmp_path / "o"
    write_run(out, "org/m", scores=_part(scores, ids[:12]), timestamp=TS[0])
    write_run(out, "org/m", scores=_part(scores, ids[8:]), timestamp=TS[1])
    with pytest.raises(EduFairError, match=r"share 36 of 108 dialogue\(s\).*refusing to guess"):
        load_run(out)


def test_the_same_dialogue_in_two_folders_is_refused(tmp_path):
    scores = _scores()
    write_run(tmp_path / "a", "org/m", scores=scores, timestamp=TS[0])
    write_run(tmp_path / "b", "org/m", scores=scores, timestamp=TS[1])
    with pytest.raises(EduFairError, match="the same dialogue twice"):
        load_runs([tmp_path / "a", tmp_path / "b"])
    # two runs of one tutor side by side: labels
    runs = load_runs([tmp_path / "a", tmp_path / "b"], {(tmp_path / "a" / "org__m").resolve(): "A",
                                                        (tmp_path / "b" / "org__m").resolve(): "B"})
    assert sorted(r.label for r in runs) == ["A", "B"]


def _write_shards(tmp_path, scores, count, indices, *, same_folder=False):
    for k, index in enumerate(indices):
        part = [s for s in scores if shard_of(s.question_id, count) == index]
        folder = tmp_path / ("all" if same_folder else f"host{index}")
        write_run(folder, "org/m", scores=part, timestamp=TS[k % len(TS)].replace("00.0", f"0{k}.0"),
                  provenance={"execution": {"world_size": 1, "tutor_batch_size": "8", "shard": {"index": index, "count": count}}})


@pytest.mark.parametrize("same_folder", [False, True], ids=["folders", "one-folder"])
def test_shards_pool_into_one_run(tmp_path, same_folder):
    scores = _scores()
    _write_shards(tmp_path, scores, 3, [0, 1, 2], same_folder=same_folder)
    runs = load_runs([tmp_path])
    assert len(runs) == 1 and len(runs[0].scores) == len(scores)
    assert sorted((s.question_id, s.level) for s in runs[0].scores) == sorted((s.question_id, s.level) for s in scores)


def test_a_missing_shard_is_named(tmp_path):
    _write_shards(tmp_path, _scores(), 3, [0, 2])
    with pytest.raises(EduFairError, match=r"shard\(s\) 1 of 3 missing \(found 0, 2\)"):
        load_runs([tmp_path])


def test_a_shard_run_twice_is_refused(tmp_path):
    scores = _scores()
    _write_shards(tmp_path, scores, 2, [0, 1])
    part = [s for s in scores if shard_of(s.question_id, 2) == 0]
    write_run(tmp_path / "again", "org/m", scores=part, timestamp=TS[2],
              provenance={"execution": {"world_size": 1, "shard": {"index": 0, "count": 2}}})
    with pytest.raises(EduFairError, match="the same dialogue twice"):
        load_runs([tmp_path])


def test_sampling_runs_of_different_world_sizes_do_not_pool(tmp_path):
    scores = _scores()
    ids = _ids(scores)
    sampled = {"decoding": {"tutor": {"temperature": 0.1, "max_gen_toks": 2048, "until": []}}}
    write_run(tmp_path / "a", "org/m", scores=_part(scores, ids[:10]),
              provenance={**sampled, "execution": {"world_size": 1}})
    write_run(tmp_path / "b", "org/m", scores=_part(scores, ids[10:]),
              provenance={**sampled, "execution": {"world_size": 2}})
    with pytest.raises(EduFairError, match=r"world size \(sampling tutor\) differs"):
        load_runs([tmp_path])
    greedy = {"decoding": {"tutor": {"temperature": 0, "max_gen_toks": 2048, "until": []}}}
    write_run(tmp_path / "c", "org/g", scores=_part(scores, ids[:10]), provenance={**greedy, "execution": {"world_size": 1}})
    write_run(tmp_path / "d", "org/g", scores=_part(scores, ids[10:]), provenance={**greedy, "execution": {"world_size": 2}})
    assert len(load_runs([tmp_path / "c", tmp_path / "d"])[0].scores) == N * 9  # greedy: the same transcripts


def test_an_empty_shard_is_not_missing_completeness_is_against_the_question_set(tmp_path):
    """4 questions in 3 shards with one shard empty (as the issue found): the two shards that hold
    every question pool, because each record names the empty shard (``execution.shard.empty``, from
    the run's question set); a shard that holds questions is still named when it is absent."""
    from edufair_metrics.bank.shard import Shard

    scores = _scores(40)
    ids = _ids(scores)
    count = 3
    # the question set: 4 questions of two shards only (shard `empty` holds none of them)
    by_shard: dict[int, list[str]] = {}
    for q in ids:
        by_shard.setdefault(shard_of(q, count), []).append(q)
    empty = next(i for i in range(count) if i in by_shard)  # a shard we leave without questions
    held = [i for i in range(count) if i != empty and i in by_shard]
    questions = [q for i in held for q in by_shard[i][:2]]
    assert Shard(index=0, count=count).empty_shards(questions) == [empty]
    part_scores = _part(scores, set(questions))
    for k, index in enumerate(held):
        part = [s for s in part_scores if shard_of(s.question_id, count) == index]
        prov = Shard(index=index, count=count).provenance(questions)
        write_run(tmp_path / f"host{index}", "org/m", scores=part, timestamp=TS[k],
                  provenance={"execution": {"world_size": 1, "tutor_batch_size": "8", "shard": prov}})
    runs = load_runs([tmp_path])
    assert len(runs[0].scores) == len(part_scores)
    # a shard that holds questions is still missing when absent
    with pytest.raises(EduFairError, match=rf"shard\(s\) {held[1]} of 3 missing"):
        load_runs([tmp_path / f"host{held[0]}"])
