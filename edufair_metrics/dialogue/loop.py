"""The turn loop (paper §3.2): the student answers the opening question first, then tutor and
student alternate; every call is batched over many dialogues.

Two schedules, with identical transcripts for deterministic backends (a dialogue's turns depend
only on its own prompts, never on which other dialogues share a batch or when they are sent):

* **sequential**: per turn one batched tutor call over all active dialogues, then one batched
  student call;
* **overlapped** (the default, ``edufair.overlap``): the active dialogues form two cohorts that
  are half a turn apart, and cohort A's tutor call runs while cohort B's student call is in
  flight. An in-process tutor (vLLM, hf) and a student server thus both work all the time instead
  of half of it. Each call still covers a whole cohort. The side whose model is an HTTP API model
  (``ChatModel.is_api``) runs in one worker thread; the other stays on the main thread, as vLLM
  and hf require. With no API model on either side the schedule is sequential.

A document may carry ``tutor_gen_kwargs`` / ``student_gen_kwargs`` (a mapping merged over the
task's decoding settings for that dialogue only, e.g. ``{"seed": 1235}`` for a placebo
replicate): each call is then one batched call per distinct effective setting, and the setting is
part of every cache key.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable

from edufair_metrics.dialogue.generation import CachedGenerator
from edufair_metrics.dialogue.state import DialogueState
from edufair_metrics.dialogue.stop import stop_after_tutor_turn
from edufair_metrics.errors import EduFairError
from edufair_metrics.failures import CallFailure
from edufair_metrics.records import STOP_STUDENT_FAILED, STOP_TUTOR_FAILED

log = logging.getLogger("edufair")

Messages = Callable[[DialogueState], list[dict[str, str]]]


@dataclass(frozen=True)
class _Side:
    """One party of the dialogue: its generator, its task-level decoding and its view."""

    generator: CachedGenerator
    gen_kwargs: dict[str, Any]
    messages: Messages


def run_dialogues(
    tutor: CachedGenerator,
    student: CachedGenerator,
    states: list[DialogueState],
    *,
    max_tutor_turns: int,
    tutor_gen_kwargs: dict[str, Any],
    student_gen_kwargs: dict[str, Any],
    system_instruction: str | None = None,
    label: str = "dialogue",
    overlap: bool = True,
    progress: bool = True,
) -> list[DialogueState]:
    """Run every dialogue in ``states`` to its stop (in place); one progress bar for the turns
    (``progress=False``: none). ``overlap``: overlap tutor and student calls of two cohorts (see the
    module doc)."""
    from tqdm import tqdm

    tutor_side = _Side(tutor, tutor_gen_kwargs, lambda s: s.tutor_messages(system_instruction))
    student_side = _Side(student, student_gen_kwargs, lambda s: s.student_messages())
    for s in states:  # a malformed override fails the run before any call, not mid-way
        effective_gen_kwargs(s.doc, "tutor", tutor_gen_kwargs)
        effective_gen_kwargs(s.doc, "student", student_gen_kwargs)
    worker = _worker_side(tutor, student) if overlap else None
    with tqdm(total=max_tutor_turns, desc=f"{label} turns", unit="turn", disable=not progress) as bar:
        if worker is None:
            _run_sequential(tutor_side, student_side, states, max_tutor_turns, bar)
        else:
            _run_overlapped(tutor_side, student_side, states, max_tutor_turns, bar, worker)
    return states


def _run_sequential(tutor: _Side, student: _Side, states: list[DialogueState], max_tutor_turns: int, bar) -> None:
    advance(student.generator, [s for s in states if not s.done], student.gen_kwargs, student.messages)
    for _turn in range(max_tutor_turns):
        active = [s for s in states if not s.done]
        if not active:
            break
        advance(tutor.generator, active, tutor.gen_kwargs, tutor.messages)
        _apply_stop_rule(active, max_tutor_turns)
        active = [s for s in active if not s.done]
        bar.update(1)
        bar.set_postfix(active=len(active))
        if not active:
            break
        advance(student.generator, active, student.gen_kwargs, student.messages)


def _worker_side(tutor: CachedGenerator, student: CachedGenerator) -> str | None:
    """Which side's calls may run in a worker thread: an HTTP API model only waits on its server
    there, while an in-process model (vLLM, hf) must stay on the main thread. None: no overlap."""
    if _is_api(student):
        return "student"
    if _is_api(tutor):
        return "tutor"
    log.info("edufair: neither the tutor nor the student is an HTTP API model; tutor and student calls run one after the other")
    return None


def _is_api(generator: CachedGenerator) -> bool:
    return bool(getattr(generator.model, "is_api", False))


def _run_overlapped(tutor: _Side, student: _Side, states: list[DialogueState], max_tutor_turns: int, bar,
                    worker: str) -> None:
    """Each step sends one tutor call (the dialogues waiting for a tutor turn) and, at the same
    time, one student call (those waiting for a student turn); a dialogue's own turns keep their
    order, so its transcript is the sequential one. When one side has nothing to do (at the start,
    or after a cohort finished), the other side's queue is split in two so that the next steps
    overlap again."""
    need_student = [s for s in states if not s.done]
    need_tutor: list[DialogueState] = []
    while need_student or need_tutor:
        held_student: list[DialogueState] = []  # split off this step, still waiting for that side
        held_tutor: list[DialogueState] = []
        if not need_tutor and len(need_student) > 1:
            need_student, held_student = split_cohorts(need_student, student.messages)
        elif not need_student and len(need_tutor) > 1 \
                and any(s.tutor_turns < max_tutor_turns - 1 for s in need_tutor):
            # (not before the last tutor turn: no student call would follow it)
            need_tutor, held_tutor = split_cohorts(need_tutor, tutor.messages)
        tutor_out, student_out = _concurrently(worker, (tutor, need_tutor), (student, need_student))
        _apply(tutor.generator, need_tutor, tutor_out)
        _apply(student.generator, need_student, student_out)
        _apply_stop_rule(need_tutor, max_tutor_turns)
        need_student, need_tutor = (
            held_student + [s for s in need_tutor if not s.done],
            held_tutor + [s for s in need_student if not s.done],
        )
        _show_progress(bar, states, need_student + need_tutor)


def _concurrently(worker: str, tutor: tuple[_Side, list[DialogueState]],
                  student: tuple[_Side, list[DialogueState]]) -> tuple[list[Any], list[Any]]:
    """The outputs of the tutor call and the student call, the ``worker`` side's in a worker
    thread. Results are applied to the states by the caller, on the main thread.

    An error on the main thread waits for the worker's call (no call outlives the loop, and the
    caller closes the cache next); Ctrl-C does not wait: the worker is a daemon thread, and a call
    cut off mid-way loses nothing stored (each cache write is its own transaction)."""
    (main_side, main_states), (other_side, other_states) = (
        (tutor, student) if worker == "student" else (student, tutor))
    box: dict[str, Any] = {"out": []}

    def work() -> None:
        try:
            box["out"] = call(other_side.generator, other_states, other_side.gen_kwargs, other_side.messages)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            box["exc"] = exc

    thread = threading.Thread(target=work, name=f"edufair-{worker}", daemon=True) if other_states else None
    if thread is not None:
        thread.start()
    try:
        main_out = call(main_side.generator, main_states, main_side.gen_kwargs, main_side.messages)
    except Exception:
        if thread is not None:
            thread.join()
        raise
    if thread is not None:
        thread.join()
    if "exc" in box:
        raise box["exc"]
    return (main_out, box["out"]) if worker == "student" else (box["out"], main_out)


def split_cohorts(states: list[DialogueState], messages: Messages) -> tuple[list[DialogueState], list[DialogueState]]:
    """Two halves of ``states``, in order. Dialogues whose next request is identical stay
    together, so that the generator still sends it once (coalescing works within one call)."""
    groups: dict[str, list[DialogueState]] = {}
    for s in states:
        groups.setdefault(json.dumps(messages(s), ensure_ascii=False), []).append(s)
    first: list[DialogueState] = []
    second: list[DialogueState] = []
    half = len(states) / 2
    for group in groups.values():
        (first if len(first) + len(group) / 2 <= half or not first else second).extend(group)
    if not second:
        return states, []
    return first, second


def _show_progress(bar, states: list[DialogueState], active: list[DialogueState]) -> None:
    """The bar counts the tutor turns every still-active dialogue has had (the slower cohort); at
    the end, like the sequential loop, the turns tried (a failed tutor call counts)."""
    if active:
        turns = min(s.tutor_turns for s in active)
    else:
        turns = max((s.tutor_turns + (s.stop_reason == STOP_TUTOR_FAILED) for s in states), default=0)
    if turns > bar.n:
        bar.update(turns - bar.n)
    bar.set_postfix(active=len(active))


def _apply_stop_rule(states: list[DialogueState], max_tutor_turns: int) -> None:
    for s in states:
        if not s.done:
            s.stop_reason = stop_after_tutor_turn(s, max_tutor_turns)


def effective_gen_kwargs(doc: dict[str, Any], role: str, gen_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The task's decoding settings for ``role`` with the document's ``<role>_gen_kwargs`` merged
    over them (that dialogue only). A null override, or a null value in it, overrides nothing:
    ``datasets`` stores documents column-wise and fills a key that only other documents have
    with null."""
    override = doc.get(f"{role}_gen_kwargs")
    if override is None:
        return gen_kwargs
    if not isinstance(override, dict):
        raise EduFairError(f"question {doc.get('question_id')} (level {doc.get('level')}): {role}_gen_kwargs must be "
                           f"a mapping of decoding settings, got {type(override).__name__}")
    override = {k: v for k, v in override.items() if v is not None}
    return {**gen_kwargs, **override} if override else gen_kwargs


def advance(generator: CachedGenerator, states: list[DialogueState], gen_kwargs: dict[str, Any],
            messages: Messages) -> None:
    """One batched call for all ``states`` (one per distinct per-dialogue decoding override); a
    failure ends only the dialogue it hits."""
    _apply(generator, states, call(generator, states, gen_kwargs, messages))


def call(generator: CachedGenerator, states: list[DialogueState], gen_kwargs: dict[str, Any],
         messages: Messages) -> list[Any]:
    """The output (or :class:`CallFailure`) for each state, changing no state: one batched call
    per distinct effective decoding setting, in order of first appearance."""
    if not states:
        return []
    base_key = _settings_key(gen_kwargs)
    groups: dict[str, tuple[dict[str, Any], list[int]]] = {}
    for i, s in enumerate(states):
        gk = effective_gen_kwargs(s.doc, generator.role, gen_kwargs)
        key = base_key if gk is gen_kwargs else _settings_key(gk)
        groups.setdefault(key, (gk, []))[1].append(i)
    outputs: list[Any] = [None] * len(states)
    for gk, idx in groups.values():
        contexts = [generator.render(messages(states[i])) for i in idx]
        for i, out in zip(idx, generator.generate(contexts, gk, [states[i].doc for i in idx])):
            outputs[i] = out
    return outputs


def _settings_key(gen_kwargs: dict[str, Any]) -> str:
    return json.dumps(gen_kwargs, sort_keys=True, ensure_ascii=False, default=repr)


def _apply(generator: CachedGenerator, states: list[DialogueState], outputs: list[Any]) -> None:
    for state, out in zip(states, outputs):
        if isinstance(out, CallFailure):
            state.stop_reason = STOP_STUDENT_FAILED if generator.role == "student" else STOP_TUTOR_FAILED
            state.error = f"{generator.role} call failed: {out.detail}"
            state.error_kind = out.kind
            log.warning("edufair: %s [%s] (question %s, level %s)", state.error, out.kind.value,
                        state.doc["question_id"], state.doc["level"])
        else:
            state.add(generator.role, out)
