"""The post-test turn (an extension, ``edufair.posttest``): after a dialogue has ended, the same
student answers the original question once more, alone (no tutor turn follows).

The student's view is the dialogue as it saw it (its system prompt, the question as the first user
message, its own turns as the assistant's, the tutor's as the user's) plus the post-test prompt
(``protocol.posttest_prompt``: the question filled in) appended to the last user message after a
blank line (the tutor's final turn: a dialogue always ends after a tutor turn), so that user and
assistant messages still alternate (templates such as Mistral's refuse two user messages in a row).
The call is the student's own: the same model, identity, decoding and call cache, one batched call
for every finished dialogue (failed dialogues get no post-test), counted in the student's call
counts (one request per dialogue). A failed call is a post-test without an answer (its failure kind
recorded), never the run's failure. Verdicts are the detectors' (``detectors.outcome``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from edufair_metrics.dialogue.generation import CachedGenerator
from edufair_metrics.dialogue.loop import call
from edufair_metrics.dialogue.state import strip_reasoning
from edufair_metrics.failures import CallFailure
from edufair_metrics.records import PostTest, Transcript


def student_view(transcript: Transcript) -> list[dict[str, str]]:
    """The student's messages of a stored dialogue (``DialogueState.student_messages``)."""
    msgs = [{"role": "system", "content": transcript.student_system}]
    for t in transcript.turns:
        msgs.append({"role": "assistant" if t.role == "student" else "user", "content": t.text})
    return msgs


def posttest_messages(transcript: Transcript, prompt: str) -> list[dict[str, str]]:
    """The student's view with the post-test ``prompt`` as its last user turn (module docstring)."""
    msgs = student_view(transcript)
    if msgs[-1]["role"] == "user":
        msgs[-1] = {"role": "user", "content": f"{msgs[-1]['content']}\n\n{prompt}"}
    else:
        msgs.append({"role": "user", "content": prompt})
    return msgs


@dataclass(frozen=True)
class _Item:
    doc: dict[str, Any]
    messages: list[dict[str, str]]


def run_posttests(student: CachedGenerator, transcripts: Sequence[Transcript], docs: Sequence[dict[str, Any]],
                  gen_kwargs: dict[str, Any], prompt_for: Callable[[str], str]) -> list[PostTest | None]:
    """One post-test per finished dialogue of ``transcripts`` (None for a failed or unfinished one),
    in one batched student call (per distinct per-dialogue decoding, as every dialogue call).
    ``docs``: each dialogue's document (its ``student_gen_kwargs`` apply); ``prompt_for(question)``:
    the post-test prompt. Verdicts are left to ``detectors.outcome``."""
    items, where, prompts = [], [], []
    for i, (t, doc) in enumerate(zip(transcripts, docs)):
        if not t.complete or not t.turns:
            continue
        prompt = prompt_for(next((x.text for x in t.turns if x.role == "question"), ""))
        items.append(_Item(doc or {}, posttest_messages(t, prompt)))
        where.append(i)
        prompts.append(prompt)
    out: list[PostTest | None] = [None] * len(transcripts)
    outputs = call(student, items, gen_kwargs, lambda it: it.messages) if items else []
    for i, prompt, result in zip(where, prompts, outputs):
        if isinstance(result, CallFailure):
            out[i] = PostTest(prompt, None, error=f"student call failed: {result.detail}", error_kind=result.kind.value)
        else:
            text = strip_reasoning(result)
            out[i] = PostTest(prompt, text, raw=result if result != text else None)
    return out


__all__ = ["posttest_messages", "run_posttests", "student_view"]
