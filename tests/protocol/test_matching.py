"""The gold-answer matchers of ``protocol.matching``: positive and negative cases."""

from __future__ import annotations

from fractions import Fraction

import pytest

from edufair_metrics.protocol.matching import (
    AnswerMatch,
    find_stated_answer,
    locate,
    mentions_answer,
    negates_answer,
    normalize_answer,
    numbers_in_text,
    parse_number,
    split_sentences,
)

M = "mathematics"


@pytest.mark.parametrize(
    "text, forms",
    [
        ("The answer is 18.", ["18"]),
        ("So she earns $18 a day.", ["18"]),
        ("That makes 18 dollars.", ["18"]),
        ("18.0", ["18"]),
        ("x = 18.00", ["18"]),
        ("It costs $1,000 in total", ["1000"]),
        ("It costs 1000 in total", ["1000", "1,000"]),
        ("Total: 1,000,000 people", ["1000000"]),
        ("20-18=2", ["18"]),  # binary minus: 18 is stated
        ("x = -18", ["-18"]),
        ("\\boxed{18}", ["18"]),
        ("(18)", ["18"]),
        ("**18**", ["18"]),
        ("5,18 and 20", ["18"]),
        ("that's 25% off", ["25"]),
        ("eighteen apples", ["18"]),
        ("Twenty-five of them", ["25"]),
        ("twenty five of them", ["25"]),
        ("3/4 of the cake", ["0.75"]),
        ("\\frac{3}{4}", ["0.75"]),
        ("half is .5", ["0.5"]),
        ("it is 0.50 now", ["0.5"]),
        ("3.25 hours", ["3.25"]),
        ("The answer is 18!", ["18", "18.0"]),
    ],
)
def test_math_positive(text, forms):
    assert mentions_answer(text, forms, M)


@pytest.mark.parametrize(
    "text, forms",
    [
        ("There are 180 apples.", ["18"]),
        ("1.8 meters", ["18"]),
        ("18.5 dollars", ["18"]),
        ("18,000 people", ["18"]),
        ("She came 18th.", ["18"]),
        ("2x + 3", ["2"]),
        ("H2O", ["2"]),
        ("x = -18", ["18"]),
        ("36/2 = ?", ["18"]),  # an expression is not the stated value
        ("Let's think about it one step at a time.", ["1"]),  # small number words are not evidence
        ("eighteen hundred", ["1800"]),
        ("nothing numeric here", ["18"]),
        ("", ["18"]),
        ("18", []),
        ("118 or 181 or 81", ["18"]),
    ],
)
def test_math_negative(text, forms):
    assert not mentions_answer(text, forms, M)


def test_parse_number_and_tokens():
    assert parse_number("$1,000") == 1000
    assert parse_number("-3.50") == Fraction(-7, 2)
    assert parse_number("3/4") == Fraction(3, 4)
    assert parse_number("18%") == 18
    assert parse_number("mitochondria") is None
    assert parse_number("1/0") is None
    assert numbers_in_text("2 apples, 3.5 pears and 1,200 plums; 20-3") == [2, Fraction(7, 2), 1200, 20, 3]


def test_normalize_answer():
    assert normalize_answer("  The Nucleus. ") == "nucleus"
    assert normalize_answer("Kinetic-Energy") == "kinetic energy"
    assert normalize_answer("A") == "a"  # a lone article is the answer itself


@pytest.mark.parametrize(
    "text, answer",
    [
        ("It is the nucleus.", "nucleus"),
        ("NUCLEUS!", "nucleus"),
        ("Think about kinetic energy here", "kinetic energy"),
        ("kinetic-energy", "kinetic energy"),
        ("kinetic\n energy", "kinetic energy"),
        ("Both are vectors.", "vector"),
        ("a vector quantity", "vectors"),
        ("these batteries", "battery"),
        ("one battery", "batteries"),
        ("the boxes", "box"),
        ("yes, the tides", "tides"),
    ],
)
def test_science_positive(text, answer):
    assert mentions_answer(text, [normalize_answer(answer)], "physics")


@pytest.mark.parametrize(
    "text, answer",
    [
        ("nucleotides are in DNA", "nucleus"),
        ("It is kinetic.", "kinetic energy"),
        ("potential energy", "kinetic energy"),
        ("vectorial", "vector"),
        ("the bond breaks", "ionic bond"),
        ("2.5 meters", "2"),  # numeric SciQ answers are matched as numbers
        ("12 protons", "2"),
    ],
)
def test_science_negative(text, answer):
    assert not mentions_answer(text, [normalize_answer(answer)], "chemistry")


def test_numeric_science_answer_matches_number():
    assert mentions_answer("There are 2 electrons", ["2"], "chemistry")


def test_unknown_domain():
    with pytest.raises(ValueError):
        mentions_answer("18", ["18"], "biology")


# ---------------------------------------------------------------------------------------------
# find_stated_answer: the gold stated *as an answer* (stop rule, paper §3.2)
# ---------------------------------------------------------------------------------------------

F42 = ["42", "42.0"]


@pytest.mark.parametrize(
    "text, forms, domain, span",
    [
        ("The answer is 42.", F42, M, "42"),
        ("She reads 42 pages tomorrow.", F42, M, "42"),
        ("84 / 2 = 42", F42, M, "42"),
        ("84 divided by 2 is 42.", F42, M, "42"),
        ("So it's 42, right?", F42, M, "42"),  # a tag question still states it
        ("It's 42 - can you see why?", F42, M, "42"),  # a declarative clause before the question
        ("No, it's not 24, it's 42.", F42, M, "42"),
        ("Not 24 but 42.", F42, M, "42"),
        ("He paid $1,920.", ["1920", "1,920"], M, "1,920"),
        ("It's worth 14 thousand dollars.", ["14000"], M, "14 thousand"),
        ("Each lap is 3km.", ["3"], M, "3"),
        ("Each friend pays $7.50.", ["7.5"], M, "7.50"),
        ("The answer is five.", ["5"], M, "five"),
        ("The final answer is **42**.", F42, M, "42"),
        ("It's gravity.", ["gravity"], "physics", "gravity"),
        ("Hydrogen sits in group one.", ["group 1"], "chemistry", "group one"),
        ("There are two.", ["two"], "physics", "two"),
        ("None.", ["none"], "physics", "None"),
        ("The work done is zero.", ["none"], "physics", "zero"),
    ],
)
def test_stated(text, forms, domain, span):
    match = find_stated_answer(text, forms, domain)
    assert isinstance(match, AnswerMatch) and match.text == span
    assert text[match.start:match.end] == span


@pytest.mark.parametrize(
    "text, forms, domain",
    [
        ("Is it 42?", F42, M),  # a tutor's question does not state it
        ("Is it 42 or 44?", F42, M),
        ("Could it be gravity, or friction?", ["gravity"], "physics"),
        ("You think it's 42?", F42, M),
        ("It's not 42.", F42, M),
        ("42 isn't right.", F42, M),
        ("42 is too high.", F42, M),
        ("42 is a good guess, but check it.", F42, M),
        ("It isn't gravity.", ["gravity"], "physics"),
        ("If it were 42, half would be left.", F42, M),
        ("You said 42. Let's check.", F42, M),
        ("Let's do step 2 first.", ["2"], M),
        ("There are 2 steps left.", ["2"], M),
        ("Look at part 2.", ["2"], M),
        ("See question 5.", ["5"], M),
        ("Use hint #2.", ["2"], M),
        ("Plan:\n1. add\n2. halve", ["2"], M),
        ("Do 1) add, 2) halve.", ["2"], M),
        ("She came 2nd.", ["2"], M),
        ("Compute 42 minus 12.", F42, M),
        ("Subtract 12 from 42.", F42, M),
        ("20-18=2", ["18"], M),
        ("On a scale of 1 to 10, rate it.", ["10"], M),
        ("It is more than 42.", F42, M),
        ("Either 42 or 24 works.", F42, M),
        ("One way is to draw it.", ["1"], M),
        ("Two forces act on it.", ["two"], "physics"),  # no question given: prose
        ("None of these options fits.", ["none"], "physics"),
        ("Two of the forces cancel.", ["two"], "physics"),
        ("There are two things to consider.", ["two"], "physics"),
    ],
)
def test_not_stated(text, forms, domain):
    assert find_stated_answer(text, forms, domain) is None


def test_question_nouns_frame_a_science_count():
    q = "How many forces do objects on earth have acting on them at all times?"
    assert find_stated_answer("Two forces act on it.", ["two"], "physics", question=q).text == "Two"
    assert find_stated_answer("Two minutes ago you said so.", ["two"], "physics", question=q) is None
    assert find_stated_answer("There are 2 forces.", ["two"], "physics", question=q).text == "2"


@pytest.mark.parametrize(
    "text, forms, domain, proposes",
    [
        ("Is it 42?", F42, M, True),
        ("42?", F42, M, True),
        ("Maybe gravity?", ["gravity"], "physics", True),
        ("Is it $476?", ["476"], M, True),
        ("Would it be 42 pages?", F42, M, True),
        ("So each lap is 3 km?", ["3"], M, True),  # a statement with a question mark
        ("Is 1920 right?", ["1920"], M, True),
        ("Is it 42 minus 12?", F42, M, False),  # an operand, not the answer
        ("Is it gravity or friction?", ["gravity"], "physics", False),
        ("I don't think it's gravity, maybe friction?", ["gravity"], "physics", False),
        ("Is 42 half of 84?", F42, M, False),
    ],
)
def test_tentative_student_proposals(text, forms, domain, proposes):
    assert (find_stated_answer(text, forms, domain, allow_tentative=True) is not None) is proposes
    assert find_stated_answer(text, forms, domain) is None or not text.rstrip().endswith("?")


def test_negates_answer():
    assert negates_answer("42 isn't right.", F42, M)
    assert negates_answer("It's not gravity.", ["gravity"], "physics")
    assert not negates_answer("It's 42.", F42, M)
    assert not negates_answer("Is it not 42?", F42, M)  # a question rejects nothing


def test_mentions_answer_is_unchanged_for_bank_checks():
    # the bank builders still need plain occurrence, including inside a question
    assert mentions_answer("Do they increase or decrease?", ["decrease"], "chemistry")
    assert mentions_answer("Is it 42 or 44?", F42, M)


# ---------------------------------------------------------------------------------------------
# the one sentence splitter
# ---------------------------------------------------------------------------------------------

def test_sentences_do_not_split_at_a_decimal_point():
    text = "You wrote 1.5 for the first part. That's $7.50, right?\nNext"
    assert [text[s.start:s.end] for s in split_sentences(text)] == [
        "You wrote 1.5 for the first part.", "That's $7.50, right?", "Next"]
    second = split_sentences(text)[1]
    assert [c.interrogative for c in second.clauses] == [False, True]  # a tag question
    sentence, clause = locate(split_sentences(text), text.index("right"))
    assert sentence == second and clause.interrogative


# ---------------------------------------------------------------------------------------------
# answer frames, labels, the student's declarative turns
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, forms, domain, span",
    [
        ("The answer is 3 steps.", ["3"], M, "3"),
        ("So the correct answer is 5 minutes.", ["5"], M, "5"),
        ("The final answer: 24 questions.", ["24"], M, "24"),
        ("The answer is: 24 questions.", ["24"], M, "24"),
        ("The answer is two phases.", ["two"], "chemistry", "two"),
    ],
)
def test_an_answer_frame_states_a_count_of_steps_or_minutes(text, forms, domain, span):
    assert find_stated_answer(text, forms, domain).text == span


@pytest.mark.parametrize(
    "text, forms",
    [
        ("The answer is 2 steps away.", ["2"]),
        ("The answer is just 3 more steps.", ["3"]),
        ("The answer is 2 steps long.", ["2"]),
        ("Getting to the answer is 3 steps.", ["3"]),
        ("Finding the answer is 3 steps of work.", ["3"]),
        ("You are 2 steps from the answer.", ["2"]),
        ("The answer takes 3 steps.", ["3"]),
        ("The answer is on page 42.", F42),
        ("See example 12 for the method.", ["12"]),
        ("The answer is in row 15.", ["15"]),
        ("Turn to slide 8.", ["8"]),
    ],
)
def test_counts_of_the_tutoring_and_labels_are_not_stated(text, forms):
    assert find_stated_answer(text, forms, M) is None


QV = "How many valence electrons does a carbon atom have?"
QF = "How many forces act on a book resting on a table?"


@pytest.mark.parametrize(
    "text, forms, domain, question",
    [
        ("Carbon has four.", ["four"], "chemistry", QV),
        ("An oxygen molecule has two.", ["two"], "chemistry", QV),
        ("Each friend gets two.", ["2"], M, "How many apples does each friend get?"),
        ("I counted three.", ["three"], "physics", QF),
        ("Definitely three.", ["three"], "physics", QF),
        ("There are two I think.", ["two"], "physics", QF),
        ("So there are two of them.", ["two"], "physics", QF),
        ("I'd say 2.", ["2"], "physics", QF),
        ("Helium would gain none.", ["none"], "chemistry", QV),
        ("The answer is 4 ways.", ["4"], M, "How many codes are possible?"),
    ],
)
def test_declarative_student_counts(text, forms, domain, question):
    assert find_stated_answer(text, forms, domain, question=question, allow_tentative=True) is not None
    # the tutor's side keeps the stricter frame (its prose counts many things) unless framed
    if "answer" not in text:
        assert find_stated_answer(text, forms, domain, question=question) is None


@pytest.mark.parametrize(
    "text, forms, domain",
    [
        ("I divided it by two.", ["two"], "physics"),
        ("I multiplied by two.", ["2"], M),
        ("I split it into two.", ["two"], "physics"),
        ("It's in group two.", ["two"], "chemistry"),
        ("I'm on step two.", ["two"], "physics"),
        ("I need two hints.", ["two"], "physics"),
        ("None of them.", ["none"], "physics"),
        ("Two of the forces cancel.", ["two"], "physics"),
        ("There are two protons.", ["two"], "chemistry"),
        ("There are two or three.", ["two"], "physics"),
        ("I don't think there are two.", ["two"], "physics"),
        ("I only know two.", ["two"], "physics"),
        ("So 2 more steps?", ["2"], M),
        ("Maybe 2 hints?", ["2"], "physics"),
        ("Is it 2 steps?", ["2"], M),
    ],
)
def test_student_numbers_that_are_no_answer(text, forms, domain):
    assert find_stated_answer(text, forms, domain, question=QF, allow_tentative=True) is None


def test_a_proposal_may_count_what_the_question_counts():
    q = "How many steps does the staircase have?"
    assert find_stated_answer("Is it 12 steps?", ["12"], M, question=q, allow_tentative=True) is not None
    assert find_stated_answer("Is the answer 3 steps?", ["3"], M, question="How far?", allow_tentative=True) is not None
