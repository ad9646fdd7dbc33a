"""Model calls of the dialogue runner: every call cached persistently (a resumed run repeats no
answered call), one batched call per side and turn (and cohort and decoding override: see
``dialogue/loop.py``), identical requests of a call sent once, failed, empty and unstorable answers retried a
bounded number of times (one batched call per retry round), and a request that still fails fails
only its own dialogue(s), never the run. The models come in through the :class:`ChatModel` interface;
``edufair_metrics.lmeval`` adapts lm-eval's LMs to it.

Attempt cap (per distinct request and turn): a request is sent at most ``1 + retries`` times
(:data:`DIALOGUE_RETRIES` = 2 by default), and each send is one ``generate`` call of the model, in
which lm-eval's API models make at most ``max_retries`` HTTP attempts of their own
(``ChatModel.attempts_per_send``). So at most ``(1 + retries) * max_retries`` HTTP requests per
distinct request and turn: 9 with lm-eval's default ``max_retries=3``. Not retried at all:
``http_4xx`` and ``prompt_too_long`` (they cannot succeed).

A model that can send each request once per call (``ChatModel.single_attempt_sends``: lm-eval's API
models) is asked to: a failing request then takes one slot for one attempt, like any other, and
the batch does not wait for lm-eval's back-off (1 s sleeps) and the re-queueing of its retries
behind the rest of the batch; EduFair's own retry rounds take their place, each after
:data:`RESEND_BACKOFF_S`. Its cap is then ``1 + retries`` HTTP requests per distinct request and
turn (3). Measured with ``tests/dialogue/bench_resends.py``."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Protocol

from edufair_metrics.cache import CallCache, call_key, storable_excerpt, unstorable_text
from edufair_metrics.dialogue.state import strip_reasoning
from edufair_metrics.errors import EduFairError
from edufair_metrics.failures import CallCounts, CallFailure, FailureKind, classify, describe

log = logging.getLogger("edufair")


class ChatModel(Protocol):
    """What the runner needs from a tutor or student model."""

    def render(self, messages: list[dict[str, str]]) -> Any: ...

    def prompt_text(self, ctx: Any) -> str: ...

    def system_survived(self, ctx: Any, system: str) -> bool: ...

    def context_overflow(self, ctx: Any, gen_kwargs: dict[str, Any]) -> tuple[int, int, int] | None: ...

    def generate(self, contexts: list, gen_kwargs: dict[str, Any], docs: list[dict[str, Any]],
                 on_answer: Callable[[str, str], None] | None = None, retry: bool = False) -> list[str]: ...
    # One answer per context; a model that isolates failures per request may put a
    # :class:`CallFailure` in the place of a request that failed (the others still count), and
    # raises only when the call failed as a whole.

    # Optional: True for an HTTP API model, whose ``generate`` only waits on a server and may
    # therefore run in a worker thread (the turn loop overlaps it with the other side); False
    # when absent (in-process models such as vLLM and hf stay on the main thread).
    # is_api: bool

    # Optional: HTTP attempts the model makes per ``generate`` call and request (lm-eval's API
    # models retry on their own); 1 when absent. Only used to state the attempt cap.
    # attempts_per_send: int


# EduFair's own retries per distinct request and turn, after the first send (see the module doc).
DIALOGUE_RETRIES = 2
# the pause before a retry round of single-attempt sends (lm-eval's own back-off starts at 1 s)
RESEND_BACKOFF_S = 0.5


class CachedGenerator:
    """``generate`` over many contexts in ONE call to the model, with a persistent per-call cache
    keyed by (role, model identity, decoding settings, exact rendered prompt). Identical requests
    of one call (same key) are sent once and the answer is given to each; a failed, empty or
    reasoning-only answer is sent again, up to ``retries`` times. ``counts`` accumulates what
    happened over every call of this generator (see :class:`CallCounts`).

    Threads: one call at a time per generator, from any thread (the overlapped turn loop runs one
    side's calls in a worker thread while the other generator runs on the main thread). A call
    keeps its state in locals; ``counts`` is locked and ``CallCache`` opens one connection per
    thread."""

    def __init__(self, model: ChatModel, role: str, identity: dict[str, Any], cache: CallCache | None,
                 *, retries: int = DIALOGUE_RETRIES) -> None:
        if retries < 0:
            raise EduFairError(f"{role}: retries must be >= 0, got {retries}")
        self.model = model
        self.role = role
        self.identity = identity
        self.cache = cache
        self.retries = retries
        self.counts = CallCounts(role)

    @property
    def max_sends(self) -> int:
        """Sends per distinct request and turn, at most."""
        return 1 + self.retries

    @property
    def attempt_cap(self) -> int:
        """HTTP requests per distinct request and turn, at most: EduFair's sends times the model's
        own attempts per send."""
        if self._single_attempt:
            return self.max_sends
        return self.max_sends * max(1, int(getattr(self.model, "attempts_per_send", 1) or 1))

    @property
    def _single_attempt(self) -> bool:
        return bool(getattr(self.model, "single_attempt_sends", False))

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
        prompts = [self.model.prompt_text(ctx) for ctx in contexts]
        # Within one call role, model and decoding are fixed: the prompt text is the cache key.
        askers: dict[str, list[int]] = {}
        for i, prompt in enumerate(prompts):
            askers.setdefault(prompt, []).append(i)
        self.counts.add(requests=len(contexts))

        answers: dict[str, Any] = {}
        to_send: list[tuple[str, Any, dict[str, Any]]] = []
        for prompt, idx in askers.items():
            ctx = contexts[idx[0]]
            hit = self.cache.get(self._key(prompt, gen_kwargs)) if self.cache else None
            if hit is not None and not isinstance(self._checked(hit), CallFailure):
                answers[prompt] = hit
                self.counts.add(cached=len(idx))
                continue
            self.counts.add(distinct=1, coalesced=len(idx) - 1)
            overflow = self.model.context_overflow(ctx, gen_kwargs)
            if overflow is not None:
                n_tokens, max_length, max_gen = overflow
                answers[prompt] = CallFailure(
                    FailureKind.PROMPT_TOO_LONG,
                    f"prompt of {n_tokens} tokens does not fit the {self.role} model's context ({max_length}) minus "
                    f"max_gen_toks ({max_gen}); the backend would cut the system prompt. Raise max_model_len/max_length",
                )
                self.counts.final_failure(FailureKind.PROMPT_TOO_LONG)
                continue
            to_send.append((prompt, ctx, docs[idx[0]]))
        if to_send:
            started = time.perf_counter()  # the role's wall time: only calls that reach the model
            answers.update(self._send(to_send, gen_kwargs))
            self.counts.timed(time.perf_counter() - started)
        outputs: list[Any] = [None] * len(contexts)
        for prompt, idx in askers.items():
            for i in idx:  # fan the one answer out to every dialogue that asked for it
                outputs[i] = answers[prompt]
        return outputs

    def _send(self, items: list[tuple[str, Any, dict[str, Any]]], gen_kwargs: dict[str, Any]) -> dict[str, Any]:
        """Send distinct requests in retry rounds: round 1 sends all in one batched call, and each
        later round sends, again in ONE batched call (at the model's own concurrency), every request
        of the previous round that failed (retryable kinds only), until each is answered or sent
        ``max_sends`` times. A model that isolates failures per request (lm-eval's API models behind
        ``HarnessModel``: a failed request is a :class:`CallFailure` in its place) never fails a
        whole batch. When a batch fails as a whole anyway, the requests whose answers had not
        arrived have no known outcome: from then on each request is sent alone (an unambiguous
        outcome), as the only way to keep one bad request from failing the others."""
        sends = {prompt: 0 for prompt, _, _ in items}
        stored: set[str] = set()
        final: dict[str, Any] = {}

        frozen_gen_kwargs = dict(gen_kwargs)  # the call's settings, as the cache key must see them

        def store(prompt: str, answer: str) -> None:
            # Persist each answer the moment it arrives, not after the whole batch: a kill in the
            # middle of a turn loses no answer the client already received. Failed answers
            # (empty, reasoning only, not storable) are never stored.
            if self.cache is not None and prompt in sends and prompt not in stored \
                    and not isinstance(self._checked(answer), CallFailure):
                if self.cache.put(self._key(prompt, frozen_gen_kwargs), answer):
                    stored.add(prompt)

        def settle(prompt: str, result: Any) -> bool:
            """Record one send's outcome; True when the request needs another send."""
            if not isinstance(result, CallFailure):
                final[prompt] = result
                return False
            self.counts.attempt_failed(result.kind)
            if result.kind.retryable and sends[prompt] < self.max_sends:
                return True
            final[prompt] = result
            return False

        pending = list(items)
        alone = False  # after a batch failed as a whole: one request per call
        first = True
        single = self._single_attempt
        once = {"single_attempt": True} if single else {}
        while pending:
            if single and not first:
                time.sleep(RESEND_BACKOFF_S)  # the back-off lm-eval's own retries would have had
            again: list[tuple[str, Any, dict[str, Any]]] = []
            self.counts.add(sends=len(pending))  # counted as they go out (a kill keeps them: run/counts.py)
            if alone:
                for prompt, ctx, doc in pending:
                    sends[prompt] += 1
                    try:
                        result = self._checked(self.model.generate([ctx], gen_kwargs, [doc], on_answer=store, retry=True,
                                                                   **once)[0])
                    except Exception as exc:  # noqa: BLE001 - isolate failures per request
                        result = _failure(exc)
                    if settle(prompt, result):
                        again.append((prompt, ctx, doc))
            else:
                results, batch_failure = self._batch(pending, gen_kwargs, store, retry=not first, once=once)
                for (prompt, ctx, doc), result in zip(pending, results):
                    sends[prompt] += 1
                    if result is None:  # the batch raised before this answer arrived: outcome unknown
                        alone = True
                        if sends[prompt] < self.max_sends:
                            again.append((prompt, ctx, doc))
                        else:
                            final[prompt] = batch_failure
                    elif settle(prompt, result):
                        again.append((prompt, ctx, doc))
            first = False
            pending = again

        for prompt, _ctx, _ in items:
            n, result = sends[prompt], final[prompt]
            self.counts.add(retried=int(n > 1))
            if isinstance(result, CallFailure):
                self.counts.final_failure(result.kind)
                note = f"after {n} attempts" if n > 1 else ("not retried" if not result.kind.retryable else "1 attempt")
                final[prompt] = CallFailure(result.kind, f"{result.detail} ({note})", raw=result.raw)
            else:
                self.counts.add(recovered=int(n > 1))
                if self.cache is not None and prompt not in stored:
                    # models that report no answers while a call runs are stored here, once
                    self.cache.put(self._key(prompt, gen_kwargs), result)
        return final

    def _batch(self, items, gen_kwargs, store, *, retry: bool = False,
               once: dict[str, Any] | None = None) -> tuple[list[Any], CallFailure | None]:
        """One batched call of ``items``. Per request its checked output, a CallFailure, or None
        when the batch raised before that request's answer arrived (it is then sent alone); and
        the failure the batch raised, if it did. ``retry``: a re-send round (it goes past
        lm-eval's CachingLM, see ``ChatModel.generate``)."""
        contexts = [ctx for _, ctx, _ in items]
        arrived: dict[str, str] = {}

        def seen(prompt: str, answer: str) -> None:
            arrived[prompt] = answer
            store(prompt, answer)

        try:
            outs = self.model.generate(contexts, gen_kwargs, [doc for _, _, doc in items], on_answer=seen,
                                       **({"retry": True} if retry else {}), **(once or {}))
        except Exception as exc:  # noqa: BLE001 - isolate failures per request below
            failure = _failure(exc)
            if len(items) == 1:
                return [failure], failure
            log.warning("edufair: batched %s call failed (%s); sending its unanswered requests one by one",
                        self.role, describe(exc))
            self.counts.attempt_failed(failure.kind)  # at least one request failed this way
            return [self._checked(arrived[p]) if p in arrived else None for p, _, _ in items], failure
        if len(outs) != len(items):
            failure = CallFailure(FailureKind.BAD_BODY, f"{len(outs)} answers for {len(items)} requests")
            return [failure] * len(items), None
        return [self._checked(o) for o in outs], None

    def _checked(self, out: Any) -> Any:
        """The answer, or the CallFailure it is: an empty answer is never a turn, and neither is
        one that could not be stored (a lone surrogate, NUL bytes, an answer of megabytes)."""
        if isinstance(out, CallFailure):  # a request that failed alone inside a batched call
            return out
        if not isinstance(out, str):
            return CallFailure(FailureKind.BAD_BODY, f"non-text output {type(out).__name__}")
        problem = unstorable_text(out)
        if problem is not None:
            return CallFailure(FailureKind.BAD_BODY, problem, raw=storable_excerpt(out, 200))
        if not out.strip():
            # lm-eval turns a null message.content into "" (LMEVAL_MODEL_NONE_ANSWER_PLACEHOLDER)
            return CallFailure(FailureKind.EMPTY_OUTPUT, "empty output (null or blank message content)")
        if not strip_reasoning(out):
            # e.g. a <think> block cut off by the token limit: nothing the other party may see
            return CallFailure(FailureKind.EMPTY_VISIBLE_TURN, "no visible text once reasoning is stripped", raw=out[:2000])
        return out


def _failure(exc: BaseException) -> CallFailure:
    if isinstance(exc, CallFailure):
        return exc
    return CallFailure(classify(exc) or FailureKind.OTHER, describe(exc))
