"""A hand-labelled corpus of student turns for ``attempts_reasoning`` (labels by the rule's
definition: math = an expression or computation, an equation, a variable assignment or a
percentage/fraction of a quantity; science = that, or a causal explanation or a stated relation or
formula; a bare guess, a request for the answer, a restatement or a feeling is not an attempt).

The labels were written before looking at the detector's output and are not changed to fit it:
the corpus is scored (precision / recall) and the test asks for a floor, listing every miss."""

from __future__ import annotations

from edufair_metrics.detectors import attempts_reasoning

# (text, domain, attempts reasoning?)
MATH = "mathematics"
PHYS = "physics"
CHEM = "chemistry"

CORPUS: list[tuple[str, str, bool]] = [
    # --- math: computations and expressions
    ("9 + 2 = 11, so he needs 11 loaves.", MATH, True),
    ("I did 9 x 2 which is 18.", MATH, True),
    ("9*2=18", MATH, True),
    ("Is it 9 times 2?", MATH, True),
    ("nine times two is eighteen", MATH, True),
    ("20 - 5 = 15 dollars", MATH, True),
    ("So 20-5 is 15?", MATH, True),
    ("I multiplied 9 by 2 and got 18.", MATH, True),
    ("I added them together and got 11.", MATH, True),
    ("I think you divide 20 by 4.", MATH, True),
    ("Subtract 4 from 9 and that's 5.", MATH, True),
    ("Doubling 9 gives 18.", MATH, True),
    ("3 × 4 + 1 = 13", MATH, True),
    ("12 ÷ 3 = 4, then 4 + 2 = 6", MATH, True),
    ("(5 + 3) * 2 is 16", MATH, True),
    ("It's 2.5 + 2.5 which makes 5.", MATH, True),
    ("$20 - $5 = $15", MATH, True),
    ("First 6 * 7 = 42 and then I subtract 2.", MATH, True),
    ("Maybe 100/4 = 25?", MATH, True),
    ("I'd do 48 / 6 to find the groups.", MATH, True),
    # --- math: equations and variables
    ("x + 3 = 7 so x = 4", MATH, True),
    ("2x + 5 = 15", MATH, True),
    ("Let x be the number of apples.", MATH, True),
    ("Let n = the number of days, then 3n = 21.", MATH, True),
    ("If x is 5 then the total is 10.", MATH, True),
    ("Call it x. Then x plus 4 equals 10.", MATH, True),
    ("y = 3", MATH, True),
    # --- math: percentage / fraction of a quantity
    ("25% of 20 is 5.", MATH, True),
    ("Is it 30 percent of the price?", MATH, True),
    ("Half of 40 is 20, right?", MATH, True),
    ("3/4 of 12 would be 9.", MATH, True),
    ("I took 10% of 50.", MATH, True),
    # --- math: not attempts
    ("Is it 18?", MATH, False),
    ("I think the answer is 11.", MATH, False),
    ("The answer is 42.", MATH, False),
    ("18", MATH, False),
    ("Maybe 3/4?", MATH, False),
    ("Can you just tell me the answer?", MATH, False),
    ("I don't know, this is too hard.", MATH, False),
    ("I'm confused.", MATH, False),
    ("Each sandwich needs 2 loaves and he makes 9 sandwiches.", MATH, False),
    ("Ugh, I hate fractions.", MATH, False),
    ("What do I do next?", MATH, False),
    ("answer = 18", MATH, False),
    ("Is the answer 15 dollars?", MATH, False),
    ("I'm not sure, maybe twelve?", MATH, False),
    ("Can you give me a hint?", MATH, False),
    ("I don't get why we multiply.", MATH, False),
    ("Okay I will try again.", MATH, False),
    ("It's the 3rd step that confuses me.", MATH, False),
    ("Do I add or multiply?", MATH, False),
    ("Ok, so 18 loaves?", MATH, False),
    ("I give up, what is the answer?", MATH, False),
    ("Grade 9 math is hard.", MATH, False),
    ("There are 2 groups of 9.", MATH, False),
    ("I'm not good at this, just tell me please.", MATH, False),
    ("Thanks! That makes sense now.", MATH, False),
    ("He has 5 apples and 3 oranges.", MATH, False),
    # --- science: causal explanations
    ("The ice floats because it is less dense than water.", PHYS, True),
    ("It falls faster since it is heavier.", PHYS, True),
    ("Heat makes the particles move faster, so the gas expands.", CHEM, True),
    ("The metal gets hot so the electrons move more.", CHEM, True),
    ("Because the force is bigger, the acceleration is bigger.", PHYS, True),
    ("Friction slows it down, which means it stops eventually.", PHYS, True),
    ("Maybe the ice floats because it is lighter?", PHYS, True),
    ("The salt dissolves due to the water molecules pulling the ions apart.", CHEM, True),
    ("Adding heat causes the ice to melt.", CHEM, True),
    ("The reaction is faster because the temperature is higher.", CHEM, True),
    # --- science: relations and formulas
    ("The more mass it has, the more force you need.", PHYS, True),
    ("F = ma", PHYS, True),
    ("Speed is distance divided by time.", PHYS, True),
    ("Pressure increases when the volume decreases.", CHEM, True),
    ("Current is proportional to voltage.", PHYS, True),
    ("The boiling point depends on the pressure.", CHEM, True),
    ("density = mass / volume, so 10 / 2 = 5", PHYS, True),
    ("PV = nRT", CHEM, True),
    ("v = d/t so it's 100/20", PHYS, True),
    ("The higher you go, the lower the pressure.", PHYS, True),
    # --- science: not attempts
    ("Is it gravity?", PHYS, False),
    ("I think it's the nucleus.", CHEM, False),
    ("Gravity.", PHYS, False),
    ("Just tell me the answer please.", PHYS, False),
    ("I don't know because I'm confused.", PHYS, False),
    ("I'm lost because we never learned this.", CHEM, False),
    ("Is it caused by gravity?", PHYS, False),
    ("What causes it?", PHYS, False),
    ("So is it friction?", PHYS, False),
    ("Ok I think so.", CHEM, False),
    ("This is boring, can you help me?", CHEM, False),
    ("Maybe protons?", CHEM, False),
    ("I guess it's kinetic energy.", PHYS, False),
    ("That makes sense.", CHEM, False),
    ("The question says the ball is dropped from 10 m.", PHYS, False),
    ("So what's the answer?", PHYS, False),
    ("Does heat cause the water to expand?", CHEM, False),
    ("I don't remember because it was a long time ago.", CHEM, False),
    ("Is it 9.8 m/s?", PHYS, False),
    ("The answer is 20 J.", PHYS, False),
    # --- science: computations count too
    ("10 m/s times 2 s is 20 m.", PHYS, True),
    ("5 kg x 2 m/s² = 10 N", PHYS, True),
    ("I multiplied 3 by 4 to get 12 grams.", CHEM, True),
    # --- a division written with a slash and a result verb is a computation; a bare
    # fraction answer is not, also at the end of a sentence
    ("12/4 gives 3, so 3 each.", MATH, True),
    ("60/5 makes 12.", MATH, True),
    ("So 10/2 is 5?", MATH, True),
    ("I did 36/4 and got 9.", MATH, True),
    ("84/2 equals 42 pages.", MATH, True),
    ("The speed is 100/20 which is 5 m/s.", PHYS, True),
    ("18/3 comes to 6 moles.", CHEM, True),
    ("150 divided by 3 makes 50.", MATH, True),
    ("Forty divided by eight gives five.", MATH, True),
    ("The answer is 3/4.", MATH, False),
    ("I think it's 2/5.", MATH, False),
    ("3/4 is my answer.", MATH, False),
    ("Is 7/8 right?", MATH, False),
    ("Is 1/2 bigger than 1/3?", MATH, False),
    ("So the ratio is 2/3?", CHEM, False),
    ("Maybe 1/2 a second?", PHYS, False),
    ("I got 5/6.", MATH, False),
]


def _score(cases: list[tuple[str, str, bool]] | None = None):
    tp = fp = fn = tn = 0
    misses = []
    for text, domain, gold in CORPUS if cases is None else cases:
        pred = attempts_reasoning(text, domain)
        tp += pred and gold
        fp += pred and not gold
        fn += gold and not pred
        tn += (not pred) and (not gold)
        if pred != gold:
            misses.append((text, domain, gold, pred))
    return tp, fp, fn, tn, misses


def test_corpus_is_broad_and_balanced():
    assert len(CORPUS) >= 80
    assert len({t for t, _, _ in CORPUS}) == len(CORPUS)
    pos = sum(1 for *_, g in CORPUS if g)
    assert 0.35 < pos / len(CORPUS) < 0.65
    assert {d for _, d, _ in CORPUS} == {MATH, PHYS, CHEM}


def test_precision_and_recall_floor():
    tp, fp, fn, tn, misses = _score()
    precision = tp / (tp + fp)
    recall = tp / (tp + fn)
    detail = "\n".join(f"  gold={g} pred={p} [{d}] {t!r}" for t, d, g, p in misses)
    assert precision >= 0.9 and recall >= 0.85, f"precision {precision:.2f}, recall {recall:.2f}; misses:\n{detail}"


# A held-out set: turns not used to develop the detector, scored as written (misses are reported
# in the notes, not fixed against them). The first 30 were written after the detector's first
# version; the last 6 with the slash computations, before the slash-computation rule was written.
HELD_OUT: list[tuple[str, str, bool]] = [
    ("Umm, so if each box has 12 and there are 3 boxes, that's 12 times 3, which is 36?", MATH, True),
    ("I think it's 36 but I'm not sure.", MATH, False),
    ("Wait, 15 + 15 is 30, so is it 30?", MATH, True),
    ("Honestly I have no idea. Can you show me how?", MATH, False),
    ("Oh, so I take 60 and split it into 4 parts, that's 15 each.", MATH, True),
    ("Is it like 7 or 8?", MATH, False),
    ("ok so total cost = 3 * 4.50 = 13.50", MATH, True),
    ("I don't really know how to start this one.", MATH, False),
    ("Twenty percent of 80 is 16, then 80 minus 16 is 64.", MATH, True),
    ("Hmm, maybe it's 64 dollars?", MATH, False),
    ("If t is the time then 5t = 40.", MATH, True),
    ("I forgot how to do percentages.", MATH, False),
    ("so 1/2 * 10 = 5", MATH, True),
    ("Do we multiply or divide here? I always mix them up.", MATH, False),
    ("I counted by 5s: 5, 10, 15, 20.", MATH, False),
    ("The water boils faster up a mountain because the air pressure is lower there.", PHYS, True),
    ("Is it because of the air?", PHYS, False),
    ("I think it's conduction.", PHYS, False),
    ("Metals conduct heat well since their electrons are free to move.", CHEM, True),
    ("When you heat it up the molecules move faster.", CHEM, False),
    ("Work = force x distance, so 10 x 5 = 50 J.", PHYS, True),
    ("The heavier one hits the ground first?", PHYS, False),
    ("Sorry, I'm really bad at chemistry.", CHEM, False),
    ("Acids have a pH below 7, so lemon juice is an acid.", CHEM, True),
    ("It's an exothermic reaction, right?", CHEM, False),
    ("The bigger the surface area, the faster it dissolves.", CHEM, True),
    ("Can you tell me if it's a physical or chemical change?", CHEM, False),
    ("Energy can't be created, so it must be converted into heat.", PHYS, True),
    ("Maybe the answer is photosynthesis?", CHEM, False),
    ("Voltage equals current times resistance, 2 times 3 is 6 volts.", PHYS, True),
    # slash computations: written and scored before the rule was written
    ("So 96/8 gives 12 players per team.", MATH, True),
    ("I did 45/9 and that makes 5.", MATH, True),
    ("Is the answer 5/8?", MATH, False),
    ("I wrote 2/3 as my answer.", MATH, False),
    ("The density is 20/4 which is 5 g per cm3.", PHYS, True),
    ("Maybe it's 1/4.", CHEM, False),
]


def test_held_out_scores_are_reported():
    """Only a loose floor here: the held-out numbers are measurements, reported in the notes."""
    correct = sum(attempts_reasoning(t, d) == g for t, d, g in HELD_OUT)
    assert len(HELD_OUT) >= 30 and correct / len(HELD_OUT) >= 0.8


if __name__ == "__main__":  # prints the corpus scores for the notes
    for name, cases in (("development", CORPUS), ("held-out", HELD_OUT)):
        tp, fp, fn, tn, misses = _score(cases)
        print(f"{name}: n={len(cases)} tp={tp} fp={fp} fn={fn} tn={tn} "
              f"precision={tp / (tp + fp):.3f} recall={tp / (tp + fn):.3f}")
        for m in misses:
            print("  ", m)
