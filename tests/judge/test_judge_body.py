"""The judge's request on the wire: byte for byte the body the openai client sends for
``chat.completions.create(messages=...)`` with the same settings, although EduFair passes the
messages in ``extra_body`` (which skips the client's per-message typed transform, a third of its
CPU per call: README, Scaling)."""

from __future__ import annotations

import openai
import pytest

from edufair_metrics.affinity import SESSION_HEADER
from edufair_metrics.judge import JudgeSettings
from edufair_metrics.judge.client import _call_once
from edufair_metrics.judge.prompt import build_messages
from edufair_metrics.records import Transcript, Turn

from tests.helpers.fake_openai import FakeOpenAI, labels_json


def transcript() -> Transcript:
    turns = [Turn("question", "What is 3 x 4?"),
             Turn("student", "I think it is 12 because 3 x 4 = 12."),
             Turn("tutor", "Good start! What does the \"x\" mean here? Ünïcode — and a \\ backslash."),
             Turn("student", "Times, so 3 groups of 4."),
             Turn("tutor", "Yes. Now check: is 12 the total?\nTake it step by step.")]
    return Transcript(question_id="q1", domain="mathematics", condition="explicit", dimension="gender",
                      level="female", tutor_system="", student_system="", turns=turns, stop_reason="max_turns")


SETTINGS = [
    {},  # the defaults: response_format and reasoning_effort as shipped
    {"reasoning_effort": None},
    {"structured_output": "json_schema"},
    {"extra_body": {"top_k": 5, "chat_template_kwargs": {"enable_thinking": False}}},
    {"temperature": 0.3, "max_tokens": 77, "extra_body": {"seed": 1}},
]


@pytest.fixture(scope="module")
def server():
    with FakeOpenAI() as srv:
        srv.responder = lambda req: labels_json()
        yield srv, openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)


@pytest.mark.parametrize("options", SETTINGS)
@pytest.mark.parametrize("turn", [2, 4])
def test_judge_body_is_what_create_with_messages_sends(server, options, turn):
    srv, client = server
    settings = JudgeSettings(base_url=srv.base_url, model="judge-m", **options)
    messages = build_messages(transcript(), turn)
    _call_once(client, settings, messages, session="edufair-k")
    ours = srv.requests[-1]
    # the reference: every field as a keyword of create(), as the client documents
    ref_kwargs = {"model": settings.model, "messages": messages, "temperature": settings.temperature,
                  "max_tokens": settings.max_tokens, "extra_headers": {SESSION_HEADER: "edufair-k"}}
    if settings.response_format() is not None:
        ref_kwargs["response_format"] = settings.response_format()
    if settings.reasoning_effort is not None:
        ref_kwargs["reasoning_effort"] = settings.reasoning_effort
    if settings.extra_body:
        ref_kwargs["extra_body"] = dict(settings.extra_body)
    client.chat.completions.create(**ref_kwargs)
    ref = srv.requests[-1]
    assert ours.raw_body == ref.raw_body
    assert ours.body["messages"] == messages
    assert ours.headers.get(SESSION_HEADER.lower()) == "edufair-k"
