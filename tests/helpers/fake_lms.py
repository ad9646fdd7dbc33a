"""In-process fake chat models for runner tests: they render chats like lm-eval's API models
(JsonChatStr), record every batched call, and answer from a script keyed on the conversation."""

from __future__ import annotations

import json
from typing import Callable

import lm_eval.models  # noqa: F401  (registers the built-in models before ours)
from lm_eval.api.model import LM
from lm_eval.api.registry import MODEL_REGISTRY, register_model
from lm_eval.models.api_models import JsonChatStr


def default_tutor(messages: list[dict]) -> str:
    n_tutor = sum(1 for m in messages if m["role"] == "assistant") - 1  # minus the opening question
    return f"<think>private plan {n_tutor}</think>Good effort. What does step {n_tutor + 1} tell you?"


def default_student(messages: list[dict]) -> str:
    n = sum(1 for m in messages if m["role"] == "assistant")
    return f"I am not sure, maybe it is attempt {n}?"


class ScriptedChatLM(LM):
    def __init__(self, respond: Callable[[list[dict]], str] = default_tutor, **kwargs) -> None:
        super().__init__()
        self.respond = respond
        self.calls: list[list[list[dict]]] = []  # one entry per generate_until call
        self.gen_kwargs: list[dict] = []

    def apply_chat_template(self, chat_history, add_generation_prompt=True):
        return JsonChatStr(json.dumps(chat_history, ensure_ascii=False))

    def generate_until(self, requests, disable_tqdm: bool = False):
        batch = [json.loads(r.args[0].prompt) for r in requests]
        self.calls.append(batch)
        self.gen_kwargs.append(dict(requests[0].args[1]) if requests else {})
        return [self.respond(msgs) for msgs in batch]

    def get_model_info(self) -> dict:
        # lm-eval's per-model info hook; EduFair's tutor cache identity reads it for custom LMs.
        return {"script": f"{self.respond.__module__}.{self.respond.__qualname__}"}

    def loglikelihood(self, requests):  # pragma: no cover - not used by EduFair
        raise NotImplementedError

    def loglikelihood_rolling(self, requests):  # pragma: no cover
        raise NotImplementedError


STUDENTS: dict[str, ScriptedChatLM] = {}


if "edufair-fake-student" not in MODEL_REGISTRY:

    @register_model("edufair-fake-student")
    class FakeStudent(ScriptedChatLM):
        """Built by the runner through lm-eval's registry; the instance is kept for assertions."""

        def __init__(self, script: str = "default", **kwargs) -> None:
            super().__init__(respond=STUDENT_SCRIPTS[script])
            STUDENTS[script] = self


STUDENT_SCRIPTS: dict[str, Callable[[list[dict]], str]] = {"default": default_student}


def run_task(tutor, bank_dir, *, max_turns=3, limit=None, student_script="default", gen_kwargs=None, extra=None, task="edufair_explicit_physics"):
    """Run one EduFair task through lm-eval's simple_evaluate with the fake student, judge off."""
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from lm_eval_tasks import TASKS_DIR

    meta = {
        "edufair": {
            "max_tutor_turns": max_turns,
            "bank_dir": str(bank_dir),
            "student": {"model": "edufair-fake-student", "model_args": {"script": student_script}},
            "judge": {"enabled": False},
            **(extra or {}),
        }
    }
    return simple_evaluate(
        model=tutor,
        tasks=[task],
        task_manager=TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta),
        limit=limit,
        log_samples=True,
        gen_kwargs=gen_kwargs,
    )
