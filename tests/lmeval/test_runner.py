"""The multi-turn runner through lm-eval's real entry point (simple_evaluate) with in-process
fake models: batching per turn, roles and order, prompts, stop rule, reasoning stripping,
question-major order, samples content and cache hits on rerun."""

from __future__ import annotations

import json

from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager

from edufair_metrics.protocol.prompts import condition_levels, system_prompts
from edufair_metrics.records import Transcript
from lm_eval_tasks import TASKS_DIR
from edufair_metrics.lmeval.task import HARNESS_PLACEHOLDER

from tests.helpers.bank import QUESTIONS, write_bank
from tests.helpers.fake_lms import STUDENT_SCRIPTS, STUDENTS, ScriptedChatLM, default_tutor
from tests.helpers.fake_lms import run_task as run



def records(results, task="edufair_explicit_physics"):
    return [s["complete_dialogues"] for s in results["samples"][task]]


def test_one_batched_call_per_turn_and_roles(bank_dir):
    tutor = ScriptedChatLM(default_tutor)
    results = run(tutor, bank_dir, max_turns=3)
    student = STUDENTS["default"]
    n_docs = 2 * 9
    # 3 tutor turns, each one batched call over all 18 dialogues. The harness's own request per
    # document after the dialogues (a placeholder prompt) is answered locally: no 4th model call.
    assert [len(c) for c in tutor.calls] == [n_docs, n_docs, n_docs]
    assert not any(msgs == [{"role": "user", "content": HARNESS_PLACEHOLDER}] for call in tutor.calls for msgs in call)
    # The student answers the question, then after tutor turns 1 and 2 (not after the last one).
    # Its view has no level cue and this tutor's turns are the same at every level: the 9 identical
    # requests per question are sent once per turn.
    assert [len(c) for c in student.calls] == [2, 2, 2]

    # Roles and order seen by each side.
    first_student_view = student.calls[0][0]
    assert [m["role"] for m in first_student_view] == ["system", "user"]
    assert first_student_view[1]["content"] == QUESTIONS[0]["question"]
    last_tutor_view = tutor.calls[2][0]
    assert [m["role"] for m in last_tutor_view] == ["system", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert last_tutor_view[1]["content"] == QUESTIONS[0]["question"]
    last_student_view = student.calls[2][0]
    assert [m["role"] for m in last_student_view] == ["system", "user", "assistant", "user", "assistant", "user"]
    # Reasoning is stripped before the other party sees a turn.
    for call in tutor.calls + student.calls:
        for msgs in call:
            # (system prompts mention <think> in their own instructions)
            assert all("<think>" not in m["content"] and "private plan" not in m["content"] for m in msgs[1:])

    # Exact system prompts per condition level, question-major order.
    levels = condition_levels("explicit")
    for i, msgs in enumerate(tutor.calls[0]):
        expected = system_prompts(levels[i % 9], "physics")
        assert msgs[0] == {"role": "system", "content": expected.tutor}
    for msgs in student.calls[0]:
        assert msgs[0]["content"] == system_prompts(levels[0], "physics").student

    recs = records(results)
    assert [r["transcript"]["question_id"] for r in recs] == ["phys-q1"] * 9 + ["phys-q2"] * 9
    assert [r["transcript"]["level"] for r in recs[:9]] == [lv.level for lv in levels]
    t = Transcript.from_dict(recs[0]["transcript"])
    assert t.stop_reason == "max_turns"
    assert [x.role for x in t.turns] == ["question", "student", "tutor", "student", "tutor", "student", "tutor"]
    assert t.turns[2].raw.startswith("<think>private plan 0</think>")
    assert t.turns[2].text == "Good effort. What does step 1 tell you?"
    assert t.tutor_system == system_prompts(levels[0], "physics").tutor
    # Judge disabled: every tutor turn is recorded missing, none is given a value.
    assert all(j["status"] == "missing" and j["labels"] is None for j in recs[0]["judgements"])
    assert recs[0]["scores"]["scores"]["answer_leakage"] is None


def test_tutor_decoding_comes_from_generation_kwargs(bank_dir):
    tutor = ScriptedChatLM(default_tutor)
    run(tutor, bank_dir, max_turns=1, limit=9)
    assert tutor.gen_kwargs[0] == {"until": [], "temperature": 0.1, "max_gen_toks": 2048}
    assert STUDENTS["default"].gen_kwargs[0] == {"temperature": 0, "max_gen_toks": 2048, "until": []}
    tutor2 = ScriptedChatLM(default_tutor)
    run(tutor2, bank_dir, max_turns=1, limit=9, gen_kwargs="temperature=0.7,max_gen_toks=64")
    assert tutor2.gen_kwargs[0]["temperature"] == 0.7 and tutor2.gen_kwargs[0]["max_gen_toks"] == 64


def test_stop_rule_reveal_and_confirm(bank_dir):
    def tutor_reply(msgs):
        n_prev = sum(1 for m in msgs if m["role"] == "assistant") - 1
        if "female student" in msgs[0]["content"] and n_prev == 1:
            return "Right, the answer is gravity."
        return "Think about what pulls things down. What could it be?"

    def student_reply(msgs):
        return "Is it gravity?"

    STUDENT_SCRIPTS["stop"] = student_reply
    tutor = ScriptedChatLM(tutor_reply)
    results = run(tutor, bank_dir, max_turns=4, limit=9, student_script="stop")
    recs = {r["transcript"]["level"]: Transcript.from_dict(r["transcript"]) for r in records(results)}
    # The student said "gravity" and the tutor repeated it: confirmed, after 2 tutor turns.
    assert recs["female"].stop_reason == "answer_confirmed"
    assert sum(1 for t in recs["female"].turns if t.role == "tutor") == 2
    assert recs["male"].stop_reason == "max_turns"
    # The stopped dialogue is no longer sent to the tutor.
    assert [len(c) for c in tutor.calls[:4]] == [9, 9, 8, 8]


def test_rerun_is_served_from_cache(bank_dir):
    tutor = ScriptedChatLM(default_tutor)
    first = run(tutor, bank_dir, max_turns=2, limit=9)
    assert len(tutor.calls) == 2
    tutor2 = ScriptedChatLM(default_tutor)
    second = run(tutor2, bank_dir, max_turns=2, limit=9)
    # No tutor turn and no student turn is recomputed, and the harness's own request is answered locally.
    assert tutor2.calls == []
    assert STUDENTS["default"].calls == []
    assert [r["transcript"] for r in records(first)] == [r["transcript"] for r in records(second)]


def test_limit_with_partial_pairs_keeps_question_major(bank_dir):
    tutor = ScriptedChatLM(default_tutor)
    results = run(tutor, bank_dir, max_turns=1, limit=11)
    recs = records(results)
    assert [r["transcript"]["question_id"] for r in recs] == ["phys-q1"] * 9 + ["phys-q2"] * 2


def test_other_conditions_run(bank_dir):
    for task, n in (("edufair_implicit_physics", 4), ("edufair_opposite_physics", 4)):
        tutor = ScriptedChatLM(default_tutor)
        results = run(tutor, bank_dir, max_turns=1, task=task)
        recs = records(results, task)
        assert len(recs) == 2 * n
        pairs = {(r["transcript"]["tutor_system"], r["transcript"]["student_system"]) for r in recs[:n]}
        assert len(pairs) == n


def test_predict_only_generates_transcripts_without_judging(bank_dir, monkeypatch):
    import edufair_metrics.judge.run as jf

    def no_judge(*a, **k):  # the judge must not be reached at all
        raise AssertionError("judge called under --predict_only")

    monkeypatch.setattr(jf, "judge_transcripts", no_judge)
    tutor = ScriptedChatLM(default_tutor)
    meta = {"edufair": {"max_tutor_turns": 1, "bank_dir": str(bank_dir),
                        "student": {"model": "edufair-fake-student", "model_args": {"script": "default"}},
                        "judge": {"base_url": "http://127.0.0.1:9/v1", "model": "j"}, "preflight": False}}
    results = simple_evaluate(
        model=tutor, tasks=["edufair_explicit_physics"], limit=9, log_samples=True, predict_only=True,
        task_manager=TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta),
    )
    recs = records(results)
    assert len(recs) == 9 and all(r["transcript"]["turns"][2]["role"] == "tutor" for r in recs)
    assert all(j["status"] == "missing" and j["kind"] == "judge_disabled" for r in recs for j in r["judgements"])
    assert results["results"]["edufair_explicit_physics"]["complete_dialogues,judged"] == 9.0


def test_use_cache_rerun_makes_no_tutor_call(bank_dir, tmp_path):
    meta = {"edufair": {"max_tutor_turns": 2, "bank_dir": str(bank_dir), "judge": {"enabled": False},
                        "student": {"model": "edufair-fake-student", "model_args": {"script": "default"}}}}
    for expected_calls in (2, 0):
        tutor = ScriptedChatLM(default_tutor)
        simple_evaluate(
            model=tutor, tasks=["edufair_explicit_physics"], limit=9, use_cache=str(tmp_path / "lm_cache"),
            task_manager=TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta),
        )
        assert len(tutor.calls) == expected_calls


def test_warns_when_the_tutor_runs_one_request_at_a_time(bank_dir, caplog):
    tutor = ScriptedChatLM(default_tutor)
    tutor.batch_size = 1  # what the lm_eval CLI passes without --batch_size auto
    with caplog.at_level("WARNING", logger="edufair"):
        run(tutor, bank_dir, max_turns=1, limit=9)
    assert any("--batch_size auto" in r.getMessage() for r in caplog.records)


def test_group_runs_all_domains(tmp_path):
    bank = write_bank(tmp_path / "bank")
    for domain, grade in (("mathematics", 9), ("chemistry", 8)):
        with open(bank / f"{domain}.jsonl", "w") as fh:
            fh.write(json.dumps({"id": f"{domain}-q1", "domain": domain, "grade": grade, "question": "Q?",
                                 "answer": "42", "answer_forms": ["42"],
                                 "source": "gsm8k-proxy" if domain == "mathematics" else "sciq"}) + "\n")
    tutor = ScriptedChatLM(default_tutor)
    results = run(tutor, bank, max_turns=1, task="edufair_explicit")
    assert {"edufair_explicit_math", "edufair_explicit_physics", "edufair_explicit_chemistry"} <= set(results["results"])
    assert "edufair_explicit" in results["groups"]
    grades = {t: records(results, t)[0]["transcript"]["tutor_system"][:20]
              for t in ("edufair_explicit_math", "edufair_explicit_chemistry")}
    assert grades == {"edufair_explicit_math": "This is a Grade 9 fe", "edufair_explicit_chemistry": "This is a Grade 8 fe"}


def test_a_run_without_log_samples_is_warned_about(bank_dir, caplog):
    """Without --log_samples the records are not saved, and the report needs them: say so when the
    task is built, not after the whole audit."""
    import logging

    meta = {"edufair": {"max_tutor_turns": 1, "bank_dir": str(bank_dir), "levels": ["female", "male"],
                        "student": {"model": "edufair-fake-student", "model_args": {"script": "default"}},
                        "judge": {"enabled": False}}}
    with caplog.at_level(logging.WARNING, logger="edufair"):
        simple_evaluate(model=ScriptedChatLM(), tasks=["edufair_explicit_physics"], log_samples=False, limit=2,
                        task_manager=TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta))
    assert any("without --log_samples" in r.getMessage() for r in caplog.records)
    caplog.clear()
    from tests.helpers.fake_lms import run_task

    with caplog.at_level(logging.WARNING, logger="edufair"):
        run_task(ScriptedChatLM(), bank_dir, max_turns=1, limit=2)  # log_samples=True
    assert not any("without --log_samples" in r.getMessage() for r in caplog.records)
