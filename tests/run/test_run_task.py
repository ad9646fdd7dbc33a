"""``run_task`` runs an EduFair task without lm-eval's evaluator: documents in, records and call
counts out; its records equal those of the same task run through lm-eval with the same models."""

from __future__ import annotations

import json

import pytest
import yaml

from edufair_metrics.settings import load_judge_settings
from edufair_metrics.records import JUDGE_OK, STOP_MAX_TURNS
from edufair_metrics.run import RoleModel, TaskSpec, run_task, task_documents
from edufair_metrics.settings import resolve_runner_settings
from lm_eval_tasks import TASKS_DIR

from tests.helpers.fake_chat import JsonChatModel
from tests.helpers.fake_lms import ScriptedChatLM, default_student, default_tutor
from tests.helpers.fake_lms import run_task as run_through_lm_eval
from tests.helpers.fake_openai import FakeOpenAI, labels_json

TASK = "edufair_explicit_physics"
LEVELS = ["female", "male"]


class ScriptedChat(JsonChatModel):
    """A ChatModel answering from a script of the conversation (no lm-eval involved)."""

    def __init__(self, respond):
        self.respond = respond
        self.calls = 0

    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        self.calls += 1
        return [self.respond(json.loads(ctx)) for ctx in contexts]


def _settings(bank_dir, **extra):
    template = yaml.safe_load((TASKS_DIR / "_edufair_template_yaml").read_text().replace("!function", ""))
    meta = {"edufair": {"bank_dir": str(bank_dir), "max_tutor_turns": 2, "levels": LEVELS, "judge": {"enabled": False},
                        **extra}}
    return resolve_runner_settings(template["edufair"], meta), template["generation_kwargs"]


def test_run_task_needs_no_harness_and_equals_the_lm_eval_run(bank_dir, tmp_path):
    settings, tutor_gk = _settings(bank_dir)
    found = task_documents(TASK, "explicit", "physics", settings)
    assert len(found.documents) == 4 and found.sample is None
    spec = TaskSpec(TASK, "explicit", "physics", tutor_gk, bank_file=found.bank_file)
    tutor, student = ScriptedChat(default_tutor), ScriptedChat(default_student)
    result = run_task(spec, settings, found.documents, tutor=RoleModel(tutor, {"kind": "scripted", "model_args": {}}),
                      student=RoleModel(student, {"kind": "scripted-student", "model_args": {}}), judge=None, cache=None,
                      progress=False)
    assert len(result.records) == 4 and tutor.calls == 2 and student.calls == 2  # one batched call per side and turn
    assert result.call_counts["tutor"]["requests"] == 8 and result.call_counts["student"]["requests"] == 8  # opening + after turn 1
    assert all(r.transcript.stop_reason == STOP_MAX_TURNS for r in result.records)
    assert result.provenance["models"]["tutor"]["kind"] == "scripted" and result.provenance["max_tutor_turns"] == 2
    assert all(r.provenance["bank"]["sha256"] == result.provenance["bank"]["sha256"] for r in result.records)
    assert all(r.document.answer_forms for r in result.records)

    # the same task through lm-eval's simple_evaluate, the same scripts as tutor and student
    out = run_through_lm_eval(ScriptedChatLM(), bank_dir, max_turns=2, extra={"levels": LEVELS})
    via_harness = [s["complete_dialogues"] for s in out["samples"][TASK]]
    harness_free = [r.to_dict() for r in result.records]
    keys = ("transcript", "judgements", "flags", "document")
    assert [{k: r[k] for k in keys} for r in harness_free] == [{k: r[k] for k in keys} for r in via_harness]
    assert [r["scores"]["scores"] for r in harness_free] == [r["scores"]["scores"] for r in via_harness]


def test_run_task_judges_and_counts_the_judge(bank_dir):
    settings, tutor_gk = _settings(bank_dir)
    found = task_documents(TASK, "explicit", "physics", settings)
    with FakeOpenAI(responder=lambda req: labels_json()) as srv:
        judge = load_judge_settings(metadata={"base_url": srv.base_url, "model": "fake-judge", "max_retries": 0})
        result = run_task(TaskSpec(TASK, "explicit", "physics", tutor_gk), settings, found.documents,
                          tutor=RoleModel(ScriptedChat(default_tutor), None, "none", kind="ScriptedChat"),
                          student=RoleModel(ScriptedChat(default_student), None), judge=judge, cache=None, progress=False)
    judged = [j for r in result.records for j in r.judgements]
    assert judged and all(j.status == JUDGE_OK for j in judged)
    assert result.call_counts["judge"]["requests"] == len(judged) and result.judge_summary["ok"] == len(judged)
    assert result.records[0].judge["model"] == "fake-judge"
    assert result.records[0].provenance["models"]["judge"]["model"] == "fake-judge"
    assert result.provenance["models"]["tutor"] == {"kind": "ScriptedChat", "model_args": {}, "identity_source": "none"}


def test_run_task_checks_its_document_ids(bank_dir):
    settings, tutor_gk = _settings(bank_dir)
    found = task_documents(TASK, "explicit", "physics", settings)
    with pytest.raises(ValueError, match="document ids"):
        run_task(TaskSpec(TASK, "explicit", "physics", tutor_gk), settings, found.documents, doc_ids=[0],
                 tutor=RoleModel(ScriptedChat(default_tutor), None), student=RoleModel(ScriptedChat(default_student), None),
                 judge=None, cache=None)
