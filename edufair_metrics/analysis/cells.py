"""The one pairing of EduFair: the long score frame as question × level matrices, and the paired
differences of a contrast within one of them.

A *cell* is one (tutor, domain, condition, metric): :class:`CellMatrix` holds its scores with one
row per question and one column per condition level (NaN = no score). :func:`pair_differences`
turns a cell and a protocol contrast into the per-question differences ``d`` of each of the
contrast's pairs. The contrast grid (``analysis.grid``), the baseline-vs-candidate gate
(``analysis.compare``) and the leaderboard's rank intervals (``analysis.ranks``) all pair questions
through it, so they cannot drift apart:

* a side with one level is that level's column; a side with several levels (Opposite's effects)
  is their per-question mean, NaN if any of them is missing;
* ``d = a − b`` per question, NaN where a question lacks a level of the pair;
* a multilevel contrast (SES Friedman) uses only the questions that have *every* level of the
  contrast (Friedman's complete blocks), for all its pairs;
* a names contrast (many names per group) uses the names of each side the cell has, in each
  stratum (:func:`names_design`): per question the mean over the strata of (mean of side a's names
  − mean of side b's names), on the questions that have every one of those names;
* ``d`` is rounded by ``engine.round_diffs`` (12 decimals), so that equal rates tie exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np

from edufair_metrics.analysis.engine import round_diffs
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.contrasts import ContrastSpec

CELL_KEYS = ("tutor", "domain", "condition", "metric")
SCORE_COLUMNS = ("tutor", "domain", "condition", "level", "question_id", "metric", "value")


@dataclass(frozen=True)
class CellMatrix:
    """One (tutor, domain, condition, metric) cell: ``values[q, j]`` = score of question
    ``questions[q]`` at level ``levels[j]`` (NaN = missing). Questions and levels sorted; only
    levels with at least one value in the cell."""

    key: tuple
    questions: np.ndarray
    levels: tuple[str, ...]
    values: np.ndarray
    # further per-dialogue columns aligned with ``values`` (``cell_matrices(..., extras=...)``:
    # the turn counts n_applicable / n_positive of the turn-level test, analysis.turns)
    extras: dict = field(default_factory=dict, compare=False, repr=False)

    def column(self, level: str) -> np.ndarray:
        return self.values[:, self.levels.index(level)]

    def side(self, levels: Sequence[str]) -> np.ndarray:
        """Per-question score of one side of a pair: the level's column, or the mean of several
        levels (NaN when any is missing)."""
        if len(levels) == 1:
            return self.column(levels[0])
        return self.values[:, [self.levels.index(x) for x in levels]].mean(axis=1)

    def has(self, levels: Iterable[str]) -> bool:
        return all(lv in self.levels for lv in levels)

    def spread(self, d: np.ndarray, questions: np.ndarray) -> np.ndarray:
        """``d`` (one value per question of the cell) placed on ``questions`` (sorted strings, a
        superset of the cell's), NaN at the questions the cell does not have."""
        questions = np.asarray(questions)
        if questions.dtype.kind != "U":
            questions = questions.astype(str)
        mine = self.questions.astype(str)
        pos = np.searchsorted(questions, mine)
        if mine.size and (pos.max() >= questions.size or not np.array_equal(questions[pos], mine)):
            raise EduFairError(f"cell {self.key} has questions outside the given question set")
        out = np.full(questions.size, np.nan)
        out[pos] = d
        return out


Pair = tuple[tuple[str, ...], tuple[str, ...], str, np.ndarray]  # (a levels, b levels, pair label, d)


@dataclass(frozen=True)
class NamesDesign:
    """The names of a names contrast that one cell has: per name its column in the cell, side
    ("a"/"b"), stratum and weight (+1 / (S · k) on side a, −1 / (S · k) on side b: k names of that
    side in the stratum, S strata), and the questions that have every one of them."""

    levels: tuple[str, ...]
    columns: np.ndarray
    sides: tuple[str, ...]
    strata: tuple[str, ...]
    weights: np.ndarray
    complete: np.ndarray  # per question of the cell

    @property
    def a(self) -> tuple[str, ...]:
        return tuple(lv for lv, s in zip(self.levels, self.sides) if s == "a")

    @property
    def b(self) -> tuple[str, ...]:
        return tuple(lv for lv, s in zip(self.levels, self.sides) if s == "b")

    def cells(self) -> dict[tuple[str, str], np.ndarray]:
        """(side, stratum) -> positions in ``levels`` of its names."""
        out: dict[tuple[str, str], list[int]] = {}
        for i, key in enumerate(zip(self.sides, self.strata)):
            out.setdefault(key, []).append(i)
        return {k: np.asarray(v) for k, v in out.items()}


def names_design(cell: CellMatrix, spec: ContrastSpec) -> NamesDesign | None:
    """The :class:`NamesDesign` of a names ``spec`` in ``cell``: the strata where the cell has at
    least one name of each side (others are left out); None when no stratum is left."""
    have = set(cell.levels)
    by_stratum: dict[str, dict[str, list[str]]] = {}
    for side, stratum, lvs in spec.cells:
        present = [lv for lv in lvs if lv in have]
        if present:
            by_stratum.setdefault(stratum, {}).setdefault(side, []).extend(present)
    strata = [s for s, sides in by_stratum.items() if sides.get("a") and sides.get("b")]
    if not strata:
        return None
    levels, sides, names_strata, weights = [], [], [], []
    for s in strata:
        for side, sign in (("a", 1.0), ("b", -1.0)):
            members = by_stratum[s][side]
            for lv in members:
                levels.append(lv)
                sides.append(side)
                names_strata.append(s)
                weights.append(sign / (len(strata) * len(members)))
    columns = np.asarray([cell.levels.index(lv) for lv in levels])
    complete = ~np.isnan(cell.values[:, columns]).any(axis=1)
    return NamesDesign(tuple(levels), columns, tuple(sides), tuple(names_strata), np.asarray(weights), complete)


def pair_differences(cell: CellMatrix, spec: ContrastSpec) -> Iterator[Pair]:
    """``(a levels, b levels, pair label, d)`` for each pair of ``spec`` whose levels ``cell`` has
    (a multilevel spec: none unless the cell has all its levels; a names spec: the names the cell
    has, :func:`names_design`). ``d`` runs over the cell's questions: mean of a − mean of b, NaN
    where a question lacks a level (for a multilevel spec, any of its levels: Friedman's complete
    blocks; for a names spec, any of its names), rounded by ``engine.round_diffs``."""
    if spec.kind == "names":
        design = names_design(cell, spec)
        if design is not None:
            d = cell.values[:, design.columns] @ design.weights
            yield design.a, design.b, spec.dimension, round_diffs(np.where(design.complete, d, np.nan))
        return
    complete = None
    if spec.kind == "multilevel":
        if not cell.has(spec.levels):
            return
        complete = _complete(cell, spec.levels)
    for a_lv, b_lv in spec.pairs:
        if not cell.has(a_lv + b_lv):
            continue
        d = cell.side(a_lv) - cell.side(b_lv)
        if complete is not None:
            d = np.where(complete, d, np.nan)
        yield a_lv, b_lv, spec.pair_label(a_lv, b_lv), round_diffs(d)


def _complete(cell: CellMatrix, levels: Sequence[str]) -> np.ndarray:
    return ~np.isnan(cell.values[:, [cell.levels.index(x) for x in levels]]).any(axis=1)


def complete_blocks(cell: CellMatrix, spec: ContrastSpec) -> np.ndarray | None:
    """Scores of a multilevel ``spec``'s complete blocks: the questions of ``cell`` with every
    level of ``spec.levels`` × those levels (the Friedman test's input, the questions of the
    spec's :func:`pair_differences`); None when the cell lacks a level."""
    if not cell.has(spec.levels):
        return None
    return cell.values[_complete(cell, spec.levels)][:, [cell.levels.index(x) for x in spec.levels]]


def contrast_pairs(cells: Iterable[CellMatrix], contrasts: Sequence[ContrastSpec]):
    """``(cell, spec, a levels, b levels, pair label, d)`` for every cell, every contrast of the
    cell's condition (in ``contrasts`` order) and every pair of it (:func:`pair_differences`)."""
    by_cond: dict[str, list[ContrastSpec]] = {}
    for spec in contrasts:
        by_cond.setdefault(spec.condition, []).append(spec)
    for cell in cells:
        for spec in by_cond.get(cell.key[2], ()):
            for a_lv, b_lv, label, d in pair_differences(cell, spec):
                yield cell, spec, a_lv, b_lv, label, d


def cell_matrices(df, extras: Sequence[str] = ()) -> list[CellMatrix]:
    """The cells of a long score frame (columns ``SCORE_COLUMNS``), in sorted key order, built
    with integer codes instead of a pandas pivot (which costs seconds on a paper-size grid): one
    row per question with a score row in the cell (sorted), one column per level with at least
    one value in it (sorted). Rows with a missing key are left out. Duplicate (tutor, domain,
    condition, metric, question_id, level) rows are an error. ``extras``: further numeric columns
    of ``df`` (present ones only) placed in ``CellMatrix.extras`` with the same rows and columns."""
    import pandas as pd

    missing = [c for c in SCORE_COLUMNS if c not in df.columns]
    if missing:
        raise EduFairError(f"score table lacks columns: {', '.join(missing)}")
    keys = ["tutor", "domain", "condition", "metric", "question_id", "level"]
    codes, uniques = [], []
    for col in keys:
        c, u = pd.factorize(df[col], sort=True, use_na_sentinel=False)  # NaN: a code of its own
        codes.append(c.astype(np.int64))
        uniques.append(np.asarray(u, dtype=object))
    values = pd.to_numeric(df["value"], errors="coerce").to_numpy(dtype=float)
    extra_vals = {c: pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float) for c in extras if c in df.columns}
    ok = ~df[list(CELL_KEYS)].isna().any(axis=1).to_numpy()  # as pandas groupby: missing keys dropped
    dims = [max(len(u), 1) for u in uniques]
    full = np.ravel_multi_index(tuple(codes), dims) if len(df) else np.zeros(0, dtype=np.int64)
    order = np.argsort(full, kind="stable")
    sf = full[order]
    dup_sorted = np.zeros(sf.size, dtype=bool)
    if sf.size > 1:
        same = sf[1:] == sf[:-1]
        dup_sorted[1:] |= same
        dup_sorted[:-1] |= same
    if dup_sorted.any():
        dup = np.zeros(len(df), dtype=bool)
        dup[order[dup_sorted]] = True
        first = df.loc[dup, keys].iloc[0].to_dict()
        raise EduFairError(f"duplicate dialogue scores for {first} ({int(dup.sum())} rows): pass each run once")
    order = order[ok[order]]
    n_q, n_lv = dims[4], dims[5]
    cell = full[order] // (n_q * n_lv)
    bounds = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1], True]) if order.size else np.array([0])
    qcode, lcode, vals = codes[4][order], codes[5][order], values[order]
    extra_sorted = {c: v[order] for c, v in extra_vals.items()}
    out: list[CellMatrix] = []
    for s, e in zip(bounds[:-1], bounds[1:]):
        qs, q_inv = np.unique(qcode[s:e], return_inverse=True)
        present = np.unique(lcode[s:e][~np.isnan(vals[s:e])])  # levels with a value
        mat = np.full((qs.size, n_lv), np.nan)
        mat[q_inv, lcode[s:e]] = vals[s:e]
        more = {}
        for c, v in extra_sorted.items():
            part = v[s:e]
            if np.isnan(part).all():
                continue
            em = np.full((qs.size, n_lv), np.nan)
            em[q_inv, lcode[s:e]] = part
            more[c] = em[:, present]
        key = tuple(uniques[k][v] for k, v in enumerate(np.unravel_index(cell[s], dims[:4])))
        out.append(CellMatrix(key, uniques[4][qs], tuple(str(x) for x in uniques[5][present]), mat[:, present], more))
    return out
