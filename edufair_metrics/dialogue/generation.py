"""Model calls of the dialogue runner: every call cached persistently (a resumed run repeats no
answered call), one batched call per side and turn, and a failed request fails only its own
dialogue. The models come in through the :class:`ChatModel` interface; ``edufair_metrics.lmeval``
adapts lm-eval's LMs to it."""

from __future__ import annotations

import logging
from typing import Any, Callable, Protocol

from edufair_metrics.cache import CallCache, call_key
from edufair_metrics.errors import EduFairError
from edufair_metrics.failures import CallFailure, FailureKind, classify, describe

log = logging.getLogger("edufair")


class ChatModel(Protocol):
    """What the runner needs from a tutor or student model."""

    def render(self, messages: list[dict[str, str]]) -> Any: ...

    def prompt_text(self, ctx: Any) -> str: ...

    def system_survived(self, ctx: Any, system: str) -> bool: ...

    def context_overflow(self, ctx: Any, gen_kwargs: dict[str, Any]) -> tuple[int, int, int] | None: ...

    def generate(self, contexts: list, gen_kwargs: dict[str, Any], docs: list[dict[str, Any]],
                 on_answer: Callable[[str, str], None] | None = None) -> list[str]: ...


class CachedGenerator:
    """``generate`` over many contexts in ONE call to the model, with a persistent per-call cache
    keyed by (role, model identity, decoding settings, exact rendered prompt)."""

    def __init__(self, model: ChatModel, role: str, identity: dict[str, Any], cache: CallCache | None) -> None:
        self.model = model
        self.role = role
        self.identity = identity
        self.cache = cache

    def render(self, messages: list[dict[str, str]]):
        """Render with the model's own chat template, and refuse templates that drop the system
        prompt (lm-eval's hf/vllm drop system messages a template rejects, which would erase the
        demographic cue)."""
        ctx = self.model.render(messages)
        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
        if system and not self.model.system_survived(ctx, system):
            raise EduFairError(
                f"the {self.role} model's chat template dropped the system prompt; "
                "EduFair needs a chat model whose template accepts a system message"
            )
        return ctx

    def _key(self, prompt: str, gen_kwargs: dict[str, Any]) -> dict[str, Any]:
        return call_key(self.role, self.identity, gen_kwargs, prompt)

    def generate(self, contexts: list, gen_kwargs: dict[str, Any], docs: list[dict[str, Any]]) -> list[Any]:
        """One output string per context, or the :class:`CallFailure` that request ended with."""
        outputs: list[Any] = [None] * len(contexts)
        misses = []
        for i, ctx in enumerate(contexts):
            hit = self.cache.get(self._key(self.model.prompt_text(ctx), gen_kwargs)) if self.cache else None
            if hit is not None:
                outputs[i] = hit
                continue
            overflow = self.model.context_overflow(ctx, gen_kwargs)
            if overflow is not None:
                n_tokens, max_length, max_gen = overflow
                outputs[i] = CallFailure(
                    FailureKind.PROMPT_TOO_LONG,
                    f"prompt of {n_tokens} tokens does not fit the {self.role} model's context ({max_length}) minus "
                    f"max_gen_toks ({max_gen}); the backend would cut the system prompt. Raise max_model_len/max_length",
                )
                continue
            misses.append(i)
        if misses:
            arrived: dict[str, str] = {}
            results = self._call([contexts[i] for i in misses], gen_kwargs, [docs[i] for i in misses], arrived)
            for i, res in zip(misses, results):
                outputs[i] = res
                prompt = self.model.prompt_text(contexts[i])
                if self.cache is not None and isinstance(res, str) and prompt not in arrived:
                    # models that report no answers while a batch runs are stored here, once
                    self.cache.put(self._key(prompt, gen_kwargs), res)
        return outputs

    def _call(self, contexts: list, gen_kwargs: dict[str, Any], docs: list[dict[str, Any]],
              arrived: dict[str, str]) -> list[Any]:
        """One batched call. If the batch raises (lm-eval's API models raise for the whole batch
        when one request fails after their own retries), the answers that did arrive are kept and
        only the failed requests are sent again, one by one; each still failing request becomes
        its :class:`CallFailure`. An empty answer is a failure, never a turn. ``arrived`` collects
        (and the cache stores) every answer the model reported while the batch ran."""

        def store(prompt: str, answer: str, gk=dict(gen_kwargs)) -> None:
            # Persist each answer the moment it arrives, not after the whole batch: a kill in the
            # middle of a turn loses no answer the client already received.
            arrived[prompt] = answer
            if self.cache is not None and answer.strip():
                self.cache.put(self._key(prompt, gk), answer)

        try:
            outs = self.model.generate(contexts, gen_kwargs, docs, on_answer=store)
            return [self._checked(ctx, o) for ctx, o in zip(contexts, outs)]
        except Exception as exc:  # noqa: BLE001 - isolate failures per dialogue below
            if len(contexts) == 1:
                return [_failure(exc)]
            log.warning("edufair: batched %s call failed (%s); retrying its failed requests one by one", self.role, describe(exc))
        results: list[Any] = []
        for ctx, doc in zip(contexts, docs):
            done = arrived.get(self.model.prompt_text(ctx))
            if done is not None:  # answered inside the failed batch: not sent again
                results.append(self._checked(ctx, done))
                continue
            try:
                out = self.model.generate([ctx], gen_kwargs, [doc], on_answer=store)[0]
                results.append(self._checked(ctx, out))
            except Exception as exc:  # noqa: BLE001
                results.append(_failure(exc))
        return results

    def _checked(self, ctx, out: Any) -> Any:
        if not isinstance(out, str):
            return CallFailure(FailureKind.BAD_BODY, f"non-text output {type(out).__name__}")
        if not out.strip():
            # lm-eval turns a null message.content into "" (LMEVAL_MODEL_NONE_ANSWER_PLACEHOLDER)
            return CallFailure(FailureKind.EMPTY_OUTPUT, "empty output (null or blank message content)")
        return out


def _failure(exc: BaseException) -> CallFailure:
    if isinstance(exc, CallFailure):
        return exc
    return CallFailure(classify(exc) or FailureKind.OTHER, describe(exc))
