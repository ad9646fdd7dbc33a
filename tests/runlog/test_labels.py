"""``runlog.labels``: the blind labelling sample (one drawn judged tutor turn per level's dialogue of
a uniform subset of each task's complete questions, flagged strata over-sampled, seeded, written
atomically), the run identity, and the one-line refusals of a labels file that does not fit."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from edufair_metrics.errors import EduFairError
from edufair_metrics.runlog import load_records
from edufair_metrics.runlog.labels import (allocate, append_label, draw_sample, judged_turns, read_labels, read_sample,
                                           run_identity, run_turn_ids)

from tests.helpers.evidence_runs import write_evidence_run
from tests.helpers.label_runs import agree, labelled_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("labels") / "runs"
    write_evidence_run(root, n_questions=30, conditions=("explicit", "implicit"), failed=[(2, "male")])
    return root, load_records(root)[1]


def test_every_level_equally_one_judged_turn_per_dialogue_same_questions(run):
    _, records = run
    s = draw_sample(records, 120, seed=4)
    by = {f"{r.key[0]}|{r.key[2]}|{r.key[3]}": r for r in records}
    assert len(s.items) <= 120 and len({i.turn_id for i in s.items}) == len(s.items)
    for item in s.items:
        rec = by[item.turn_id.rsplit("|", 1)[0]]
        assert item.turn_index in judged_turns(rec) and not rec.scores.failed
    for stratum in s.strata:
        mine = [i for i in s.items if i.task == stratum.task]
        per_level = Counter(i.level for i in mine)
        assert set(per_level) == set(stratum.levels) and len(set(per_level.values())) == 1
        qs = {lv: {i.question_id for i in mine if i.level == lv} for lv in stratum.levels}
        assert len({frozenset(v) for v in qs.values()}) == 1  # the same questions at every level: paired
    # the failed dialogue's question is never sampled (it is not complete at every level)
    failed_q = next(r.key[3] for r in records if r.scores.failed)
    assert all(i.question_id != failed_q for i in s.items if i.task.startswith("edufair_explicit"))
    assert draw_sample(records, 120, seed=4) == s and draw_sample(records, 120, seed=5).items != s.items


def test_flagged_strata_get_twice_the_share(run):
    _, records = run
    plain = draw_sample(records, 100, seed=1)
    dom_cond = {(st.domain, st.condition): st.task for st in plain.strata}
    flagged_key = next(k for k in dom_cond if k[1] == "implicit")
    over = draw_sample(records, 100, seed=1, flagged={flagged_key: ["Gender: answer_leakage"]})
    turns = {st.task: st.sampled_questions * len(st.levels) for st in over.strata}
    flagged_task = dom_cond[flagged_key]
    other = next(t for t in turns if t != flagged_task)
    assert turns[flagged_task] >= 1.6 * turns[other]
    assert next(st for st in over.strata if st.task == flagged_task).flagged_units == ["Gender: answer_leakage"]


def test_allocation_follows_the_weights_within_capacity():
    q = allocate({"a": 2, "b": 4}, {"a": 100, "b": 3}, {"a": 1.0, "b": 2.0}, 40)
    assert q["b"] == 3 and q["a"] == (40 - 12) // 2


def test_a_sample_larger_than_the_run_or_too_small_is_refused(run):
    _, records = run
    with pytest.raises(EduFairError, match="larger than the run"):
        draw_sample(records, 10_000)
    with pytest.raises(EduFairError, match="cannot cover one question"):
        draw_sample(records, 1)


def test_labels_are_refused_for_another_run_a_foreign_turn_or_an_unknown_metric(tmp_path):
    folder, sample, path = labelled_run(tmp_path / "runs", n=40, n_questions=20, human=agree)
    records = load_records(tmp_path / "runs")[1]
    rid, turns = run_identity(records), run_turn_ids(records)
    got = read_labels(path, run_id=rid, run_turns=turns, sample=sample)
    assert len(got) == len(sample.items)
    assert read_sample(folder) == sample
    other = tmp_path / "other.jsonl"
    append_label(other, "0123456789abcdef", sample.items[0].turn_id, {"answer_leakage": "no"})
    with pytest.raises(EduFairError, match="from another run"):
        read_labels(other, run_id=rid, run_turns=turns, sample=sample)
    foreign = tmp_path / "foreign.jsonl"
    append_label(foreign, rid, "edufair_explicit_physics|female|nope|2", {"answer_leakage": "no"})
    with pytest.raises(EduFairError, match="not in the run"):
        read_labels(foreign, run_id=rid, run_turns=turns, sample=sample)
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text(json.dumps({"run_id": rid, "turn_id": sample.items[0].turn_id, "labels": {"kindness": "yes"}}) + "\n")
    with pytest.raises(EduFairError, match="unknown metric 'kindness'"):
        read_labels(unknown, run_id=rid, run_turns=turns, sample=sample)
    with pytest.raises(EduFairError, match="unknown metric"):
        append_label(tmp_path / "x.jsonl", rid, sample.items[0].turn_id, {"kindness": "yes"})


def test_a_later_line_for_a_turn_replaces_the_earlier(tmp_path):
    folder, sample, path = labelled_run(tmp_path / "runs", n=40, n_questions=20, human=agree)
    records = load_records(tmp_path / "runs")[1]
    tid = sample.items[0].turn_id
    append_label(path, sample.run_id, tid, {"answer_leakage": "yes", "actionability": "na"})
    got = read_labels(path, run_id=run_identity(records))[tid]
    assert got.values == {"answer_leakage": 1, "actionability": None}


def test_the_run_identity_changes_with_a_turn_text(run):
    _, records = run
    rid = run_identity(records)
    r = records[0]
    i = r.transcript.tutor_turn_indices()[0]
    old = r.transcript.turns[i].text
    r.transcript.turns[i].text = old + " (re-generated)"
    try:
        assert run_identity(records) != rid
    finally:
        r.transcript.turns[i].text = old
    assert run_identity(records) == rid
