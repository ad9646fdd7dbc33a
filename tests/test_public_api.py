"""The package-level names users' scripts import: they must survive moves inside the packages."""

from __future__ import annotations

import importlib

import pytest

PUBLIC = {
    "edufair_metrics.analysis": ("contrast_grid", "dimension_summary", "headline", "paired_contrast", "compare_frames"),
    "edufair_metrics.dialogue": ("DialogueState", "stop_after_tutor_turn"),
    "edufair_metrics.detectors": ("leaks_answer", "attempts_reasoning"),
    "edufair_metrics.protocol": ("condition_levels", "system_prompts"),
    "edufair_metrics.records": ("PEDAGOGICAL_METRICS", "CONVERSATION_METRICS", "DETECTOR_METRICS", "ALL_METRICS",
                                "DialogueRecord", "DialogueScores", "Transcript"),
    "edufair_metrics.runlog": ("load_runs", "load_run", "iter_records", "build_record"),
    "edufair_metrics.run": ("run_task", "task_documents", "RoleModel", "TaskSpec"),
}


@pytest.mark.parametrize("module, names", PUBLIC.items(), ids=list(PUBLIC))
def test_public_names_import_from_the_package(module, names):
    mod = importlib.import_module(module)
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, f"{module} no longer exports {missing}"


def test_the_public_names_work():
    from edufair_metrics.detectors import attempts_reasoning, leaks_answer
    from edufair_metrics.dialogue import DialogueState, stop_after_tutor_turn
    from edufair_metrics.protocol import condition_levels, system_prompts
    from edufair_metrics.records import ALL_METRICS, CONVERSATION_METRICS, PEDAGOGICAL_METRICS

    assert ALL_METRICS == PEDAGOGICAL_METRICS + CONVERSATION_METRICS and len(PEDAGOGICAL_METRICS) == 5
    level = condition_levels("explicit")[0]
    prompts = system_prompts(level, "physics")
    assert "female" in prompts.tutor and prompts.student.startswith("You are a Grade 8 student")
    doc = {"question_id": "q", "question": "What pulls objects down?", "answer_forms": ["gravity"], "domain": "physics",
           "level": level.level, "tutor_system": prompts.tutor, "student_system": prompts.student}
    state = DialogueState(doc=doc)
    state.add("student", "Is it magnetism?")
    state.add("tutor", "Not quite: the answer is gravity.")
    assert stop_after_tutor_turn(state, 10) == "answer_revealed"
    assert leaks_answer("The answer is gravity.", ["gravity"], "physics")
    assert attempts_reasoning("9 x 2 = 18", "mathematics") and not attempts_reasoning("Is it 18?", "mathematics")
