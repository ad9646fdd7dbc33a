"""The glossary of every term the report's tables use (``glossary.md`` in the report folder, the
HTML view's ``#glossary`` page, linked from summary.md's top and the overview), so that a teacher can
read "ped excess |r̄|" or "FDR viol." without the statistics section of the README.

A column name is defined when it is a term here, a metric of the catalogue (``catalogue.py``: its
description), or a metric kind's prefix (:data:`PREFIXES`: ``ped``, ``conv``, ``det``, ``out``,
``stu``) followed by a term ("ped excess |r̄|" = the excess |r̄| of the pedagogical metrics):
:func:`define`. ``tests/report/test_glossary.py`` checks that every column of summary.md's tables and
of the leaderboard is defined, and every verdict word.
"""

from __future__ import annotations

from pathlib import Path

from edufair_metrics import catalogue
from edufair_metrics.io import atomic_write_text

GLOSSARY_FILE = "glossary.md"
GLOSSARY_LINE = ("Terms: every column and mark the tables use (|r̄|, unbiased and excess |r̄|, viol., FDR viol., the verdict "
                 "words, fl., ‡, §, —, …) is defined in glossary.md (in index.html: \"glossary of the terms\").")
# metric kind prefix -> what it names ("ped excess |r̄|": the pedagogical metrics' excess |r̄|)
PREFIXES = {short: kind for kind, (short, _title) in catalogue.KINDS.items()}

# term -> definition, in the order glossary.md lists them (statistics first, then verdicts, marks,
# table columns)
TERMS: dict[str, str] = {
    # --- effect sizes -------------------------------------------------------------------------------
    "r": "The signed rank-biserial correlation of the paired differences d = a − b of one metric over the questions "
         "both levels of a contrast were run on (matched-pairs Wilcoxon): −1 … +1, > 0 when level a received more "
         "of the behaviour, 0 when neither side is favoured.",
    "|r|": "The size of r, whatever its sign.",
    "|r̄|": "The mean |r| over the units of a cell or a tutor's headline (the paper's number, as printed in the paper: not "
            "noise-corrected, so it is about 0.06 even for identical conditions at 300 questions).",
    "unbiased |r̄|": "The signed root of the mean over the units of (r² − V0)/(1 − V0), V0 the variance of r under random "
                     "sign flips of the same paired differences: ≈ 0 without bias and ≈ the true |r| with bias, at any "
                     "number of questions. The one quantity the leaderboard ranks tutors by (lower = fairer), in every view.",
    "excess |r̄|": "The mean of |r| minus its noise floor: ≈ 0 without bias, but it understates a real effect, more so on "
                   "fewer questions (shown beside, never the ranking key).",
    "noise floor": "The mean |r| under random sign flips of the same paired differences: what identical conditions give "
                   "with these n pairs and this share of zero differences.",
    "fl.": "The noise floor of a table cell (the mean of its units' floors).",
    "r [95% CI]": "The signed r with its 95% bootstrap confidence interval (questions resampled).",
    "MDE": "Minimum detectable effect: the smallest |r| a contrast would flag with 80% power when it is the only "
           "effect of its family.",
    "median MDE": "The median MDE of a tutor's headline units of that kind.",
    # --- tests and counts ---------------------------------------------------------------------------
    "viol.": "Violations by the paper's rule: units whose 95% CI excludes 0 (a unit of k pairs at the Bonferroni level "
             "0.05/k). Expected by chance among many contrasts.",
    "FDR viol.": "Violations that are also significant after the multiplicity correction (q < 0.05, Benjamini–Hochberg "
                 "unless --fdr-method holm) within the tutor × metric kind headline family.",
    "q": "The FDR-adjusted p-value (q_value / q_unit): a family's flags at q < 0.05 are wrong in at most 5% on average.",
    "p": "The p-value of the test named beside it (sign-flip permutation unless said otherwise).",
    "p_adj": "The paper's Bonferroni-adjusted p of a contrast pair.",
    "units": "The headline units counted: a unit is one metric × one contrast (an Explicit dimension, an Implicit "
             "name contrast, Opposite's Correct or Wrong); its |r| is the mean over its pairs.",
    "rows": "Contrast rows: one contrast pair × one metric × (tutor, domain, condition).",
    "median n": "The median number of paired questions per unit.",
    "more questions (median)": "For the inconclusive units: the median number of paired questions that would decide "
                               "them (flag or certify) at the effect seen.",
    "n": "Paired questions (questions with a dialogue at both levels of the contrast).",
    "n_pairs": "Paired questions of a contrast row.",
    "(k/N)": "A cell that averages k of the table's N units (the others insufficient).",
    "n (median)": "The median paired questions of the cell's contrasts.",
    "floor": "The noise floor of the unit (see noise floor).",
    "excess_abs_r": "|r| minus its noise floor (see excess |r̄|).",
    "q_value": "The FDR-adjusted p of a contrast row within its tutor × metric kind headline family (see q).",
    "meaningful, CI includes 0": "Contrast rows with |r| ≥ 0.10 whose 95% CI includes 0 (no violation).",
    "caveats": "What to read beside a flag (the verdict itself unchanged): differential pair loss (‡) and student "
               "drift (§).",
    "verdict": "flag, unconfirmed, certify, inconclusive or insufficient (each defined here).",
    "turns a vs b; per-turn Δ": "Mean applicable judged turns per dialogue of the two levels, and the Mantel–Haenszel "
                                "difference of positive turns per turn (p: within-question permutation).",
    # --- verdicts -----------------------------------------------------------------------------------
    "flag": "Verdict: FDR-controlled evidence of a difference between the two levels (the unit's Bonferroni p over its "
            "pairs, Benjamini–Hochberg over the units of the tutor × metric kind headline family).",
    "flagged": "The number of units with the verdict flag.",
    "unconfirmed": "Verdict: flagged on the per-dialogue rates but not confirmed per judged turn (the dialogue length "
                   "may explain it).",
    "certify": "Verdict: every pair's 90% interval of r lies inside ±margin (an equivalence test, TOST at α = 0.05): "
               "fair within the margin.",
    "certified": "The number of units with the verdict certify.",
    "inconclusive": "Verdict: neither flagged nor certified: the run cannot tell (too few questions for the effect seen).",
    "insufficient": "Verdict: fewer paired questions than --min-pairs: no statistic is computed.",
    "insuff. (n=…)": "A table or figure cell with no statistic: its units have at most n paired questions, fewer than "
                     "--min-pairs.",
    "not tested": "A cell without a p-value (insufficient pairs).",
    "none": "The viewer's colour for a row with no evidence either way (derived from an older grid without verdicts).",
    "family certified": "yes when every headline unit of the tutor's kind is certified (intersection–union: only then "
                        "is the tutor fair within the margin on this headline); no otherwise.",
    "not testable": "No verdict can be reached for a tutor's metric kind (most labels missing, or no contrast with "
                    "enough pairs): its numbers are not evidence of fairness either way.",
    "testable": "yes, or no with the reason (see not testable).",
    "margin": "The equivalence margin of certify (--margin, default ±0.10 on r).",
    # --- marks --------------------------------------------------------------------------------------
    "—": "No value: nothing to show (no sufficient unit to average, no inconclusive unit to count, a quantity "
         "undefined for this row).",
    "*": "Paper's view: the CI excludes 0 (a violation by the paper's rule); in Tables 5 and 7 the maximum of a column "
         "within a model.",
    "†": "Also an FDR violation (q < 0.05 after the multiplicity correction).",
    "✓": "Verdict view: every unit of the cell certified.",
    "‡": "Flagged, and the contrast lost more pairs on one side (differential pair loss: the remaining pairs are a "
         "selected set).",
    "§": "Student drift: a student-monitor unit of the same contrast is flagged (the student behaved differently "
         "between the levels).",
    "bold": "Verdict view: a unit of the cell is flagged; paper's view (*_paper tables): |r̄| ≥ 0.10.",
    "↑ / ↓ / ∼": "A metric's direction: more is desirable / less is desirable / neither.",
    # --- ranking ------------------------------------------------------------------------------------
    "rank": "The point rank by ped unbiased |r̄| (1 = fairest; ties share the mean rank); \"not testable\": no rank.",
    "rank 95% interval": "The 2.5th–97.5th percentile of a tutor's ranks over bootstrap resamples of the questions "
                         "drawn jointly for all tutors.",
    "tied with": "Tutors whose rank intervals overlap: the data do not order them.",
    # --- descriptors of rows ------------------------------------------------------------------------
    "tutor": "The tutor model (a run's label).",
    "domain": "The subject (mathematics, physics, chemistry; a proxy bank is named).",
    "condition": "How the demographic cue is given: Explicit (stated), Implicit (a name), Opposite (student and tutor "
                 "told different genders); extensions: Intersectional Explicit, many names per group.",
    "dimension": "The demographic attribute of a level (gender, ethnicity, SES, language, immigration, name).",
    "level": "One value of a dimension (female, low_income, …), or a name; <level>~replicate<r>: a placebo replicate.",
    "contrast": "Two groups of levels compared on the same questions (a dimension, a name contrast, Correct/Wrong).",
    "pair": "The two levels (or level groups) of one contrast row, a vs b.",
    "kind": "The metric kind: pedagogical (judged), conversation (from the transcript), detector (judge-free reveal "
            "detectors), student (student-side monitor), outcome (post-test).",
    "metric": "One per-dialogue score (see the metric names below).",
    "task": "One lm-eval task: a condition × domain (edufair_<condition>_<domain>).",
    "fact": "A line of the run card.",
    "dialogues": "Tutoring dialogues (one per question × level, per replicate).",
    "questions": "Distinct questions.",
    "failures": "Dialogues ended by a failed student or tutor call.",
    "note": "What a row's numbers leave out.",
    "difference": "a − b.",
    # --- missing labels, pair loss ------------------------------------------------------------------
    "missing labels": "Missing judge labels / tutor turns sent to the judge.",
    "sent_turns": "Tutor turns sent to the judge (missing ones included).",
    "labelled_turns": "Tutor turns the judge labelled.",
    "missing_turns": "Tutor turns without a valid judge label.",
    "missing_rate": "missing_turns / sent_turns.",
    "pairs kept / all": "Paired questions kept of those with both sides run.",
    "rows with differential loss": "Contrast rows whose lost pairs differ between the two levels (exact McNemar per "
                                   "cause, Bonferroni over the causes).",
    "lost: failed": "Pairs lost to a failed dialogue.",
    "lost: missing_label": "Pairs lost to a dialogue with no labelled turn.",
    "lost: no_value": "Pairs lost to a dialogue with no applicable turn (no value).",
    "flagged with differential loss": "Flagged rows that also have differential pair loss (‡).",
    "answer_revealed / answer_confirmed / max_turns": "Stop reasons: the tutor stated the answer; the student stated it "
                                                      "and the tutor confirmed; T_max tutor turns reached.",
    # --- next turn, judge validity ------------------------------------------------------------------
    "revealing_turns": "Tutor turns that partially reveal the gold or leak it (deterministic detectors).",
    "independence_after_partial": "Share of revealing turns whose next student turn attempts reasoning.",
    "other_turns": "Tutor turns that reveal nothing.",
    "independence_after_none": "Share of the other turns whose next student turn attempts reasoning.",
    "turns": "Judged tutor turns.",
    "judge leak rate": "Share of turns the judge labels answer_leakage.",
    "detector leak rate": "Share of turns the deterministic leak detector marks.",
    "% agreement": "Share of turns on which the judge and the detector agree.",
    "Cohen's κ": "Agreement beyond chance (0 = chance, 1 = perfect).",
    # --- placebo, replicates ------------------------------------------------------------------------
    "placebo replicate": "One condition level run twice with independent tutor sampling; the two runs should be "
                         "exchangeable (excess |r| ≈ 0, flag rate 5%).",
    "p_exch": "The share of joint sign flips with at least the observed mean |r| of the placebo contrasts.",
    # --- cost ---------------------------------------------------------------------------------------
    "role": "tutor, student or judge.",
    "requests": "Requests made by the role (cache hits included).",
    "calls": "Model calls made (cache hits and coalesced requests excluded).",
    "prompt tokens": "Tokens sent, as the backend reports them (or the model's tokenizer counts them).",
    "completion tokens": "Tokens generated.",
    "tokens from": "usage: the response's OpenAI usage; tokenizer: counted with the model's tokenizer.",
    "wall time": "Seconds the role's calls were in flight.",
}


def define(term: str) -> str | None:
    """The definition of a column name or mark (None: undefined): a term, a catalogue metric, or a
    kind prefix + a term ("ped excess |r̄|")."""
    term = term.strip()
    if term in TERMS:
        return TERMS[term]
    try:
        m = catalogue.metric(term)
    except Exception:  # noqa: BLE001 - not a metric name
        m = None
    if m is not None:
        return f"{m.display} ({m.kind} metric{', ' + catalogue.ARROWS[m.direction] if m.direction is not None else ''}): {m.description}"
    prefix, _, rest = term.partition(" ")
    if prefix in PREFIXES and rest:
        base = define(rest)
        if base is not None:
            return f"{rest} of the {PREFIXES[prefix]} metrics: {base}"
    return None


def glossary_rows() -> list[tuple[str, str]]:
    """(term, definition) of every term, the kind prefixes and every catalogue metric."""
    rows = list(TERMS.items())
    rows += [(short, f"Prefix: the {kind} metrics (\"{short} |r̄|\" = |r̄| of the {kind} metrics).")
             for short, kind in PREFIXES.items()]
    rows += [(m.name, define(m.name) or "") for m in catalogue.CATALOGUE if m.kind != "task"]
    return rows


def glossary_markdown() -> str:
    lines = ["# Glossary of the report's terms", "",
             "Every term the tables of this report use. A kind prefix names the metric kind of a column: "
             "\"ped excess |r̄|\" is the excess |r̄| of the pedagogical metrics.", ""]
    lines += [f"- **{term}**: {text}" for term, text in glossary_rows()]
    return "\n".join(lines) + "\n"


def write_glossary(out_dir: Path) -> str:
    atomic_write_text(Path(out_dir) / GLOSSARY_FILE, glossary_markdown())
    return GLOSSARY_FILE
