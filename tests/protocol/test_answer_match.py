"""Deterministic gold-answer detector: positive and negative cases."""

from __future__ import annotations

from fractions import Fraction

import pytest

from edufair_metrics.protocol.answer_match import mentions_answer, normalize_answer, numbers_in_text, parse_number

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
