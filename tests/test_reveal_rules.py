"""The partial-reveal rules of ``detectors.reveal`` stated as rules: the decisive intermediate values
of a question are exactly what one arithmetic step from the gold with a quantity of the question
gives (an independent enumeration below, with the quantities listed by hand), implied quantities
("half", "double", "a third", "a quarter"), numbers written in words, percentages and fractional
values included; and a tutor turn that states such a value (not asks it, not as an operand, not
after the student said it) is a partial reveal."""

from __future__ import annotations

from fractions import Fraction

import pytest

from edufair_metrics.detectors.reveal import (
    RULE_INTERMEDIATE,
    confirms_answer,
    decisive_values,
    leaks_answer,
    partial_reveal,
    partially_reveals,
)

M = "mathematics"


def one_step_values(gold, quantities, excluded=()):
    """The oracle: every v > 0 with gold = v ± q, q − v, v × q, v ÷ q or q ÷ v for a quantity q,
    that is not the gold, not a quantity nor an ``excluded`` value, and a decimal of at most four
    places; as the matcher writes them, ascending."""
    g = Fraction(gold)
    qs = [Fraction(q) for q in quantities]
    out = set()
    for q in qs:
        for v in (g - q, g + q, q - g, g * q, g / q, q / g):
            if v <= 0 or v == g or v in qs or v in {Fraction(x) for x in excluded}:
                continue
            d = v.denominator
            for p in (2, 5):
                while d % p == 0:
                    d //= p
            if d != 1:
                continue  # not a terminating decimal
            text = str(v.numerator) if v.denominator == 1 else f"{float(v):.8f}".rstrip("0")
            if len(text.partition(".")[2]) <= 4:
                out.add((v, text))
    return [t for _, t in sorted(out)]


QUESTIONS = {
    # digits only
    "plain": ("Mia has 12 apples and gives away 5. How many are left?", "7", [12, 5], ()),
    # "half": the quantity 2
    "half": ("Mia read 40 pages on Monday and 20 pages on Tuesday. On Wednesday she read half as many pages as "
             "on Monday and Tuesday together. How many pages did she read on Wednesday?", "30", [40, 20, 2], ()),
    # "double": 2
    "double": ("Lily saved $8 in May and $7 in June. In July she saved double her savings of May and June "
               "together. How much did she save in July?", "30", [8, 7, 2], ()),
    # "a third": 3
    "third": ("Ben had 15 marbles and won 6 more. He gave a third of all his marbles to Ana. How many did Ana get?",
              "7", [15, 6, 3], ()),
    # "a quarter": 4
    "quarter": ("A cake is cut into 20 pieces and a quarter of them are eaten. How many pieces are eaten?", "5",
                [20, 4], ()),
    # numbers in words
    "words": ("Emma has twelve stickers and buys five packs of three stickers each. How many stickers does she "
              "have now?", "27", [12, 5, 3], ()),
    "hyphenated words": ("A farmer has twenty-four hens and sells 9 of them. How many hens are left?", "15",
                         [24, 9], ()),
    # a percentage: 100 is a quantity, the percentage converted (0.25) is excluded
    "percent": ("A box of 16 eggs has 25% broken. How many eggs are broken?", "4", [16, 25, 100], [0.25]),
    "percent word": ("A jacket costs $80 and is discounted by 30 percent. What does it cost now?", "56",
                     [80, 30, 100], [0.3]),
    # fractional intermediates: 0.375 = 6 / 16 is one, 3 / 64 (six places) is not
    "fractions": ("Water costs $3 for 8 bottles. How much do 16 bottles cost?", "6", [3, 8, 16], ()),
    "long decimals": ("There are 64 seats in a hall and 5 rows are reserved. How many rows are free if each row "
                      "holds 8 seats?", "3", [64, 5, 8], ()),
}


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_decisive_values_are_exactly_the_one_step_values(name):
    question, gold, quantities, excluded = QUESTIONS[name]
    assert decisive_values(question, [gold]) == one_step_values(gold, quantities, excluded)


def test_implied_and_percentage_constants_are_quantities_but_never_values():
    # 100 (the percentage) and 2 (half) are quantities: 4 × 100 = 400 and 30 × 2 = 60 are values ...
    assert "400" in decisive_values(QUESTIONS["percent"][0], ["4"])
    assert "60" in decisive_values(QUESTIONS["half"][0], ["30"])
    # ... but never values themselves, nor is the percentage as a share (25% -> 0.25)
    assert "100" not in decisive_values("A box of 4 eggs has 25% broken; 96 are whole. How many?", ["4"])
    assert "0.25" not in decisive_values(QUESTIONS["percent"][0], ["4"])
    assert "2" not in decisive_values("Half of 8 children leave and 2 more come. How many are there?", ["4"])
    # without the word, no implied quantity: 60 is then no step from 30 with 40 or 20
    plain = "Mia read 40 pages on Monday and 20 pages on Tuesday. How many pages did she read in all?"
    assert "60" not in decisive_values(plain, ["30"]) and "15" not in decisive_values(plain, ["30"])


@pytest.mark.parametrize("name, gold, tutor, value, span", [
    ("half", "30", "Together that is 60 pages so far.", "60", "60"),
    ("double", "30", "In May and June she saved $15 together.", "15", "15"),
    ("third", "7", "Ben now has 21 marbles.", "21", "21"),
    ("quarter", "5", "So 15 pieces are left over.", "15", "15"),
    ("words", "27", "She bought 15 new stickers.", "15", "15"),
    ("words", "27", "She bought fifteen new stickers.", "15", "fifteen"),
    ("percent word", "56", "The discount is $24.", "24", "24"),
    ("percent word", "56", "You pay 70% of the price.", "0.7", "70%"),
    ("percent word", "56", "You pay 70 percent of the price.", "0.7", "70%"),
    ("fractions", "6", "Each bottle costs $0.375.", "0.375", "0.375"),
])
def test_a_stated_intermediate_is_a_partial_reveal(name, gold, tutor, value, span):
    question = QUESTIONS[name][0]
    found = partial_reveal(tutor, [gold], M, question=question)
    assert found is not None and found.rule == RULE_INTERMEDIATE
    assert (found.value, found.text) == (value, span)
    assert partially_reveals(tutor, [gold], M, question=question)
    assert not leaks_answer(tutor, [gold], M, question=question)


@pytest.mark.parametrize("name, gold, tutor", [
    ("percent word", "56", "Is the discount $24?"),  # asked, not stated
    ("percent word", "56", "What's 80 minus 24?"),  # an operand of the last step
    ("percent word", "56", "What is 30% of 80?"),  # the question's own quantities
    ("percent word", "56", "The discount is 30 percent."),
    ("words", "27", "She starts with 12 stickers."),  # a given quantity, in digits
    ("half", "30", "She read 40 pages on Monday."),
    ("half", "30", "Try to add Monday and Tuesday first."),  # no value at all
    ("plain", "7", "There are 3 apples in a bowl."),  # a number, but no step from 7
])
def test_what_is_not_a_partial_reveal(name, gold, tutor):
    assert partial_reveal(tutor, [gold], M, question=QUESTIONS[name][0]) is None


def test_an_intermediate_the_student_stated_first_is_not_revealed():
    q = QUESTIONS["half"][0]
    said = [("question", q), ("student", "Together they read 60 pages.")]
    assert partial_reveal("Yes, 60 pages together.", ["30"], M, history=said) is None
    # another student turn that does not state 60 leaves the reveal
    other = [("question", q), ("student", "I'm not sure where to start.")]
    assert partial_reveal("Together that is 60 pages so far.", ["30"], M, history=other).value == "60"


def test_a_value_the_student_has_does_not_hide_a_later_one_the_tutor_gives():
    q = QUESTIONS["half"][0]
    said = [("question", q), ("student", "The difference is 10 pages.")]
    tutor = "Right, the difference is 10 pages. Together that is 60 pages so far."
    found = partial_reveal(tutor, ["30"], M, history=said)
    assert found is not None and (found.value, found.sentence) == ("60", "Together that is 60 pages so far.")
    assert partial_reveal("Right, the difference is 10 pages.", ["30"], M, history=said) is None
    assert partial_reveal(tutor, ["30"], M, question=q).value == "10"  # without the history: the first one


def test_the_intermediate_rule_needs_mathematics_a_number_gold_and_the_question():
    tutor = "Together that is 60 pages so far."
    q = QUESTIONS["half"][0]
    assert partial_reveal(tutor, ["30"], M, question=q) is not None
    assert partial_reveal(tutor, ["30"], "physics", question=q) is None
    assert partial_reveal(tutor, ["30"], M, question=None) is None
    assert partial_reveal("", ["30"], M, question=q) is None
    assert partial_reveal(tutor, [], M, question=q) is None


def test_stating_the_gold_is_a_leak_or_a_confirmation_never_a_partial_reveal():
    q = QUESTIONS["half"][0]
    tutor = "She read 30 pages on Wednesday."
    assert leaks_answer(tutor, ["30"], M, question=q)
    assert partial_reveal(tutor, ["30"], M, question=q) is None
    history = [("question", q), ("student", "She read 30 pages.")]
    assert confirms_answer(tutor, ["30"], M, history=history)
    assert not leaks_answer(tutor, ["30"], M, history=history)
    assert not confirms_answer(tutor, ["30"], M, question=q)


IMPLIED = {"twice": 2, "double": 2, "doubles": 2, "doubled": 2, "half": 2, "halves": 2, "triple": 3, "triples": 3,
           "tripled": 3, "thrice": 3, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4}


@pytest.mark.parametrize("word, q", sorted(IMPLIED.items()))
def test_each_implied_word_is_its_quantity(word, q):
    question = f"Tom had 7 marbles, and then the number {word}. How many marbles are there now?"
    assert decisive_values(question, ["11"]) == one_step_values("11", [7, q])
    # without the word, only 7 is a quantity
    assert decisive_values("Tom had 7 marbles. How many marbles are there now?", ["11"]) == one_step_values("11", [7])


@pytest.mark.parametrize("question, gold, quantities", [
    ("A class has twenty pupils and 4 of them leave. How many stay?", "16", [20, 4]),
    ("A farm has thirty-nine cows and sells 9. How many are left?", "30", [39, 9]),
    ("Ann ate one-third of 12 cookies. How many did she eat?", "4", [12, 3]),  # "one-third": 3, not one
    ("A five-year plan saves 8 dollars a month. How much in a year?", "96", [8]),  # "five-year" is no number
    # 0 is never a quantity (no step with it; no division by it), 1 is
    ("A jar has 1 red marble, 0 green ones and 6 blue ones. How many marbles?", "7", [1, 6]),
    ("The thermometer read zero degrees and then rose 5 degrees. What does it read now?", "5", [5]),
])
def test_number_words_and_small_quantities(question, gold, quantities):
    assert decisive_values(question, [gold]) == one_step_values(gold, quantities)


def test_context_arguments_are_keyword_only():
    q = QUESTIONS["half"][0]
    for fn in (partial_reveal, partially_reveals, leaks_answer, confirms_answer):
        with pytest.raises(TypeError):
            fn("Together that is 60 pages so far.", ["30"], M, q)
