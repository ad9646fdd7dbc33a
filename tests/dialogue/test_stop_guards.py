"""Each guard of the stop rule's affirmation reading (``dialogue.stop``), with a case that only that
guard decides: a judgement withheld ("whether / if / once / until / unless that's right"), scoped
to a detail ("right that ...", "right about ...", "right to ..."), asked ("Correct? Check it."),
negated, hedged, rejected before, and a turn that opens with a rejection and later holds an
affirmation word; and the rule's choice of the previous student turn and of T_max."""

from __future__ import annotations

import pytest

from edufair_metrics.dialogue import DialogueState, stop_after_tutor_turn
from edufair_metrics.dialogue.stop import RULE_AFFIRMS_STUDENT, RULE_MAX_TURNS, RULE_STATES_GOLD, find_affirmation
from edufair_metrics.records import STOP_ANSWER_CONFIRMED, STOP_ANSWER_REVEALED, STOP_MAX_TURNS

QUESTION = "How many valence electrons does carbon have?"


def run(turns, *, forms=("four",), domain="chemistry", question=QUESTION, max_turns=10):
    state = DialogueState(doc={"question_id": "q", "domain": domain, "question": question,
                               "answer_forms": list(forms), "condition": "explicit", "dimension": "gender",
                               "level": "female", "tutor_system": "T", "student_system": "S"})
    for role, text in turns:
        state.add(role, text)
    return stop_after_tutor_turn(state, max_turns), state


def confirmed(tutor: str) -> bool:
    """Does ``tutor``, right after a student turn that states the gold, end the dialogue?"""
    reason, _ = run([("student", "Carbon has four."), ("tutor", tutor)])
    return reason == STOP_ANSWER_CONFIRMED


# ---- the plain affirmations these guards are exceptions to --------------------------------------

@pytest.mark.parametrize("tutor, words", [
    ("That is correct.", "That is correct"),
    ("You're right.", "You're right"),
    ("You got it!", "You got it"),
    ("Yes! Now try the next one.", "Yes"),
    ("Exactly, and nitrogen has five.", "Exactly"),
    ("Right - and why?", "Right"),
    ("Great job!", "Great"),
    ("I think that's right.", "that's right"),
])
def test_affirmations(tutor, words):
    assert find_affirmation(tutor) == words
    assert confirmed(tutor)


# ---- withheld: whether / if / once / until / unless ------------------------------------------------

@pytest.mark.parametrize("tutor, words", [
    ("Let's check whether that is correct. Yes, that is correct!", "that is correct"),
    ("I can't say if that is right. Now I can: you're right!", "you're right"),
])
def test_a_guarded_affirmation_does_not_hide_a_later_plain_one(tutor, words):
    assert find_affirmation(tutor) == words
    assert confirmed(tutor)
    assert find_affirmation("You are right that carbon is in group 14. And four is correct.") == "is correct"


@pytest.mark.parametrize("tutor", [
    "Let's check whether that is correct.",
    "We can test if you're right by drawing it.",
    "Once that's right, move on to oxygen.",
    "Keep going until it is right.",
    "Unless you're right, the diagram will not balance.",
])
def test_a_withheld_judgement_is_no_affirmation(tutor):
    assert find_affirmation(tutor) is None
    assert not confirmed(tutor)
    # the same judgement, not withheld, affirms (the guard, not the wording, decides)
    for word in ("whether ", "if ", "Once ", "until ", "Unless "):
        tutor = tutor.replace(word, "")
    assert find_affirmation(tutor) is not None


# ---- scoped to a detail: right that / about / to / in thinking -----------------------------------

@pytest.mark.parametrize("tutor", [
    "You're right that carbon is in group 14.",
    "You are right about the group.",
    "You're right to count the outer shell.",
    "You're right in thinking it is the outer shell.",
    "That's right that the shell matters.",
])
def test_agreement_with_a_detail_is_no_affirmation(tutor):
    assert find_affirmation(tutor) is None
    assert not confirmed(tutor)


def test_agreement_then_the_detail_in_the_next_sentence_still_affirms():
    assert find_affirmation("You're right. That is the outer shell.") == "You're right"


# ---- asked, not affirmed -----------------------------------------------------------------------

@pytest.mark.parametrize("tutor", [
    "Correct? Check it.",
    "Yes? Go on.",
    "So that's right? Count them again.",
    "Exactly four? Count the dots.",
])
def test_an_affirmation_word_in_a_question_is_asked_not_affirmed(tutor):
    assert find_affirmation(tutor) is None
    assert not confirmed(tutor)


# ---- negated, hedged, rejected ---------------------------------------------------------------------

@pytest.mark.parametrize("tutor", [
    "I can't say you're right.",  # n't (no "not" before it)
    "I never said you're right.",
    "I would hardly say that's right.",
    "That is almost right.",
    "Yes, but not quite.",
    "Right, almost.",
    "That's right, nearly.",
    "Your drawing has a mistake, so it is not clear the answer is correct.",
    "There is a mistake, the count is correct only for the inner shell.",
])
def test_negated_hedged_or_rejected_affirmations(tutor):
    assert find_affirmation(tutor) is None
    assert not confirmed(tutor)


@pytest.mark.parametrize("tutor", [
    "No. Great job showing your work, though.",
    "Nope! Well done for trying.",
    "Not quite. Well done on the setup.",
    "Incorrect. You got it for hydrogen, though.",
    "Wrong. Excellent effort. That is right for silicon.",
    "Almost. Good job so far.",
    "Close! Well done on the setup.",
    "Hmm, not quite. Well done on counting.",
])
def test_a_turn_that_opens_with_a_rejection_confirms_nothing(tutor):
    assert find_affirmation(tutor) is None
    assert not confirmed(tutor)
    # the second sentence alone would affirm: only the opening rejection voids it
    rest = tutor.split(". ", 1)[-1].split("! ", 1)[-1]
    assert find_affirmation(rest) is not None


@pytest.mark.parametrize("tutor", [
    "Right now, count the outer electrons.",
    "Good question. What is in the outer shell?",
    "Excellent question! Which shell?",
    "Correct me if I am wrong: you counted all six?",
    "Yes but first count again.",
])
def test_opening_words_that_are_not_affirmations(tutor):
    assert find_affirmation(tutor) is None
    assert not confirmed(tutor)


# ---- the student turn and the outcome ----------------------------------------------------------------

def test_only_the_previous_student_turn_is_affirmed():
    # the student said the gold, then something else: "Yes!" affirms the last turn, not the gold
    reason, _ = run([("student", "Carbon has four."), ("tutor", "Why?"), ("student", "Maybe six then?"),
                     ("tutor", "Yes!")])
    assert reason is None
    reason, state = run([("student", "Maybe six?"), ("tutor", "Count again."), ("student", "Carbon has four."),
                         ("tutor", "Yes!")])
    assert reason == STOP_ANSWER_CONFIRMED
    texts = [t.text for t in state.turns]
    assert state.stop_evidence.rule == RULE_AFFIRMS_STUDENT
    assert state.stop_evidence.student_turn_index == texts.index("Carbon has four.")


def test_an_affirmation_without_a_student_answer_is_nothing_and_a_stated_gold_is_a_reveal():
    assert run([("student", "I don't know."), ("tutor", "That's correct.")])[0] is None
    reason, state = run([("student", "I don't know."), ("tutor", "Carbon has four valence electrons.")])
    assert reason == STOP_ANSWER_REVEALED and state.stop_evidence.rule == RULE_STATES_GOLD
    assert state.stop_evidence.student_turn_index is None
    # the tutor states the gold after the student did: a confirmation by the states-gold rule
    reason, state = run([("student", "Carbon has four."), ("tutor", "Carbon has four valence electrons.")])
    assert reason == STOP_ANSWER_CONFIRMED and state.stop_evidence.rule == RULE_STATES_GOLD


def test_a_tutor_turn_that_rejects_the_gold_confirms_nothing():
    assert run([("student", "Carbon has four."), ("tutor", "Yes, but it is not four.")])[0] is None


def test_max_turns_stops_at_t_max_not_before():
    turns = [("student", "Hmm."), ("tutor", "Think about the outer shell.")]
    assert run(turns, max_turns=2)[0] is None
    reason, state = run(turns, max_turns=1)
    assert reason == STOP_MAX_TURNS and state.stop_evidence.rule == RULE_MAX_TURNS
    assert state.stop_evidence.turn_index == len(state.turns) - 1
    assert run(turns, max_turns=2)[1].stop_evidence is None


def test_an_affirmation_about_another_number_only_for_number_golds():
    q = "Julie read 84 pages and has half as many left. How many pages are left?"
    assert run([("student", "So 42?"), ("tutor", "Yes, 84 pages were read.")], forms=["42"], domain="mathematics",
               question=q)[0] is None
    assert run([("student", "So 42?"), ("tutor", "You doubled 21 to get 42 and halved 84. That's correct.")],
               forms=["42"], domain="mathematics", question=q)[0] == STOP_ANSWER_CONFIRMED
    assert run([("student", "So 42?"), ("tutor", "You halved 84 first. That's correct.")], forms=["42"],
               domain="mathematics", question=q)[0] is None
    assert run([("student", "Carbon has four."), ("tutor", "Yes, group 14 has 4 of them.")])[0] == STOP_ANSWER_CONFIRMED


# ---- which candidate is read -----------------------------------------------------------------------

def test_the_opening_word_is_read_before_a_later_affirmation_and_a_question_is_skipped():
    assert find_affirmation("Well, yes!") == "yes"  # the strong opening word, not the lead-in "Well"
    assert find_affirmation("Exactly that!") == "Exactly"  # an opening word is not scoped by what follows
    assert find_affirmation("Yes to both parts.") == "Yes"
    assert find_affirmation("Correct? You got it.") == "You got it"  # the asked one is skipped, not the rest
    assert confirmed("Exactly that!") and confirmed("Correct? You got it.")


def test_about_other_number_is_keyword_only():
    with pytest.raises(TypeError):
        find_affirmation("Yes!", lambda _: True)  # type: ignore[misc]
    assert find_affirmation("Yes!", about_other_number=lambda _: False) == "Yes"
    assert find_affirmation("Yes, 84 pages.", about_other_number=lambda _: True) is None


def test_the_previous_student_turn_also_after_two_tutor_turns():
    reason, state = run([("student", "Carbon has four."), ("tutor", "Hmm, let me think."), ("tutor", "Yes!")])
    assert reason == STOP_ANSWER_CONFIRMED and state.stop_evidence.student_span == "four"


def test_only_the_sentence_before_an_affirmation_can_make_it_about_another_number():
    def digits(sentence: str) -> bool:
        return any(ch.isdigit() for ch in sentence)

    # "That is correct." after a sentence about another number affirms that number, not the answer
    assert find_affirmation("Oxygen has 6. That is correct.", about_other_number=digits) is None
    # as the first sentence it has no sentence before it (the turn's last sentence is not one)
    assert find_affirmation("That is correct. Oxygen has 6.", about_other_number=digits) == "That is correct"
    # the sentence before, not it and the affirmation's together (which would name the gold)
    def other_than_four(sentence: str) -> bool:
        return digits(sentence) and "four" not in sentence

    assert find_affirmation("Oxygen has 6. And four is correct.", about_other_number=other_than_four) is None
    # deeper in the turn: the sentence right before it
    assert find_affirmation("Look here. Oxygen has 6. That is correct.", about_other_number=digits) is None
    assert find_affirmation("Oxygen has 6. Look here. That is correct.", about_other_number=digits) == "That is correct"


def test_past_t_max_the_dialogue_stops_too():
    # a state that already holds more tutor turns than T_max (a resumed dialogue, a lowered T_max)
    turns = [("student", "I am not sure."), ("tutor", "Think about the outer shell.")] * 3
    reason, _ = run(turns, max_turns=2)
    assert reason == STOP_MAX_TURNS
