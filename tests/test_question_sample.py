"""The paper's fixed stratified 30% subsample for API tutors (§4: 272 / 150 / 150): `edufair.sample`."""

from __future__ import annotations

import json

import pytest

from edufair_metrics.bank import load_bank
from edufair_metrics.errors import EduFairError
from edufair_metrics.bank.sample import QuestionSample
from edufair_metrics.records import BankItem
from edufair_metrics.settings import resolve_runner_settings

from tests.helpers.fake_lms import ScriptedChatLM, default_tutor
from tests.helpers.fake_lms import run_task as run
from tests.helpers.stored import with_provenance


def items(n: int, domain: str = "physics") -> list[BankItem]:
    return [BankItem(f"{domain[:4]}-{i:04d}", domain, 8, f"Q{i}?", "a", ["a"], "sciq") for i in range(n)]


def test_sizes_match_the_papers_subsample():
    s = QuestionSample(fraction=0.3, seed=0)
    assert [s.size(n) for n in (907, 500, 500, 10, 1)] == [272, 150, 150, 3, 1]
    assert [len(s.select(items(n))) for n in (907, 500)] == [272, 150]


def test_selection_is_stable_and_keyed_by_seed_and_ids_only():
    bank = items(200)
    a = [it.id for it in QuestionSample(fraction=0.3, seed=0).select(bank)]
    # bank order is kept; shuffling the input picks the same questions
    assert a == [it.id for it in bank if it.id in set(a)]
    assert sorted(a) == sorted(it.id for it in QuestionSample(fraction=0.3, seed=0).select(list(reversed(bank))))
    assert a != [it.id for it in QuestionSample(fraction=0.3, seed=1).select(bank)]  # another seed, another sample
    # a smaller fraction is a subset of a larger one (same ranking)
    assert set(it.id for it in QuestionSample(fraction=0.1, seed=0).select(bank)) <= set(a)
    # frozen: the same ids on every machine and release (sha256 ranking, no RNG library)
    assert [it.id for it in QuestionSample(fraction=0.3, seed=0).select(items(10))] == ["phys-0000", "phys-0006", "phys-0008"]


def test_shipped_bank_sample_is_stratified_per_domain():
    for domain in ("mathematics", "physics", "chemistry"):
        bank = load_bank(domain)
        chosen = QuestionSample(fraction=0.3, seed=0).select(bank)
        assert len(chosen) == QuestionSample(fraction=0.3, seed=0).size(len(bank)) and {c.domain for c in chosen} == {domain}


@pytest.mark.parametrize("value, msg", [
    ({"fraction": 0}, "fraction"), ({"fraction": 1.5}, "fraction"), ({"fraction": "0.3"}, "fraction"),
    ({"fraction": 0.3, "seed": 1.5}, "seed"), ({"fraction": 0.3, "size": 3}, "unknown"), ([0.3], "mapping"),
])
def test_bad_sample_settings_are_one_line_errors(value, msg):
    base = {"max_tutor_turns": 3, "student": {"model": "local-chat-completions"}}
    with pytest.raises(EduFairError, match=msg) as ei:
        resolve_runner_settings(base, {"edufair": {"sample": value}})
    assert "\n" not in str(ei.value)


def test_every_task_and_tutor_gets_the_same_questions(tmp_path):
    bank = tmp_path / "bank"
    bank.mkdir()
    with open(bank / "physics.jsonl", "w") as fh:
        for i in range(10):
            fh.write(json.dumps({"id": f"phys-{i}", "domain": "physics", "grade": 8, "question": f"What is {i}?",
                                 "answer": "gravity", "answer_forms": ["gravity"], "source": "sciq"}) + "\n")
    extra = {"sample": {"fraction": 0.3, "seed": 0}}
    seen = {}
    for task in ("edufair_explicit_physics", "edufair_implicit_physics"):
        results = run(ScriptedChatLM(default_tutor), bank, max_turns=1, task=task, extra=extra)
        recs = with_provenance(s["complete_dialogues"] for s in results["samples"][task])
        seen[task] = sorted({r["transcript"]["question_id"] for r in recs})
        per_question = {q: sum(r["transcript"]["question_id"] == q for r in recs) for q in seen[task]}
        assert set(per_question.values()) == {9 if "explicit" in task else 4}  # all levels of each question
        sample = recs[0]["provenance"]["bank"]["sample"]
        assert sample["fraction"] == 0.3 and sample["seed"] == 0 and (sample["questions"], sample["of"]) == (3, 10)
    assert seen["edufair_explicit_physics"] == seen["edufair_implicit_physics"] and len(seen["edufair_explicit_physics"]) == 3
