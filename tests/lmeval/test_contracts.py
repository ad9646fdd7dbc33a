"""Contract tests: every lm-evaluation-harness internal that EduFair relies on beyond lm-eval's
documented LM/Task/Filter API, one test per assumption. When an lm-eval upgrade breaks one, the
failing test says which assumption broke and which EduFair module relies on it.

The assumptions live in ``edufair_metrics/lmeval/`` (harness.py, models.py, task.py, __init__.py)
plus the output layout that ``edufair_metrics/runlog/layout.py`` reads. Tests are fast and offline:
no model downloads; the only HTTP is to an in-process loopback server (tests/helpers/fake_openai.py).
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import importlib.util
import inspect
import json
import random
import re
import socket
import sys
import textwrap
from pathlib import Path

import pytest

import lm_eval
import lm_eval.evaluator
import lm_eval.models  # registers the built-in model names (lazily), as models.build_student does
from lm_eval.api.instance import Instance
from lm_eval.api.model import LM, CacheHook, CachingLM
from lm_eval.api.task import ConfigurableTask
from lm_eval.models import api_models
from lm_eval.models.api_models import JsonChatStr, TemplateAPI

from edufair_metrics.errors import EduFairError
from edufair_metrics.lmeval import harness, quiet_request_bars

try:  # the loopback OpenAI-compatible server of the test suite
    from tests.helpers.fake_openai import FakeOpenAI, Reply
except ImportError:  # layout before tests/helpers/
    from tests.fake_openai import FakeOpenAI, Reply


def broken(what: str, who: str) -> str:
    """Failure message: the lm-eval assumption and the EduFair code that relies on it."""
    return f"lm-eval {lm_eval.__version__}: assumption broken -- {what}. Relied on by {who}."


def fn_ast(fn) -> ast.Module:
    return ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(fn))))


def calls_to(tree: ast.AST, attr: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == attr]


class ChatLM(LM):
    """The smallest lm-eval LM with a chat template (renders like lm-eval's API models)."""

    def __init__(self, answer: str = "tok") -> None:
        super().__init__()
        self.answer = answer
        self.calls: list[list[Instance]] = []

    @property
    def tokenizer_name(self) -> str:  # evaluate reads it under apply_chat_template
        return "chat-lm"

    def apply_chat_template(self, chat_history, add_generation_prompt=True):
        return JsonChatStr(json.dumps(chat_history, ensure_ascii=False))

    def generate_until(self, requests, disable_tqdm: bool = False):
        self.calls.append(list(requests))
        out = []
        for req in requests:
            self.cache_hook.add_partial("generate_until", req.args, self.answer)
            out.append(self.answer)
        return out

    def loglikelihood(self, requests):  # pragma: no cover - never called
        raise NotImplementedError

    def loglikelihood_rolling(self, requests):  # pragma: no cover - never called
        raise NotImplementedError


class RecordingHook:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple, object]] = []

    def add_partial(self, attr, req, res) -> None:
        self.calls.append((attr, tuple(req), res))


# ---- harness.py: the LM and seeds of a running evaluation -------------------------------------


def test_evaluate_is_the_frame_harness_walks_to():
    evaluate = lm_eval.evaluator.evaluate
    who = "edufair_metrics.lmeval.harness.find_harness_lm/_evaluate_lm_on_stack (frame walk)"
    assert "lm" in inspect.signature(evaluate).parameters, broken("lm_eval.evaluator.evaluate has no parameter 'lm'", who)
    code = inspect.unwrap(evaluate).__code__
    assert code.co_name == "evaluate", broken(f"evaluate's code object is named {code.co_name!r}, not 'evaluate'", who)
    assert inspect.unwrap(evaluate).__globals__.get("__name__") == "lm_eval.evaluator", broken(
        "evaluate no longer runs with the globals of module lm_eval.evaluator", who)
    assert "lm" in code.co_varnames, broken("evaluate has no local variable 'lm'", who)


def test_simple_evaluate_seed_parameters():
    simple = lm_eval.evaluator.simple_evaluate
    who = "edufair_metrics.lmeval.harness (harness_seeds, logs_samples, evaluation_output_path read the simple_evaluate frame)"
    params = inspect.signature(simple).parameters
    for name in ("random_seed", "numpy_random_seed", "torch_random_seed", "fewshot_random_seed", "log_samples",
                 "evaluation_tracker"):
        assert name in params, broken(f"simple_evaluate has no parameter {name!r}", who)
    code = inspect.unwrap(simple).__code__
    assert code.co_name == "simple_evaluate", broken(f"simple_evaluate's code object is named {code.co_name!r}", who)
    assert inspect.unwrap(simple).__globals__.get("__name__") == "lm_eval.evaluator", broken(
        "simple_evaluate no longer runs with the globals of module lm_eval.evaluator", who)


def test_evaluate_passes_chat_template_bound_method_to_build_all_requests():
    """Source: ``task.build_all_requests(..., chat_template=getattr(lm, "apply_chat_template"[, None])
    if apply_chat_template else None)``."""
    who = "edufair_metrics.lmeval.harness.find_harness_lm and EduFairTask.build_all_requests"
    calls = calls_to(fn_ast(lm_eval.evaluator.evaluate), "build_all_requests")
    assert len(calls) == 1, broken(f"evaluate calls task.build_all_requests {len(calls)} times (expected once)", who)
    kw = {k.arg: k.value for k in calls[0].keywords}
    for name in ("limit", "samples", "rank", "world_size", "system_instruction", "apply_chat_template", "chat_template"):
        assert name in kw, broken(f"evaluate no longer passes {name}= to build_all_requests", who)
    ct = kw["chat_template"]
    ok = (
        isinstance(ct, ast.IfExp)
        and isinstance(ct.test, ast.Name) and ct.test.id == "apply_chat_template"
        and isinstance(ct.orelse, ast.Constant) and ct.orelse.value is None
        and isinstance(ct.body, ast.Call) and isinstance(ct.body.func, ast.Name) and ct.body.func.id == "getattr"
        and isinstance(ct.body.args[0], ast.Name) and ct.body.args[0].id == "lm"
        and isinstance(ct.body.args[1], ast.Constant) and ct.body.args[1].value == "apply_chat_template"
    )
    assert ok, broken(f"chat_template= is now `{ast.unparse(ct)}`, not the LM's bound apply_chat_template", who)


class _Stop(Exception):
    """Ends an evaluation once the probe task has seen what build_all_requests gets."""


class ProbeTask:
    """The minimum of a Task that (simple_)evaluate touches before build_all_requests."""

    def __init__(self) -> None:
        self.seen: dict = {}

    def get_config(self, key):
        return {"num_fewshot": 0}.get(key)

    def set_config(self, key, value, update=False):  # pragma: no cover - not reached
        pass

    def set_fewshot_seed(self, seed=None):
        self.seen["fewshot_seed"] = seed

    def build_all_requests(self, **kwargs):
        self.seen["kwargs"] = kwargs
        self.seen["lm"] = harness.find_harness_lm(kwargs.get("chat_template"))
        try:
            self.seen["stack_lm"] = harness.find_harness_lm(None)
        except EduFairError:
            self.seen["stack_lm"] = None
        self.seen["seeds"] = harness.harness_seeds()
        raise _Stop


def _evaluate(lm, **kw) -> ProbeTask:
    probe = ProbeTask()
    with pytest.raises(_Stop):
        lm_eval.evaluator.evaluate(lm=lm, task_dict={"tasks": {"probe": probe}, "groups": {}}, **kw)
    return probe


def test_harness_finds_the_lm_inside_a_real_evaluate(tmp_path):
    who = "edufair_metrics.lmeval.harness.find_harness_lm"
    lm = ChatLM()
    probe = _evaluate(lm, apply_chat_template=True, limit=3)
    kw = probe.seen["kwargs"]
    assert kw["limit"] == 3 and kw["rank"] == 0 and kw["world_size"] == 1, broken(f"build_all_requests got {kw}", who)
    assert kw["apply_chat_template"] is True, broken("apply_chat_template is not passed as a bool", who)
    assert getattr(kw["chat_template"], "__self__", None) is lm, broken(
        "under apply_chat_template, chat_template is not a bound method of the LM", who)
    assert probe.seen["lm"] is lm and probe.seen["stack_lm"] is lm, broken("the LM was not found", who)

    probe = _evaluate(lm, apply_chat_template=False)
    assert probe.seen["kwargs"]["chat_template"] is None, broken("chat_template is set without apply_chat_template", who)
    assert probe.seen["lm"] is lm, broken("the frame walk did not find evaluate's local 'lm'", who)
    assert probe.seen["seeds"] == {}, "harness_seeds found a simple_evaluate frame where there is none"

    caching = CachingLM(ChatLM(), str(tmp_path / "lm_cache.db"))
    try:
        probe = _evaluate(caching, apply_chat_template=True)
        assert getattr(probe.seen["kwargs"]["chat_template"], "__self__", None) is caching.lm, broken(
            "with --use_cache, chat_template.__self__ is not the model inside CachingLM", who)
        assert probe.seen["stack_lm"] is caching, broken("evaluate's local 'lm' is not the CachingLM", who)
        probe = _evaluate(caching, apply_chat_template=False)
        assert probe.seen["lm"] is caching, broken("without a chat template the frame walk did not find the CachingLM", who)
    finally:
        caching.dbdict.close()


class FakeTaskManager:
    task_index: dict = {}

    def __init__(self, probe: ProbeTask) -> None:
        self.probe = probe

    def load(self, tasks):
        return {"tasks": {"probe": self.probe}, "groups": {}}


def test_harness_seeds_inside_a_real_simple_evaluate():
    who = "edufair_metrics.lmeval.harness.harness_seeds (run provenance: seeds)"
    np = pytest.importorskip("numpy")
    py_state, np_state = random.getstate(), np.random.get_state()
    torch = sys.modules.get("torch") or (importlib.import_module("torch") if importlib.util.find_spec("torch") else None)
    torch_state = torch.random.get_rng_state() if torch is not None else None
    lm, probe = ChatLM(), ProbeTask()
    try:
        with pytest.raises(_Stop):
            lm_eval.evaluator.simple_evaluate(
                model=lm, tasks=["probe"], task_manager=FakeTaskManager(probe), bootstrap_iters=0,
                random_seed=11, numpy_random_seed=12, torch_random_seed=13, fewshot_random_seed=14,
            )
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
        if torch_state is not None:
            torch.random.set_rng_state(torch_state)
    assert probe.seen["seeds"] == {"random_seed": 11, "numpy_random_seed": 12, "torch_random_seed": 13,
                                   "fewshot_random_seed": 14}, broken(f"seeds read from the stack: {probe.seen['seeds']}", who)
    assert probe.seen["lm"] is lm, broken("simple_evaluate -> evaluate: the LM was not found", "harness.find_harness_lm")


# ---- CachingLM and the cache hook ------------------------------------------------------------


def test_caching_lm_wraps_and_passes_through(tmp_path):
    who = "edufair_metrics.lmeval.harness.unwrap / find_harness_lm, models.HarnessModel (--use_cache)"
    inner = ChatLM()
    caching = CachingLM(inner, str(tmp_path / "cache" / "lm.db"))
    try:
        assert caching.lm is inner, broken("CachingLM(lm, path) does not keep the model in .lm", who)
        assert harness.unwrap(caching) is inner and harness.unwrap(inner) is inner
        method = caching.apply_chat_template
        assert getattr(method, "__self__", None) is inner, broken(
            "CachingLM.__getattr__ does not return the inner LM's bound apply_chat_template", who)
        rendered = method([{"role": "user", "content": "hi"}], add_generation_prompt=True)
        assert json.loads(rendered.prompt) == [{"role": "user", "content": "hi"}]
        # CachingLM installs its hook on the inner LM: answers reported there land in its database.
        assert isinstance(inner.cache_hook, CacheHook) and inner.cache_hook.dbdict is caching.dbdict, broken(
            "CachingLM no longer installs its CacheHook on the inner LM via set_cache_hook", who)
        # generate_until through the wrapper reaches the inner model for uncached requests.
        req = Instance("generate_until", {}, (JsonChatStr("[]"), {"until": [], "max_gen_toks": 1}), 0, ("t", 0, 1))
        assert caching.generate_until([req]) == ["tok"] and len(inner.calls) == 1
    finally:
        caching.dbdict.close()


def test_cache_hook_api():
    who = "edufair_metrics.lmeval.models._AnswerHook (sees each answer as it arrives)"
    assert callable(getattr(LM, "set_cache_hook", None)), broken("LM.set_cache_hook is gone", who)
    params = list(inspect.signature(CacheHook.add_partial).parameters)
    assert params == ["self", "attr", "req", "res"], broken(f"CacheHook.add_partial parameters are {params}", who)
    lm, hook = ChatLM(), RecordingHook()
    assert isinstance(lm.cache_hook, CacheHook), broken("LM.__init__ no longer sets a CacheHook", who)
    lm.set_cache_hook(hook)
    assert lm.cache_hook is hook, broken("set_cache_hook does not replace lm.cache_hook", who)
    CacheHook(None).add_partial("generate_until", ("x", {}), "y")  # a hook without CachingLM is a no-op


def test_template_api_reports_answers_in_source():
    who = "edufair_metrics.lmeval.models._AnswerHook"
    sync = [c for c in calls_to(fn_ast(TemplateAPI.generate_until), "add_partial")
            if c.args and isinstance(c.args[0], ast.Constant) and c.args[0].value == "generate_until"]
    assert sync, broken('TemplateAPI.generate_until no longer calls cache_hook.add_partial("generate_until", ...)', who)
    amodel = fn_ast(TemplateAPI.amodel_call)
    assert calls_to(amodel, "add_partial"), broken("TemplateAPI.amodel_call (num_concurrent > 1) no longer calls add_partial", who)
    assert any(isinstance(n, ast.Constant) and n.value == "generate_until" for n in ast.walk(amodel)), broken(
        "TemplateAPI.amodel_call no longer reports under the name 'generate_until'", who)


def test_null_answer_placeholder_is_blank():
    who = ("edufair_metrics.dialogue.generation.CachedGenerator._checked (a blank answer is a failed call, "
           "never a turn) via models._AnswerHook")
    assert hasattr(api_models, "LMEVAL_MODEL_NONE_ANSWER_PLACEHOLDER"), broken(
        "lm_eval.models.api_models.LMEVAL_MODEL_NONE_ANSWER_PLACEHOLDER is gone", who)
    placeholder = api_models.LMEVAL_MODEL_NONE_ANSWER_PLACEHOLDER
    assert isinstance(placeholder, str) and not placeholder.strip(), broken(
        f"a null message.content becomes {placeholder!r} (env LMEVAL_MODEL_NONE_ANSWER_PLACEHOLDER), "
        "which EduFair would record as a tutor/student turn", who)


def _local_chat(**kw):
    from lm_eval.models.openai_completions import LocalChatCompletion

    args = {"model": "x", "base_url": "http://127.0.0.1:9/v1/chat/completions", "tokenized_requests": False, **kw}
    return LocalChatCompletion(**args)


@pytest.mark.parametrize("num_concurrent", [1, 3], ids=["sync", "async"])
def test_template_api_reports_every_answer_to_the_cache_hook(num_concurrent):
    """Each answer reaches ``cache_hook.add_partial("generate_until", (context, gen_kwargs), text)``
    while the batch runs, on both of TemplateAPI's request paths."""
    who = "edufair_metrics.lmeval.models._AnswerHook (answers persisted as they arrive)"
    with FakeOpenAI(responder=lambda req: Reply(f"re: {req.messages[-1]['content']}")) as srv:
        lm = _local_chat(base_url=srv.base_url + "/chat/completions", num_concurrent=num_concurrent, max_retries=1)
        hook = RecordingHook()
        lm.set_cache_hook(hook)
        gk = {"until": [], "max_gen_toks": 8}
        ctxs = [lm.apply_chat_template([{"role": "user", "content": f"q{i}"}]) for i in range(3)]
        reqs = [Instance("generate_until", {}, (ctx, dict(gk)), 0, ("t", i, 1)) for i, ctx in enumerate(ctxs)]
        out = lm.generate_until(reqs)
    assert out == ["re: q0", "re: q1", "re: q2"]
    got = {(attr, json.loads(req[0].prompt)[-1]["content"], res) for attr, req, res in hook.calls}
    assert got == {("generate_until", f"q{i}", f"re: q{i}") for i in range(3)}, broken(
        f"add_partial calls on the {'sync' if num_concurrent == 1 else 'concurrent'} path: {hook.calls}", who)
    assert all(isinstance(req[0], JsonChatStr) and req[1] == gk for _, req, _ in hook.calls), broken(
        "add_partial's req is not (JsonChatStr context, gen_kwargs)", who)


def test_template_api_retries_each_request_through_the_instance_amodel_call():
    """lm-eval wraps ``self.amodel_call`` (looked up when a batch starts, so an instance attribute
    wins) in tenacity's ``stop_after_attempt(max_retries)`` per request chunk, passing the chunk as
    ``messages=`` on every attempt: HarnessModel then answers a request's last failed attempt with a
    failure mark, and the rest of the batch is answered instead of aborted."""
    from edufair_metrics.failures import CallFailure, FailureKind
    from edufair_metrics.lmeval.models import HarnessModel
    from tests.helpers.fake_openai import HTTPError

    who = "edufair_metrics.lmeval.models._IsolateFailures (one failed request fails only itself)"
    seen: dict[str, int] = {}

    def respond(req):
        q = req.messages[-1]["content"]
        seen[q] = seen.get(q, 0) + 1
        return HTTPError(500) if q == "q1" else Reply(f"re: {q}")

    with FakeOpenAI(responder=respond) as srv:
        lm = _local_chat(base_url=srv.base_url + "/chat/completions", num_concurrent=3, max_retries=2)
        ctxs = [lm.apply_chat_template([{"role": "user", "content": f"q{i}"}]) for i in range(3)]
        out = HarnessModel(lm).generate(ctxs, {"until": [], "max_gen_toks": 8}, [{}] * 3)
    assert out[0] == "re: q0" and out[2] == "re: q2", broken(f"the other requests of the batch were not answered: {out}", who)
    assert isinstance(out[1], CallFailure) and out[1].kind is FailureKind.HTTP_5XX, broken(f"got {out[1]!r}", who)
    assert seen["q1"] == 2, broken(f"a failing request was sent {seen['q1']} times, not max_retries=2", who)
    assert "amodel_call" not in lm.__dict__, "the instance attribute is removed after the call"


def test_per_call_notice_is_printed_once_per_run(caplog):
    """lm-eval logs "Tokenized requests are disabled ..." at INFO on every generate_until call; with
    EduFair's filter (print_notices_once) it appears once per process, and other records pass."""
    import logging

    from edufair_metrics.lmeval import ONCE_PER_RUN_NOTICES, print_notices_once

    who = "edufair_metrics.lmeval.ONCE_PER_RUN_NOTICES (message text and logger name)"
    print_notices_once()
    print_notices_once()  # idempotent: one filter
    name = "lm_eval.models.api_models"
    logger = logging.getLogger(name)
    assert sum(type(f).__name__ == "_OncePerRun" for f in logger.filters) == 1
    for f in logger.filters:  # a fresh "run": earlier tests in this process may have let it through
        getattr(f, "seen", set()).clear()
    logger.propagate, was = True, logger.propagate  # lm-eval's CLI sets propagate False; caplog needs the root
    try:
        with caplog.at_level(logging.INFO, logger=name):
            with FakeOpenAI(responder=lambda req: Reply("ok")) as srv:
                # one request at a time: the path that asks for eos_string on every request
                lm = _local_chat(base_url=srv.base_url + "/chat/completions", num_concurrent=1, max_retries=1)
                for i in range(4):
                    ctx = lm.apply_chat_template([{"role": "user", "content": f"q{i}"}])
                    lm.generate_until([Instance("generate_until", {}, (ctx, {"until": [], "max_gen_toks": 4}), 0, ("t", 0, 1))])
            logger.info("another lm-eval message")
            logger.info("another lm-eval message")
    finally:
        logger.propagate = was
    for notice in ONCE_PER_RUN_NOTICES[name]:  # each of them reached once (lm-eval logs both per call here)
        seen = [r for r in caplog.records if r.name == name and r.msg == notice]
        assert len(seen) == 1, broken(f"{len(seen)} x {notice!r} after 4 calls: the message text or logger changed", who)
    assert sum(r.msg == "another lm-eval message" for r in caplog.records) == 2


def test_template_api_construction_and_chat_rendering(monkeypatch):
    who = "edufair_metrics.lmeval.harness (warn_if_unbatched: _concurrent, api_seed: _seed), models.prompt_text"

    def no_network(*args, **kwargs):
        raise AssertionError(f"network access while constructing LocalChatCompletion: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    lm = _local_chat(num_concurrent=4, seed=77)
    assert isinstance(lm, TemplateAPI) and harness.is_api_model(lm)
    assert getattr(lm, "_concurrent", None) == 4, broken("TemplateAPI keeps num_concurrent no longer in _concurrent", who)
    assert getattr(lm, "_seed", None) == 77 and harness.api_seed(lm) == 77, broken(
        "TemplateAPI keeps its request seed no longer in _seed", who)
    assert _local_chat()._concurrent == 1 and _local_chat()._seed == 1234
    msgs = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Wie geht's? ü"}]
    ctx = lm.apply_chat_template(msgs, add_generation_prompt=True)
    assert isinstance(ctx, JsonChatStr) and hasattr(ctx, "prompt"), broken(
        f"TemplateAPI.apply_chat_template returns {type(ctx).__name__}, not JsonChatStr", who)
    assert json.loads(ctx.prompt) == msgs, broken("JsonChatStr.prompt no longer holds the JSON messages", who)


# ---- __init__.quiet_request_bars -------------------------------------------------------------


def test_progress_bar_names_exist():
    import lm_eval.api.model as api_model

    who = "edufair_metrics.lmeval.quiet_request_bars (patches these module-level names)"
    for module, names in ((api_models, ("tqdm", "tqdm_asyncio")), (api_model, ("tqdm",))):
        for name in names:
            assert isinstance(getattr(module, name, None), type), broken(
                f"{module.__name__}.{name} is not a module-level progress-bar class", who)


def _module_source_tree(module: str, who: str) -> ast.Module:
    """The parsed source of an lm-eval module, without importing it (no torch/transformers/vllm)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, broken(f"{module} is gone", who)
    return ast.parse(Path(spec.origin).read_text(encoding="utf-8"))


@pytest.mark.parametrize("module, cls", [("lm_eval.models.huggingface", "HFLM"), ("lm_eval.models.vllm_causallms", "VLLM")])
def test_local_backends_import_tqdm_at_module_level(module, cls):
    """Checked on the source, without importing torch/transformers/vllm."""
    who = "edufair_metrics.lmeval.quiet_request_bars"
    tree = _module_source_tree(module, who)
    top = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "tqdm" and any(a.name == "tqdm" for a in n.names)]
    assert top, broken(f"{module} no longer does `from tqdm import tqdm` at module level", who)


def test_quiet_request_bars_replaces_and_restores():
    import lm_eval.api.model as api_model

    who = "edufair_metrics.lmeval.quiet_request_bars"
    targets = [(api_models, "tqdm"), (api_models, "tqdm_asyncio"), (api_model, "tqdm")]
    before = {(m.__name__, n): getattr(m, n) for m, n in targets}
    with quiet_request_bars():
        for m, n in targets:
            bar = getattr(m, n)
            assert getattr(bar, "edufair_quiet", False) is True, broken(f"{m.__name__}.{n} was not replaced", who)
            assert issubclass(bar, before[(m.__name__, n)])
        pbar = api_models.tqdm(total=3, desc="Requesting API")
        assert pbar.disable is True
        pbar.close()

        async def one(i):
            return i

        async def gather():  # TemplateAPI's concurrent path: tqdm_asyncio.gather(*tasks, desc=...)
            return await api_models.tqdm_asyncio.gather(*(one(i) for i in range(3)), desc="Requesting API")

        assert asyncio.run(gather()) == [0, 1, 2], broken("tqdm_asyncio.gather fails on the quiet subclass", who)
    after = {(m.__name__, n): getattr(m, n) for m, n in targets}
    assert after == before, "quiet_request_bars did not restore the original bars"


# ---- task.py: ConfigurableTask, Instance, filters ----------------------------------------------


def _docs(n: int = 5) -> list[dict]:
    return [{"q": f"q{i}", "a": f"a{i}"} for i in range(n)]


class TinyTask(ConfigurableTask):
    """A ConfigurableTask with in-memory documents (like EduFairTask.download)."""

    def download(self, dataset_kwargs=None, **kwargs) -> None:
        import datasets

        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(_docs())})


def tiny_task(**config) -> TinyTask:
    base = {"task": "tiny", "test_split": "test", "doc_to_text": "{{q}}", "doc_to_target": "{{a}}",
            "output_type": "generate_until", "generation_kwargs": {"until": [], "max_gen_toks": 4},
            "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True}]}
    return TinyTask(config={**base, **config})


def test_build_all_requests_signature():
    who = "edufair_metrics.lmeval.task.EduFairTask.build_all_requests (override)"
    params = inspect.signature(ConfigurableTask.build_all_requests).parameters
    for name in ("limit", "samples", "rank", "world_size", "system_instruction", "apply_chat_template", "chat_template"):
        assert name in params, broken(f"ConfigurableTask.build_all_requests has no parameter {name!r}", who)
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, broken(f"{name} is no longer keyword-only", who)


def test_instances_and_doc_iterator():
    who = "edufair_metrics.lmeval.task.EduFairTask.build_all_requests (sets _instances, uses doc_iterator)"
    task = tiny_task()
    marker: list = []
    task._instances = marker
    assert task.instances is marker, broken("Task.instances no longer returns self._instances", who)
    params = inspect.signature(task.doc_iterator).parameters
    for name in ("rank", "limit", "samples", "world_size"):
        assert name in params, broken(f"doc_iterator has no parameter {name!r}", who)
    assert [i for i, _ in task.doc_iterator(rank=0, limit=2, samples=None, world_size=1)] == [0, 1]
    assert [d["q"] for _, d in task.doc_iterator(rank=0, limit=None, samples=[1, 3], world_size=1)] == ["q1", "q3"]
    assert [i for i, _ in task.doc_iterator(rank=1, limit=None, samples=None, world_size=2)] == [1, 3]


def test_instance_fields_and_resps():
    who = "edufair_metrics.lmeval.task.EduFairTask.build_all_requests and models.HarnessModel.generate"
    names = [f.name for f in dataclasses.fields(Instance)][:5]
    assert names == ["request_type", "doc", "arguments", "idx", "metadata"], broken(f"Instance field order is {names}", who)
    inst = Instance("generate_until", {"d": 1}, ("ctx", {"until": []}), 0, ("task", 7, 2))
    assert (inst.task_name, inst.doc_id, inst.repeats) == ("task", 7, 2), broken("metadata is no longer (task, doc_id, repeats)", who)
    assert inst.resps == [] and isinstance(inst.resps, list), broken("Instance.resps is not an empty list", who)
    assert inst.args == ("ctx", {"until": []})


def test_evaluate_appends_responses():
    """EduFair pre-fills ``resps[0]`` with the transcript; evaluate must append, never assign."""
    who = "edufair_metrics.lmeval.task (the record reference in resps[0], read back by take_first)"
    tree = fn_ast(lm_eval.evaluator.evaluate)
    appends = [c for c in calls_to(tree, "append") if isinstance(c.func.value, ast.Attribute) and c.func.value.attr == "resps"]
    assert appends, broken("evaluate no longer does `req.resps.append(...)`", who)
    assigned = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                and any(isinstance(t, ast.Attribute) and t.attr == "resps"
                        for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    assert not assigned, broken(f"evaluate assigns .resps: {[ast.unparse(n) for n in assigned]}", who)


def test_prefilled_response_survives_a_real_evaluate(monkeypatch):
    """End to end through ``evaluate``, the way EduFairTask works: a pre-filled ``resps[0]`` (the
    record reference) reaches ``process_results`` through lm-eval's ``take_first`` filter; a config
    ``process_results`` string with the method overridden spares lm-eval any metric lookup for
    EduFair's own metric names; per-sample metrics land at the top level of the logged sample; an
    aggregation replaced in ``_aggregation_list`` after ``__init__`` (a bound method) is the one
    called; and the filter pipeline's name stays in the results keys."""
    import lm_eval.api.task as api_task

    who = "edufair_metrics.lmeval.task (EduFairTask: RECORD_REF in resps[0], take_first, process_results, aggregate_call_counts)"
    seen: dict = {}

    looked_up: list = []
    real_get_metric = api_task.get_metric
    monkeypatch.setattr(api_task, "get_metric", lambda name, *a, **k: looked_up.append(name) or real_get_metric(name, *a, **k))

    class Prefilled(TinyTask):
        def __init__(self, config):
            super().__init__(config=config)
            self._aggregation_list["probe_calls"] = self.aggregate_probe

        def aggregate_probe(self, items):
            seen["aggregated_by"] = self
            return float(sum(x for x in items if x))

        def build_all_requests(self, *, limit=None, samples=None, rank=0, world_size=1, **kwargs):
            out = []
            for doc_id, doc in self.doc_iterator(rank=rank, limit=limit, samples=samples, world_size=world_size):
                inst = Instance("generate_until", doc, ("ctx", {"max_gen_toks": 1, "until": []}), 0, (self.config.task, doc_id, 1))
                inst.resps.append(f"transcript-{doc_id}")
                out.append(inst)
            self._instances = out

        def process_results(self, doc, results):
            seen.setdefault("results", []).append(results)
            return {"probe_record": {"record": results[0]}, "probe_calls": 3 if results[0] == "transcript-0" else None}

    task = Prefilled(config={
        "task": "tiny", "test_split": "test", "doc_to_text": "{{q}}", "doc_to_target": "{{a}}", "output_type": "generate_until",
        "generation_kwargs": {"until": [], "max_gen_toks": 1}, "process_results": "process_results",
        "filter_list": [{"name": "judged", "filter": [{"function": "take_first"}]}],
        "metric_list": [{"metric": "probe_record", "aggregation": lambda xs: len(xs), "higher_is_better": True},
                        {"metric": "probe_calls", "aggregation": lambda xs: -1.0, "higher_is_better": False}],
    })
    assert not {"probe_record", "probe_calls"} & set(looked_up), broken(
        "with process_results in the config, ConfigurableTask still looks EduFair's metric names up (HF evaluate)", who)
    res = lm_eval.evaluator.evaluate(lm=ChatLM(), task_dict={"tasks": {"tiny": task}, "groups": {}}, limit=2,
                                     bootstrap_iters=0, log_samples=True)
    assert seen["results"] == [["transcript-0"], ["transcript-1"]], broken(
        f"process_results got {seen['results']} instead of take_first of the pre-filled resps", who)
    sample = res["samples"]["tiny"][0]
    assert sample.get("probe_record") == {"record": "transcript-0"}, broken(
        f"per-sample metrics are not top-level keys of the logged sample (keys: {sorted(sample)})", who)
    assert res["results"]["tiny"]["probe_record,judged"] == 2, broken("metric key is not '<metric>,<filter name>'", who)
    assert seen.get("aggregated_by") is task and res["results"]["tiny"]["probe_calls,judged"] == 3.0, broken(
        "an aggregation set in _aggregation_list after __init__ is not the one lm-eval calls", who)


def test_requests_dispatch_through_the_lm_instance(tmp_path):
    """``evaluate`` runs requests as ``getattr(lm, reqtype)(requests)`` and CachingLM forwards
    uncached ones as ``getattr(self.lm, attr)(...)``: a ``generate_until`` set on the LM *instance*
    is the one called, directly and behind ``--use_cache``."""
    who = "edufair_metrics.lmeval.harness.answer_placeholders_locally (replaces lm.generate_until on the instance)"
    dispatch = [c for c in ast.walk(fn_ast(lm_eval.evaluator.evaluate))
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Call) and isinstance(c.func.func, ast.Name)
                and c.func.func.id == "getattr" and isinstance(c.func.args[0], ast.Name) and c.func.args[0].id == "lm"]
    assert dispatch, broken("evaluate no longer runs requests as getattr(lm, reqtype)(...)", who)

    def run(lm, inner):
        seen = []
        original = inner.generate_until

        def generate_until(requests, *args, **kwargs):
            seen.append(len(requests))
            return original(requests, *args, **kwargs)

        inner.generate_until = generate_until
        lm_eval.evaluator.evaluate(lm=lm, task_dict={"tasks": {"tiny": tiny_task()}, "groups": {}}, limit=2, bootstrap_iters=0)
        return seen

    lm = ChatLM()
    assert run(lm, lm) == [2], broken("evaluate did not call the generate_until set on the LM instance", who)
    inner = ChatLM()
    caching = CachingLM(inner, str(tmp_path / "lm.db"))
    try:
        assert run(caching, inner) == [2], broken(
            "CachingLM did not forward to the generate_until set on the inner LM instance", who)
    finally:
        caching.dbdict.close()


def test_predict_only_override_metric():
    who = "edufair_metrics.lmeval.task.EduFairTask.override_metric (--predict_only)"
    calls = calls_to(fn_ast(lm_eval.evaluator.simple_evaluate), "override_metric")
    values = [k.value for c in calls for k in c.keywords if k.arg == "metric_name"] + [c.args[0] for c in calls if c.args]
    assert any(isinstance(v, ast.Constant) and v.value == "bypass" for v in values), broken(
        "simple_evaluate(predict_only=True) no longer calls task.override_metric(metric_name='bypass')", who)
    assert list(inspect.signature(ConfigurableTask.override_metric).parameters) == ["self", "metric_name"]

    task = tiny_task()
    task.override_metric("bypass")
    for attr in ("_aggregation_list", "_higher_is_better", "_filters"):
        assert hasattr(task, attr), broken(f"ConfigurableTask has no {attr} after override_metric", who)
    assert "bypass" in task._aggregation_list and "bypass" in task._higher_is_better
    assert task.aggregation() is task._aggregation_list, broken("aggregation() no longer returns _aggregation_list", who)
    assert task.higher_is_better() is task._higher_is_better, broken("higher_is_better() no longer returns _higher_is_better", who)

    class Tag:  # a filter class given by object, as a `!function` in filter_list is
        def __init__(self, **kwargs):
            self.kwargs = kwargs

        def apply(self, resps, docs):
            return [[f"{r[0]}|{self.kwargs['enabled']}"] for r in resps]

    from lm_eval.filters import build_filter_ensemble

    params = list(inspect.signature(build_filter_ensemble).parameters)
    assert params[:2] == ["filter_name", "components"], broken(f"build_filter_ensemble parameters are {params}", who)
    ensemble = build_filter_ensemble("judged", [[Tag, {"enabled": False}]])
    task._filters = [ensemble]
    task._instances = [Instance("generate_until", {}, ("c", {}), 0, ("tiny", 0, 1))]
    task._instances[0].resps.append("x")
    task.apply_filters()
    assert task._instances[0].filtered_resps == {"judged": ["x|False"]}, broken(
        "apply_filters no longer applies self._filters (name -> filtered_resps)", who)


# ---- models.py: the registry -------------------------------------------------------------------


def test_registry_builds_api_models():
    from lm_eval.api.registry import get_model
    from lm_eval.utils import simple_parse_args_string

    who = "edufair_metrics.lmeval.models.build_student / endpoint_of / parse_model_args"
    cls = get_model("local-chat-completions")
    assert isinstance(cls, type) and issubclass(cls, TemplateAPI), broken(
        "get_model('local-chat-completions') is not a TemplateAPI subclass", who)
    params = list(inspect.signature(cls.create_from_arg_obj).parameters)
    assert params[:2] == ["arg_dict", "additional_config"], broken(f"create_from_arg_obj parameters are {params}", who)
    assert callable(getattr(cls, "create_from_arg_string", None)), broken("create_from_arg_string is gone", who)
    lm = cls.create_from_arg_obj({"model": "x", "base_url": "http://127.0.0.1:9/v1/chat/completions",
                                  "tokenized_requests": False, "num_concurrent": 2}, {"batch_size": "auto"})
    assert isinstance(lm, cls) and lm._concurrent == 2
    assert simple_parse_args_string("a=1,b=x") == {"a": 1, "b": "x"}, broken("simple_parse_args_string changed", who)


def test_get_model_unknown_name_error_type():
    from lm_eval.api.registry import get_model

    who = "edufair_metrics.lmeval.models.build_student (catches KeyError/ValueError for an unknown model)"
    try:
        get_model("edufair-no-such-model")
    except (KeyError, ValueError):
        return
    except Exception as exc:  # noqa: BLE001
        pytest.fail(broken(f"get_model of an unknown name raises {type(exc).__name__}", who))
    pytest.fail(broken("get_model of an unknown name returns instead of raising", who))


def test_get_model_missing_backend_error_type():
    """lm-eval 0.4.13 registers models lazily: a registered model whose optional package is
    missing raises ``ImportError`` (``ModuleNotFoundError``) from ``get_model``. EduFair's
    ``model_class`` turns exactly that, and unknown names, into a one-line EduFairError."""
    from lm_eval.api.registry import get_model

    from edufair_metrics.errors import EduFairError
    from edufair_metrics.lmeval.models import model_class

    who = "edufair_metrics.lmeval.models.model_class (build_student, endpoint_of in EduFairTask.__init__)"
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed: no registered backend with a missing package to probe")
    missing = "vllm"  # configs/student-vllm-inprocess.yaml names it as the student
    try:
        get_model(missing)
    except ImportError:
        pass
    except Exception as exc:  # noqa: BLE001
        pytest.fail(broken(f"get_model({missing!r}) without its package raises {type(exc).__name__}: {exc}", who))
    else:
        pytest.fail(broken(f"get_model({missing!r}) without its package did not raise", who))
    with pytest.raises(EduFairError, match="needs a package that is not installed"):
        model_class(missing)
    with pytest.raises(EduFairError, match="unknown lm-eval model"):
        model_class("edufair-no-such-model")


@pytest.mark.parametrize("module, cls", [("lm_eval.models.huggingface", "HFLM"), ("lm_eval.models.vllm_causallms", "VLLM")])
def test_local_backends_expose_context_limits(module, cls):
    """Checked on the source, without importing torch/transformers/vllm."""
    who = "edufair_metrics.lmeval.models.HarnessModel.context_overflow and harness.warn_if_unbatched"
    tree = _module_source_tree(module, who)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
    assert node is not None, broken(f"{module}.{cls} is gone", who)
    members = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for name in ("tok_encode", "max_length", "max_gen_toks", "apply_chat_template"):
        assert name in members, broken(f"{cls} no longer defines {name}", who)


# ---- lm_eval_tasks: how lm-eval loads the task YAMLs --------------------------------------------


def test_yaml_function_tags_resolve_to_the_task_module():
    from lm_eval.tasks._factory import _ctor_accepts_config
    from lm_eval.tasks._yaml_loader import load_yaml

    import lm_eval_tasks.task as task_module
    from edufair_metrics.lmeval import tasks_path

    who = "lm_eval_tasks/edufair/*.yaml (class: / !function lm_eval_tasks.task.X) and EduFairTask.__init__"
    cfg = load_yaml(tasks_path() / "edufair_explicit_math.yaml", resolve_func=True)
    assert cfg.get("class") is task_module.EduFairTask, broken("`class: !function lm_eval_tasks.task.EduFairTask` "
                                                               "does not resolve to the imported class", who)
    assert cfg["filter_list"][0]["filter"][0]["function"] == "take_first", broken(
        "the template's filter is not lm-eval's take_first", who)
    from lm_eval.api.registry import get_filter

    assert get_filter("take_first") is not None, broken("lm-eval has no `take_first` filter any more", who)
    assert cfg.get("edufair_cell") == {"condition": "explicit", "domain": "mathematics"}, broken(
        "EduFair's own top-level YAML keys (edufair_cell) are not kept by the loader", who)
    assert isinstance(cfg.get("edufair"), dict), broken("the `edufair:` block from the included template is lost", who)
    assert _ctor_accepts_config(task_module.EduFairTask), broken("the `class:` route no longer passes config=", who)
    src = inspect.getsource(importlib.import_module("lm_eval.tasks._factory"))
    assert re.search(r'if\s+"class"\s+in\s+cfg', src) and "cls(config=cfg)" in src, broken(
        "TaskFactory no longer builds `class:` tasks as cls(config=cfg)", who)


# ---- runlog/layout.py: the output layout --------------------------------------------------------


def test_output_layout_matches_report_regexes(tmp_path, monkeypatch):
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.loggers import evaluation_tracker as et_module

    from edufair_metrics.records import RECORD_KEY
    from edufair_metrics.runlog import layout

    who = "edufair_metrics.runlog.layout (RESULTS_RE, SAMPLES_RE, find_run_folders, tutor_name)"
    src = inspect.getsource(et_module)
    assert 'f"results_{self.date_id}.json"' in src, broken("results file is no longer results_<date_id>.json", who)
    assert 'f"samples_{task_name}_{self.date_id}.jsonl"' in src, broken(
        "samples file is no longer samples_<task>_<date_id>.jsonl", who)

    monkeypatch.delenv("HF_TOKEN", raising=False)
    out = tmp_path / "out"
    tracker = EvaluationTracker(output_path=str(out))
    tracker.general_config_tracker.log_experiment_args(
        model_source="local-chat-completions", model_args="model=org/tutor-7b,base_url=http://127.0.0.1:9/v1",
        system_instruction=None, chat_template=None, fewshot_as_multiturn=False)
    task = "edufair_explicit_math"
    tracker.save_results_aggregated(results={"results": {task: {"alias": task}}, "config": {}}, samples=None)
    sample = {"doc_id": 0, "arguments": [("ctx", {})], "resps": [["r"]], "filtered_resps": [{}], "target": "a",
              RECORD_KEY: {"scores": {}}}
    tracker.save_results_samples(task_name=task, samples=[sample])

    dirs = [d for d in out.iterdir() if d.is_dir()]
    assert [d.name for d in dirs] == ["org__tutor-7b"], broken(f"OUT/<model_name_sanitized>/ layout changed: {dirs}", who)
    names = sorted(p.name for p in dirs[0].iterdir())
    results = [n for n in names if layout.RESULTS_RE.match(n)]
    samples = [layout.SAMPLES_RE.match(n) for n in names if layout.SAMPLES_RE.match(n)]
    assert len(results) == 1 and len(samples) == 1, broken(f"report regexes do not match the files {names}", who)
    ts = layout.RESULTS_RE.match(results[0]).group("ts")
    assert samples[0].group("task") == task and samples[0].group("ts") == ts, broken(
        f"samples file {samples[0].string} does not split into task {task!r} and the results timestamp {ts!r}", who)
    assert layout.find_run_folders(out) == [layout.RunFolder(dirs[0])]
    data = json.loads((dirs[0] / results[0]).read_text())
    assert layout.tutor_name(data) == "org/tutor-7b", broken(f"results JSON model_name is {data.get('model_name')!r}", who)
    line = json.loads((dirs[0] / samples[0].string).read_text().splitlines()[0])
    assert line.get(RECORD_KEY) == {"scores": {}}, broken("sample dict keys are not written as given", who)
