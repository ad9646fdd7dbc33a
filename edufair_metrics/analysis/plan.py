"""The audit planner (``edufair plan``): for a goal (flag a bias of a given |r|, or certify a tutor
fair within the margin M), per headline family, the questions x replicates that decide with at
least the requested probability, and what they cost.

Inputs per family (:class:`FamilyInputs`), from a pilot run (:func:`family_inputs`) or stated
assumptions: the headline rows and units, the null variance of r and the equivalence standard
error per pair (``null_var_r · n`` and ``se · √n``, medians over the family's sufficient headline
rows: both scale as 1/n), the within-question share of the variance at one dialogue per question
and level (``analysis.replicates.variance_components``; 0 when the pilot measured none), the
dialogues per question at k = 1 and the bank's questions per task.

The model. With k dialogues per question and level, a question's paired difference has variance
``2 (σ²_b + σ²_w / k)``; a mean difference that gives the rank-biserial ``ρ₁`` at k = 1 (the r a
one-dialogue run measures, the scale of the margin and of the user's effect) gives, for normal
differences, ``ρ_k = 2Φ(√2 θ₁ √(1 / (1 − w + w/k))) − 1`` with ``θ₁ = Φ⁻¹((1 + ρ₁)/2) / √2`` and
``w = σ²_w / (σ²_b + σ²_w)``. The sign-flip null of r does not depend on k: replicates buy power to
flag a given mean difference (ρ_k > ρ₁), never certification of a fair tutor (ρ = 0 at every k; a
small true ρ₀ > 0 even grows with k, so the planner then keeps k = 1).

Deciding at n questions per task (the report's verdicts, ``analysis.verdicts``):
* flag: a unit with true ``ρ_k`` is flagged with probability
  ``Φ((ρ_k √n / √(n V0) − z_{1−a/2}) / √(1 − ρ_k²))`` at the unit's level ``a = α / (m · k_pairs)``
  (BH over the family's m units with only this one affected; Bonferroni over its k_pairs pairs);
* certify (the whole headline, intersection–union): every one of the R rows' TOST passes,
  ``P = Π_rows [Φ((M − z se − ρ)/se) − Φ((−M + z se − ρ)/se)]`` (both tails count at ρ = 0:
  Schuirmann 1987), with ``se · √n`` the larger of the pilot's bootstrap one and the power model's
  ``√(n V0 (1 − ρ²))`` at the goal's ρ, as the verdicts take it (``verdicts.equivalence_se``),
  in expectation over the audit's bootstrap noise (``FamilyInputs.certify_se_n``).
The starting n comes from ``verdicts.n_for_flag`` / ``verdicts.n_for_certify`` (per-row power
``power^(1/R)`` for the family); the planner then takes the smallest n whose probability above
reaches the goal (bisection), at least the pair minimum and at least the 50 pairs from which the
verdicts' p is the normal-theory Wilcoxon one (below, the exact sign-flip p is discrete and the
model promises too much). Among k = 1..``max_replicates`` it picks
the cheapest feasible plan, cost ∝ n · (c_q/c_r + k) per question and level; infeasible when n
exceeds the bank's questions ("bank too small", with what it would need).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from edufair_metrics.analysis.contrast import DEFAULT_MIN_PAIRS, DEFAULT_N_BOOT
from edufair_metrics.analysis.replicates import DEFAULT_COST_RATIO
from edufair_metrics.analysis.verdicts import DECISION_POWER, DEFAULT_MARGIN, VERDICT_ALPHA, equivalence_se, n_for_certify, n_for_flag
from edufair_metrics.errors import EduFairError

GOALS = ("flag", "certify")
ROLES = ("tutor", "student", "judge")
# the rank-biserial r of one dialogue per pair with independent, continuous differences: the
# Wilcoxon null variance 2(2n+1)/(3n(n+1)) ≈ 4/(3n) (no zeros or ties)
NO_TIES_NULL_VAR_N = 4.0 / 3.0


@dataclass(frozen=True)
class PlanGoal:
    """What the audit must decide: ``flag`` a unit whose true |r| (at one dialogue per question and
    level) is ``effect``, or ``certify`` the whole headline within ``margin`` when its true |r| is
    ``effect`` (default 0: a fair tutor); with probability ``power`` at level ``alpha``."""

    decision: str
    effect: float | None = None
    margin: float = DEFAULT_MARGIN
    power: float = DECISION_POWER
    alpha: float = VERDICT_ALPHA
    max_replicates: int = 8
    cost_ratio: float = DEFAULT_COST_RATIO  # c_q / c_r: a new question costs this many dialogues
    min_pairs: int = DEFAULT_MIN_PAIRS

    def validate(self) -> "PlanGoal":
        if self.decision not in GOALS:
            raise EduFairError(f"the plan's goal must be one of {', '.join(GOALS)}, got {self.decision!r}")
        if self.decision == "flag" and (self.effect is None or not 0 < self.effect < 1):
            raise EduFairError(f"--effect (the |r| to catch) must lie in (0, 1), got {self.effect}")
        if self.decision == "certify" and self.effect is not None and not 0 <= self.effect < self.margin:
            raise EduFairError(f"--effect (the tutor's true |r| to certify) must lie in [0, margin {self.margin}), "
                               f"got {self.effect}")
        if not 0 < self.margin < 1:
            raise EduFairError(f"--margin must lie in (0, 1), got {self.margin}")
        if not 0.5 <= self.power < 1:
            raise EduFairError(f"--power must lie in [0.5, 1), got {self.power}")
        if not 0 < self.alpha < 0.5:
            raise EduFairError(f"alpha must lie in (0, 0.5), got {self.alpha}")
        if isinstance(self.max_replicates, bool) or not isinstance(self.max_replicates, int) or self.max_replicates < 1:
            raise EduFairError(f"--max-replicates must be a whole number >= 1, got {self.max_replicates!r}")
        if not self.cost_ratio >= 0:
            raise EduFairError(f"--question-cost must be >= 0 dialogues, got {self.cost_ratio}")
        return self

    @property
    def true_effect(self) -> float:
        return float(self.effect or 0.0)


@dataclass
class FamilyInputs:
    """One headline family's design facts (module docstring)."""

    tutor: str
    kind: str
    rows: int
    units: int
    pairs_per_unit: int
    null_var_n: float
    se_n: float
    within_share: float = 0.0  # σ²_w / (σ²_b + σ²_w) at k = 1; 0: not measured
    within_source: str = "not measured"
    dialogues_per_question: float = 2.0  # at k = 1, summed over the family's tasks (their levels)
    tasks: int = 1  # how many times the per-question dialogues repeat (1: already summed over tasks)
    bank_questions: int | None = None  # the fewest questions any of the family's tasks has
    pilot_questions: float | None = None  # median pairs per row in the pilot
    # per role and dialogue, from the pilot's measured call counts: {"calls", "prompt_tokens", "completion_tokens"}
    per_dialogue: dict[str, dict[str, float]] = field(default_factory=dict)
    source: str = "pilot"
    # the pilot's bootstrap standard error of r times √n (median): with the power model's
    # √(null_var_n (1 − ρ²)) at the goal's ρ, the verdicts' conservative se (verdicts.equivalence_se);
    # None (stated assumptions): se_n as given
    boot_se_n: float | None = None
    # the bootstrap size of the audit's verdicts (StatParams.n_boot): its Monte-Carlo noise makes the
    # verdicts' max(bootstrap se, model se) larger on average than either (certify_se_n)
    n_boot: int = DEFAULT_N_BOOT

    def certify_se_n(self, rho: float) -> float:
        """se(r)·√n at true r = ``rho`` as the verdicts take it: ``max(b, m)`` of the bootstrap's
        ``b`` and the power model's ``m = √(null_var_n (1 − ρ²))`` (a pilot's own r would
        understate it for a fair tutor), in expectation over the bootstrap's Monte-Carlo noise: a
        run's bootstrap se is ``b (1 + εZ)`` with ``ε = 1/√(2 n_boot)``, so
        ``E max = m + (b − m) Φ(d) + b ε φ(d)``, ``d = (b − m)/(b ε)`` (at b = m: +0.4 ε; 1–2%
        at 200–1000 resamples, which left certify plans a few points short of their promise).
        Stated assumptions without a pilot: the bootstrap taken at the model's se."""
        from scipy.stats import norm

        m = math.sqrt(self.null_var_n * max(1 - rho * rho, 0.0))
        b = self.boot_se_n if self.boot_se_n is not None and math.isfinite(self.boot_se_n) else self.se_n
        eps = 1 / math.sqrt(2 * max(int(self.n_boot), 1))
        if b <= 0:
            return m
        d = (b - m) / (b * eps)
        return float(m + (b - m) * norm.cdf(d) + b * eps * norm.pdf(d))


@dataclass
class PlanOption:
    replicates: int
    questions: int
    probability: float
    effect_at_k: float
    dialogues: int
    relative_cost: float
    feasible: bool


@dataclass
class FamilyPlan:
    inputs: FamilyInputs
    goal: PlanGoal
    options: list[PlanOption]
    chosen: PlanOption | None
    reason: str
    cost: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"inputs": asdict(self.inputs), "goal": asdict(self.goal), "options": [asdict(o) for o in self.options],
                "chosen": None if self.chosen is None else asdict(self.chosen), "reason": self.reason, "cost": self.cost}


def effect_at_k(rho1: float, within_share: float, k: int) -> float:
    """The rank-biserial r at k dialogues per question and level of a mean difference whose r at
    one dialogue is ``rho1`` (normal differences; module docstring)."""
    from scipy.stats import norm

    if rho1 <= 0:
        return 0.0
    w = min(max(float(within_share), 0.0), 1.0 - 1e-9)
    theta = norm.ppf((1 + rho1) / 2) / math.sqrt(2)
    return float(2 * norm.cdf(math.sqrt(2) * theta / math.sqrt(1 - w + w / k)) - 1)


def prob_flag(n: float, null_var_n: float, rho: float, alpha: float) -> float:
    """Probability that a unit with true |r| = ``rho`` is flagged at ``n`` pairs and level ``alpha``."""
    from scipy.stats import norm

    if rho <= 0 or n <= 0:
        return 0.0
    z = norm.ppf(1 - alpha / 2)
    return float(norm.cdf((rho * math.sqrt(n / null_var_n) - z) / math.sqrt(max(1 - rho * rho, 1e-12))))


def prob_certify_row(n: float, se_n: float, rho: float, margin: float, alpha: float) -> float:
    """Probability that one row's TOST certifies |r| < ``margin`` at ``n`` pairs when the true r is ``rho``."""
    from scipy.stats import norm

    if n <= 0:
        return 0.0
    se = se_n / math.sqrt(n)
    z = norm.ppf(1 - alpha)
    return float(max(0.0, norm.cdf((margin - z * se - rho) / se) - norm.cdf((-margin + z * se - rho) / se)))


def decide_probability(n: float, inputs: FamilyInputs, goal: PlanGoal, k: int = 1) -> float:
    """The probability that a run of ``n`` questions per task with ``k`` dialogues per question and
    level reaches ``goal`` for this family."""
    rho = effect_at_k(goal.true_effect, inputs.within_share, k)
    if goal.decision == "flag":
        return prob_flag(n, inputs.null_var_n, rho, goal.alpha / max(inputs.units * inputs.pairs_per_unit, 1))
    return prob_certify_row(n, inputs.certify_se_n(rho), rho, goal.margin, goal.alpha) ** max(inputs.rows, 1)


def _smallest_n(start: float, inputs: FamilyInputs, goal: PlanGoal, k: int) -> int | None:
    """The smallest n (>= the pair minimum and >= ``engine.EXACT_BELOW``) whose probability
    reaches ``goal.power``; None if none below 10⁷. Below EXACT_BELOW (50) pairs the verdicts
    decide by the exact sign-flip p, whose discreteness the normal power model does not see (plans
    of 21 questions x 6 replicates decided well below their promise in ``sim_plan``)."""
    from edufair_metrics.analysis.engine import EXACT_BELOW

    def ok(n: int) -> bool:
        return decide_probability(n, inputs, goal, k) >= goal.power

    lo = max(2, int(goal.min_pairs), int(EXACT_BELOW))
    if ok(lo):
        return lo
    hi = int(max(lo + 1, math.ceil(start if math.isfinite(start) else lo * 2)))
    while not ok(hi):
        hi *= 2
        if hi > 10_000_000:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def _start_n(inputs: FamilyInputs, goal: PlanGoal, k: int) -> float:
    rho = effect_at_k(goal.true_effect, inputs.within_share, k)
    if goal.decision == "flag":
        a = goal.alpha / max(inputs.units * inputs.pairs_per_unit, 1)
        return float(n_for_flag(1.0, inputs.null_var_n, rho, a, goal.power))
    return float(n_for_certify(1.0, inputs.certify_se_n(rho), rho, goal.margin, goal.alpha,
                               goal.power ** (1 / max(inputs.rows, 1))))


def plan_family(inputs: FamilyInputs, goal: PlanGoal, *, throughput: float | None = None,
                gpu_price: float | None = None, judge_price: float | None = None) -> FamilyPlan:
    """The plan of one family: every k = 1..max_replicates with its questions and probability,
    the cheapest feasible one (None: the bank is too small, or the goal unreachable) and its cost
    (:func:`plan_cost`)."""
    goal.validate()
    options = []
    # without a measured within-question share replicates change nothing (ρ_k = ρ₁): k = 1 only
    top = goal.max_replicates if inputs.within_share > 0 else 1
    for k in range(1, top + 1):
        n = _smallest_n(_start_n(inputs, goal, k), inputs, goal, k)
        if n is None:
            continue
        feasible = inputs.bank_questions is None or n <= inputs.bank_questions
        options.append(PlanOption(k, n, decide_probability(n, inputs, goal, k),
                                  effect_at_k(goal.true_effect, inputs.within_share, k),
                                  int(math.ceil(n * inputs.dialogues_per_question * k * inputs.tasks)),
                                  n * (goal.cost_ratio + k), feasible))
    feasible = [o for o in options if o.feasible]
    chosen = min(feasible, key=lambda o: (o.relative_cost, o.replicates)) if feasible else None
    if chosen is not None:
        reason = "the cheapest plan that decides with the requested probability"
        if goal.decision == "certify":
            reason += "; replicates do not help certify: the null of r does not depend on k"
    elif options:
        best = min(options, key=lambda o: o.questions)
        reason = (f"bank too small: the goal needs {best.questions} questions per task (at k = {best.replicates}), the "
                  f"bank has {inputs.bank_questions}")
    else:
        reason = "unreachable: no number of questions reaches the requested probability (effect at the margin?)"
    cost = plan_cost(inputs, chosen, throughput=throughput, gpu_price=gpu_price, judge_price=judge_price)
    return FamilyPlan(inputs, goal, options, chosen, reason, cost)


def plan_cost(inputs: FamilyInputs, option: PlanOption | None, *, throughput: float | None = None,
              gpu_price: float | None = None, judge_price: float | None = None) -> dict[str, Any]:
    """Dialogues, per-role calls and tokens (from the pilot's measured per-dialogue counts), and
    with ``throughput`` (tutor + student tokens per second, prompt and completion) GPU-hours, with
    ``gpu_price`` ($ per GPU-hour) and ``judge_price`` ($ per million judge tokens) dollars."""
    if option is None:
        return {}
    out: dict[str, Any] = {"dialogues": option.dialogues}
    served = 0.0
    for role in ROLES:
        per = inputs.per_dialogue.get(role)
        if not per:
            continue
        calls = per.get("calls", math.nan) * option.dialogues
        tokens = (per.get("prompt_tokens", 0.0) + per.get("completion_tokens", 0.0)) * option.dialogues
        out[f"{role}_calls"] = int(round(calls)) if math.isfinite(calls) else None
        out[f"{role}_tokens"] = int(round(tokens)) if math.isfinite(tokens) else None
        if role != "judge" and math.isfinite(tokens):
            served += tokens
    if throughput:
        out["gpu_hours"] = served / throughput / 3600
        if gpu_price is not None:
            out["gpu_dollars"] = out["gpu_hours"] * gpu_price
    if judge_price is not None and out.get("judge_tokens") is not None:
        out["judge_dollars"] = out["judge_tokens"] / 1e6 * judge_price
    if "gpu_dollars" in out or "judge_dollars" in out:
        out["dollars"] = out.get("gpu_dollars", 0.0) + out.get("judge_dollars", 0.0)
    return out


# ---- inputs from a pilot run ------------------------------------------------------------------


def family_inputs(grid, components, *, dialogues: dict[str, dict[str, float]] | None = None,
                  bank_questions: dict[str, int] | None = None, kinds: Sequence[str] = ("pedagogical",),
                  n_boot: int = DEFAULT_N_BOOT) -> list[FamilyInputs]:
    """One :class:`FamilyInputs` per (tutor, metric kind) headline family of a pilot's ``grid``
    (``params.analyse``), with the within-question share from ``components``
    (``replicates.variance_components``; median over the family's metrics and cells).
    ``dialogues``: per task ``{"questions", "dialogues", "<role>_calls", "<role>_prompt_tokens",
    "<role>_completion_tokens"}`` (the pilot's counts; ``dialogues`` at k = 1 per question);
    ``bank_questions``: per task the questions the bank offers; ``n_boot``: the audit's bootstrap
    size (:meth:`FamilyInputs.certify_se_n`)."""
    out = []
    head = grid[grid["headline"].astype(bool) & grid["sufficient"].astype(bool)]
    for (tutor, kind), fam in head.groupby(["tutor", "metric_kind"], sort=True):
        if kind not in kinds:
            continue
        n = fam["n_pairs"].to_numpy(dtype=float)
        v0 = fam["null_var_r"].to_numpy(dtype=float)
        se = equivalence_se(fam["r"].to_numpy(dtype=float), n, fam["boot_sd"].to_numpy(dtype=float), v0)
        units = fam.groupby(["domain", "condition", "contrast", "dimension", "kind", "metric"]).ngroups
        share, src = 0.0, "not measured"
        if components is not None and len(components):
            comp = components[(components["tutor"] == tutor) & components["metric"].isin(set(fam["metric"]))]
            if len(comp) and comp["share_within"].notna().any():
                share = float(comp["share_within"].median())
                src = ", ".join(sorted(set(comp["source"])))
        per_q, per_role, bank = _pilot_costs(fam, dialogues, bank_questions)
        out.append(FamilyInputs(
            tutor=str(tutor), kind=str(kind), rows=len(fam), units=int(units),
            pairs_per_unit=int(np.median(fam["unit_pairs"])) if "unit_pairs" in fam.columns else 1,
            null_var_n=float(np.nanmedian(v0 * n)), se_n=float(np.nanmedian(se * np.sqrt(n))),
            within_share=share, within_source=src, dialogues_per_question=per_q, tasks=1,
            bank_questions=bank, pilot_questions=float(np.median(n)), per_dialogue=per_role,
            boot_se_n=float(np.nanmedian(fam["boot_sd"].to_numpy(dtype=float) * np.sqrt(n))), n_boot=int(n_boot)))
    return out


def _pilot_costs(fam, dialogues, bank_questions) -> tuple[float, dict[str, dict[str, float]], int | None]:
    """(dialogues per question summed over the family's tasks, per-role counts per dialogue, the
    fewest questions a task's bank offers)."""
    if not dialogues:
        return float(fam.groupby(["condition", "domain"]).ngroups * 2), {}, None
    per_q = sum(d["dialogues"] / max(d["questions"], 1) for d in dialogues.values())
    total = sum(d.get("actual", d["dialogues"]) for d in dialogues.values())
    per_role: dict[str, dict[str, float]] = {}
    for role in ROLES:
        have = [d for d in dialogues.values() if f"{role}_calls" in d]
        if have and total:
            per_role[role] = {name: sum(d.get(f"{role}_{name}", 0.0) for d in have) / total
                              for name in ("calls", "prompt_tokens", "completion_tokens")}
    bank = min(bank_questions.values()) if bank_questions else None
    return per_q, per_role, bank


def pilot_dialogues(run) -> dict[str, dict[str, float]]:
    """Per task of a loaded pilot ``run`` (``runlog.Run``): its questions, dialogues per question
    at k = 1 (``dialogues``), the dialogues it ran (``actual``) and each role's measured calls and
    tokens (``results_*.json``'s ``edufair_calls``)."""
    out: dict[str, dict[str, float]] = {}
    by_task: dict[str, list] = {}
    for s in run.scores:
        by_task.setdefault(s.task, []).append(s)
    for task, scores in sorted(by_task.items()):
        k = max(s.replicate for s in scores)
        row: dict[str, float] = {"questions": len({s.question_id for s in scores}), "dialogues": len(scores) / k,
                                 "actual": len(scores)}
        for role, counts in (run.call_counts.get(task) or {}).items():
            if role in ROLES and isinstance(counts, dict):
                row[f"{role}_calls"] = float(counts.get("requests") or 0)
                for name in ("prompt_tokens", "completion_tokens"):
                    if counts.get(name) is not None:
                        row[f"{role}_{name}"] = float(counts[name])
        out[task] = row
    return out


def check_pilot(run, *, judge_model: str | None) -> None:
    """Refuse a pilot that cannot predict the audit: records of another protocol version than this
    EduFair's, or judged by another judge model than the audit's (``judge_model``; None: not checked)."""
    from edufair_metrics.runlog.runs import check_protocol

    check_protocol([run])
    judged = sorted((run.compat.get("judge model") or {}).keys())
    if judge_model is not None and judged and judged != [str(judge_model)]:
        raise EduFairError(f"{run.model_dir}: the pilot was judged by {', '.join(judged)}, the audit's judge is "
                           f"{judge_model}: another judge has another noise and other missing labels; run the pilot "
                           "with the audit's judge (or pass --judge-model to plan for the pilot's)")


def bank_sizes(run, bank_dir: str | None = None) -> dict[str, int]:
    """Per task of ``run`` the questions its domain's bank offers."""
    from edufair_metrics.bank import load_bank

    domains = {s.task: s.domain for s in run.scores}
    sizes: dict[str, int] = {}
    cache: dict[str, int] = {}
    for task, domain in domains.items():
        if domain not in cache:
            try:
                cache[domain] = len(load_bank(domain, bank_dir))
            except EduFairError:
                continue
        sizes[task] = cache[domain]
    return sizes


def plan_from_pilot(run, goal: PlanGoal, params, *, judge_model: str | None = None, bank_dir: str | None = None,
                    kinds: Sequence[str] = ("pedagogical",), throughput: float | None = None,
                    gpu_price: float | None = None, judge_price: float | None = None) -> list[FamilyPlan]:
    """The plan of every headline family of a pilot ``run`` (``runlog.load_run``) for ``goal``
    (``params``: the report's statistics, ``analysis.params.StatParams``)."""
    from edufair_metrics.analysis.frames import scores_frame
    from edufair_metrics.analysis.params import analyse
    from edufair_metrics.analysis.replicates import variance_components

    goal.validate()
    check_pilot(run, judge_model=judge_model)
    df, grid, _units = analyse([run], params)
    replicated = any(s.replicate != 1 for s in run.scores)
    raw = scores_frame([run], keep_failed=params.keep_failed_dialogues, replicates="keep") if replicated else df
    components = variance_components(raw, cost_ratio=goal.cost_ratio)
    inputs = family_inputs(grid, components, dialogues=pilot_dialogues(run), bank_questions=bank_sizes(run, bank_dir),
                           kinds=kinds, n_boot=params.n_boot)
    if not inputs:
        raise EduFairError(f"{run.model_dir}: the pilot has no sufficient headline row of kind {', '.join(kinds)} "
                           f"(at least {params.min_pairs} paired questions per contrast): run a larger pilot")
    return [plan_family(i, goal, throughput=throughput, gpu_price=gpu_price, judge_price=judge_price) for i in inputs]


def assumed_inputs(*, rows: int = 1, units: int | None = None, pairs_per_unit: int = 1,
                   null_var_n: float = NO_TIES_NULL_VAR_N, within_share: float = 0.0,
                   dialogues_per_question: float = 2.0, bank_questions: int | None = None,
                   n_boot: int = DEFAULT_N_BOOT) -> FamilyInputs:
    """A family from stated assumptions (no pilot): ``rows`` headline rows in ``units`` units
    (default one per row), a Wilcoxon null without ties (``null_var_n`` = 4/3) and the standard
    error of r it implies at r = 0 (``se · √n = √null_var_n``)."""
    if rows < 1 or (units is not None and units < 1) or pairs_per_unit < 1:
        raise EduFairError("--rows, --units and --pairs-per-unit must be >= 1")
    if not 0 <= within_share < 1:
        raise EduFairError(f"--within-share must lie in [0, 1), got {within_share}")
    return FamilyInputs(tutor="(assumed)", kind="pedagogical", rows=rows, units=units or rows,
                        pairs_per_unit=pairs_per_unit, null_var_n=null_var_n, se_n=math.sqrt(null_var_n),
                        within_share=within_share, within_source="stated" if within_share else "not measured",
                        dialogues_per_question=dialogues_per_question, bank_questions=bank_questions, source="assumptions",
                        n_boot=int(n_boot))
