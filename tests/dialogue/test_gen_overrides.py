"""Per-dialogue decoding overrides: a document's ``tutor_gen_kwargs`` / ``student_gen_kwargs`` are
merged over the task's settings for that dialogue only, each side's call is one batched call per
distinct effective setting, and the setting is part of the cache and coalescing key."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edufair_metrics.cache import CallCache, call_key, model_identity
from edufair_metrics.dialogue.generation import CachedGenerator
from edufair_metrics.dialogue.loop import effective_gen_kwargs, run_dialogues
from edufair_metrics.dialogue.state import DialogueState
from edufair_metrics.errors import EduFairError

from tests.helpers.fake_chat import JsonChatModel

TUTOR_GK = {"temperature": 0.7, "max_gen_toks": 64, "until": []}
STUDENT_GK = {"temperature": 0, "max_gen_toks": 32, "until": []}
TUTOR_ID = model_identity("fake", {"m": "tutor"})
STUDENT_ID = model_identity("fake", {"m": "student"})


class SeededChat(JsonChatModel):
    """Answers depend on the prompt and the decoding settings (like a sampled model with a seed);
    records every call's prompts and settings."""

    def __init__(self, role: str, is_api: bool) -> None:
        self.role, self.is_api = role, is_api
        self.calls: list[tuple[list[str], dict[str, Any]]] = []

    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        self.calls.append((list(contexts), dict(gen_kwargs)))
        n = len(json.loads(contexts[0])) if contexts else 0
        outs = [f"{self.role} turn {n}, seed {gen_kwargs.get('seed')}, t={gen_kwargs['temperature']}" for _ in contexts]
        if on_answer:
            for ctx, out in zip(contexts, outs):
                on_answer(ctx, out)
        return outs


def doc(q: int, level: str, **extra: Any) -> dict[str, Any]:
    return {"question_id": f"q{q}", "domain": "mathematics", "condition": "explicit", "dimension": "gender",
            "level": level, "question": f"How many apples are in basket {q}?", "answer": "7", "answer_forms": ["7"],
            "tutor_system": "You are a tutor.", "student_system": "You are a student.", **extra}


def run(docs, *, overlap: bool, cache=None, max_turns: int = 2):
    tutor_model, student_model = SeededChat("tutor", is_api=False), SeededChat("student", is_api=True)
    tutor = CachedGenerator(tutor_model, "tutor", TUTOR_ID, cache)
    student = CachedGenerator(student_model, "student", STUDENT_ID, cache)
    states = [DialogueState(doc=d) for d in docs]
    run_dialogues(tutor, student, states, max_tutor_turns=max_turns, tutor_gen_kwargs=TUTOR_GK,
                  student_gen_kwargs=STUDENT_GK, overlap=overlap)
    return states, tutor_model, student_model


@pytest.mark.parametrize("overlap", [False, True])
def test_a_tutor_override_applies_to_its_dialogue_only_in_one_call_per_setting(overlap):
    # the same question at the same level twice (a placebo replicate) plus another question
    docs = [doc(1, "A"), doc(1, "A", tutor_gen_kwargs={"seed": 1235}), doc(2, "A"),
            doc(2, "A", tutor_gen_kwargs={"seed": 1235}), doc(3, "A", tutor_gen_kwargs={"seed": 1236})]
    states, tutor, student = run(docs, overlap=overlap)
    texts = [[t.text for t in s.turns if t.role == "tutor"] for s in states]
    assert texts[0] == ["tutor turn 3, seed None, t=0.7", "tutor turn 5, seed None, t=0.7"]
    assert texts[1] == ["tutor turn 3, seed 1235, t=0.7", "tutor turn 5, seed 1235, t=0.7"]
    assert texts[4][0] == "tutor turn 3, seed 1236, t=0.7"
    for _, gk in tutor.calls:  # merged over the task's settings, never replacing them
        assert {k: v for k, v in gk.items() if k != "seed"} == TUTOR_GK
    # each batched call carries one setting; without the overlap, one call per setting and turn
    requests: dict[Any, int] = {}
    calls: dict[Any, int] = {}
    for ctxs, gk in tutor.calls:
        requests[gk.get("seed")] = requests.get(gk.get("seed"), 0) + len(ctxs)
        calls[gk.get("seed")] = calls.get(gk.get("seed"), 0) + 1
    assert requests == {None: 4, 1235: 4, 1236: 2}  # 2 turns x dialogues with that setting
    if not overlap:
        assert calls == {None: 2, 1235: 2, 1236: 2}
    # the student's decoding is untouched
    assert all(gk == STUDENT_GK for _, gk in student.calls)


def test_identical_prompts_with_different_settings_are_not_coalesced_and_cached_apart(tmp_path):
    docs = [doc(1, "A"), doc(1, "A", tutor_gen_kwargs={"seed": 1235}), doc(1, "A", tutor_gen_kwargs={"seed": 1235})]
    with CallCache(tmp_path / "c.sqlite") as cache:
        states, tutor, _ = run(docs, overlap=False, cache=cache, max_turns=1)
        first_prompt = tutor.calls[0][0][0]
        # the two seeds: two distinct requests (the two 1235 ones coalesced into one)
        sent = sorted((gk.get("seed") is not None, len(ctxs)) for ctxs, gk in tutor.calls)
        assert sent == [(False, 1), (True, 1)]
        assert cache.get(call_key("tutor", TUTOR_ID, TUTOR_GK, first_prompt)) == "tutor turn 3, seed None, t=0.7"
        assert cache.get(call_key("tutor", TUTOR_ID, {**TUTOR_GK, "seed": 1235}, first_prompt)) == \
            "tutor turn 3, seed 1235, t=0.7"
        # a rerun is served from the cache, each dialogue with its own setting's answer
        again, tutor2, _ = run(docs, overlap=True, cache=cache, max_turns=1)
    assert tutor2.calls == []
    assert [s.turns[-1].text for s in again] == [s.turns[-1].text for s in states]


@pytest.mark.parametrize("overlap", [False, True])
def test_a_student_override_is_symmetric(overlap):
    docs = [doc(1, "A"), doc(1, "B", student_gen_kwargs={"temperature": 1.0, "seed": 9})]
    states, tutor, student = run(docs, overlap=overlap)
    assert states[0].turns[1].text == "student turn 2, seed None, t=0"
    assert states[1].turns[1].text == "student turn 2, seed 9, t=1.0"
    assert {json.dumps(gk, sort_keys=True) for _, gk in student.calls} == {
        json.dumps(STUDENT_GK, sort_keys=True), json.dumps({**STUDENT_GK, "temperature": 1.0, "seed": 9}, sort_keys=True)}
    assert all(gk == TUTOR_GK for _, gk in tutor.calls)


@pytest.mark.parametrize("bad", [1235, "seed=1235", [("seed", 1)]])
def test_a_malformed_override_fails_before_any_call(bad):
    docs = [doc(1, "A"), doc(2, "A", tutor_gen_kwargs=bad)]
    tutor_model, student_model = SeededChat("tutor", False), SeededChat("student", True)
    with pytest.raises(EduFairError, match="q2 .*tutor_gen_kwargs must be a mapping"):
        run_dialogues(CachedGenerator(tutor_model, "tutor", TUTOR_ID, None),
                      CachedGenerator(student_model, "student", STUDENT_ID, None),
                      [DialogueState(doc=d) for d in docs], max_tutor_turns=2, tutor_gen_kwargs=TUTOR_GK,
                      student_gen_kwargs=STUDENT_GK)
    assert tutor_model.calls == student_model.calls == []


def test_documents_stored_by_datasets_keep_their_overrides_and_nothing_else():
    """lm-eval hands documents over from a ``datasets.Dataset``, which stores them column-wise:
    a null override, and keys only other documents override (filled with null), change nothing."""
    import datasets

    docs = [doc(1, "A", tutor_gen_kwargs=None), doc(1, "A", tutor_gen_kwargs={"seed": 1235}),
            doc(1, "A", tutor_gen_kwargs={"temperature": 0.2})]
    rows = list(datasets.Dataset.from_list(docs))
    got = [effective_gen_kwargs(r, "tutor", TUTOR_GK) for r in rows]
    assert got == [TUTOR_GK, {**TUTOR_GK, "seed": 1235}, {**TUTOR_GK, "temperature": 0.2}]
    assert effective_gen_kwargs(rows[0], "student", STUDENT_GK) is STUDENT_GK
