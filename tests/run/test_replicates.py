"""Replicate dialogues (``edufair.replicates: k``): k tutor sampling seeds per question x level,
recorded and part of the call identity; the pairing averages a question's replicates within each
level (the question stays the unit); runs of different k never pool; k = 1 is today's protocol."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from edufair_metrics.analysis.cells import cell_matrices
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.grid import contrast_grid
from edufair_metrics.analysis.replicates import REPLICATE_COLUMN, average_replicates, k_star, variance_components
from edufair_metrics.cache import CallCache
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol import expand_documents
from edufair_metrics.protocol.replicates import REPLICATE_FIELD, REPLICATE_SEED_BASE, expand_replicates
from edufair_metrics.records import BankItem, DialogueRecord, DialogueScores
from edufair_metrics.run import RoleModel, TaskSpec, run_task, task_documents
from edufair_metrics.runlog.runs import check_compatible, compat_fields
from edufair_metrics.settings import resolve_runner_settings
from lm_eval_tasks import TASKS_DIR

from tests.helpers.fake_chat import JsonChatModel
from tests.helpers.fake_lms import default_student

TASK = "edufair_explicit_physics"
LEVELS = ["female", "male"]


def _docs(n_questions=3):
    items = [BankItem(f"q{i}", "physics", 8, f"Q{i}?", "gravity", ["gravity"], "sciq") for i in range(n_questions)]
    return expand_documents(items, "explicit", LEVELS)


def test_k1_is_todays_documents_and_k3_adds_seeded_replicates_question_major():
    docs = _docs()
    assert expand_replicates(docs, 1) is docs
    out = expand_replicates(docs, 3)
    assert len(out) == 3 * len(docs)
    qs = [d["question_id"] for d in out]
    assert qs == sorted(qs, key=lambda q: int(q[1:]))  # whole questions stay together (--limit, shards)
    assert all(set(d) == set(out[0]) for d in out)  # one schema for datasets.Dataset.from_list
    for d in out:
        r = d[REPLICATE_FIELD]
        assert d["tutor_gen_kwargs"] == (None if r == 1 else {"seed": REPLICATE_SEED_BASE + r})
    base = {(d["question_id"], d["level"]): d for d in docs}
    for d in out:  # identical prompts: only the tutor's sampling differs
        b = base[(d["question_id"], d["level"])]
        assert (d["tutor_system"], d["student_system"], d["level"]) == (b["tutor_system"], b["student_system"], b["level"])
    assert sum(1 for d in out if d["question_id"] == "q0" and d["level"] == "female") == 3


def _settings(bank_dir, **extra):
    template = yaml.safe_load((TASKS_DIR / "_edufair_template_yaml").read_text().replace("!function", ""))
    meta = {"edufair": {"bank_dir": str(bank_dir), "max_tutor_turns": 2, "levels": LEVELS, "judge": {"enabled": False},
                        **extra}}
    return resolve_runner_settings(template["edufair"], meta), template["generation_kwargs"]


@pytest.mark.parametrize("value", [0, -1, 2.5, 2.0, "two", "2", True, None, [2]])
def test_bad_replicates_are_one_line_errors(value):
    base = {"max_tutor_turns": 3, "student": {"model": "local-chat-completions"}}
    with pytest.raises(EduFairError, match="replicates") as ei:
        resolve_runner_settings(base, {"edufair": {"replicates": value}})
    assert "\n" not in str(ei.value)


def test_replicates_with_a_placebo_is_refused():
    base = {"max_tutor_turns": 3, "student": {"model": "local-chat-completions"}}
    with pytest.raises(EduFairError, match="placebo") as ei:
        resolve_runner_settings(base, {"edufair": {"replicates": 2, "placebo": {"level": "female"}}})
    assert "\n" not in str(ei.value)


def test_task_documents_k1_byte_identical_and_k2_doubles(bank_dir):
    default, _ = _settings(bank_dir)
    one, _ = _settings(bank_dir, replicates=1)
    two, _ = _settings(bank_dir, replicates=2)
    a = task_documents(TASK, "explicit", "physics", default).documents
    b = task_documents(TASK, "explicit", "physics", one).documents
    c = task_documents(TASK, "explicit", "physics", two).documents
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert REPLICATE_FIELD not in a[0] and "tutor_gen_kwargs" not in a[0]
    assert len(c) == 2 * len(a) and {d[REPLICATE_FIELD] for d in c} == {1, 2}


class SeedTutor(JsonChatModel):
    """A sampling tutor: its answer depends on the request's seed (None: its own sampling)."""

    def __init__(self):
        self.calls = 0
        self.seeds = []

    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        self.calls += 1
        self.seeds.append(gen_kwargs.get("seed"))
        turns = [sum(m["role"] == "assistant" for m in json.loads(c)) for c in contexts]
        return [f"Think about force, step {t} (sample {gen_kwargs.get('seed')})." for t in turns]


class Student(JsonChatModel):
    def __init__(self):
        self.calls = 0

    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        self.calls += 1
        return [default_student(json.loads(c)) for c in contexts]


def _run(bank_dir, cache, k=2):
    settings, tutor_gk = _settings(bank_dir, replicates=k)
    found = task_documents(TASK, "explicit", "physics", settings)
    tutor, student = SeedTutor(), Student()
    result = run_task(TaskSpec(TASK, "explicit", "physics", tutor_gk, bank_file=found.bank_file), settings,
                      found.documents, tutor=RoleModel(tutor, {"kind": "seed-tutor", "model_args": {}}),
                      student=RoleModel(student, {"kind": "student", "model_args": {}}), judge=None, cache=cache,
                      progress=False)
    return result, tutor


def test_each_replicate_has_its_seed_in_record_and_cache_identity(bank_dir, tmp_path):
    with CallCache(tmp_path / "calls.sqlite") as cache:
        result, tutor = _run(bank_dir, cache)
        records = result.records
        assert len(records) == 2 * 2 * 2  # 2 questions x 2 levels x 2 replicates
        assert {r.transcript.replicate for r in records} == {1, 2}
        assert {r.transcript.tutor_seed for r in records} == {None, REPLICATE_SEED_BASE + 2}
        assert len({r.key for r in records}) == len(records)  # a replicate is its own dialogue
        assert all(r.provenance["replicates"] == 2 for r in records)
        for r in records:  # replicate 2 was never served replicate 1's answers
            tutor_text = [t.text for t in r.transcript.turns if t.role == "tutor"]
            want = "None" if r.transcript.replicate == 1 else str(REPLICATE_SEED_BASE + 2)
            assert tutor_text and all(f"sample {want}" in t for t in tutor_text)
        # the record round-trips its replicate; a k = 1 record stores no replicate field
        back = DialogueRecord.from_dict(json.loads(json.dumps(records[-1].to_dict())))
        assert back.transcript.replicate == records[-1].transcript.replicate and back.scores.replicate == back.transcript.replicate
        # a second run is served from the cache, replicate by replicate
        again, tutor2 = _run(bank_dir, cache)
        assert tutor2.calls == 0
        assert [r.to_dict()["transcript"] for r in again.records] == [r.to_dict()["transcript"] for r in records]


def test_k1_records_carry_no_replicate_fields(bank_dir):
    result, _ = _run(bank_dir, None, k=1)
    d = result.records[0].to_dict()
    assert "replicate" not in d["transcript"] and "tutor_seed" not in d["transcript"]
    assert "replicate" not in d["scores"] and "replicates" not in d["provenance"] and "replicates" not in d["run"]


def _scores(n_q=60, k=3, between=0.04, within=0.09, shift=0.0, seed=0):
    """DialogueScores with question x level effects (variance ``between``) and dialogue noise."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n_q):
        u = rng.normal()
        for lv, dim in (("female", "gender"), ("male", "gender")):
            v = rng.normal(scale=np.sqrt(between))
            for r in range(1, k + 1):
                x = u + v + (shift if lv == "female" else 0.0) + rng.normal(scale=np.sqrt(within))
                out.append(DialogueScores(f"q{q}", "physics", "explicit", dim, lv, {"tutor_turns": x}, tutor="t",
                                          task=TASK, replicate=r))
    return out


def test_pairing_averages_replicates_within_level_question_stays_the_unit():
    scores = _scores()
    long = scores_frame(scores)
    assert REPLICATE_COLUMN not in long.columns and len(long) == 60 * 2
    raw = scores_frame(scores, replicates="keep")
    assert len(raw) == 60 * 2 * 3
    want = raw.groupby(["question_id", "level"])["value"].mean()
    got = long.set_index(["question_id", "level"])["value"]
    assert np.allclose(got.sort_index().to_numpy(), want.sort_index().to_numpy())
    (cell,) = cell_matrices(long)
    assert cell.values.shape == (60, 2)
    with pytest.raises(EduFairError, match="duplicate"):  # the raw replicates are not pairs
        cell_matrices(raw.drop(columns=[REPLICATE_COLUMN]))
    grid = contrast_grid(long, n_boot=50)
    assert (grid["n_pairs"] == 60).all()
    assert average_replicates(long) is long


def test_variance_components_recover_between_and_within_and_k_star():
    comp = variance_components(scores_frame(_scores(n_q=400, k=4, between=0.04, within=0.16, seed=3), replicates="keep"))
    (row,) = comp.itertuples(index=False)
    assert row.source == "replicates" and row.k == 4 and row.questions == 400
    assert row.within_var == pytest.approx(0.16, rel=0.12)
    assert row.between_var == pytest.approx(0.04, rel=0.35)
    assert row.k_star == pytest.approx(np.sqrt(row.within_var / row.between_var))
    assert 1.3 < row.k_star < 3.2 and row.k_star_whole == round(row.k_star)
    assert k_star(0.1, 0.0) == np.inf and k_star(0.0, 0.1) == 1.0 and k_star(0.01, 1.0) == 1.0
    assert k_star(0.16, 0.04, cost_ratio=4.0) == pytest.approx(4.0)


def test_variance_components_from_a_placebo_and_none_without_either():
    rng = np.random.default_rng(5)
    rows = []
    for q in range(3000):
        u = rng.normal()
        mean = {lv: u + rng.normal(scale=0.2) for lv in ("female", "male")}
        for lv in ("female", "male", "female~replicate2"):
            value = mean[lv.split("~")[0]] + rng.normal(scale=0.3)
            rows.append(("t", TASK, "physics", "explicit", "gender", lv, f"q{q}", "tutor_turns", value))
    long = pd.DataFrame(rows, columns=["tutor", "task", "domain", "condition", "dimension", "level", "question_id",
                                       "metric", "value"])
    (row,) = variance_components(long).itertuples(index=False)
    assert row.source == "placebo" and row.k == 1
    assert row.within_var == pytest.approx(0.09, rel=0.1)
    assert row.between_var == pytest.approx(0.04, rel=0.35)
    assert len(variance_components(long[~long["level"].str.contains("~")])) == 0


def test_pooling_refuses_runs_of_different_k():
    prov = {"max_tutor_turns": 2}
    one, two = compat_fields(prov), compat_fields({**prov, "replicates": 2})
    assert one != two

    class R:
        def __init__(self, c):
            self.compat = {k: {v: "somewhere"} for k, v in c.items()}
    check_compatible([R(one), R(one)])
    with pytest.raises(EduFairError, match="replicates") as ei:
        check_compatible([R(one), R(two)])
    assert "\n" not in str(ei.value)


def test_report_section_shows_components_only_where_measured():
    from edufair_metrics.report.replicates import TITLE, replicates_markdown

    comp = variance_components(scores_frame(_scores(n_q=100, k=3, seed=2), replicates="keep"))
    text = replicates_markdown(comp)
    assert TITLE in text and "k_star" in text and "replicates" in text
    assert replicates_markdown(comp.iloc[0:0]) == ""
