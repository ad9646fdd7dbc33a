"""The tutor's cache identity comes from the LM object, not from task metadata: with
``simple_evaluate(model=<LM object>)`` and a custom TaskManager the metadata holds no model
arguments, and two different tutors must never share cached turns. ``cache: {enabled: false}``
turns off the runner's cache and the judge's."""

from __future__ import annotations

import logging

import pytest

from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager

from edufair_metrics.lmeval.harness import tutor_identity
from lm_eval_tasks import TASKS_DIR

from tests.helpers.fake_lms import STUDENTS, ScriptedChatLM
from tests.helpers.fake_lms import run_task as run
from tests.helpers.fake_openai import FakeOpenAI, labels_json
from tests.helpers.stored import with_provenance


def tutor_a(messages):
    return "Tutor A asks: what force acts here?"


def tutor_b(messages):
    return "Tutor B asks: which direction does it point?"


def tutor_texts(results):
    recs = [s["complete_dialogues"] for s in results["samples"]["edufair_explicit_physics"]]
    return {t["text"] for r in recs for t in r["transcript"]["turns"] if t["role"] == "tutor"}


def test_two_tutor_objects_never_share_cached_turns(bank_dir):
    a = ScriptedChatLM(tutor_a)
    first = run(a, bank_dir, max_turns=2, limit=9)
    b = ScriptedChatLM(tutor_b)
    second = run(b, bank_dir, max_turns=2, limit=9)
    assert len(b.calls) == 2  # tutor B was asked; it did not receive tutor A's cached turns
    assert tutor_texts(first) == {"Tutor A asks: what force acts here?"}
    assert tutor_texts(second) == {"Tutor B asks: which direction does it point?"}
    # The same tutor again: served from the cache.
    a2 = ScriptedChatLM(tutor_a)
    run(a2, bank_dir, max_turns=2, limit=9)
    assert a2.calls == []
    prov = with_provenance(s["complete_dialogues"] for s in second["samples"]["edufair_explicit_physics"])[0]["provenance"]
    assert prov["models"]["tutor"]["identity_source"] == "model"


class AnonymousLM(ScriptedChatLM):
    """A custom LM that tells nothing about itself (no get_model_info, no model arguments)."""

    def __getattribute__(self, name):
        if name == "get_model_info":
            raise AttributeError(name)
        return super().__getattribute__(name)


def test_tutor_without_identity_is_not_cached_and_warns(bank_dir, caplog):
    for _ in range(2):
        tutor = AnonymousLM(tutor_a)
        with caplog.at_level(logging.WARNING, logger="edufair"):
            results = run(tutor, bank_dir, max_turns=1, limit=9)
        assert len(tutor.calls) == 1  # asked both times: nothing served from a cache
    assert any("not cached" in r.getMessage() for r in caplog.records)
    prov = with_provenance(s["complete_dialogues"] for s in results["samples"]["edufair_explicit_physics"])[0]["provenance"]
    assert prov["models"]["tutor"]["identity_source"] == "none"


def test_metadata_is_only_the_fallback(bank_dir):
    ident, source = tutor_identity(AnonymousLM(tutor_a), {"pretrained": "org/model-x"})
    assert source == "metadata" and ident["model_args"] == {"pretrained": "org/model-x"}
    # The LM's own identity wins over what the metadata says.
    ident, source = tutor_identity(ScriptedChatLM(tutor_b), {"pretrained": "org/model-x"})
    assert source == "model" and "tutor_b" in ident["model_args"]["script"]


def test_api_tutor_identity_is_model_and_endpoint():
    from lm_eval.models.openai_completions import LocalChatCompletion

    def api(model, url):
        return tutor_identity(LocalChatCompletion(model=model, base_url=url, tokenized_requests=False), {})[0]

    local_1 = api("m", "http://127.0.0.1:5001/v1/chat/completions")
    local_2 = api("m", "http://localhost:7777/v1/chat/completions")
    assert local_1 == local_2  # a loopback server's port (a free one per demo run) is not identity
    assert api("other", "http://127.0.0.1:5001/v1/chat/completions") != local_1
    remote_1 = api("m", "https://tutors-a.example.org/v1/chat/completions")
    remote_2 = api("m", "https://tutors-b.example.org/v1/chat/completions")
    assert remote_1 != remote_2 != local_1


@pytest.mark.hf
def test_hflm_identity_reads_the_model_without_the_hub():
    import torch

    class FakeModel(torch.nn.Module):
        def __init__(self, width):
            super().__init__()
            self.proj = torch.nn.Linear(width, width)

    class HFLike:  # the attributes of lm-eval's HFLM that the identity reads
        def __init__(self, width, revision="main"):
            self._model = FakeModel(width)
            self.pretrained = "/models/tiny"
            self.revision, self.peft, self.delta = revision, None, None

    small, big = tutor_identity(HFLike(4), {})[0], tutor_identity(HFLike(8), {})[0]
    assert small["model_args"]["pretrained"] == "/models/tiny" and small != big
    assert tutor_identity(HFLike(4, revision="v2"), {})[0] != small


def test_cache_off_turns_off_runner_and_judge_caches(bank_dir, tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache-dir"
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("EDUFAIR_JUDGE_API_KEY", "EMPTY")
    with FakeOpenAI(responder=lambda req: labels_json(leak=0)) as judge:
        meta = {"edufair": {
            "max_tutor_turns": 1, "bank_dir": str(bank_dir), "preflight": False,
            "student": {"model": "edufair-fake-student", "model_args": {"script": "default"}},
            "judge": {"base_url": judge.base_url, "model": "fake-judge", "concurrency": 2},
            "cache": {"enabled": False},
        }}
        calls = []
        for _ in range(2):
            tutor = ScriptedChatLM(tutor_a)
            simple_evaluate(model=tutor, tasks=["edufair_explicit_physics"], limit=9, log_samples=True,
                            task_manager=TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta))
            calls.append((len(tutor.calls), len(STUDENTS["default"].calls), judge.calls))
    # second run: tutor, student and judge all asked again
    assert calls[0][0] == calls[1][0] == 1
    assert calls[0][2] >= 1 and calls[1][2] == 2 * calls[0][2]
    assert not list(cache_dir.rglob("*.sqlite"))  # nothing was cached anywhere


def test_call_counts_land_in_the_results(bank_dir):
    """The per-role counts are in the task's config of the results (lm-eval's metrics are scalars);
    the `failed_call_attempts` metric counts failed attempts (none here)."""
    results = run(ScriptedChatLM(tutor_a), bank_dir, max_turns=2, limit=9)
    task = "edufair_explicit_physics"
    calls = results["configs"][task]["metadata"]["edufair_calls"]
    assert calls["tutor"]["requests"] == 18 and calls["tutor"]["distinct"] + calls["tutor"]["cached"] == 18
    assert calls["student"]["requests"] == 18 and calls["student"]["coalesced"] >= 8  # one opening for 9 levels
    assert results["results"][task]["failed_call_attempts,judged"] == 0.0


def test_failed_attempts_count_http_failures_and_empty_answers_once():
    from edufair_metrics.lmeval.aggregations import failed_attempts

    api = {"http_attempts": 12, "http_failed_by_kind": {"http_5xx": 3, "bad_body": 1},
           "failed_attempts_by_kind": {"http_5xx": 1, "empty_output": 2}}
    assert failed_attempts(api) == 3 + 1 + 2  # the send that failed with 5xx is already in the HTTP count
    in_process = {"http_attempts": 0, "failed_attempts_by_kind": {"empty_visible_turn": 2, "other": 1}}
    assert failed_attempts(in_process) == 3
    assert failed_attempts({}) == 0
