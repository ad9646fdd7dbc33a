"""The turn-level test of a pedagogical contrast: is the difference a difference *per judged turn*?

Why. A pedagogical score is a per-dialogue rate, ``value = n_positive / n_applicable`` over the
dialogue's applicable judged turns. Two levels with the same per-turn behaviour but different
dialogue lengths (one level's dialogues last 8–10 turns, the other's 1–2: a tutor that reveals the
answer early for one group) give rates that are distributed differently (near the per-turn rate
vs. 0, ½ or 1), and the signed-rank test on the per-dialogue differences finds that difference of
*shape* with |r| of 0.4–0.7. The difference is real, but it is a difference of dialogue length,
not of what the tutor does in a turn, and neither the noise floor nor the FDR can tell.

The test (per pedagogical grid row, on the row's own paired questions, i.e. where its difference
d is defined and both sides have turn counts). Question i is a stratum with a 2 × 2 table of
judged turns: side a has ``n_a`` applicable turns of which ``y_a`` positive, side b ``n_b`` and
``y_b`` (a side of several levels, Opposite's effects: the sums over its levels). With
``N = n_a + n_b`` and ``m = y_a + y_b``, the Mantel–Haenszel contribution of the question is

    c_i = y_a − n_a · m / N      (observed minus expected positives of side a)

* ``turn_rd``: the Mantel–Haenszel common rate difference per turn, ``Σ c_i / Σ n_a n_b / N``
  (> 0: side a has more positive turns per applicable turn, like r > 0).
* ``turn_p``: the two-sided p of ``Σ c_i`` under a permutation of the level labels *within* each
  question. Swapping a and b in question i turns c_i into −c_i exactly, so the permutation is a
  sign flip per question, and it uses the grid's own flips (``engine.flip_matrix``, same B and
  seed): ``(1 + #{b: |Σ ε_ib c_i| >= |Σ c_i|}) / (B + 1)``. Permuting whole dialogues (not turns)
  keeps the dependence of the turns of one dialogue, which the classical test ignores.
* ``turn_p_cmh``: the classical Cochran–Mantel–Haenszel p (``(Σ c_i)² / Σ Var_i``, hypergeometric
  variance ``n_a n_b m (N − m) / (N² (N − 1))``, no continuity correction, χ² with 1 df; as
  ``statsmodels``' ``StratifiedTable.test_null_odds(correction=False)``), which treats the turns
  as independent: reported for reference, never used for a decision.
* ``turns_a`` / ``turns_b``: the mean number of applicable judged turns per dialogue of each side
  on these questions (a side of several levels: per level), i.e. the turn-count contrast that
  the report shows beside the row; ``turn_n``: the questions used.

Strata by turn position. Turns are not interchangeable: a tutor's per-turn behaviour
changes over the dialogue (later turns reveal more, scaffold less), so two levels with the *same*
per-position curve but different lengths differ in the pooled per-turn rate (100% of such rows
were flagged and confirmed at n = 150). When the frame carries the per-position masks
(``turn_app_mask`` / ``turn_pos_mask``: bit t = the t-th tutor turn applicable / labelled 1,
``scores.pedagogical_masks``), the strata are question × turn position: at position t the table
holds the side's applicable turns at t (0 or 1 per level), and a stratum counts only when both
sides have an applicable turn there — the positions both dialogues reached. Question i's
contribution is the sum of its positions' ``y_a − n_a·m/N`` (weights and variances likewise), so
swapping a and b in a question still flips its contribution and the within-question permutation
is unchanged. ``turn_strata``: the number of (question, position) strata used (0: the counts-only
question strata above, for frames without masks).

A row is *confirmed* per turn when ``turn_q < 0.05`` (``turn_p`` adjusted over the flagged rows of
its family) and ``turn_rd`` has the sign of r (``analysis.verdicts``); a flagged pedagogical row that is not confirmed gets the verdict
``unconfirmed``. Rows without turn counts (records that store only scores) or with fewer than the
pair minimum of questions with counts are not tested (NaN): their verdict is the per-dialogue one.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from edufair_metrics.analysis.engine import _one_blas_thread, flip_matrix

TURN_COLUMNS = ("turn_n", "turns_a", "turns_b", "turn_rd", "turn_p", "turn_p_cmh", "turn_strata")
COUNT_COLUMNS = ("n_applicable", "n_positive")
MASK_COLUMNS = ("turn_app_mask", "turn_pos_mask")  # analysis.frames: per-position bit masks


def _bits(masks: np.ndarray, positions: int) -> np.ndarray:
    """(..., positions) 0/1 array of the bit masks (NaN: all 0)."""
    m = np.nan_to_num(np.asarray(masks, dtype=float), nan=0.0).astype(np.int64)
    return (m[..., None] >> np.arange(positions)) & 1


def _position_strata(extras, cols_a, cols_b, ok):
    """Per question (rows ``ok``): the Mantel–Haenszel sums over its turn positions (c, w, var) and
    the turns per side, from the per-position masks; None when a question lacks them."""
    app_m, pos_m = extras[MASK_COLUMNS[0]][ok], extras[MASK_COLUMNS[1]][ok]
    cols = cols_a + cols_b
    if np.isnan(app_m[:, cols]).any() or np.isnan(pos_m[:, cols]).any():
        return None
    top = int(np.nanmax(app_m[:, cols])) if app_m.size else 0
    positions = max(top.bit_length(), 1)
    app, pos = _bits(app_m, positions), _bits(pos_m, positions) & _bits(app_m, positions)
    na, nb = app[:, cols_a].sum(axis=1), app[:, cols_b].sum(axis=1)  # questions × positions
    ya, yb = pos[:, cols_a].sum(axis=1), pos[:, cols_b].sum(axis=1)
    tot, m = na + nb, ya + yb
    # a stratum counts only where both sides have an applicable turn at that position
    live = (na > 0) & (nb > 0)
    safe = np.where(live, tot, 1)
    c = np.where(live, ya - na * m / safe, 0.0).sum(axis=1)
    w = np.where(live, na * nb / safe, 0.0).sum(axis=1)
    var = np.where(live & (tot > 1), na * nb * m * (tot - m) / (safe ** 2 * np.where(tot > 1, tot - 1, 1)), 0.0).sum(axis=1)
    return c, w, var, int(live.sum())


def turn_contributions(cell, a_levels: Sequence[str], b_levels: Sequence[str], d: np.ndarray):
    """(c, w, var, n_a, n_b) over the questions of ``cell`` where ``d`` (the row's differences,
    one per question of the cell) is defined and both sides have turn counts; None when the cell
    carries no counts. ``cell.extras`` holds ``n_applicable`` / ``n_positive`` matrices aligned
    with its values (``cells.cell_matrices(..., extras=COUNT_COLUMNS)``)."""
    extras = getattr(cell, "extras", None) or {}
    if not all(c in extras for c in COUNT_COLUMNS):
        return None
    cols_a = [cell.levels.index(x) for x in a_levels]
    cols_b = [cell.levels.index(x) for x in b_levels]
    app, pos = extras["n_applicable"], extras["n_positive"]
    na, nb = app[:, cols_a].sum(axis=1), app[:, cols_b].sum(axis=1)  # NaN when a level lacks counts
    ya, yb = pos[:, cols_a].sum(axis=1), pos[:, cols_b].sum(axis=1)
    ok = ~np.isnan(d) & ~np.isnan(na) & ~np.isnan(nb) & ~np.isnan(ya) & ~np.isnan(yb)
    na, nb, ya, yb = na[ok], nb[ok], ya[ok], yb[ok]
    tot = na + nb
    live = tot > 0
    if all(c in extras for c in MASK_COLUMNS):
        strata = _position_strata(extras, cols_a, cols_b, ok)
        if strata is not None:  # question × turn position strata (module docstring)
            c, w, var, n_strata = strata
            return c, w, var, na / len(cols_a), nb / len(cols_b), n_strata
    with np.errstate(invalid="ignore", divide="ignore"):
        m = ya + yb
        c = np.where(live, ya - na * m / np.where(live, tot, 1), 0.0)
        w = np.where(live, na * nb / np.where(live, tot, 1), 0.0)
        var = np.where(tot > 1, na * nb * m * (tot - m) / (np.where(live, tot, 1) ** 2 * np.where(tot > 1, tot - 1, 1)), 0.0)
    return c, w, var, na / len(cols_a), nb / len(cols_b), 0


def turn_tests(contribs: Sequence, *, n_boot: int, seed: int, min_questions: int) -> dict[str, np.ndarray]:
    """The ``TURN_COLUMNS`` of every row from its :func:`turn_contributions` (None: NaN row); rows
    with fewer than ``min_questions`` questions get NaN except ``turn_n``. The within-question
    permutation p of all rows is one matrix product with the grid's sign flips."""
    from scipy.stats import chi2

    k = len(contribs)
    out = {c: np.full(k, np.nan) for c in TURN_COLUMNS}
    live: list[int] = []
    for i, con in enumerate(contribs):
        if con is None:
            continue
        c, w, var, na, nb = con[:5]
        out["turn_strata"][i] = con[5] if len(con) > 5 else 0
        out["turn_n"][i] = c.size
        if c.size < max(int(min_questions), 1):
            continue
        live.append(i)
        out["turns_a"][i], out["turns_b"][i] = float(na.mean()), float(nb.mean())
        sw, sc, sv = float(w.sum()), float(c.sum()), float(var.sum())
        out["turn_rd"][i] = sc / sw if sw > 0 else 0.0
        out["turn_p_cmh"][i] = float(chi2.sf(sc * sc / sv, 1)) if sv > 0 else 1.0
    if live:
        n_max = max(contribs[i][0].size for i in live)
        flips = flip_matrix(n_max, int(n_boot), int(seed)).astype(np.float64)
        for c0 in range(0, len(live), 256):
            chunk = live[c0:c0 + 256]
            mat = np.zeros((len(chunk), n_max))
            for j, i in enumerate(chunk):
                mat[j, : contribs[i][0].size] = contribs[i][0]
            obs = np.abs(mat.sum(axis=1))
            with _one_blas_thread():
                flipped = np.abs(mat @ flips)
            tol = 1e-9 * np.maximum(1.0, obs)
            hits = (flipped >= (obs - tol)[:, None]).sum(axis=1)
            out["turn_p"][chunk] = np.where(obs > 0, (1 + hits) / (int(n_boot) + 1), 1.0)
    return out
