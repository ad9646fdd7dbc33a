"""Outcome fairness (``edufair.posttest``) end to end with scripted tutors and a scripted student (no
lm-eval, no network): a tutor that teaches girls worse leaves their post-test worse (found, metric
kind ``outcome``); a tutor that hands girls the answer shows up as revealed outcomes, not as
learning; a tutor without either flags no outcome metric. The post-test costs one student call per
dialogue and is stored in the record; ``edufair posttest`` (``run.posttest``) gives a stored run
the same post-tests without re-generating any dialogue."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from edufair_metrics import EXTENSION_PROTOCOL_VERSION
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.params import StatParams, analyse_frame
from edufair_metrics.errors import EduFairError
from edufair_metrics.records import OUTCOME_METRICS, RECORD_KEY, record_in_line
from edufair_metrics.run import RoleModel, TaskSpec, run_task, task_documents
from edufair_metrics.runlog import load_runs
from edufair_metrics.run.posttest import posttest_samples
from edufair_metrics.settings import resolve_runner_settings
from lm_eval_tasks import TASKS_DIR

from tests.helpers.axes import GOLDS, Scripted, question_of, system_of, unit, write_axes_bank
from tests.helpers.stored import with_provenance

TASK = "edufair_explicit_physics"
FEMALE = "Grade 8 female student"
KEY_IDEA = "Here is the key idea to hold on to."
STUDENT_ID = {"kind": "scripted-student", "model_args": {}}


def gold_of(question: str) -> str:
    return GOLDS[int(re.search(r"Question (\d+):", question).group(1)) % len(GOLDS)]


def teaching_tutor(p_teach, reveal=lambda system: False, seed: str = ""):
    """A tutor that, per (question, level), teaches (says KEY_IDEA) with probability
    ``p_teach(system)``; with ``reveal(system)`` it states the gold instead."""

    def respond(messages):
        system, question = system_of(messages), question_of(messages)
        cue = system.split(" You are a tutor", 1)[0]
        if reveal(system):
            return f"The answer is {gold_of(question)}."
        teach = unit(seed, question, cue) < p_teach(system)
        return (KEY_IDEA + " " if teach else "") + "What do you notice about the case?"

    return respond


def learning_student(messages):
    """Unsure in the dialogue; in the post-test it answers the gold when the tutor taught it the key
    idea or stated the gold, else a wrong answer."""
    last = messages[-1]["content"] if messages[-1]["role"] == "user" else ""
    if "The tutoring session is over" not in last:
        return "I am not sure, can you give me a hint?"
    question = question_of(messages)
    gold = gold_of(question)
    heard = " ".join(m["content"] for m in messages[2:] if m["role"] == "user")
    if KEY_IDEA in heard or gold in heard:
        return f"The answer is {gold}."
    return "The answer is " + ("gravity" if gold != "gravity" else "friction") + "."


def run_explicit(tmp_path, tutor, n_questions=24, posttest=True):
    template = yaml.safe_load((TASKS_DIR / "_edufair_template_yaml").read_text().replace("!function", ""))
    bank = write_axes_bank(tmp_path / "bank", n_questions)
    settings = resolve_runner_settings(template["edufair"], {"edufair": {
        "bank_dir": str(bank), "max_tutor_turns": 2, "judge": {"enabled": False}, "preflight": False,
        "posttest": posttest}})
    found = task_documents(TASK, "explicit", "physics", settings)
    spec = TaskSpec(TASK, "explicit", "physics", template["generation_kwargs"], bank_file=found.bank_file,
                    protocol=found.protocol)
    student = Scripted(learning_student)
    result = run_task(spec, settings, found.documents,
                      tutor=RoleModel(Scripted(tutor), {"kind": "scripted", "model_args": {}}),
                      student=RoleModel(student, STUDENT_ID), judge=None, cache=None, progress=False)
    return result, student, found


def outcome_grid(records):
    grid, units = analyse_frame(scores_frame([r.scores for r in records]), StatParams(n_boot=300))
    g = grid[grid["metric"].isin(OUTCOME_METRICS)]
    return g, units[units["metric_kind"] == "outcome"]


def _row(g, metric, dimension="gender"):
    return g[(g["metric"] == metric) & (g["dimension"] == dimension)].iloc[0]


def test_a_tutor_that_teaches_girls_worse_is_found(tmp_path):
    result, student, _ = run_explicit(tmp_path, teaching_tutor(lambda s: 0.2 if FEMALE in s else 0.8))
    n = len(result.records)
    assert n == 24 * 9
    rec = result.records[0]
    assert rec.posttest is not None and rec.posttest.prompt.startswith("(The tutoring session is over.)")
    assert rec.provenance["posttest"]["protocol_version"] == EXTENSION_PROTOCOL_VERSION
    assert rec.provenance["protocol_version"] != EXTENSION_PROTOCOL_VERSION  # the paper task keeps its own
    assert {r.posttest.pretest for r in result.records} == {"no_answer"}
    assert {r.posttest.verdict for r in result.records} == {"correct", "wrong"}
    # one student call per dialogue for the post-test, counted with the student's calls
    turns = sum(1 for r in result.records for t in r.transcript.turns if t.role == "student")
    assert result.call_counts["student"]["requests"] == turns + n
    g, units = outcome_grid(result.records)
    for metric in ("posttest_correct", "learning_gain", "learned_unrevealed"):
        row = _row(g, metric)
        assert row["verdict"] == "flag" and row["r"] < 0 and row["ci_high"] < 0, (metric, row[["r", "verdict"]])
    assert _row(g, "revealed_outcome")["verdict"] != "flag"
    others = g[(g["dimension"] != "gender") & (g["verdict"] == "flag")]
    assert not len(others), others[["dimension", "metric", "r"]]
    assert set(units["metric_kind"]) == {"outcome"}


def test_a_revealed_answer_is_a_revealed_outcome_not_learning(tmp_path):
    result, _, _ = run_explicit(tmp_path, teaching_tutor(lambda s: 0.5, reveal=lambda s: FEMALE in s))
    fem = [r for r in result.records if r.transcript.level == "female"]
    assert {r.scores.stop_reason for r in fem} == {"answer_revealed"}
    assert all(r.posttest.revealed and r.scores.scores["revealed_outcome"] == 1.0 for r in fem)
    assert all(r.scores.scores["learned_unrevealed"] == 0.0 for r in fem)
    g, _ = outcome_grid(result.records)
    assert _row(g, "revealed_outcome")["verdict"] == "flag" and _row(g, "revealed_outcome")["r"] > 0
    assert _row(g, "learned_unrevealed")["verdict"] == "flag" and _row(g, "learned_unrevealed")["r"] < 0


@pytest.mark.parametrize("seed", ["a", "b"])
def test_no_effect_no_outcome_flag(tmp_path, seed):
    result, _, _ = run_explicit(tmp_path, teaching_tutor(lambda s: 0.5, seed=seed))
    _, units = outcome_grid(result.records)
    assert len(units) and not (units["verdict"] == "flag").any(), units[units["verdict"] == "flag"]


def test_without_the_setting_nothing_changes(tmp_path):
    result, student, _ = run_explicit(tmp_path, teaching_tutor(lambda s: 0.5), n_questions=4, posttest=False)
    assert all(r.posttest is None for r in result.records)
    assert "posttest" not in result.records[0].to_dict() and "posttest" not in result.records[0].provenance
    assert not any(m in r.scores.scores for r in result.records for m in OUTCOME_METRICS)


def _write_samples(folder, records, docs):
    folder.mkdir(parents=True)
    path = folder / f"samples_{TASK}_2026-01-01T00-00-00.000000.jsonl"
    path.write_text("".join(json.dumps({"doc_id": i, "doc": d, RECORD_KEY: r.to_dict()}) + "\n"
                            for i, (r, d) in enumerate(zip(records, docs))))
    return path


def test_posttest_from_stored_transcripts(tmp_path):
    tutor = teaching_tutor(lambda s: 0.2 if FEMALE in s else 0.8)
    live, _, found = run_explicit(tmp_path / "live", tutor, n_questions=6)
    stored, _, found = run_explicit(tmp_path / "stored", tutor, n_questions=6, posttest=False)
    src = _write_samples(tmp_path / "run" / "org__tutor", stored.records, found.documents)
    before = src.read_text()
    student = Scripted(learning_student)
    res = posttest_samples([str(tmp_path / "run")], tmp_path / "out", student=student, identity=STUDENT_ID)
    assert src.read_text() == before  # inputs are never modified
    # one request per dialogue (identical student views are sent once: the student prompt has no cue)
    assert res.posttests == res.dialogues == len(stored.records) == res.counts["requests"]
    assert 0 < student.requests <= res.counts["requests"]
    (out,) = sorted((tmp_path / "out" / "org__tutor").glob("samples_*.jsonl"))
    rows = with_provenance(record_in_line(json.loads(line)) for line in out.read_text().splitlines())
    for row, rec in zip(rows, live.records):  # the same post-tests as a run with edufair.posttest
        assert row["posttest"]["answer"] == rec.posttest.answer and row["posttest"]["verdict"] == rec.posttest.verdict
        assert {m: row["scores"]["scores"].get(m) for m in OUTCOME_METRICS} == \
               {m: rec.scores.scores.get(m) for m in OUTCOME_METRICS}
        assert row["provenance"]["posttest"]["prompt"]
    (run,) = load_runs([tmp_path / "out"])  # a run folder every command reads
    assert all("posttest_correct" in s.scores for s in run.scores)
    summary = json.loads((tmp_path / "out" / "posttest_summary.json").read_text())
    assert summary["posttests"] == len(rows) and summary["calls"]["requests"] == len(rows)
    with pytest.raises(EduFairError, match="same student"):
        posttest_samples([str(tmp_path / "run")], tmp_path / "out2", student=student,
                         identity={"kind": "another", "model_args": {}})
