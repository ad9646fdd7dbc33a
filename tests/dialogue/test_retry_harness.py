"""Retries of the runner through lm-eval's real API model (``local-chat-completions``) against a
loopback OpenAI server: an empty answer is sent again, a body without ``choices`` is ``bad_body``
(not an empty answer), a persistent failure stops at the documented attempt cap, and through
``simple_evaluate`` one transient empty answer no longer ends its dialogue."""

from __future__ import annotations

import json

import pytest

from edufair_metrics.cache import model_identity
from edufair_metrics.dialogue.generation import DIALOGUE_RETRIES, CachedGenerator
from edufair_metrics.failures import CallFailure, FailureKind
from edufair_metrics.lmeval.models import HarnessModel, check_completion_body
from edufair_metrics.records import Transcript

from tests.helpers.fake_lms import ScriptedChatLM, default_tutor
from tests.helpers.fake_lms import run_task as run
from tests.helpers.fake_openai import FakeOpenAI, HTTPError, Raw, Reply

GEN = {"until": [], "max_gen_toks": 16, "temperature": 0}
IDENTITY = model_identity("local-chat-completions", {"model": "fake"})
NO_CHOICES = [
    b'{"id": "x", "object": "chat.completion", "model": "fake"}',
    b'{"id": "x", "object": "chat.completion", "choices": []}',
    b'{"id": "x", "object": "chat.completion", "choices": null}',
    b'{"error": {"message": "upstream overloaded"}}',
    b'[]',
]


def local_chat(srv: FakeOpenAI, num_concurrent: int, max_retries: int):
    from lm_eval.models.openai_completions import LocalChatCompletion

    return LocalChatCompletion(model="fake", base_url=srv.base_url + "/chat/completions", tokenized_requests=False,
                               num_concurrent=num_concurrent, max_retries=max_retries)


def generator(srv: FakeOpenAI, *, num_concurrent: int = 3, max_retries: int = 2, retries: int = DIALOGUE_RETRIES):
    return CachedGenerator(HarnessModel(local_chat(srv, num_concurrent, max_retries)), "tutor", IDENTITY, None, retries=retries)


def ask(gen: CachedGenerator, *texts: str) -> list:
    ctxs = [gen.render([{"role": "system", "content": "You are a tutor."}, {"role": "user", "content": t}]) for t in texts]
    return gen.generate(ctxs, GEN, [{} for _ in texts])


def last_user(req) -> str:
    return req.messages[-1]["content"]


@pytest.mark.parametrize("num_concurrent", [1, 3], ids=["sync", "async"])
def test_null_content_once_is_sent_again_and_answered(num_concurrent):
    served: dict[str, int] = {}

    def respond(req):
        q = last_user(req)
        served[q] = served.get(q, 0) + 1
        return Reply(None) if q == "q1" and served[q] == 1 else Reply(f"re: {q}")

    with FakeOpenAI(responder=respond) as srv:
        gen = generator(srv, num_concurrent=num_concurrent)
        assert ask(gen, "q0", "q1", "q2") == ["re: q0", "re: q1", "re: q2"]
    assert served == {"q0": 1, "q1": 2, "q2": 1}
    assert gen.counts.retried == 1 and gen.counts.recovered == 1
    assert gen.counts.failed_attempts_by_kind == {"empty_output": 1}


@pytest.mark.parametrize("body", NO_CHOICES)
def test_a_body_without_choices_is_a_bad_body_not_an_empty_answer(body):
    with FakeOpenAI(responder=lambda req: Raw(body)) as srv:
        gen = generator(srv, num_concurrent=1, max_retries=1, retries=0)
        (out,) = ask(gen, "q0")
    assert isinstance(out, CallFailure) and out.kind is FailureKind.BAD_BODY, out
    assert gen.counts.failed_by_kind == {"bad_body": 1}


def test_a_body_without_choices_once_is_absorbed_by_a_retry():
    served: dict[str, int] = {}

    def respond(req):
        q = last_user(req)
        served[q] = served.get(q, 0) + 1
        return Raw(NO_CHOICES[0]) if q == "q1" and served[q] == 1 else Reply(f"re: {q}")

    with FakeOpenAI(responder=respond) as srv:
        gen = generator(srv, max_retries=1)  # lm-eval itself does not retry here: EduFair does
        assert ask(gen, "q0", "q1") == ["re: q0", "re: q1"]
    assert served["q1"] == 2


@pytest.mark.parametrize("fault", [lambda: HTTPError(503), lambda: Reply(None), lambda: Raw(NO_CHOICES[0]),
                                   lambda: Reply("<think>a plan cut off by the token limit")],
                         ids=["http_5xx", "empty_output", "bad_body", "empty_visible_turn"])
@pytest.mark.parametrize("max_retries,retries", [(2, 2), (3, 1)])
def test_a_persistent_failure_stops_at_the_attempt_cap(fault, max_retries, retries):
    """Nine dialogues ask the same failing question: one distinct request, sent at most
    1 + retries times in all (not 9 x that), one HTTP attempt per send whatever lm-eval's
    max_retries: EduFair's retry rounds replace lm-eval's in-batch retries, whose back-off made
    the whole batch wait."""
    with FakeOpenAI(responder=lambda req: fault()) as srv:
        gen = generator(srv, max_retries=max_retries, retries=retries)
        out = ask(gen, *["the same opening"] * 9)
        calls = srv.calls
    assert gen.attempt_cap == 1 + retries
    assert calls == gen.attempt_cap
    assert len({id(o) for o in out}) == 1 and isinstance(out[0], CallFailure)
    assert f"after {1 + retries} attempts" in out[0].detail
    assert gen.counts.sends == 1 + retries and gen.counts.failed == 1 and gen.counts.coalesced == 8


@pytest.mark.parametrize("body", [{"choices": [{"index": 0, "message": {"content": None}}]},
                                  [{"choices": [{"index": 0, "text": "x"}]}]])
def test_null_content_and_completions_bodies_pass_the_body_check(body):
    assert check_completion_body(body) is None  # a null content is an empty answer, decided later
    # the same body without its message / text is a bad body: the check is not a no-op
    broken = json.loads(json.dumps(body))
    choice = (broken[0] if isinstance(broken, list) else broken)["choices"][0]
    choice.pop("message", None), choice.pop("text", None)
    with pytest.raises(CallFailure) as err:
        check_completion_body(broken)
    assert err.value.kind == FailureKind.BAD_BODY and "neither a message nor a text" in str(err.value.detail)


def test_one_empty_tutor_answer_does_not_end_its_dialogue(bank_dir):
    """Through simple_evaluate: the first tutor answer of one level is empty once."""
    seen: set[str] = set()

    def tutor_reply(msgs):
        key = json.dumps(msgs)
        if "female student" in msgs[0]["content"] and key not in seen:
            seen.add(key)
            return ""
        return default_tutor(msgs)

    tutor = ScriptedChatLM(tutor_reply)
    results = run(tutor, bank_dir, max_turns=2, limit=9)
    recs = {r["complete_dialogues"]["transcript"]["level"]: Transcript.from_dict(r["complete_dialogues"]["transcript"])
            for r in results["samples"]["edufair_explicit_physics"]}
    assert all(t.stop_reason == "max_turns" and t.error_kind is None for t in recs.values())
    assert sum(1 for t in recs["female"].turns if t.role == "tutor") == 2


def test_a_reasoning_only_tutor_turn_ends_the_dialogue_as_empty_visible_turn(bank_dir):
    def tutor_reply(msgs):
        if "female student" in msgs[0]["content"]:
            return "<think>still thinking about how to hint at gravity without"
        return default_tutor(msgs)

    tutor = ScriptedChatLM(tutor_reply)
    results = run(tutor, bank_dir, max_turns=2, limit=9)
    recs = {r["complete_dialogues"]["transcript"]["level"]: r["complete_dialogues"]["transcript"]
            for r in results["samples"]["edufair_explicit_physics"]}
    female = recs["female"]
    assert female["stop_reason"] == "tutor_failed" and female["error_kind"] == "empty_visible_turn"
    assert not any(t["role"] == "tutor" for t in female["turns"])  # never recorded as a turn
    assert all(t["stop_reason"] == "max_turns" for lv, t in recs.items() if lv != "female")
    # the reasoning-only answer was retried like an empty one: 1 + retries sends in the first turn
    first_turn_female = [m for m in tutor.calls[0] if "female student" in m[0]["content"]]
    later_female = [m for call in tutor.calls[1:] for m in call if "female student" in m[0]["content"]]
    assert len(first_turn_female) + len(later_female) == 1 + DIALOGUE_RETRIES
