"""The overlapped turn loop: with deterministic models (an answer depends on the prompt only) it
produces the sequential transcripts byte for byte, across every stop rule and failure kind, with
and without the call cache; the two sides really run at the same time, the in-process side stays
on the main thread, each call covers a whole cohort, and ``edufair.overlap`` switches it off."""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

import pytest

from edufair_metrics.cache import CallCache, model_identity
from edufair_metrics.dialogue.generation import CachedGenerator
from edufair_metrics.dialogue.loop import run_dialogues, split_cohorts
from edufair_metrics.dialogue.state import DialogueState, strip_reasoning
from edufair_metrics.errors import EduFairError
from edufair_metrics.records import (
    STOP_ANSWER_CONFIRMED,
    STOP_ANSWER_REVEALED,
    STOP_MAX_TURNS,
    STOP_STUDENT_FAILED,
    STOP_TUTOR_FAILED,
)
from edufair_metrics.settings import resolve_runner_settings
from tests.helpers.fake_chat import JsonChatModel

TUTOR_GK = {"temperature": 0, "max_gen_toks": 64, "until": []}
STUDENT_GK = {"temperature": 0, "max_gen_toks": 32, "until": []}


def digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


class DeterministicChat(JsonChatModel):
    """A ChatModel whose answer is a function of the rendered prompt alone, with every kind of
    outcome: the gold stated, an affirmation, questions, empty answers, reasoning-only answers,
    batches that raise (when they contain a poisoned prompt), prompts that overflow the context.
    Records the thread and size of every call."""

    def __init__(self, role: str, *, is_api: bool, seed: str = "") -> None:
        self.role, self.is_api, self.seed = role, is_api, seed
        self.calls: list[list[str]] = []
        self.threads: list[str] = []
        self.lock = threading.Lock()

    def context_overflow(self, ctx, gen_kwargs):
        return (9999, 4096, 64) if digest(self.seed + "long" + ctx) % 67 == 0 else None

    def answer(self, ctx: str) -> Any:
        msgs = json.loads(ctx)
        h = digest(self.seed + ctx)
        gold = msgs[0]["content"].split("gold=")[-1]
        last = msgs[-1]["content"]
        if h % 61 == 0:
            return RuntimeError("HTTP 503 from the fake server")  # raises the whole batch
        if h % 53 == 0:
            return ""  # empty: retried, then a failure
        if h % 59 == 0:
            return "<think>only reasoning"
        if self.role == "tutor":
            k = h % 6
            if k == 0:
                return f"The answer is {gold}."
            if k == 1 and gold in last:
                return "Yes, that's correct!"
            if k == 2:
                return f"<think>plan {h % 97}</think>What do you get if you try {h % 13}?"
            return f"Good effort. Think about step {h % 11}."
        k = h % 5
        if k == 0:
            return f"Is it {gold}?"
        if k == 1:
            return f"I think it is {gold}."
        return f"Maybe it is {h % 17 + 100}?"

    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        with self.lock:
            self.calls.append(list(contexts))
            self.threads.append(threading.current_thread().name)
        outs = []
        for ctx in contexts:
            out = self.answer(ctx + json.dumps(gen_kwargs, sort_keys=True) if gen_kwargs.get("seed") else ctx)
            if isinstance(out, BaseException):
                raise out
            if on_answer is not None:
                on_answer(ctx, out)
            outs.append(out)
        return outs


def make_docs(n_questions: int, levels: int = 3, *, same_student_system: bool = True) -> list[dict[str, Any]]:
    docs = []
    for q in range(n_questions):
        gold = str(10 + q * 7 % 83)
        for lv in range(levels):
            docs.append({
                "question_id": f"q{q}", "domain": "mathematics", "condition": "explicit", "dimension": "gender",
                "level": f"L{lv}", "question": f"Question {q}: how many apples are left in basket {q}?", "answer": gold,
                "answer_forms": [gold],
                "tutor_system": f"You are a tutor. The student is L{lv}. gold={gold}",
                "student_system": "You are a student." + ("" if same_student_system else f" level {lv}") + f" gold={gold}",
            })
    return docs


def run(docs, *, overlap: bool, tutor_api=False, student_api=True, cache=None, max_turns=6, seed=""):
    tutor_model = DeterministicChat("tutor", is_api=tutor_api, seed=seed)
    student_model = DeterministicChat("student", is_api=student_api, seed=seed)
    tutor = CachedGenerator(tutor_model, "tutor", model_identity("fake", {"m": "tutor"}), cache)
    student = CachedGenerator(student_model, "student", model_identity("fake", {"m": "student"}), cache)
    states = [DialogueState(doc=dict(d)) for d in docs]
    run_dialogues(tutor, student, states, max_tutor_turns=max_turns, tutor_gen_kwargs=TUTOR_GK,
                  student_gen_kwargs=STUDENT_GK, system_instruction="Be kind.", overlap=overlap)
    text = "\n".join(json.dumps(s.to_transcript(task="t", doc_id=i).to_dict(), ensure_ascii=False, sort_keys=True)
                     for i, s in enumerate(states))
    return text, states, tutor_model, student_model


@pytest.mark.parametrize("seed", ["", "a", "b", "c"])
@pytest.mark.parametrize("max_turns", [1, 2, 6])
def test_overlapped_transcripts_equal_sequential_ones_byte_for_byte(seed, max_turns):
    docs = make_docs(24)
    sequential, states, _, _ = run(docs, overlap=False, max_turns=max_turns, seed=seed)
    overlapped, _, tutor, student = run(docs, overlap=True, max_turns=max_turns, seed=seed)
    assert overlapped == sequential
    assert "edufair-student" in "".join(student.threads)  # it did overlap


def test_the_corpus_covers_every_stop_and_failure():
    reasons: set[str] = set()
    kinds: set[str] = set()
    for seed in ["", "a", "b", "c", "d", "e"]:
        _, states, _, _ = run(make_docs(24), overlap=True, seed=seed)
        reasons |= {s.stop_reason for s in states}
        kinds |= {s.error_kind.value for s in states if s.error_kind}
    assert {STOP_ANSWER_REVEALED, STOP_ANSWER_CONFIRMED, STOP_MAX_TURNS, STOP_STUDENT_FAILED, STOP_TUTOR_FAILED} <= reasons
    assert {"empty_output", "empty_visible_turn", "prompt_too_long", "other"} <= kinds


@pytest.mark.parametrize("tutor_api, student_api", [(False, True), (True, False), (True, True), (False, False)])
def test_same_transcripts_whichever_side_is_remote_and_the_local_side_stays_on_the_main_thread(tutor_api, student_api):
    docs = make_docs(12, same_student_system=False)
    sequential, *_ = run(docs, overlap=False, tutor_api=tutor_api, student_api=student_api)
    overlapped, _, tutor, student = run(docs, overlap=True, tutor_api=tutor_api, student_api=student_api)
    assert overlapped == sequential
    main = threading.main_thread().name
    for model in (tutor, student):
        if not model.is_api:
            assert set(model.threads) == {main}
    if not (tutor_api or student_api):  # nothing may leave the main thread: the sequential schedule
        assert set(tutor.threads) == set(student.threads) == {main}


def test_same_transcripts_with_a_call_cache_and_on_a_resumed_run(tmp_path):
    docs = make_docs(18)
    with CallCache(tmp_path / "seq.sqlite") as c:
        sequential, *_ = run(docs, overlap=False, cache=c)
    with CallCache(tmp_path / "ovl.sqlite") as c:
        overlapped, *_ = run(docs, overlap=True, cache=c)
        resumed, _, tutor, student = run(docs, overlap=True, cache=c)
    assert overlapped == sequential == resumed
    # every answered call is served from the cache; only requests that failed are sent again
    resent = [ctx for model in (tutor, student) for call in model.calls for ctx in call]
    assert resent
    for model in (tutor, student):
        for ctx in (c for call in model.calls for c in call):
            out = model.answer(ctx)
            assert not isinstance(out, str) or not strip_reasoning(out)


def test_tutor_and_student_calls_really_run_at_the_same_time():
    """The student's first overlapped call only returns once a tutor call has started: in the
    sequential schedule this would time out."""
    tutor_started = threading.Event()

    class Tutor(DeterministicChat):
        def generate(self, *args, **kwargs):
            tutor_started.set()
            return super().generate(*args, **kwargs)

    class Student(DeterministicChat):
        def generate(self, contexts, *args, **kwargs):
            if len(self.calls) >= 1:  # the first call (cohort A's opening answer) runs alone
                assert tutor_started.wait(timeout=10), "no tutor call ran while the student call was in flight"
            return super().generate(contexts, *args, **kwargs)

    states = [DialogueState(doc=d) for d in make_docs(8, same_student_system=False)]
    tutor = CachedGenerator(Tutor("tutor", is_api=False), "tutor", {"m": "t"}, None)
    student = CachedGenerator(Student("student", is_api=True), "student", {"m": "s"}, None)
    run_dialogues(tutor, student, states, max_tutor_turns=3, tutor_gen_kwargs=TUTOR_GK,
                  student_gen_kwargs=STUDENT_GK, overlap=True)
    assert all(s.done for s in states)


def test_each_call_covers_a_whole_cohort():
    """Without early stops: two cohorts of half the dialogues each, every batched call a cohort."""

    class Talker(DeterministicChat):
        def answer(self, ctx):
            return f"{self.role} turn {len(json.loads(ctx))}"

        def context_overflow(self, ctx, gen_kwargs):
            return None

    docs = make_docs(20, levels=1, same_student_system=False)
    states = [DialogueState(doc=d) for d in docs]
    tutor_model, student_model = Talker("tutor", is_api=False), Talker("student", is_api=True)
    tutor = CachedGenerator(tutor_model, "tutor", {"m": "t"}, None)
    student = CachedGenerator(student_model, "student", {"m": "s"}, None)
    run_dialogues(tutor, student, states, max_tutor_turns=4, tutor_gen_kwargs=TUTOR_GK,
                  student_gen_kwargs=STUDENT_GK, overlap=True)
    assert [len(c) for c in tutor_model.calls] == [10] * 8  # 4 turns x 2 cohorts
    assert [len(c) for c in student_model.calls] == [10] * 8  # opening answer + 3 turns, x 2 cohorts
    assert all(s.stop_reason == STOP_MAX_TURNS and s.tutor_turns == 4 for s in states)


def test_without_overlap_the_schedule_is_one_call_per_side_and_turn():
    docs = make_docs(10, levels=1, same_student_system=False)
    _, states, tutor, student = run(docs, overlap=False, seed="x")
    main = threading.main_thread().name
    assert set(tutor.threads) == set(student.threads) == {main}
    assert len(student.calls[0]) == len(docs)  # the opening answers in one call


def test_split_keeps_identical_requests_together_and_halves_the_rest():
    states = [DialogueState(doc=d) for d in make_docs(10, levels=3)]  # 3 levels share a student prompt
    first, second = split_cohorts(states, lambda s: s.student_messages())
    assert sorted(map(id, first + second)) == sorted(map(id, states))
    assert {s.doc["question_id"] for s in first}.isdisjoint({s.doc["question_id"] for s in second})
    assert abs(len(first) - len(second)) <= 3
    one_group = [DialogueState(doc=d) for d in make_docs(1, levels=4)]
    assert split_cohorts(one_group, lambda s: s.student_messages()) == (one_group, [])


def test_identical_opening_requests_are_still_sent_once():
    docs = make_docs(6, levels=3)
    _, _, _, student = run(docs, overlap=True, seed="z")
    first_calls = student.calls[:2]
    opening = [json.loads(c) for call in first_calls for c in call if len(json.loads(c)) == 2]
    assert len(opening) == 6  # one per question, not one per (question, level)


def test_an_exception_on_the_main_side_waits_for_the_worker_and_propagates():
    finished = threading.Event()

    class SlowStudent(DeterministicChat):
        def generate(self, *args, **kwargs):
            out = super().generate(*args, **kwargs)
            if len(self.calls) > 1:
                threading.Event().wait(0.2)
                finished.set()
            return out

    class BrokenTutor(DeterministicChat):
        def render(self, messages):
            raise EduFairError("the tutor model's chat template dropped the system prompt")

    states = [DialogueState(doc=d) for d in make_docs(6, levels=1, same_student_system=False)]
    tutor = CachedGenerator(BrokenTutor("tutor", is_api=False), "tutor", {"m": "t"}, None)
    student = CachedGenerator(SlowStudent("student", is_api=True), "student", {"m": "s"}, None)
    with pytest.raises(EduFairError, match="dropped the system prompt"):
        run_dialogues(tutor, student, states, max_tutor_turns=3, tutor_gen_kwargs=TUTOR_GK,
                      student_gen_kwargs=STUDENT_GK, overlap=True)
    assert finished.is_set()  # the student call in flight had finished before the error left the loop


def test_ctrl_c_on_the_main_side_does_not_wait_for_the_worker_call():
    import time

    release = threading.Event()

    class StuckStudent(DeterministicChat):
        def generate(self, *args, **kwargs):
            if self.calls:  # the call that overlaps the tutor's hangs until released
                release.wait(timeout=30)
            return super().generate(*args, **kwargs)

    class InterruptedTutor(DeterministicChat):
        def generate(self, *args, **kwargs):
            raise KeyboardInterrupt

    states = [DialogueState(doc=d) for d in make_docs(6, levels=1, same_student_system=False)]
    tutor = CachedGenerator(InterruptedTutor("tutor", is_api=False), "tutor", {"m": "t"}, None)
    student = CachedGenerator(StuckStudent("student", is_api=True), "student", {"m": "s"}, None)
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_dialogues(tutor, student, states, max_tutor_turns=3, tutor_gen_kwargs=TUTOR_GK,
                          student_gen_kwargs=STUDENT_GK, overlap=True)
        assert time.monotonic() - start < 10
    finally:
        release.set()


def test_the_progress_bar_counts_turns(monkeypatch):
    import tqdm

    bars: list[Any] = []
    real = tqdm.tqdm

    class Bar(real):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    _, states, _, _ = run(make_docs(6, levels=1), overlap=True, max_turns=5, seed="q")
    _, states_seq, _, _ = run(make_docs(6, levels=1), overlap=False, max_turns=5, seed="q")
    overlapped, sequential = bars
    assert overlapped.total == sequential.total == 5
    # the turns the longest dialogue had (or tried), in both schedules
    assert overlapped.n == sequential.n >= max(s.tutor_turns for s in states) >= 1


@pytest.mark.parametrize("value, expected", [(None, True), (True, True), (False, False)])
def test_overlap_setting(value, expected):
    block = {"max_tutor_turns": 3, "student": {"model": "local-chat-completions"}}
    meta = {"edufair": {} if value is None else {"overlap": value}}
    assert resolve_runner_settings(block, meta).overlap is expected


def test_overlap_setting_must_be_a_boolean():
    block = {"max_tutor_turns": 3, "student": {"model": "local-chat-completions"}}
    with pytest.raises(EduFairError, match="overlap must be true or false"):
        resolve_runner_settings(block, {"edufair": {"overlap": "no"}})


def test_the_task_passes_the_setting_to_the_loop(monkeypatch, tmp_path):
    from edufair_metrics.run import task as task_module

    from tests.helpers.bank import write_bank
    from tests.helpers.fake_lms import ScriptedChatLM, run_task

    seen: dict[str, Any] = {}
    real = task_module.run_dialogues

    def spy(*args, **kwargs):
        seen["overlap"] = kwargs.get("overlap")
        return real(*args, **kwargs)

    monkeypatch.setattr(task_module, "run_dialogues", spy)
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "cache"))
    bank = write_bank(tmp_path / "bank")
    run_task(ScriptedChatLM(), bank, max_turns=1, limit=2, extra={"overlap": False})
    assert seen["overlap"] is False


def test_through_lm_eval_with_an_http_student_the_samples_equal_the_sequential_ones(tmp_path, monkeypatch):
    """End to end (simple_evaluate, the harness tutor in-process, lm-eval's local-chat-completions
    student against a loopback server): same records with the overlap on and off."""
    from tests.helpers.bank import write_bank
    from tests.helpers.fake_lms import ScriptedChatLM, run_task
    from tests.helpers.fake_openai import FakeOpenAI, Reply

    def tutor_says(messages):
        n = sum(1 for m in messages if m["role"] == "user")
        return "Yes, that's correct!" if "gravity" in messages[-1]["content"] and n > 1 else f"What pulls things down? ({n})"

    def student_says(req):
        n = sum(1 for m in req.messages if m["role"] == "assistant")
        return Reply("Is it gravity?" if n == 1 and "Earth" in req.messages[1]["content"] else f"Hmm, I am not sure ({n}).")

    from edufair_metrics.dialogue import loop

    overlapped_runs = []
    real = loop._run_overlapped
    monkeypatch.setattr(loop, "_run_overlapped", lambda *a, **k: overlapped_runs.append(a[-1]) or real(*a, **k))
    bank = write_bank(tmp_path / "bank")
    records = {}
    with FakeOpenAI(responder=student_says) as srv:
        for overlap in (False, True):
            monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / f"cache-{overlap}"))
            student = {"model": "local-chat-completions",
                       "model_args": {"model": "fake-student", "base_url": srv.base_url + "/chat/completions",
                                      "tokenized_requests": False, "num_concurrent": 4, "max_retries": 1}}
            results = run_task(ScriptedChatLM(tutor_says), bank, max_turns=3,
                               extra={"overlap": overlap, "student": student, "preflight": False})
            records[overlap] = [s["complete_dialogues"]["transcript"] for s in results["samples"]["edufair_explicit_physics"]]
    assert records[True] == records[False]
    assert overlapped_runs == ["student"]  # the HTTP student in the worker thread, with the overlap only
    reasons = {r["stop_reason"] for r in records[True]}
    assert {"answer_confirmed", "max_turns"} <= reasons
