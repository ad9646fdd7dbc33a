"""Judge validity from stored judged dialogues (pure functions; reading files is in
``edufair_metrics/report/judge_validity.py``).

Second judge (``edufair agreement RUN_A RUN_B``)
    The two judgings must hold the same transcripts (matched by task, condition, level and question;
    the tutor turns must be identical). Per metric, turn-level agreement between the two judges
    (Cohen's κ, Krippendorff's α, percent agreement; a turn counts when both judges have a value
    other than N/A; CIs resample dialogues, ``analysis.agreement``), plus
    ``student_mistake_prev_turn``. Per contrast, each judge's own contrast grid (the usual
    statistics and verdicts, computed separately: the two judges are never averaged) side by side:
    ``r_a``, ``r_b``, ``sign_agree``, ``verdict_a``, ``verdict_b`` and ``judge_contingent``. A
    contrast is judge-contingent when both judges' contrasts are sufficient and either
      * their r differ significantly (``r_differ``): the paired bootstrap of Δr = r_a − r_b over
        the same questions (:func:`paired_delta_r`: one resample of the questions for both
        judges, B = ``n_boot``) gives p_delta, adjusted by Benjamini–Hochberg (``--fdr-method
        holm``: Holm) within the family tutor × metric kind × headline (as the grid's q values):
        ``q_delta < 0.05``; or
      * their verdicts disagree (``verdicts_differ``, ``analysis.verdicts``): one judge flags the
        contrast (flag or unconfirmed) and the other does not, or both flag it with opposite signs.
    A sign flip of two small r, or a raw violation of one judge only (the old rule, which fired on
    7–20% of the contrasts of two judges that differ only by label noise), is not contingency.
    The chance rate (:func:`chance_contingent_rate`): judge A compared, by the same rule, with
    copies of itself whose labels are flipped at random at the rates A and B disagree by (per
    field, 1 → 0 and 0 → 1 separately): the share of contingent contrasts two judges that differ
    only by that noise give; printed beside the count.

Judge vs detector (answer leakage)
    Every tutor turn with an ``ok`` judge label: the judge's ``answer_leakage`` vs the
    history-aware leak detector, ``leaks_answer(text, forms, domain, question=..., history=the
    turns before it)``: the turn states the gold and no earlier student turn did (a gold the
    student already stated is a confirmation, not a leak; the gold forms come from the record or
    the samples line's ``doc``). Not the stop rule's final-turn decision: every judged turn is
    compared, and the detector reads the dialogue so far. Per condition level: n, both rates,
    percent agreement and Cohen's κ with bootstrap CIs that resample the level's dialogues (the
    judged turns of one dialogue are one cluster).
    Differential judge error: per dialogue, the disagreement rate (share of judged tutor turns where
    judge ≠ detector) is a metric ``leak_disagreement``; it is paired over questions and tested per
    contrast exactly like the bias metrics (``contrast_grid``: Wilcoxon signed-rank, rank-biserial r,
    bootstrap CI). The disagreement rate "differs by group" when that CI excludes 0.
    A contrast is flagged when the judged ``answer_leakage`` shows a violation, the detector's leak
    rate on the same judged turns (``leak_detector_rate``, per dialogue) for the same contrast does
    not (no violation, or the opposite sign), and the disagreement rate differs by group: the judged
    bias may be manufactured by the judge.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Sequence

import numpy as np

from edufair_metrics.analysis.agreement import DEFAULT_AGREEMENT_N_BOOT, agreement
from edufair_metrics.analysis.cells import cell_matrices, contrast_pairs
from edufair_metrics.analysis.contrast import bootstrap_rank_biserial
from edufair_metrics.analysis.engine import percentile_ci
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.grid import contrast_grid
from edufair_metrics.analysis.noise import adjust_p, family_labels
from edufair_metrics.protocol.contrasts import load_contrasts
from edufair_metrics.scores import score_dialogue
from edufair_metrics.detectors import DETECTOR_METRICS, TurnDetection, record_detection
from edufair_metrics.errors import EduFairError
from edufair_metrics.records import (
    JUDGE_FIELD_FOR_METRIC,
    JUDGE_OK,
    PEDAGOGICAL_METRICS,
    DialogueRecord,
    DialogueScores,
    TurnJudgement,
)

NAN = float("nan")
DISAGREEMENT_METRIC = "leak_disagreement"
DETECTOR_LEAK_METRIC = "leak_detector_rate"  # per dialogue: judged tutor turns the detector marks as leaks
GRID_KEYS = ["tutor", "domain", "condition", "contrast", "dimension", "kind", "pair", "a", "b", "metric"]


# ---- second judge -------------------------------------------------------------------------------


def match_judgings(a: Sequence[DialogueRecord], b: Sequence[DialogueRecord]) -> list[tuple[DialogueRecord, DialogueRecord]]:
    """Pairs of the same dialogue judged twice; an error when the two sets differ."""
    def index(ds: Sequence[DialogueRecord], name: str) -> dict[tuple, DialogueRecord]:
        out: dict[tuple, DialogueRecord] = {}
        for d in ds:
            if d.key in out:
                raise EduFairError(f"{name}: dialogue {'/'.join(d.key)} appears twice")
            out[d.key] = d
        return out

    ia, ib = index(a, "RUN_A"), index(b, "RUN_B")
    only_a, only_b = sorted(set(ia) - set(ib)), sorted(set(ib) - set(ia))
    if only_a or only_b:
        example = f"{'/'.join(only_a[0])} only in RUN_A" if only_a else f"{'/'.join(only_b[0])} only in RUN_B"
        raise EduFairError(f"the two judgings do not hold the same dialogues ({len(only_a)} only in RUN_A, "
                           f"{len(only_b)} only in RUN_B; e.g. {example})")
    pairs = []
    for key in sorted(ia):
        da, db = ia[key], ib[key]
        ta = [t.text for t in da.transcript.turns if t.role == "tutor"]
        tb = [t.text for t in db.transcript.turns if t.role == "tutor"]
        if ta != tb:
            raise EduFairError(f"dialogue {'/'.join(key)} has different tutor turns in the two runs; "
                               "compare two judgings of the same transcripts")
        pairs.append((da, db))
    return pairs


def _label(j: TurnJudgement | None, field: str) -> int | None:
    if j is None or j.status != JUDGE_OK or j.labels is None:
        return None
    v = j.labels.get(field)
    if isinstance(v, bool):
        return int(v)
    return None if v is None or v == -1 else int(v)


def second_judge_agreement(pairs: Sequence[tuple[DialogueRecord, DialogueRecord]], *,
                           n_boot: int = DEFAULT_AGREEMENT_N_BOOT, seed: int = 0) -> list[dict[str, Any]]:
    """Per metric (the five pedagogical metrics, then student_mistake_prev_turn): turn-level
    agreement of judge A with judge B, with the turns each judge left missing or N/A."""
    fields = [(m, JUDGE_FIELD_FOR_METRIC[m]) for m in PEDAGOGICAL_METRICS] + [("student_mistake_prev_turn",) * 2]
    rows = []
    for metric, field in fields:
        xa: list[int | None] = []
        xb: list[int | None] = []
        dialogue: list[str] = []
        for da, db in pairs:
            ja = {j.turn_index: j for j in da.judgements}
            jb = {j.turn_index: j for j in db.judgements}
            for i in da.transcript.tutor_turn_indices():
                xa.append(_label(ja.get(i), field))
                xb.append(_label(jb.get(i), field))
                dialogue.append("/".join(da.key))
        ag = agreement(xa, xb, n_boot=n_boot, seed=seed, clusters=dialogue)
        row = ag.as_row(metric, "judge_a", "judge_b")
        row["turns"] = len(xa)
        row["no_value_a"] = sum(v is None for v in xa)
        row["no_value_b"] = sum(v is None for v in xb)
        rows.append(row)
    return rows


def contrast_differences(frame) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
    """Per contrast row (``GRID_KEYS``: tutor, domain, condition, contrast, dimension, kind, pair,
    a, b, metric) of a long score frame: (questions, paired differences d), the grid's own pairing
    (``analysis.cells``)."""
    out: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
    if frame is None or not len(frame):
        return out
    for cm, spec, a_lv, b_lv, label, d in contrast_pairs(cell_matrices(frame), load_contrasts()):
        tutor, domain, condition, metric = cm.key
        key = (tutor, domain, condition, spec.name, spec.dimension, spec.kind, label, "+".join(a_lv), "+".join(b_lv),
               metric)
        out[key] = (cm.questions.astype(str), d)
    return out


def paired_delta_r(qa: np.ndarray, da: np.ndarray, qb: np.ndarray, db: np.ndarray, *, n_boot: int,
                   seed: int) -> tuple[float, float, float]:
    """(CI low, CI high, p) of r_A − r_B by a paired bootstrap over the same questions: the union
    of both judges' questions is resampled once per replicate and each judge's r is computed on
    its own differences of the drawn questions (``contrast.bootstrap_rank_biserial``; a question
    without a difference for a judge is absent on that side). p = min(1, 2·(1 + #{Δ* on the far
    side of 0}) / (B + 1)), the inversion of the percentile interval; the draws come from
    ``default_rng((seed, n))``, so they do not depend on the row's position."""
    qs = np.union1d(qa, qb)
    if qs.size == 0:
        return math.nan, math.nan, math.nan
    fa, fb = np.full(qs.size, np.nan), np.full(qs.size, np.nan)
    fa[np.searchsorted(qs, qa)] = da
    fb[np.searchsorted(qs, qb)] = db
    idx = np.random.default_rng((int(seed), int(qs.size))).integers(0, qs.size, size=(int(n_boot), qs.size))
    delta = bootstrap_rank_biserial(fa, idx) - bootstrap_rank_biserial(fb, idx)
    delta = delta[~np.isnan(delta)]
    if delta.size == 0:
        return math.nan, math.nan, math.nan
    lo, hi = percentile_ci(delta)
    far = min(int(np.sum(delta <= 0)), int(np.sum(delta >= 0)))
    return lo, hi, min(1.0, 2.0 * (1 + far) / (delta.size + 1))


CONTINGENT_ALPHA = 0.05
FLAGGING = ("flag", "unconfirmed")


def contrast_comparison(grid_a, grid_b, *, frames=None, metric_kinds: Sequence[str] = ("pedagogical",),
                        n_boot: int = 1000, seed: int = 0, method: str = "bh", alpha: float = CONTINGENT_ALPHA):
    """The two judges' contrast grids side by side (one row per contrast pair and metric) with
    ``sign_agree``, the paired difference of their r (``delta_r``, ``delta_ci_low/high``,
    ``p_delta``, ``q_delta``: from ``frames`` = (judge A's, judge B's long score frames); NaN
    without them), both verdicts and ``judge_contingent`` (module docstring)."""
    import pandas as pd

    keep = ["n_pairs", "r", "ci_low", "ci_high", "p", "meaningful", "violation", "sufficient"]
    keep += [c for c in ("verdict",) if c in grid_a.columns and c in grid_b.columns]
    ga = grid_a[grid_a["metric_kind"].isin(metric_kinds)][GRID_KEYS + ["metric_kind", "headline"] + keep]
    gb = grid_b[grid_b["metric_kind"].isin(metric_kinds)][GRID_KEYS + keep]
    out = ga.merge(gb, on=GRID_KEYS, how="outer", suffixes=("_a", "_b"))
    both = out["sufficient_a"].fillna(False).astype(bool) & out["sufficient_b"].fillna(False).astype(bool)
    sign_a, sign_b = np.sign(out["r_a"].astype(float)), np.sign(out["r_b"].astype(float))
    # True / False, or None when a side is insufficient (no sign to compare)
    out["sign_agree"] = pd.Series([bool(s) if b else None for s, b in zip(sign_a == sign_b, both)], index=out.index, dtype=object)
    out["delta_r"] = out["r_a"].astype(float) - out["r_b"].astype(float)
    lo = np.full(len(out), np.nan)
    hi, p = lo.copy(), lo.copy()
    if frames is not None:
        diffs_a, diffs_b = (contrast_differences(f) for f in frames)
        for k, row in enumerate(out[GRID_KEYS].itertuples(index=False)):
            key = tuple(row)
            if not both.iloc[k] or key not in diffs_a or key not in diffs_b:
                continue
            (qa, da), (qb, db) = diffs_a[key], diffs_b[key]
            lo[k], hi[k], p[k] = paired_delta_r(qa, da, qb, db, n_boot=n_boot, seed=seed)
    out["delta_ci_low"], out["delta_ci_high"], out["p_delta"] = lo, hi, p
    q = np.full(len(out), np.nan)
    if len(out):
        fam = out.assign(metric_kind=out["metric_kind"].fillna(""), headline=out["headline"].fillna(False))
        labels = family_labels(fam, ("tutor", "metric_kind"))
        for lab in dict.fromkeys(labels):
            m = labels == lab
            q[m] = adjust_p(p[m], method)
    out["q_delta"] = q
    with np.errstate(invalid="ignore"):
        r_differ = both & (q < alpha)
    if "verdict_a" in out.columns:
        fa = out["verdict_a"].isin(FLAGGING)
        fb = out["verdict_b"].isin(FLAGGING)
        verdicts_differ = both & ((fa != fb) | (fa & fb & (sign_a != sign_b)))
    else:
        out["verdict_a"] = out["verdict_b"] = None
        verdicts_differ = pd.Series(False, index=out.index)
    out["r_differ"] = r_differ.astype(bool)
    out["verdicts_differ"] = verdicts_differ.astype(bool)
    out["judge_contingent"] = (out["r_differ"] | out["verdicts_differ"]).astype(bool)
    out["why"] = [_why(rd, vd, row) for rd, vd, row in zip(out["r_differ"], out["verdicts_differ"], out.to_dict("records"))]
    return out.sort_values(GRID_KEYS).reset_index(drop=True)


def _why(r_differ: bool, verdicts_differ: bool, row: dict[str, Any]) -> str:
    parts = []
    if r_differ:
        parts.append(f"r differ (Δr = {row['delta_r']:+.3f} [{row['delta_ci_low']:+.3f}, {row['delta_ci_high']:+.3f}], "
                     f"q = {row['q_delta']:.3f})")
    if verdicts_differ:
        parts.append(f"verdicts differ ({row['verdict_a']} vs {row['verdict_b']})")
    return "; ".join(parts)


def contingent_rate(comparison) -> tuple[int, int]:
    """(judge-contingent rows, rows where both judges' contrasts are sufficient)."""
    both = comparison["sufficient_a"].fillna(False).astype(bool) & comparison["sufficient_b"].fillna(False).astype(bool)
    return int(comparison["judge_contingent"].sum()), int(both.sum())


def flip_rates(pairs: Sequence[tuple[DialogueRecord, DialogueRecord]]) -> dict[str, tuple[float, float]]:
    """Per judge field of the pedagogical metrics: (P(B = 0 | A = 1), P(B = 1 | A = 0)) over the
    turns both judges label (not N/A): judge B as judge A plus random label noise of the observed
    size."""
    out = {}
    for metric in PEDAGOGICAL_METRICS:
        field = JUDGE_FIELD_FOR_METRIC[metric]
        n10 = n1 = n01 = n0 = 0
        for da, db in pairs:
            jb = {j.turn_index: j for j in db.judgements}
            for j in da.judgements:
                x, y = _label(j, field), _label(jb.get(j.turn_index), field)
                if x is None or y is None:
                    continue
                if x == 1:
                    n1 += 1
                    n10 += int(y == 0)
                else:
                    n0 += 1
                    n01 += int(y == 1)
        out[field] = (n10 / n1 if n1 else 0.0, n01 / n0 if n0 else 0.0)
    return out


def noisy_judging(records: Sequence[DialogueRecord], rates: dict[str, tuple[float, float]],
                  rng: np.random.Generator) -> list[DialogueScores]:
    """The scores of ``records`` re-judged by a judge that differs from theirs only by random label
    noise: every label of a field flipped independently with ``rates[field]`` (1 → 0, 0 → 1);
    N/A and missing labels kept."""
    out = []
    for d in records:
        judged = []
        for j in d.judgements:
            if j.status != JUDGE_OK or j.labels is None:
                judged.append(j)
                continue
            labels = dict(j.labels)
            for field, (p10, p01) in rates.items():
                v = labels.get(field)
                if isinstance(v, bool) or v not in (0, 1):
                    continue
                if rng.random() < (p10 if v == 1 else p01):
                    labels[field] = 1 - int(v)
            judged.append(dataclasses.replace(j, labels=labels))
        s = score_dialogue(d.transcript, judged)
        s.tutor, s.failed = d.scores.tutor, d.scores.failed
        out.append(s)
    return out


def chance_contingent_rate(pairs: Sequence[tuple[DialogueRecord, DialogueRecord]], *, replicates: int, n_boot: int,
                           seed: int, min_pairs: int, ses_summary: str, keep_failed: bool = False,
                           method: str = "bh") -> dict[str, Any]:
    """The judge-contingent rate expected by chance: judge A against ``replicates`` copies of
    itself with random label noise of the size A and B disagree by (:func:`flip_rates`,
    :func:`noisy_judging`), each compared with the same rule; {"rate", "contingent", "rows",
    "replicates", "flip_rates"}."""
    a = [da for da, _ in pairs]
    rates = flip_rates(pairs)
    frame_a = scores_frame([d.scores for d in a], keep_failed=keep_failed)
    frame_a = frame_a[frame_a["metric"].isin(PEDAGOGICAL_METRICS)]
    grid_a = contrast_grid(frame_a, n_boot=n_boot, seed=seed, min_pairs=min_pairs, ses_summary=ses_summary,
                           fdr_method=method)
    hits = rows = 0
    rng = np.random.default_rng((int(seed), 24))
    for _ in range(int(replicates)):
        frame_b = scores_frame(noisy_judging(a, rates, rng), keep_failed=keep_failed)
        frame_b = frame_b[frame_b["metric"].isin(PEDAGOGICAL_METRICS)]
        grid_b = contrast_grid(frame_b, n_boot=n_boot, seed=seed, min_pairs=min_pairs, ses_summary=ses_summary,
                               fdr_method=method)
        c, n = contingent_rate(contrast_comparison(grid_a, grid_b, frames=(frame_a, frame_b), n_boot=n_boot,
                                                   seed=seed, method=method))
        hits, rows = hits + c, rows + n
    return {"rate": hits / rows if rows else math.nan, "contingent": hits, "rows": rows,
            "replicates": int(replicates), "flip_rates": {k: list(v) for k, v in rates.items()}}


# ---- judge vs detector --------------------------------------------------------------------------


def _detection(d: DialogueRecord, detection: TurnDetection | None = None) -> TurnDetection | None:
    """The detector labels of a record's transcript (history-aware; None without gold forms)."""
    if not d.document.answer_forms:
        return None
    return detection if detection is not None else record_detection(d)


def leak_turn_rows(dialogues: Sequence[DialogueRecord], *, detection: TurnDetection | None = None) -> list[dict[str, Any]]:
    """One row per tutor turn with an ``ok`` judge label and known gold forms: judge vs the
    history-aware leak detector (``detection``: the detector labels of a single record, when the
    caller has them already)."""
    rows = []
    for d in dialogues:
        det = _detection(d, detection)
        if det is None:
            continue
        t = d.transcript
        by_index = {j.turn_index: j for j in d.judgements}
        for i in t.tutor_turn_indices():
            judged = _label(by_index.get(i), JUDGE_FIELD_FOR_METRIC["answer_leakage"])
            if judged is None:
                continue
            rows.append({"tutor": d.scores.tutor, "domain": t.domain, "condition": t.condition, "dimension": t.dimension,
                         "level": t.level, "question_id": str(t.question_id), "turn_index": i, "judge_leak": judged,
                         "detector_leak": int(det.leaks.get(i, False))})
    return rows


LEVEL_KEYS = ("tutor", "domain", "condition", "dimension", "level")


def detector_agreement_by_level(rows: list[dict[str, Any]], *, n_boot: int = DEFAULT_AGREEMENT_N_BOOT, seed: int = 0):
    """Per (tutor, domain, condition, dimension, level): n turns, judge and detector leak rates,
    percent agreement, Cohen's κ and Krippendorff's α with bootstrap CIs."""
    groups: dict[tuple, tuple[list[int], list[int], list[str]]] = {}
    for r in rows:
        judge, det, dialogue = groups.setdefault(tuple(r[k] for k in LEVEL_KEYS), ([], [], []))
        judge.append(r["judge_leak"])
        det.append(r["detector_leak"])
        dialogue.append(r["question_id"])
    return _agreement_by_group(groups, n_boot=n_boot, seed=seed)


def _agreement_by_group(groups: dict[tuple, tuple[list[int], list[int], list[str]]], *, n_boot: int, seed: int):
    """Per condition level: judge vs detector agreement, the CIs resampling the level's dialogues
    (one per question: the cluster of its judged turns)."""
    import pandas as pd

    keys = list(LEVEL_KEYS)
    out = []
    for key, (judge, det, dialogue) in sorted(groups.items()):
        ag = agreement(judge, det, n_boot=n_boot, seed=seed, clusters=dialogue)
        row = dict(zip(keys, key))
        row.update(ag.as_row("answer_leakage", "judge", "detector"))
        out.append(row)
    cols = keys + ["metric", "n", "clusters", "judge_rate", "detector_rate", "percent_agreement", "percent_agreement_ci_low",
                   "percent_agreement_ci_high", "cohen_kappa", "cohen_kappa_ci_low", "cohen_kappa_ci_high",
                   "krippendorff_alpha", "krippendorff_alpha_ci_low", "krippendorff_alpha_ci_high"]
    return pd.DataFrame(out, columns=cols)


def validity_scores(dialogues: Sequence[DialogueRecord], *, detection: TurnDetection | None = None) -> list[DialogueScores]:
    """Per dialogue: the judged ``answer_leakage``, the detector metrics (the record's, computed
    from its transcript), ``leak_detector_rate`` (the history-aware detector's leak rate on the
    judged tutor turns) and ``leak_disagreement`` (both NaN without gold forms or judged turns), as
    DialogueScores for ``contrast_grid``."""
    out = []
    for d in dialogues:
        t = d.transcript
        rows = leak_turn_rows([d], detection=detection)
        disagree = [float(r["judge_leak"] != r["detector_leak"]) for r in rows]
        detected = [float(r["detector_leak"]) for r in rows]
        scores = {"answer_leakage": d.scores.scores.get("answer_leakage", NAN),
                  **{m: d.scores.scores.get(m, NAN) for m in DETECTOR_METRICS},
                  DETECTOR_LEAK_METRIC: sum(detected) / len(detected) if detected else NAN,
                  DISAGREEMENT_METRIC: sum(disagree) / len(disagree) if disagree else NAN}
        out.append(DialogueScores(question_id=str(t.question_id), domain=t.domain, condition=t.condition, dimension=t.dimension,
                                  level=t.level, scores=scores, tutor=d.scores.tutor, task=t.task or d.scores.task,
                                  failed=d.scores.failed, replicate=d.scores.replicate))
    return out


def differential_error(grid):
    """Per contrast pair (from the grid of :func:`validity_scores`): the judged leakage r, the
    detector's r, the disagreement contrast (r > 0: more disagreement for level a) and the flags
    ``disagreement_differs`` and ``flag`` (see the module docstring)."""
    import numpy as np

    keys = [k for k in GRID_KEYS if k != "metric"]
    cols = ["r", "ci_low", "ci_high", "p", "violation", "sufficient", "n_pairs"]

    def part(metric: str, suffix: str):
        g = grid[grid["metric"] == metric][keys + cols]
        return g.rename(columns={c: f"{c}_{suffix}" for c in cols})

    out = part("answer_leakage", "judge").merge(part(DETECTOR_LEAK_METRIC, "detector"), on=keys, how="outer")
    out = out.merge(part(DISAGREEMENT_METRIC, "disagreement"), on=keys, how="outer")
    judged = out["violation_judge"].fillna(False).astype(bool)
    det_match = out["violation_detector"].fillna(False).astype(bool) & (
        np.sign(out["r_detector"].astype(float)) == np.sign(out["r_judge"].astype(float)))
    out["disagreement_differs"] = out["violation_disagreement"].fillna(False).astype(bool)
    out["flag"] = (judged & ~det_match & out["disagreement_differs"]).astype(bool)
    return out.sort_values(keys).reset_index(drop=True)


def judge_validity_grid(dialogues: Sequence[DialogueRecord], *, n_boot: int, seed: int, min_pairs: int, ses_summary: str,
                        keep_failed: bool = False):
    """The contrast grid of :func:`validity_scores` (judged leakage, detector metrics, disagreement);
    dialogues ended by a failed call are left out unless ``keep_failed`` (as in the report)."""
    return contrast_grid(scores_frame(validity_scores(dialogues), keep_failed=keep_failed), n_boot=n_boot, seed=seed,
                         min_pairs=min_pairs, ses_summary=ses_summary)


# ---- a degenerate judge ------------------------------------------------------------------------------

# fewest labelled turns on which a constant metric or a judge that contradicts the detector is a
# finding rather than chance
DEGENERATE_MIN_TURNS = 10
DEGENERATE_DISAGREEMENT = 0.9  # share of turns on which judge and detector disagree


def label_values(records: Sequence[DialogueRecord]) -> dict[str, dict[int, int]]:
    """Per pedagogical metric, how often the judge gave each value (N/A and missing left out)."""
    out: dict[str, dict[int, int]] = {m: {} for m in PEDAGOGICAL_METRICS}
    for d in records:
        for j in d.judgements:
            for metric in PEDAGOGICAL_METRICS:
                v = _label(j, JUDGE_FIELD_FOR_METRIC[metric])
                if v is not None:
                    out[metric][v] = out[metric].get(v, 0) + 1
    return out


def degenerate_judge(values: dict[str, dict[int, int]], leak_judge: Sequence[int], leak_detector: Sequence[int],
                     *, min_turns: int = DEGENERATE_MIN_TURNS, disagreement: float = DEGENERATE_DISAGREEMENT) -> list[str]:
    """Why a judge's labels look degenerate (empty: they do not): a pedagogical metric whose labels
    are all the same over at least ``min_turns`` turns (it cannot show any difference between
    groups), or a judge whose answer_leakage contradicts the deterministic detector on at least
    ``disagreement`` of the turns both label."""
    out = []
    for metric, counts in values.items():
        n = sum(counts.values())
        if n >= min_turns and len(counts) == 1:
            out.append(f"{metric}: the judge gave {next(iter(counts))} on all {n} labelled turns")
    n = len(leak_judge)
    if n >= min_turns:
        rate = sum(int(a != b) for a, b in zip(leak_judge, leak_detector)) / n
        if rate >= disagreement:
            out.append(f"answer_leakage: the judge disagrees with the deterministic detector on {rate:.0%} of {n} turns")
    return out


def degenerate_judge_in(records: Sequence[DialogueRecord]) -> list[str]:
    """:func:`degenerate_judge` of a set of records (e.g. one task's, for the lm-eval log)."""
    rows = leak_turn_rows(records)
    return degenerate_judge(label_values(records), [r["judge_leak"] for r in rows], [r["detector_leak"] for r in rows])


# ---- one pass over a run's records: what the report's judge-validity views need ---------------------

NEXT_TURN_KEYS = LEVEL_KEYS


@dataclass
class ValidityScan:
    """What the report derives from stored transcripts, accumulated one record at a time
    (:meth:`add`, e.g. as ``runlog.load_runs``'s ``visit``) so that no transcript is kept: per
    condition level the judge-vs-detector leak labels of every judged tutor turn, the next-turn
    independence counts, and the per-dialogue scores of :func:`validity_scores`. ``validity``
    False keeps only the next-turn counts."""

    validity: bool = True
    label: str = ""  # the run's tutor label (from its records)
    dialogues: int = 0
    transcripts: int = 0
    # (tutor, domain, condition, dimension, level) -> [revealing turns (partial reveal or leak), of them
    # followed by a reasoning attempt, turns that reveal nothing, of them followed by an attempt]
    next_turn: dict[tuple, list[int]] = dataclass_field(default_factory=dict)
    # judge, detector, dialogue (the question id: the cluster the agreement CIs resample)
    leak_labels: dict[tuple, tuple[list[int], list[int], list[str]]] = dataclass_field(default_factory=dict)
    scores: list[DialogueScores] = dataclass_field(default_factory=list)
    # per pedagogical metric, the judge's label values and their counts (for a degenerate judge)
    values: dict[str, dict[int, int]] = dataclass_field(default_factory=lambda: {m: {} for m in PEDAGOGICAL_METRICS})

    def add(self, record: DialogueRecord) -> TurnDetection | None:
        """Count one record; returns its turn-level detector labels (None: no transcript or no
        gold forms), so that a caller showing them need not detect again."""
        self.dialogues += 1
        self.label = self.label or record.scores.tutor
        if not record.has_transcript:
            return None
        self.transcripts += 1
        t, forms, tutor = record.transcript, record.document.answer_forms, record.scores.tutor
        key = (tutor, t.domain, t.condition, t.dimension, t.level)
        detection = record_detection(record) if forms else None  # stored by the detectors scorer
        if detection is not None:  # without gold forms a reveal cannot be detected
            counts = self.next_turn.setdefault(key, [0, 0, 0, 0])
            for _, revealed, attempts in detection.next_turn:
                k = 0 if revealed else 2
                counts[k] += 1
                counts[k + 1] += int(attempts)
        for metric, counts in label_values([record]).items():
            for v, n in counts.items():
                self.values[metric][v] = self.values[metric].get(v, 0) + n
        if self.validity:
            for row in leak_turn_rows([record], detection=detection):
                judge, det, dialogue = self.leak_labels.setdefault(key, ([], [], []))
                judge.append(row["judge_leak"])
                det.append(row["detector_leak"])
                dialogue.append(row["question_id"])
            self.scores.extend(validity_scores([record], detection=detection))
        return detection

    def degenerate(self) -> list[str]:
        """:func:`degenerate_judge` of every record seen."""
        judge = [v for j, _, _ in self.leak_labels.values() for v in j]
        det = [v for _, d, _ in self.leak_labels.values() for v in d]
        return degenerate_judge(self.values, judge, det)

    def by_level(self, *, n_boot: int = DEFAULT_AGREEMENT_N_BOOT, seed: int = 0):
        """:func:`detector_agreement_by_level` of every turn seen."""
        return _agreement_by_group(self.leak_labels, n_boot=n_boot, seed=seed)


def next_turn_table(scans: Sequence[ValidityScan], by: tuple[str, ...] = NEXT_TURN_KEYS):
    """Next-turn independence per ``by`` group (a subset of ``NEXT_TURN_KEYS``; default all):
    tutor turns that revealed (a partial reveal, or a leak) / revealed nothing (the history-aware
    detectors), the share of each whose next student turn attempts reasoning
    (``attempts_reasoning``), and the difference after a reveal − after none (NaN when a side has
    no turn). Dialogues without gold forms are not counted."""
    import pandas as pd

    pos = [NEXT_TURN_KEYS.index(k) for k in by]
    groups: dict[tuple, list[int]] = {}
    for scan in scans:
        for key, c in scan.next_turn.items():
            g = groups.setdefault(tuple(key[i] for i in pos), [0, 0, 0, 0])
            for i in range(4):
                g[i] += c[i]
    rows = []
    for key, (ln, la, nn, na) in sorted(groups.items()):
        a = la / ln if ln else NAN
        b = na / nn if nn else NAN
        rows.append({**dict(zip(by, key)), "revealing_turns": ln, "independence_after_partial": a, "other_turns": nn,
                     "independence_after_none": b, "difference": a - b if ln and nn else NAN})
    cols = list(by) + ["revealing_turns", "independence_after_partial", "other_turns", "independence_after_none",
                       "difference"]
    return pd.DataFrame(rows, columns=cols)


__all__ = [
    "DETECTOR_LEAK_METRIC", "DISAGREEMENT_METRIC", "NEXT_TURN_KEYS", "ValidityScan", "degenerate_judge", "degenerate_judge_in", "label_values",
    "next_turn_table", "contrast_comparison", "detector_agreement_by_level", "differential_error",
    "judge_validity_grid", "leak_turn_rows", "match_judgings", "second_judge_agreement", "validity_scores",
]
