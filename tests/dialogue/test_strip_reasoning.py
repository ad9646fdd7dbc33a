"""``strip_reasoning``: what of a raw model turn the other party and the judge get to see."""

from __future__ import annotations

import pytest

from edufair_metrics.dialogue import DialogueState, strip_reasoning


@pytest.mark.parametrize(
    "raw,seen",
    [
        ("<think>plan the hint</think>What do you notice?", "What do you notice?"),
        ("<think>line one\nline two</think>\n\nTry again.", "Try again."),  # blocks span lines
        ("Hi <think>line one\nline two</think>there", "Hi there"),
        ("A <think>x</think>B <think>y</think>C", "A B C"),  # several blocks, text between kept
        ("<think>a</think><think>b</think>Only this.", "Only this."),
        ("the template opened it in the prompt</think>Answer", "Answer"),  # closing tag only
        ("<think>a</think>stray</think>kept", "kept"),  # a stray closing tag after a block
        ("Look at step 2.<think>cut off by the token li", "Look at step 2."),  # unclosed opening
        ("pre</think>mid<think>tail", "mid"),  # both: before the close and after the open go
        ("<THINK>shout</Think>Hi", "Hi"),  # tags are case-insensitive
        ("A <THINK>x</THINK>B <Think>y</think>C", "A B C"),
        ("<Think>open only", ""),
        ("  no reasoning at all  ", "no reasoning at all"),
        ("", ""),
        (None, ""),
        ("   \n ", ""),
        ("<think>everything is reasoning</think>", ""),
    ],
)
def test_strip_reasoning(raw, seen):
    assert strip_reasoning(raw) == seen


def test_text_mentioning_think_without_tags_is_kept():
    assert strip_reasoning("I think the answer is 4. Think again?") == "I think the answer is 4. Think again?"


def test_dialogue_keeps_raw_turn_and_shows_the_stripped_text():
    state = DialogueState(doc={"question": "What is 2+2?", "tutor_system": "T", "student_system": "S"})
    turn = state.add("tutor", "<think>hint at counting</think>Count on your fingers: what do you get?")
    assert turn.raw.startswith("<think>")
    assert turn.text == "Count on your fingers: what do you get?"
    # the student sees the stripped tutor turn, never the reasoning
    assert all("hint at counting" not in m["content"] for m in state.student_messages())
