"""Model calls for the dialogue runner: build the student through lm-eval's model registry, and
wrap any harness LM so every call is cached persistently (resume after a crash makes no repeated
call) and a batch failure only fails the dialogues it hits."""

from __future__ import annotations

import json
import logging
from typing import Any

from lm_eval.api.instance import Instance

from .errors import EduFairError
from .lmeval import quiet_request_bars

log = logging.getLogger("edufair")


def build_student(cfg: dict[str, Any]):
    """The simulated student, built with lm-eval's registry like any ``--model``."""
    import lm_eval.models  # noqa: F401  (registers built-in models before get_model; see internals §1)
    from lm_eval.api.registry import get_model

    name = cfg["model"]
    args = cfg.get("model_args") or {}
    extra = {"batch_size": cfg.get("batch_size", "auto")}
    try:
        cls = get_model(name)
    except (KeyError, ValueError) as exc:
        raise EduFairError(f"edufair.student.model: unknown lm-eval model '{name}'") from exc
    if isinstance(args, str):
        return cls.create_from_arg_string(args, extra)
    return cls.create_from_arg_obj(dict(args), extra)


# Model arguments that change how requests are sent, never what a model answers: they are left out
# of cache keys so that a new port (edufair demo picks a free one), more concurrency or another
# replica behind a load balancer still reuses every cached call.
EXECUTION_ONLY_ARGS = frozenset({
    "base_url", "num_concurrent", "max_retries", "timeout", "batch_size", "max_batch_size", "device",
    "tokenized_requests", "verify_certificate", "header", "headers", "max_length", "parallelize",
    "gpu_memory_utilization", "tensor_parallel_size", "data_parallel_size", "swap_space", "enable_prefix_caching",
})


def model_identity(kind: str, model_args: dict[str, Any] | str | None) -> dict[str, Any]:
    """What determines a model's answers: its lm-eval class/name and the arguments that matter."""
    if isinstance(model_args, str):
        from lm_eval.utils import simple_parse_args_string

        model_args = simple_parse_args_string(model_args)
    from .cache import strip_secrets

    args = {k: v for k, v in (model_args or {}).items() if k not in EXECUTION_ONLY_ARGS}
    return strip_secrets({"kind": kind, "model_args": args})


def prompt_text(ctx) -> str:
    """The rendered prompt as text: a chat string (hf, vllm) or the JSON messages of an API model
    (lm-eval's JsonChatStr; its str() is a repr with escapes)."""
    return ctx.prompt if hasattr(ctx, "prompt") else str(ctx)


def _system_survived(ctx, system: str) -> bool:
    if hasattr(ctx, "prompt"):
        try:
            msgs = json.loads(ctx.prompt)
            return any(m.get("role") == "system" and system in m.get("content", "") for m in msgs)
        except (ValueError, AttributeError, TypeError):
            pass
    return system in prompt_text(ctx)


class CachedGenerator:
    """``generate_until`` over many contexts in ONE call to the underlying LM, with a persistent
    per-call cache keyed by (role, model identity, decoding settings, exact rendered prompt)."""

    def __init__(self, lm, role: str, identity: dict[str, Any], cache_path: str | None, task: str = "") -> None:
        self.lm = lm
        self.role = role
        self.identity = identity
        self.task = task
        self.cache = None
        if cache_path:
            from .cache import CallCache

            self.cache = CallCache(cache_path)
        self.calls = 0  # batched calls made to the LM
        self.requests = 0  # requests sent (cache misses)
        self.hits = 0

    def render(self, messages: list[dict[str, str]]):
        """Render with the model's own chat template, and refuse templates that drop the system
        prompt (lm-eval's hf/vllm silently drop system messages when a template rejects them,
        which would erase the demographic cue)."""
        ctx = self.lm.apply_chat_template(messages, add_generation_prompt=True)
        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
        if system and not _system_survived(ctx, system):
            raise EduFairError(
                f"the {self.role} model's chat template dropped the system prompt; "
                "EduFair needs a chat model whose template accepts a system message"
            )
        return ctx

    def _key(self, ctx, gen_kwargs: dict[str, Any]) -> dict[str, Any]:
        return {"namespace": self.role, "model": self.identity, "gen_kwargs": gen_kwargs, "prompt": prompt_text(ctx)}

    def generate(self, contexts: list, gen_kwargs: dict[str, Any], docs: list[dict[str, Any]]) -> list[Any]:
        """Returns one output string per context, or the Exception that request failed with."""
        outputs: list[Any] = [None] * len(contexts)
        misses = []
        for i, ctx in enumerate(contexts):
            hit = self.cache.get(self._key(ctx, gen_kwargs)) if self.cache else None
            if hit is not None:
                outputs[i] = hit
                self.hits += 1
            else:
                misses.append(i)
        misses = [i for i in misses if not self._refuse_too_long(i, contexts[i], gen_kwargs, outputs)]
        if misses:
            results = self._call([contexts[i] for i in misses], gen_kwargs, [docs[i] for i in misses])
            for i, res in zip(misses, results):
                outputs[i] = res
                if self.cache is not None and isinstance(res, str):
                    self.cache.put(self._key(contexts[i], gen_kwargs), res)
        return outputs

    def _refuse_too_long(self, i: int, ctx, gen_kwargs: dict[str, Any], outputs: list[Any]) -> bool:
        """Local backends (hf, vLLM) cut a prompt longer than their context minus max_gen_toks from
        the LEFT with only a log warning: the system prompt, which carries the demographic cue,
        would silently disappear. Such a request fails its dialogue instead (API servers reject
        over-long prompts themselves, which also fails the dialogue)."""
        real = getattr(self.lm, "lm", self.lm)
        if not isinstance(ctx, str) or not hasattr(real, "tok_encode"):
            return False
        try:
            max_length = int(real.max_length)
        except (AttributeError, TypeError, ValueError):
            return False
        max_gen = int(gen_kwargs.get("max_gen_toks", getattr(real, "max_gen_toks", 256)))
        n_tokens = len(real.tok_encode(ctx))
        if n_tokens <= max_length - max_gen:
            return False
        outputs[i] = PromptTooLong(
            f"prompt of {n_tokens} tokens does not fit the {self.role} model's context ({max_length}) minus "
            f"max_gen_toks ({max_gen}); the backend would cut the system prompt. Raise max_model_len/max_length"
        )
        return True

    def _instances(self, contexts, gen_kwargs, docs) -> list[Instance]:
        return [
            Instance("generate_until", doc, (ctx, dict(gen_kwargs)), 0, (self.task, j, 1))
            for j, (ctx, doc) in enumerate(zip(contexts, docs))
        ]

    def _call(self, contexts, gen_kwargs, docs) -> list[Any]:
        """One batched call. If the batch raises (lm-eval's API models raise for the whole batch
        when one request fails after its own retries), the requests that did succeed are taken
        from the LM's ``cache_hook`` (lm-eval reports every successful answer there), so only the
        failed ones are re-sent, one by one; each still failing request becomes its Exception.
        An empty or whitespace-only answer is a failure (``EmptyOutput``), never a turn: lm-eval
        turns a null ``message.content`` into ``LMEVAL_MODEL_NONE_ANSWER_PLACEHOLDER`` ("")."""
        self.calls += 1
        self.requests += len(contexts)
        recorder = _HookRecorder(self.lm)
        if self.cache is not None:
            # Persist each answer the moment it arrives, not after the whole batch: a kill in the
            # middle of a turn loses no answer the client already received (issue 7 resume).
            def store(prompt: str, res: str, gk=dict(gen_kwargs)) -> None:
                if res.strip():
                    self.cache.put({"namespace": self.role, "model": self.identity, "gen_kwargs": gk, "prompt": prompt}, res)

            recorder.on_answer = store
        try:
            with recorder, quiet_request_bars():
                outs = self.lm.generate_until(self._instances(contexts, gen_kwargs, docs))
            return [_checked(o) for o in outs]
        except Exception as exc:  # noqa: BLE001 - isolate failures per dialogue below
            if len(contexts) == 1:
                return [exc]
            log.warning("edufair: batched %s call failed (%s); retrying its failed requests one by one", self.role, describe_error(exc))
        results: list[Any] = []
        for ctx, doc in zip(contexts, docs):
            done = recorder.answers.get(prompt_text(ctx))
            if done is not None:  # answered inside the failed batch: not sent again
                results.append(_checked(done))
                continue
            self.calls += 1
            try:
                with quiet_request_bars():
                    out = self.lm.generate_until(self._instances([ctx], gen_kwargs, [doc]))[0]
                results.append(_checked(out))
            except Exception as exc:  # noqa: BLE001
                results.append(exc)
        return results


class PromptTooLong(EduFairError):
    """The conversation no longer fits the model's context window."""


class EmptyOutput(EduFairError):
    """The endpoint answered, but with no text (null/empty content)."""


def _checked(out: Any) -> Any:
    if not isinstance(out, str):
        return EduFairError(f"non-text output {type(out).__name__}")
    if not out.strip():
        return EmptyOutput("empty output (null or blank message content)")
    return out


def failure_kind(exc: BaseException | str | None) -> str:
    """A short failure class for summaries: timeout, http_429, http_5xx, http_4xx, connection,
    bad_body (unparsable/malformed JSON), empty_output, prompt_too_long, other."""
    if exc is None:
        return "none"
    status = getattr(exc, "status", None)  # aiohttp.ClientResponseError / openai.APIStatusError
    if isinstance(status, int) and status >= 400:
        return "http_429" if status == 429 else ("http_5xx" if status >= 500 else "http_4xx")
    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    low = text.lower()
    import re

    # "ClientResponseError: 429, message=..." as recorded in a transcript's error text
    m = re.search(r"(?:ResponseError|StatusError|status)[:= ]+([45]\d\d)\b", text)
    if "emptyoutput" in low or "empty output" in low:
        return "empty_output"
    if "prompttoolong" in low or "does not fit the" in low:
        return "prompt_too_long"
    if "timeout" in low or "timed out" in low:
        return "timeout"
    if m:
        code = int(m.group(1))
        return "http_429" if code == 429 else ("http_5xx" if code >= 500 else "http_4xx")
    if any(w in low for w in ("disconnect", "connection", "reset by peer", "broken pipe")):
        return "connection"
    if any(w in low for w in ("jsondecode", "contenttype", "expecting value", "unterminated", "could not parse", "payload")):
        return "bad_body"
    return "other"


def describe_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


class _HookRecorder:
    """Temporarily wraps the LM's ``cache_hook`` to record successful answers by prompt while
    still forwarding them (so ``--use_cache`` keeps working)."""

    def __init__(self, lm) -> None:
        self.real = getattr(lm, "lm", lm)  # CachingLM keeps the model in .lm
        self.answers: dict[str, str] = {}
        self.orig = None
        self.on_answer = None

    def add_partial(self, attr, req, res) -> None:
        if attr == "generate_until" and isinstance(res, str):
            try:
                prompt = prompt_text(req[0])
                self.answers[prompt] = res
                if self.on_answer is not None:
                    self.on_answer(prompt, res)
            except (TypeError, IndexError):
                pass
        if self.orig is not None:
            self.orig.add_partial(attr, req, res)

    def __enter__(self):
        self.orig = getattr(self.real, "cache_hook", None)
        try:
            self.real.cache_hook = self
        except AttributeError:
            pass
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.real.cache_hook = self.orig
        except AttributeError:
            pass
