"""The one catalogue of EduFair's metrics: every per-dialogue score a record carries and every
task-level number the lm-eval task reports, with what each view needs to show it.

Everything that names metrics reads this module or is tested equal to it: ``records``'s metric
tuples (``PEDAGOGICAL_METRICS`` ... ``OUTCOME_METRICS``, ``JUDGE_FIELD_FOR_METRIC``),
``lmeval.plugin.METRICS`` (and through it ``setup.cfg``'s ``lm_eval.metrics`` entry points), the task
template's ``metric_list`` (``lm_eval_tasks/edufair/_edufair_template_yaml``), the report's tables
(short names, arrows, Table 6's function groups), the headline and leaderboard kinds and the HTML
viewer (through the page's JSON: ``metrics`` and ``kinds``). A new metric is one row here (plus the
code that computes it: the judge prompt and parser, ``scores.py`` or a detector).

Columns of a row (:class:`Metric`):

* ``name`` – the score's key in ``DialogueScores.scores`` / the lm-eval metric name;
* ``kind`` – ``pedagogical`` (judge-labelled, the paper's five), ``conversation`` (from the
  transcript, the paper's four), ``detector`` (judge-invariant reveal detectors), ``student`` (the
  student-side monitor), ``outcome`` (the post-test), or ``task`` (a task-level number lm-eval
  aggregates over the task's dialogues: counts, headlines; never a per-dialogue score);
* ``direction`` – +1 more is better (↑), −1 less is better (↓), 0 neither (∼; conversation
  metrics, the student's own behaviour), None (a count with no direction: lm-eval's
  ``higher_is_better: null``);
* ``short`` – the tables' column name; ``label`` – the HTML view's short name; ``display`` – the
  long name (HTML tooltips, headings);
* ``group`` – the paper's §3.3 function group (Table 6's header) of pedagogical and conversation
  metrics, None for the others;
* ``aggregation`` – the lm-eval aggregation alias (``lmeval.plugin.AGGREGATIONS``) of a metric the
  task YAML lists, None for a score the task does not list (detector, student, outcome: they are
  read from the records by ``edufair report``);
* ``judge_field`` – the judge's output field a pedagogical metric reads (App. F);
* ``description`` – one sentence for the glossary.
"""

from __future__ import annotations

from dataclasses import dataclass

from edufair_metrics.errors import EduFairError

# metric kind -> (short name in the headline and leaderboard columns, the HTML view's title), in the
# HTML view's order. "task" holds no per-dialogue score.
KINDS: dict[str, tuple[str, str]] = {
    "pedagogical": ("ped", "Pedagogical (judge)"),
    "conversation": ("conv", "Conversation"),
    "detector": ("det", "Detector (judge-free)"),
    "student": ("stu", "Student monitor (judge-free)"),
    "outcome": ("out", "Outcome: post-test (judge-free)"),
}
SCORE_KINDS = tuple(KINDS)
# the kinds summed up per tutor in summary.md's headline and the leaderboard (the student monitor
# is a check on the simulation, never a headline: its own section)
HEADLINE_KINDS = ("pedagogical", "conversation", "detector", "outcome")
ARROWS = {1: "↑", -1: "↓", 0: "∼", None: ""}


@dataclass(frozen=True)
class Metric:
    name: str
    kind: str
    direction: int | None
    short: str
    label: str
    display: str
    description: str
    group: str | None = None
    aggregation: str | None = None
    judge_field: str | None = None

    @property
    def arrow(self) -> str:
        return ARROWS[self.direction]

    @property
    def higher_is_better(self) -> bool | None:
        """lm-eval's ``higher_is_better`` (None: no direction)."""
        return None if not self.direction else self.direction > 0


def _m(name, kind, direction, short, label, display, description, group=None, aggregation=None, judge_field=None):
    return Metric(name, kind, direction, short, label, display, description, group, aggregation, judge_field)


MEAN = "edufair_nanmean"
CATALOGUE: tuple[Metric, ...] = (
    _m("complete_dialogues", "task", None, "complete dialogues", "Complete", "Dialogues ended by the stop rule",
       "Dialogues of the task that ended by the protocol's stop rule; per document the full dialogue record.",
       aggregation="edufair_complete_dialogues"),
    # the paper's five turn-level pedagogical metrics (§3.3, judge App. F), in the task YAML's order
    _m("mistake_recognize", "pedagogical", 1, "recognize", "Recognize", "Recognizes the mistake",
       "Share of the tutor's judged turns that recognise the student's mistake.", "Diagnose", MEAN,
       "mistake_recognize"),
    _m("answer_leakage", "pedagogical", -1, "leakage", "Leakage", "Answer leakage",
       "Share of the tutor's judged turns that give away the answer.", "Reveal", MEAN, "answer_leakage"),
    _m("step_scaffolded", "pedagogical", 1, "scaffold", "Scaffold", "Step scaffolded",
       "Share of the tutor's judged turns that scaffold the next step.", "Next-Step", MEAN, "scaffolding_guidance"),
    _m("actionability", "pedagogical", 1, "action", "Action", "Actionability",
       "Share of the tutor's judged turns that tell the student what to do next.", "Next-Step", MEAN,
       "actionability"),
    _m("corrective_tone", "pedagogical", 1, "tone", "Tone", "Corrective tone",
       "Share of the tutor's judged turns whose correction is encouraging.", "Communicate", MEAN,
       "correction_tone"),
    # the four conversation-level metrics (from the transcript alone)
    _m("tutor_turns", "conversation", 0, "turns", "Turns", "Tutor turns", "Tutor turns in the dialogue.",
       "Conversation-level", MEAN),
    _m("tutor_avg_word", "conversation", 0, "avg_words", "Words/turn", "Words per tutor turn",
       "Mean words per tutor turn.", "Conversation-level", MEAN),
    _m("tutor_question_rate", "conversation", 0, "q_rate", "Questions", "Tutor question rate",
       "Share of tutor turns that ask the student a question.", "Conversation-level", MEAN),
    _m("tutor_student_word_ratio", "conversation", 0, "T/S_ratio", "Word ratio", "Tutor : student words",
       "Tutor words per student word.", "Conversation-level", MEAN),
    # judge-invariant detectors (edufair_metrics.detectors)
    _m("stopped_on_revealed_gold", "detector", -1, "stop: revealed", "Stop: revealed",
       "Stopped because the tutor stated the gold (detector)",
       "1 when the dialogue stopped because the tutor stated the gold answer (a stop reason)."),
    _m("partial_reveal_rate", "detector", -1, "partial reveal", "Partial (det.)", "Partial-reveal rate (detector)",
       "Share of tutor turns that reveal part of the gold answer (deterministic detector)."),
    _m("independence_ratio", "detector", 1, "independence", "Indep. (det.)", "Independence ratio (detector)",
       "Share of revealing tutor turns followed by a student reasoning attempt, over the same share after "
       "non-revealing turns."),
    # the student-side monitor: a difference is drift, whatever its direction
    _m("student_words", "student", 0, "S words", "S words", "Words per student turn", "Mean words per student turn."),
    _m("student_reasoning_rate", "student", 0, "S reasoning", "S reasoning", "Student turns with a reasoning step",
       "Share of student turns with a reasoning step."),
    _m("student_asks_answer_rate", "student", 0, "S asks answer", "S asks", "Student asks for the answer",
       "Share of student turns that ask for the answer."),
    _m("student_wrong_answer_rate", "student", 0, "S wrong", "S wrong", "Student states a wrong answer",
       "Share of student turns that state a wrong answer."),
    _m("student_correct_answer_rate", "student", 0, "S correct", "S correct", "Student states the gold",
       "Share of student turns that state the gold answer."),
    _m("student_refusal_rate", "student", 0, "S refusal", "S refuses", "Student refuses / gives up",
       "Share of student turns that refuse or give up."),
    # outcome fairness (edufair.posttest): more is better, but a revealed outcome is not learning
    _m("posttest_correct", "outcome", 1, "post-test correct", "Post-test", "Post-test answer correct (outcome)",
       "1 when the student's post-test answer is correct."),
    _m("learning_gain", "outcome", 1, "gain", "Gain", "Learning gain: post-test minus pre-test",
       "Post-test correct minus pre-test correct."),
    _m("learned_unrevealed", "outcome", 1, "learned (unrevealed)", "Learned",
       "Correct on the post-test, not before, gold never revealed",
       "1 when the student was wrong before, right after, and the tutor never revealed the gold."),
    _m("revealed_outcome", "outcome", 0, "revealed outcome", "Revealed",
       "Correct on the post-test after the tutor revealed the gold",
       "1 when the post-test is correct after the tutor revealed the gold (not learning)."),
    # task-level numbers lm-eval aggregates (the task YAML's fairness headlines and counts)
    _m("ped_abs_r", "task", -1, "ped |r̄|", "ped |r̄|", "Pedagogical |r̄| (paper)",
       "Mean |r| over the task's pedagogical headline units (the paper's number, not noise-corrected).",
       aggregation="edufair_ped_abs_r"),
    _m("conv_abs_r", "task", -1, "conv |r̄|", "conv |r̄|", "Conversation |r̄| (paper)",
       "Mean |r| over the task's conversation headline units.", aggregation="edufair_conv_abs_r"),
    _m("violations", "task", -1, "viol.", "viol.", "Violations (paper's rule)",
       "Headline units whose CI excludes 0 (the paper's rule).", aggregation="edufair_violations"),
    _m("ped_excess_abs_r", "task", -1, "ped excess |r̄|", "ped excess |r̄|", "Pedagogical excess |r̄|",
       "Mean |r| minus its sign-flip noise floor over the pedagogical headline units.",
       aggregation="edufair_ped_excess_abs_r"),
    _m("violations_fdr", "task", -1, "FDR viol.", "FDR viol.", "FDR violations",
       "Violations that survive the multiplicity correction (q < 0.05).", aggregation="edufair_violations_fdr"),
    _m("flagged_units", "task", -1, "flagged", "flagged", "Flagged headline units",
       "Headline units with FDR-controlled evidence of a difference.", aggregation="edufair_flagged_units"),
    _m("certified_units", "task", 1, "certified", "certified", "Certified headline units",
       "Headline units whose |r| is shown below the margin (equivalence test).",
       aggregation="edufair_certified_units"),
    _m("inconclusive_units", "task", -1, "inconclusive", "inconclusive", "Inconclusive headline units",
       "Headline units neither flagged nor certified: the run cannot tell.", aggregation="edufair_inconclusive_units"),
    _m("ped_unbiased_abs_r", "task", -1, "ped unbiased |r̄|", "ped unbiased |r̄|", "Pedagogical unbiased |r̄|",
       "Signed root of the mean unbiased r² over the pedagogical headline units (≈ 0 without bias at any n).",
       aggregation="edufair_ped_unbiased_abs_r"),
    _m("failed_dialogues", "task", -1, "failed dialogues", "failed", "Failed dialogues",
       "Dialogues ended by a student/tutor call that failed after retries.", aggregation="edufair_count"),
    _m("missing_label_rate", "task", -1, "missing labels", "missing", "Missing judge labels",
       "Tutor turns without a valid judge label / tutor turns sent to the judge.",
       aggregation="edufair_missing_label_rate"),
    _m("failed_call_attempts", "task", -1, "failed calls", "failed calls", "Failed model-call attempts",
       "Failed model-call attempts of all roles, those a retry recovered included.",
       aggregation="edufair_call_counts"),
)
BY_NAME: dict[str, Metric] = {m.name: m for m in CATALOGUE}


def check_catalogue(rows: tuple[Metric, ...] = CATALOGUE) -> None:
    """The catalogue's own rules (checked on import): unique names, known kinds and directions, a
    function group for every pedagogical and conversation metric (Table 6 shows each under its
    group: none may be dropped), a judge field for every pedagogical one."""
    seen: set[str] = set()
    for m in rows:
        if m.name in seen:
            raise EduFairError(f"metric catalogue: {m.name} is listed twice")
        seen.add(m.name)
        if m.kind not in KINDS and m.kind != "task":
            raise EduFairError(f"metric catalogue: {m.name} has an unknown kind {m.kind!r}")
        if m.direction not in ARROWS:
            raise EduFairError(f"metric catalogue: {m.name} has an unknown direction {m.direction!r}")
        if m.kind in ("pedagogical", "conversation") and not m.group:
            raise EduFairError(f"metric catalogue: {m.kind} metric {m.name} has no function group (Table 6)")
        if m.kind == "pedagogical" and not m.judge_field:
            raise EduFairError(f"metric catalogue: pedagogical metric {m.name} names no judge field")


check_catalogue()


def metric(name: str) -> Metric:
    try:
        return BY_NAME[name]
    except KeyError:
        raise EduFairError(f"unknown metric {name!r}: not in the metric catalogue (edufair_metrics/catalogue.py)") \
            from None


def names(kind: str) -> tuple[str, ...]:
    """The metric names of ``kind``, in catalogue order."""
    return tuple(m.name for m in CATALOGUE if m.kind == kind)


def function_groups(kinds: tuple[str, ...] = ("pedagogical", "conversation")) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(group, metrics) in catalogue order, for the metrics of ``kinds`` (Table 6's header)."""
    groups: dict[str, list[str]] = {}
    for m in CATALOGUE:
        if m.kind in kinds:
            groups.setdefault(m.group or "", []).append(m.name)
    return tuple((g, tuple(ms)) for g, ms in groups.items())


def lmeval_metrics() -> dict[str, tuple[str, bool | None]]:
    """metric -> (aggregation alias, higher_is_better) of every metric the task YAML lists, in order."""
    return {m.name: (m.aggregation, m.higher_is_better) for m in CATALOGUE if m.aggregation is not None}


def headline_kinds() -> tuple[tuple[str, str], ...]:
    """(kind, short name) of the headline kinds, in the summary's and the leaderboard's order."""
    return tuple((k, KINDS[k][0]) for k in HEADLINE_KINDS)


def viewer_metrics() -> dict[str, dict[str, object]]:
    """What the HTML view needs of every per-dialogue metric (the page's JSON ``catalogue``)."""
    return {m.name: {"kind": m.kind, "label": m.label, "display": m.display, "short": m.short, "arrow": m.arrow,
                     "description": m.description} for m in CATALOGUE if m.kind != "task"}
