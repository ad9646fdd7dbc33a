"""Pair accounting: which paired questions a contrast lost, why, and whether it lost more of them
on one side (the pairs that remain are then a selected set, and their difference may be the
selection's, not the tutor's).

Dialogue status (per dialogue × metric; :func:`loss_cells`)
    * ``kept``: the dialogue has a value for the metric;
    * ``failed``: the dialogue was ended by a failed call and is left out of the contrasts (the
      default; with ``keep_failed_dialogues`` a failed dialogue is scored and never counts here);
    * ``missing_label``: no value, and at least one of its tutor turns has no judge label
      (pedagogical metrics only: the missing turn might have been applicable);
    * ``no_value``: no value otherwise: no applicable judged turn (the judge said N/A on every
      turn, e.g. ``mistake_recognize`` when the student made no mistake), or a metric undefined for
      the transcript (no student word, no gold forms, no turn of the kind it counts).
    A question without a dialogue at a level is *absent* there (not run, e.g. ``--limit``): it is
    in no pair and no count.

One side of a pair (a level, or Opposite's averaged side: a list of levels)
    Absent when any of its levels is absent; otherwise its status is the most severe of its levels'
    (failed > missing_label > no_value > kept): an averaged side is lost when any of its levels is.

Per contrast row (one pair × metric × tutor, domain, condition; :func:`pair_accounting`)
    ``pairs_all``: the questions where both sides are present (every level of a Friedman family,
    for its pair rows: the candidate complete blocks); ``pairs_kept``: those where both sides are
    kept (every level of the family), which equals the row's ``n_pairs``. ``lost_a_<cause>`` /
    ``lost_b_<cause>``: the questions of ``pairs_all`` whose side a / b has that status.
    The test (per cause c): exact McNemar on the paired indicators "side a lost by c" and "side b
    lost by c" over ``pairs_all``: the two-sided binomial test (p = 1/2) of the discordant
    questions, ``scipy.stats.binomtest``'s p, computed vectorised from ``binom.cdf`` (the same
    value: ``tests/analysis/test_pairloss.py``). ``loss_p_<cause>`` per cause (1 when no question
    is discordant).
    Decision rule (the multiplicity rule): ``loss_p`` = Bonferroni over the causes that occur in
    the row (at least one discordant question; the McNemar test conditions on that count, so the
    adjustment is valid given it), ``min(1, k_c · min_c loss_p_c)``; a Friedman pair row is also
    multiplied by its family's k pairs (as its post-hoc p is). ``differential_loss`` =
    ``loss_p < 0.05``; ``loss_cause`` names the cause of the smallest p, with the two counts and the adjusted p
    (``no_value 31 vs 0 lost (a vs b), p < 0.001``).
    No correction across rows: the note is read beside a verdict already selected (a flag), where
    a missed differential loss costs more than a spurious caveat.
Per unit (``units.csv``)
    A unit of k pairs: ``loss_p = min(1, k · min over its rows)`` (a Friedman family: the min of its
    rows, already adjusted), ``differential_loss`` = ``loss_p < 0.05``, ``loss_cause`` of its row
    with the smallest loss p; ``pairs_all`` / ``pairs_kept`` summed over its pairs (a Friedman
    family: of one pair, all its pairs share the blocks).

Per level (``levels.md``; :func:`level_loss_table`)
    The share of a level's dialogues that give no value to the contrasts, per metric: failed (left
    out), missing_label, no_value; their sum is the NaN share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from edufair_metrics.protocol.contrasts import ContrastSpec, load_contrasts
from edufair_metrics.records import PEDAGOGICAL_METRICS, DialogueScores

__all__ = [
    "CAUSES", "LOSS_ALPHA", "LOSS_COLUMNS", "UNIT_LOSS_COLUMNS", "LossCell", "add_pair_loss", "exact_mcnemar_p",
    "level_loss_table", "loss_cells", "pair_accounting", "unit_pair_loss",
]

KEPT, NO_VALUE, MISSING_LABEL, FAILED = 0, 1, 2, 3
CAUSES = ("failed", "missing_label", "no_value")  # the lost statuses, most severe first
CAUSE_CODE = {"failed": FAILED, "missing_label": MISSING_LABEL, "no_value": NO_VALUE}
LOSS_ALPHA = 0.05
ROW_KEYS = ["tutor", "domain", "condition", "contrast", "pair", "metric"]
LOSS_COLUMNS = (["pairs_all", "pairs_kept"]
                + [f"lost_{s}_{c}" for c in CAUSES for s in ("a", "b")]
                + [f"loss_p_{c}" for c in CAUSES] + ["loss_p", "differential_loss", "loss_cause"])
UNIT_LOSS_COLUMNS = ["pairs_all", "pairs_kept", "loss_p", "differential_loss", "loss_cause"]


def exact_mcnemar_p(n_ab, n_ba) -> np.ndarray:
    """Two-sided exact McNemar p of the discordant counts (vectorised): the binomial test of
    ``n_ab`` successes in ``n_ab + n_ba`` trials at p = 1/2, ``min(1, 2 · P(X <= min(n_ab, n_ba)))``
    (the binomial at 1/2 is symmetric, so this is ``scipy.stats.binomtest``'s two-sided p); 1 when
    no pair is discordant."""
    from scipy.stats import binom

    n_ab = np.asarray(n_ab, dtype=float)
    n_ba = np.asarray(n_ba, dtype=float)
    m = n_ab + n_ba
    k = np.minimum(n_ab, n_ba)
    with np.errstate(invalid="ignore"):
        p = np.minimum(1.0, 2.0 * binom.cdf(k, m, 0.5))
    return np.where(m > 0, p, 1.0)


@dataclass(frozen=True)
class LossCell:
    """One (tutor, domain, condition, metric): ``codes[q, j]`` = the status of question
    ``questions[q]`` at level ``levels[j]`` (module docstring: 0 kept, 1 no_value, 2
    missing_label, 3 failed; NaN absent)."""

    key: tuple
    questions: np.ndarray
    levels: tuple[str, ...]
    codes: np.ndarray

    def side(self, levels: Sequence[str]) -> np.ndarray:
        """The status of one side per question: NaN when a level is absent (or not in the cell),
        else the most severe status of its levels."""
        cols = []
        for lv in levels:
            if lv not in self.levels:
                return np.full(self.questions.size, np.nan)
            cols.append(self.codes[:, self.levels.index(lv)])
        mat = np.column_stack(cols)
        return np.where(np.isnan(mat).any(axis=1), np.nan, np.nanmax(np.where(np.isnan(mat), -1, mat), axis=1))


def _dialogues(runs_or_scores: Iterable[Any]) -> list[DialogueScores]:
    out: list[DialogueScores] = []
    for x in runs_or_scores:
        out.extend([x] if isinstance(x, DialogueScores) else x.scores)
    return out


def loss_cells(runs_or_scores: Iterable[Any], *, keep_failed: bool = False,
               metrics: Sequence[str] | None = None) -> list[LossCell]:
    """The status cells of every (tutor, domain, condition) block and metric (``metrics``: those
    given, else every metric a dialogue scores), from runs (anything with ``.scores``) or
    DialogueScores, failed dialogues included. Questions and levels sorted, as in
    ``analysis.cells.cell_matrices``."""
    scores = _dialogues(runs_or_scores)
    if not scores:
        return []
    if metrics is None:
        metrics = list(dict.fromkeys(m for s in scores for m in s.scores))
    vals = np.array([[s.scores.get(m, math.nan) for m in metrics] for s in scores], dtype=float).reshape(len(scores), -1)
    failed = np.array([bool(s.failed) and not keep_failed for s in scores])
    missing = np.array([s.missing_turns > 0 for s in scores])
    ped = np.array([m in PEDAGOGICAL_METRICS for m in metrics])
    codes = np.where(np.isnan(vals), np.where(ped[None, :] & missing[:, None], MISSING_LABEL, NO_VALUE), KEPT)
    codes = np.where(failed[:, None], FAILED, codes).astype(float)
    blocks: dict[tuple, list[int]] = {}
    for i, s in enumerate(scores):
        blocks.setdefault((s.tutor, s.domain, s.condition), []).append(i)
    out: list[LossCell] = []
    for key in sorted(blocks, key=lambda k: tuple(map(str, k))):
        idx = np.asarray(blocks[key])
        qs, q_inv = np.unique(np.array([str(scores[i].question_id) for i in idx]), return_inverse=True)
        lvs, l_inv = np.unique(np.array([str(scores[i].level) for i in idx]), return_inverse=True)
        for j, metric in enumerate(metrics):
            mat = np.full((qs.size, lvs.size), np.nan)
            mat[q_inv, l_inv] = codes[idx, j]
            out.append(LossCell((*key, metric), qs, tuple(lvs.tolist()), mat))
    return out


def _spec_rows(cell: LossCell, spec: ContrastSpec):
    """(pair label, status a, status b, in pairs_all, all sides kept, k pairs) per pair of ``spec``."""
    present_all = None
    kept_all = None
    if spec.kind == "multilevel":
        if not all(lv in cell.levels for lv in spec.levels):
            return
        fam = np.column_stack([cell.codes[:, cell.levels.index(lv)] for lv in spec.levels])
        present_all = ~np.isnan(fam).any(axis=1)
        kept_all = present_all & (np.nan_to_num(fam, nan=-1) == KEPT).all(axis=1)
    for a_lv, b_lv in spec.pairs:
        if not all(lv in cell.levels for lv in a_lv + b_lv):
            continue
        sa, sb = cell.side(a_lv), cell.side(b_lv)
        if present_all is None:
            present = ~np.isnan(sa) & ~np.isnan(sb)
            kept = present & (sa == KEPT) & (sb == KEPT)
        else:
            present, kept = present_all, kept_all
        yield spec.pair_label(a_lv, b_lv), sa, sb, present, kept, (len(spec.pairs) if spec.kind == "multilevel" else 1)


def pair_accounting(cells: Sequence[LossCell], contrasts: Sequence[ContrastSpec] | None = None):
    """One row per contrast pair × cell (columns ``ROW_KEYS`` + ``LOSS_COLUMNS``; the module
    docstring's definitions)."""
    import pandas as pd

    if contrasts is None:
        contrasts = load_contrasts()
    by_cond: dict[str, list[ContrastSpec]] = {}
    for spec in contrasts:
        by_cond.setdefault(spec.condition, []).append(spec)
    rows: list[dict[str, Any]] = []
    for cell in cells:
        tutor, domain, condition, metric = cell.key
        for spec in by_cond.get(condition, ()):
            for label, sa, sb, present, kept, k_pairs in _spec_rows(cell, spec):
                row: dict[str, Any] = {"tutor": tutor, "domain": domain, "condition": condition, "contrast": spec.name,
                                       "pair": label, "metric": metric, "pairs_all": int(present.sum()),
                                       "pairs_kept": int(kept.sum()), "_k": k_pairs}
                for c in CAUSES:
                    la, lb = present & (sa == CAUSE_CODE[c]), present & (sb == CAUSE_CODE[c])
                    row[f"lost_a_{c}"], row[f"lost_b_{c}"] = int(la.sum()), int(lb.sum())
                    row[f"_ab_{c}"], row[f"_ba_{c}"] = int((la & ~lb).sum()), int((lb & ~la).sum())
                rows.append(row)
    cols = ROW_KEYS + LOSS_COLUMNS
    if not rows:
        return pd.DataFrame(columns=cols)
    out = pd.DataFrame(rows)
    pmat = np.column_stack([exact_mcnemar_p(out[f"_ab_{c}"], out[f"_ba_{c}"]) for c in CAUSES])
    occurs = np.column_stack([(out[f"_ab_{c}"] + out[f"_ba_{c}"]).to_numpy() > 0 for c in CAUSES])
    for j, c in enumerate(CAUSES):
        out[f"loss_p_{c}"] = pmat[:, j]
    k_c = np.maximum(occurs.sum(axis=1), 1)
    best = np.argmin(pmat, axis=1)
    loss_p = np.minimum(1.0, k_c * out["_k"].to_numpy() * pmat[np.arange(len(out)), best])
    out["loss_p"] = loss_p
    out["differential_loss"] = loss_p < LOSS_ALPHA
    out["loss_cause"] = [_cause_text(CAUSES[j], r, p) if p < LOSS_ALPHA else ""
                         for j, r, p in zip(best, out.to_dict("records"), loss_p)]
    return out[cols]


def _cause_text(cause: str, row: dict[str, Any], p: float) -> str:
    return f"{cause} {row[f'lost_a_{cause}']} vs {row[f'lost_b_{cause}']} lost (a vs b), {_p(p)}"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def unit_pair_loss(grid, keys: Sequence[str]):
    """Per unit (``keys`` of a grid with :data:`LOSS_COLUMNS`): ``UNIT_LOSS_COLUMNS`` (module
    docstring), indexed by ``keys`` in groupby order."""
    import pandas as pd

    multi = grid["kind"].to_numpy() == "multilevel"
    g = grid.assign(_multi=multi)
    gb = g.groupby(list(keys), sort=False, dropna=False)
    k = gb["loss_p"].count().clip(lower=1)
    pmin = gb["loss_p"].min()
    is_multi = gb["_multi"].any()
    loss_p = np.where(is_multi, pmin, np.minimum(1.0, k * pmin))
    first_all = gb["pairs_all"].max()
    first_kept = gb["pairs_kept"].max()
    pairs_all = np.where(is_multi, first_all, gb["pairs_all"].sum())
    pairs_kept = np.where(is_multi, first_kept, gb["pairs_kept"].sum())
    order = g.sort_values("loss_p", kind="stable").drop_duplicates(list(keys)).set_index(list(keys))["loss_cause"]
    cause = order.reindex(pmin.index).fillna("").to_numpy()
    with np.errstate(invalid="ignore"):
        differential = np.asarray(loss_p, dtype=float) < LOSS_ALPHA
    return pd.DataFrame({"pairs_all": pairs_all, "pairs_kept": pairs_kept, "loss_p": loss_p,
                         "differential_loss": differential,
                         "loss_cause": np.where(differential, cause, "")}, index=pmin.index)


def add_pair_loss(grid, units, accounting, unit_keys: Sequence[str]):
    """(grid, units) with the pair-accounting columns merged in (rows the accounting lacks: NaN
    counts, ``differential_loss`` False)."""
    import pandas as pd

    acc = accounting.drop_duplicates(ROW_KEYS)
    g = grid.drop(columns=[c for c in LOSS_COLUMNS if c in grid.columns])
    g = g.merge(acc, on=ROW_KEYS, how="left", validate="many_to_one")
    g.index = grid.index
    g["differential_loss"] = g["differential_loss"].fillna(False).astype(bool)
    g["loss_cause"] = g["loss_cause"].fillna("")
    u = units.drop(columns=[c for c in UNIT_LOSS_COLUMNS if c in units.columns])
    if len(g) and len(u):
        ul = unit_pair_loss(g, unit_keys)
        mi = pd.MultiIndex.from_frame(u[list(unit_keys)])
        ul = ul.reindex(mi)
        for c in UNIT_LOSS_COLUMNS:
            u[c] = ul[c].to_numpy()
        u["differential_loss"] = u["differential_loss"].fillna(False).astype(bool)
        u["loss_cause"] = u["loss_cause"].fillna("")
    else:
        for c in UNIT_LOSS_COLUMNS:
            u[c] = pd.Series(dtype=object)
    return g, u


def level_loss_table(runs_or_scores: Iterable[Any], *, keep_failed: bool = False,
                     metrics: Sequence[str] = PEDAGOGICAL_METRICS):
    """Per (tutor, domain, condition, dimension, level): dialogues and, per metric, the share of
    dialogues lost to the contrasts (``nan_<metric>``) and its parts (``failed`` share once,
    ``missing_label_<metric>``, ``no_value_<metric>``)."""
    import pandas as pd

    scores = _dialogues(runs_or_scores)
    keys = ["tutor", "domain", "condition", "dimension", "level"]
    cols = keys + ["dialogues", "failed"] + [f"{p}_{m}" for m in metrics for p in ("nan", "missing_label", "no_value")]
    if not scores:
        return pd.DataFrame(columns=cols)
    cells = {}
    for s in scores:
        key = (s.tutor, s.domain, s.condition, s.dimension, s.level)
        acc = cells.setdefault(key, {"dialogues": 0, "failed": 0, **{f"{p}_{m}": 0 for m in metrics
                                                                       for p in ("missing_label", "no_value")}})
        acc["dialogues"] += 1
        if s.failed and not keep_failed:
            acc["failed"] += 1
            continue
        for m in metrics:
            v = s.scores.get(m, math.nan)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                acc[f"{'missing_label' if s.missing_turns > 0 and m in PEDAGOGICAL_METRICS else 'no_value'}_{m}"] += 1
    rows = []
    for key, acc in cells.items():
        n = acc["dialogues"]
        row = dict(zip(keys, key), dialogues=n, failed=acc["failed"] / n)
        for m in metrics:
            ml, nv = acc[f"missing_label_{m}"] / n, acc[f"no_value_{m}"] / n
            row[f"nan_{m}"] = row["failed"] + ml + nv
            row[f"missing_label_{m}"], row[f"no_value_{m}"] = ml, nv
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)
