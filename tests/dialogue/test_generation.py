"""``CachedGenerator``: the runner's cached, failure-isolating model calls, with a tiny in-process
``ChatModel`` (no lm-eval): what is sent, what is cached, and what a failed request becomes."""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest

from edufair_metrics.cache import CallCache, call_key, model_identity
from edufair_metrics.dialogue.generation import CachedGenerator
from edufair_metrics.errors import EduFairError
from edufair_metrics.failures import CallFailure, FailureKind

GEN = {"temperature": 0, "max_gen_toks": 64, "until": []}
IDENTITY = model_identity("local-chat-completions", {"model": "fake-tutor", "base_url": "http://127.0.0.1:1/v1"})


class FakeChat:
    """A ChatModel whose prompts are the JSON of the messages. ``answer(prompt)`` gives the reply
    (an exception instance is raised for the whole batch after the answers before it were
    reported, like lm-eval's API models); ``too_long`` prompts overflow the context."""

    def __init__(self, answer: Callable[[str], Any] | None = None, *, drop_system: bool = False,
                 too_long: set[str] = frozenset(), report: bool = True) -> None:
        self.answer = answer or (lambda prompt: f"reply to {json.loads(prompt)[-1]['content']}")
        self.drop_system = drop_system
        self.too_long = set(too_long)
        self.report = report
        self.calls: list[list[str]] = []  # prompts of every generate call, in order
        self.retry_flags: list[bool] = []  # the ``retry`` argument of every call

    def render(self, messages):
        if self.drop_system:
            messages = [m for m in messages if m["role"] != "system"]
        return json.dumps(messages)

    def prompt_text(self, ctx) -> str:
        return ctx

    def system_survived(self, ctx, system: str) -> bool:
        return any(m["role"] == "system" and m["content"] == system for m in json.loads(ctx))

    def context_overflow(self, ctx, gen_kwargs):
        return (5000, 4096, gen_kwargs["max_gen_toks"]) if ctx in self.too_long else None

    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        assert len(contexts) == len(docs)
        self.calls.append(list(contexts))
        self.retry_flags.append(retry)
        outs = []
        for ctx in contexts:
            out = self.answer(ctx)
            if isinstance(out, BaseException):
                raise out
            if on_answer is not None and self.report and isinstance(out, str):
                on_answer(ctx, out)
            outs.append(out)
        return outs


def chat(text: str, system: str = "You are a tutor.") -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]


def contexts(gen: CachedGenerator, *texts: str) -> list[str]:
    return [gen.render(chat(t)) for t in texts]


def docs(n: int) -> list[dict]:
    return [{"i": i} for i in range(n)]


@pytest.fixture
def cache(tmp_path):
    c = CallCache(tmp_path / "calls.sqlite")
    yield c
    c.close()


def test_one_batched_call_then_cached_hits_are_not_sent_again(cache):
    model = FakeChat()
    gen = CachedGenerator(model, "tutor", IDENTITY, cache)
    a, b, c = contexts(gen, "a", "b", "c")
    assert gen.generate([a, b], GEN, docs(2)) == ["reply to a", "reply to b"]
    assert model.calls == [[a, b]]  # one call for the whole batch

    assert gen.generate([a, b, c], GEN, docs(3)) == ["reply to a", "reply to b", "reply to c"]
    assert model.calls[1:] == [[c]]  # only the miss is sent
    assert cache.get(call_key("tutor", IDENTITY, GEN, a)) == "reply to a"

    gen.generate([a, b, c], GEN, docs(3))
    assert len(model.calls) == 2  # everything from the cache now


def test_cache_key_separates_decoding_role_and_model(cache):
    model = FakeChat()
    (a,) = contexts(CachedGenerator(model, "tutor", IDENTITY, cache), "a")
    CachedGenerator(model, "tutor", IDENTITY, cache).generate([a], GEN, docs(1))
    CachedGenerator(model, "tutor", IDENTITY, cache).generate([a], {**GEN, "temperature": 0.7}, docs(1))
    CachedGenerator(model, "student", IDENTITY, cache).generate([a], GEN, docs(1))
    other = model_identity("local-chat-completions", {"model": "another-tutor"})
    CachedGenerator(model, "tutor", other, cache).generate([a], GEN, docs(1))
    assert len(model.calls) == 4
    # a new port or more concurrency is the same model: still a hit
    moved = model_identity("local-chat-completions", {"model": "fake-tutor", "base_url": "http://10.0.0.9:8/v1",
                                                      "num_concurrent": 64})
    CachedGenerator(model, "tutor", moved, cache).generate([a], GEN, docs(1))
    assert len(model.calls) == 4


def test_without_cache_every_call_is_sent():
    model = FakeChat()
    gen = CachedGenerator(model, "tutor", IDENTITY, None)
    (a,) = contexts(gen, "a")
    gen.generate([a], GEN, docs(1))
    gen.generate([a], GEN, docs(1))
    assert model.calls == [[a], [a]]


def test_failed_batch_keeps_reported_answers_and_resends_only_the_others_one_by_one(cache):
    attempts: dict[str, int] = {}

    def answer(prompt: str):
        text = json.loads(prompt)[-1]["content"]
        attempts[text] = attempts.get(text, 0) + 1
        if text == "b" and attempts[text] == 1:
            return RuntimeError("ClientResponseError: 503, message='Service Unavailable'")  # once
        if text == "c":
            return RuntimeError("ClientResponseError: 429, message='Too Many Requests'")  # always
        return f"reply to {text}"

    model = FakeChat(answer)
    gen = CachedGenerator(model, "student", IDENTITY, cache)
    a, b, c, d = contexts(gen, "a", "b", "c", "d")
    out = gen.generate([a, b, c, d], GEN, docs(4))

    # a was reported before the batch raised: kept, never sent again; b, c, d one by one, and c,
    # which keeps failing, again until it was sent 1 + retries times in all
    assert model.calls == [[a, b, c, d], [b], [c], [d]] + [[c]] * (gen.max_sends - 2)
    assert model.retry_flags == [False] + [True] * (len(model.calls) - 1)
    assert out[0] == "reply to a" and out[1] == "reply to b" and out[3] == "reply to d"
    assert isinstance(out[2], CallFailure) and out[2].kind is FailureKind.HTTP_429
    assert "429" in out[2].detail and f"after {gen.max_sends} attempts" in out[2].detail
    # answers are cached as they arrive; the failure is not
    assert cache.get(call_key("student", IDENTITY, GEN, a)) == "reply to a"
    assert cache.get(call_key("student", IDENTITY, GEN, b)) == "reply to b"
    assert cache.get(call_key("student", IDENTITY, GEN, c)) is None
    # a rerun sends only the failed request
    n = len(model.calls)
    gen.generate([a, b, c, d], GEN, docs(4))
    assert model.calls[n:] == [[c]] * gen.max_sends


@pytest.mark.parametrize("retries", [0, 1, 2, 4])
def test_persistent_failure_is_sent_at_most_one_plus_retries_times_and_keeps_its_kind(cache, retries):
    failure = CallFailure(FailureKind.BAD_BODY, "no choices in the response")
    model = FakeChat(lambda prompt: failure)
    gen = CachedGenerator(model, "tutor", IDENTITY, cache, retries=retries)
    (a,) = contexts(gen, "a")
    (out,) = gen.generate([a], GEN, docs(1))
    assert isinstance(out, CallFailure) and out.kind is FailureKind.BAD_BODY
    assert out.detail.startswith("no choices in the response")
    assert model.calls == [[a]] * (1 + retries)
    assert gen.attempt_cap == 1 + retries  # a model without retries of its own


@pytest.mark.parametrize("kind", [FailureKind.HTTP_4XX, FailureKind.PROMPT_TOO_LONG])
def test_failures_that_cannot_succeed_are_not_retried_and_say_so(cache, kind):
    model = FakeChat(lambda prompt: CallFailure(kind, "refused"))
    gen = CachedGenerator(model, "tutor", IDENTITY, cache)
    (a,) = contexts(gen, "a")
    (out,) = gen.generate([a], GEN, docs(1))
    assert out.kind is kind and model.calls == [[a]]
    assert "not retried" in out.detail and "after" not in out.detail
    assert gen.counts.retried == 0 and gen.counts.failed_by_kind == {kind.value: 1}


def test_answers_of_a_model_that_reports_nothing_are_cached_after_the_batch(cache):
    model = FakeChat(report=False)
    gen = CachedGenerator(model, "tutor", IDENTITY, cache)
    a, b = contexts(gen, "a", "b")
    gen.generate([a, b], GEN, docs(2))
    assert cache.get(call_key("tutor", IDENTITY, GEN, b)) == "reply to b"


@pytest.mark.parametrize("empty,kind", [("", FailureKind.EMPTY_OUTPUT), ("   \n", FailureKind.EMPTY_OUTPUT),
                                        ("<think>the plan, cut off by the token", FailureKind.EMPTY_VISIBLE_TURN),
                                        ("<think>done</think>  \n", FailureKind.EMPTY_VISIBLE_TURN)])
def test_empty_answer_is_a_failure_never_a_turn_and_not_cached(cache, empty, kind):
    model = FakeChat(lambda prompt: empty if json.loads(prompt)[-1]["content"] == "a" else "fine")
    gen = CachedGenerator(model, "tutor", IDENTITY, cache)
    a, b = contexts(gen, "a", "b")
    out = gen.generate([a, b], GEN, docs(2))
    assert isinstance(out[0], CallFailure) and out[0].kind is kind
    assert out[1] == "fine"
    assert cache.get(call_key("tutor", IDENTITY, GEN, a)) is None
    assert model.calls == [[a, b]] + [[a]] * gen.retries  # retried alone, like any failed answer
    gen.generate([a, b], GEN, docs(2))
    assert model.calls[-1] == [a]  # asked again on the next run


@pytest.mark.parametrize("bad", ["", None, "<think>cut off", RuntimeError("ClientResponseError: 502, message='Bad Gateway'"),
                                 CallFailure(FailureKind.BAD_BODY, "no choices")])
@pytest.mark.parametrize("role", ["tutor", "student"])
def test_one_transient_bad_answer_is_retried_and_the_answer_used(cache, bad, role):
    sent: dict[str, int] = {}

    def answer(prompt: str):
        text = json.loads(prompt)[-1]["content"]
        sent[text] = sent.get(text, 0) + 1
        return bad if text == "b" and sent[text] == 1 else f"reply to {text}"

    model = FakeChat(answer)
    gen = CachedGenerator(model, role, IDENTITY, cache)
    a, b, c = contexts(gen, "a", "b", "c")
    assert gen.generate([a, b, c], GEN, docs(3)) == ["reply to a", "reply to b", "reply to c"]
    assert sent == {"a": 1, "b": 2, "c": 1}
    # a raised batch (the model's retries exhausted) leaves c unanswered too: c is sent again
    raised = isinstance(bad, BaseException)
    assert model.calls == [[a, b, c], [b]] + [[c]] * raised
    assert cache.get(call_key(role, IDENTITY, GEN, b)) == "reply to b"
    counts = gen.counts
    assert (counts.requests, counts.distinct, counts.sends, counts.retried, counts.recovered, counts.failed) == (
        3, 3, 4 + raised, 1 + raised, 1 + raised, 0)
    assert sum(counts.failed_attempts_by_kind.values()) == 1 and counts.failed_by_kind == {}


def test_an_old_cached_reasoning_only_answer_is_not_served(cache):
    model = FakeChat()
    gen = CachedGenerator(model, "tutor", IDENTITY, cache)
    (a,) = contexts(gen, "a")
    cache.put(call_key("tutor", IDENTITY, GEN, a), "<think>cut off")
    assert gen.generate([a], GEN, docs(1)) == ["reply to a"]
    assert model.calls == [[a]] and gen.counts.cached == 0


def test_non_text_output_is_a_bad_body_failure(cache):
    model = FakeChat(lambda prompt: None)
    gen = CachedGenerator(model, "tutor", IDENTITY, cache)
    (a,) = contexts(gen, "a")
    (out,) = gen.generate([a], GEN, docs(1))
    assert isinstance(out, CallFailure) and out.kind is FailureKind.BAD_BODY


def test_context_overflow_fails_that_prompt_without_a_call(cache):
    model = FakeChat()
    gen = CachedGenerator(model, "tutor", IDENTITY, cache)
    a, b = contexts(gen, "a", "b")
    model.too_long = {b}
    out = gen.generate([a, b], GEN, docs(2))
    assert out[0] == "reply to a"
    assert isinstance(out[1], CallFailure) and out[1].kind is FailureKind.PROMPT_TOO_LONG
    assert "5000 tokens" in out[1].detail and "4096" in out[1].detail
    assert not out[1].kind.retryable
    assert model.calls == [[a]]  # the long prompt was never sent

    model.too_long = {a, b}
    gen.generate([a], GEN, docs(1))
    assert len(model.calls) == 1  # a cached hit is served before the overflow check


def test_template_that_drops_the_system_prompt_is_refused():
    gen = CachedGenerator(FakeChat(drop_system=True), "student", IDENTITY, None)
    with pytest.raises(EduFairError, match="student model's chat template dropped the system prompt"):
        gen.render(chat("hello", system="You are a Grade 8 student."))
    # without a system message there is nothing to lose
    assert json.loads(gen.render([{"role": "user", "content": "hi"}])) == [{"role": "user", "content": "hi"}]


def test_render_keeps_the_system_prompt_of_a_normal_template():
    gen = CachedGenerator(FakeChat(), "tutor", IDENTITY, None)
    msgs = chat("hello", system="This is a Grade 8 female student.")
    assert json.loads(gen.render(msgs)) == msgs


def test_identical_requests_of_one_call_are_sent_once_and_the_answer_fanned_out(cache):
    model = FakeChat()
    gen = CachedGenerator(model, "student", IDENTITY, cache)
    opening, other = contexts(gen, "the opening question", "another question")
    batch = [opening] * 9 + [other, opening]
    out = gen.generate(batch, GEN, docs(len(batch)))
    assert out == ["reply to the opening question"] * 9 + ["reply to another question", "reply to the opening question"]
    assert model.calls == [[opening, other]]
    c = gen.counts
    assert (c.requests, c.cached, c.coalesced, c.distinct, c.sends) == (11, 0, 9, 2, 2)
    # next turn: all from the cache, none coalesced
    gen.generate(batch, GEN, docs(len(batch)))
    assert len(model.calls) == 1 and gen.counts.cached == 11 and gen.counts.coalesced == 9


def test_identical_failing_requests_are_retried_once_per_round_and_all_fail_alike(cache):
    model = FakeChat(lambda prompt: RuntimeError("ClientResponseError: 503, message='Service Unavailable'"))
    gen = CachedGenerator(model, "student", IDENTITY, cache)
    (opening,) = contexts(gen, "the opening question")
    out = gen.generate([opening] * 9, GEN, docs(9))
    assert model.calls == [[opening]] * gen.max_sends  # not 9 x (1 + retries)
    assert all(o is out[0] for o in out) and out[0].kind is FailureKind.HTTP_5XX
    c = gen.counts
    assert (c.requests, c.coalesced, c.distinct, c.sends, c.retried, c.recovered, c.failed) == (9, 8, 1, 3, 1, 0, 1)
    assert c.failed_by_kind == {"http_5xx": 1} and c.failed_attempts_by_kind == {"http_5xx": 3}


def test_counts_add_up_over_a_mixed_turn(cache):
    """requests = cached + coalesced + distinct; sends = distinct + re-sends; final failures by kind."""
    sent: dict[str, int] = {}

    def answer(prompt: str):
        text = json.loads(prompt)[-1]["content"]
        sent[text] = sent.get(text, 0) + 1
        if text == "flaky":
            return "" if sent[text] == 1 else "ok now"
        if text == "dead":
            return None  # never a text answer
        return f"reply to {text}"

    model = FakeChat(answer)
    gen = CachedGenerator(model, "tutor", IDENTITY, cache, retries=3)
    hit, flaky, dead, long_ = contexts(gen, "hit", "flaky", "dead", "long")
    gen.generate([hit], GEN, docs(1))
    model.too_long = {long_}
    before = gen.counts.to_dict()
    batch = [hit, flaky, hit, flaky, dead, long_, flaky, long_]
    out = gen.generate(batch, GEN, docs(len(batch)))
    assert [out[i] for i in (0, 1, 2, 3, 6)] == ["reply to hit", "ok now", "reply to hit", "ok now", "ok now"]
    assert [out[i].kind for i in (4, 5, 7)] == [FailureKind.BAD_BODY, FailureKind.PROMPT_TOO_LONG, FailureKind.PROMPT_TOO_LONG]
    assert "after 4 attempts" in out[4].detail
    c = gen.counts.to_dict()
    delta = {k: c[k] - before[k] for k in ("requests", "cached", "coalesced", "distinct", "sends", "retried", "recovered", "failed")}
    assert delta == {"requests": 8, "cached": 2, "coalesced": 3, "distinct": 3, "sends": 2 + 4,
                     "retried": 2, "recovered": 1, "failed": 2}
    assert delta["requests"] == delta["cached"] + delta["coalesced"] + delta["distinct"]
    assert c["failed_by_kind"] == {"bad_body": 1, "prompt_too_long": 1}
    assert c["failed_attempts_by_kind"] == {"bad_body": 4, "empty_output": 1}


def test_resends_go_out_as_one_batched_call_per_retry_round(cache):
    """A model that fails requests one by one (lm-eval's API models behind HarnessModel: a
    CallFailure in the failed request's place) or answers some empty: every round re-sends all
    that failed in ONE call, at the model's concurrency; never one request per call."""
    sent: dict[str, int] = {}

    def answer(prompt: str):
        text = json.loads(prompt)[-1]["content"]
        sent[text] = sent.get(text, 0) + 1
        if text in ("b", "d") and sent[text] == 1:
            return ""  # empty once
        if text == "c":
            return CallFailure(FailureKind.HTTP_5XX, "HTTP 500")  # always, alone in its batch
        return f"reply to {text}"

    class IsolatingChat(FakeChat):
        def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
            self.calls.append(list(contexts))
            self.retry_flags.append(retry)
            outs = [self.answer(ctx) for ctx in contexts]
            for ctx, out in zip(contexts, outs):
                if on_answer is not None and isinstance(out, str):
                    on_answer(ctx, out)
            return outs

    model = IsolatingChat(answer)
    gen = CachedGenerator(model, "tutor", IDENTITY, cache)
    a, b, c, d = contexts(gen, "a", "b", "c", "d")
    out = gen.generate([a, b, c, d], GEN, docs(4))
    assert model.calls == [[a, b, c, d], [b, c, d], [c]]
    assert model.retry_flags == [False, True, True]
    assert out[:2] == ["reply to a", "reply to b"] and out[3] == "reply to d"
    assert out[2].kind is FailureKind.HTTP_5XX and f"after {gen.max_sends} attempts" in out[2].detail
    counts = gen.counts
    assert (counts.sends, counts.retried, counts.recovered, counts.failed) == (4 + 3 + 1, 3, 2, 1)
