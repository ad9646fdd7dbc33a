"""The turn loop (paper §3.2): all active dialogues advance together, one batched tutor call and
one batched student call per turn; the student answers the opening question first."""

from __future__ import annotations

import logging
from typing import Any, Callable

from edufair_metrics.dialogue.generation import CachedGenerator
from edufair_metrics.dialogue.state import DialogueState
from edufair_metrics.dialogue.stop import stop_after_tutor_turn
from edufair_metrics.failures import CallFailure
from edufair_metrics.records import STOP_STUDENT_FAILED, STOP_TUTOR_FAILED

log = logging.getLogger("edufair")


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
) -> list[DialogueState]:
    """Run every dialogue in ``states`` to its stop (in place); one progress bar for the turns."""
    from tqdm import tqdm

    with tqdm(total=max_tutor_turns, desc=f"{label} turns", unit="turn") as bar:
        advance(student, states, student_gen_kwargs, lambda s: s.student_messages())
        for _turn in range(max_tutor_turns):
            active = [s for s in states if not s.done]
            if not active:
                break
            advance(tutor, active, tutor_gen_kwargs, lambda s: s.tutor_messages(system_instruction))
            for s in active:
                if not s.done:
                    s.stop_reason = stop_after_tutor_turn(s, max_tutor_turns)
            active = [s for s in active if not s.done]
            bar.update(1)
            bar.set_postfix(active=len(active))
            if not active:
                break
            advance(student, active, student_gen_kwargs, lambda s: s.student_messages())
    return states


def advance(generator: CachedGenerator, states: list[DialogueState], gen_kwargs: dict[str, Any],
            messages: Callable[[DialogueState], list[dict[str, str]]]) -> None:
    """One batched call for all ``states``; a failure ends only the dialogue it hits."""
    contexts = [generator.render(messages(s)) for s in states]
    outputs = generator.generate(contexts, gen_kwargs, [s.doc for s in states])
    for state, out in zip(states, outputs):
        if isinstance(out, CallFailure):
            state.stop_reason = STOP_STUDENT_FAILED if generator.role == "student" else STOP_TUTOR_FAILED
            state.error = f"{generator.role} call failed: {out.detail}"
            state.error_kind = out.kind
            log.warning("edufair: %s [%s] (question %s, level %s)", state.error, out.kind.value,
                        state.doc["question_id"], state.doc["level"])
        else:
            state.add(generator.role, out)
