"""EduFair's clients send each request's routing key (``edufair_metrics.affinity``): the tutor and
student (lm-eval API models behind ``HarnessModel``, both of lm-eval's request paths) and the
judge (the openai client), in a header only, never in the body; a router that honours the header
(vllm-router's consistent_hash) then keeps every dialogue of a question on one replica."""

from __future__ import annotations

import json

import pytest
from lm_eval.models.openai_completions import LocalChatCompletion

from edufair_metrics.affinity import SESSION_HEADER, session_key, session_key_of
from edufair_metrics.judge import JudgeSettings
from edufair_metrics.judge.client import judge_turn, make_client
from edufair_metrics.lmeval.models import HarnessModel
from edufair_metrics.records import Transcript, Turn

from tests.helpers.fake_openai import FakeOpenAI, labels_json
from tests.helpers.judge_env import JUDGE_ENV_VARS


def header(req, name: str = SESSION_HEADER) -> str | None:
    return next((v for k, v in req.headers.items() if k.lower() == name.lower()), None)


def test_key_names_the_question_only():
    doc = {"domain": "physics", "question_id": "q7", "level": "female", "condition": "explicit"}
    other_level = {**doc, "level": "male", "tutor_system": "anything"}
    t = Transcript(question_id="q7", domain="physics", condition="explicit", dimension="gender", level="male",
                   tutor_system="s", student_system="s", turns=[], stop_reason="max_turns")
    assert session_key_of(doc) == session_key_of(other_level) == session_key_of(t) == session_key("physics", "q7")
    assert session_key("physics", "q7") != session_key("physics", "q8") != session_key("chemistry", "q7")
    assert session_key_of({"level": "female"}) is None  # no question: no key
    assert session_key("physics", "q7") == session_key("physics", "q7")  # stable (a digest, not hash())


@pytest.mark.parametrize("num_concurrent", [1, 4], ids=["sync", "async"])
def test_harness_model_sends_each_requests_key(num_concurrent):
    docs = [{"domain": "physics", "question_id": f"q{i}", "level": "female"} for i in range(3)]
    docs.append({"level": "female"})  # a document that names no question
    with FakeOpenAI(responder=lambda req: f"re: {req.messages[-1]['content']}") as srv:
        lm = LocalChatCompletion(model="x", base_url=srv.base_url + "/chat/completions", tokenized_requests=False,
                                 num_concurrent=num_concurrent, max_retries=1)
        header_before = lm.header
        model = HarnessModel(lm)
        ctxs = [model.render([{"role": "user", "content": f"ask {i}"}]) for i in range(len(docs))]
        outs = model.generate(ctxs, {"until": [], "max_gen_toks": 8}, docs)
        assert outs == [f"re: ask {i}" for i in range(len(docs))]
        by_content = {r.messages[-1]["content"]: r for r in srv.requests}
        for i, doc in enumerate(docs):
            req = by_content[f"ask {i}"]
            assert header(req) == session_key_of(doc)
            assert set(req.body) >= {"messages", "model"} and "user" not in req.body  # the body is lm-eval's own
            assert header(req, "Authorization") is not None  # lm-eval's own headers are kept
        # nothing stays behind on the model: later calls outside EduFair send what lm-eval sends
        assert lm.header == header_before and lm.header.get(SESSION_HEADER) is None
        assert "amodel_call" not in lm.__dict__ and "model_call" not in lm.__dict__


def test_judge_sends_the_dialogues_key(monkeypatch):
    for v in JUDGE_ENV_VARS:
        monkeypatch.delenv(v, raising=False)
    turns = [Turn("question", "What is 3 x 4?"), Turn("student", "11?"), Turn("tutor", "Try again: 3 x 4?")]
    t = Transcript(question_id="q3", domain="mathematics", condition="implicit", dimension="name", level="a",
                   tutor_system="s", student_system="s", turns=turns, stop_reason="max_turns")
    with FakeOpenAI(responder=lambda req: labels_json()) as srv:
        settings = JudgeSettings(base_url=srv.base_url, model="j", max_retries=0, timeout_s=5)
        client = make_client(settings)
        j = judge_turn(client, settings, t, 2)
        client.close()
        assert j.status == "ok"
        (req,) = srv.requests
        assert header(req) == session_key("mathematics", "q3")
        assert SESSION_HEADER.lower() not in json.dumps(req.body).lower()
