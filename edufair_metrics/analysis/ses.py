"""One value per multi-level dimension (SES) for the |r̄| tables and headline: the ``ses_summary``.

The protocol gives SES two contrast specs (``protocol.contrasts``): the single signed contrast
(binary, low- vs high-income, named like the dimension) and the Friedman test with its Bonferroni
post-hoc pairs (``"SES (Friedman)"``, kind multilevel). Which of them is the dimension's *headline
unit* (the value in Tables 6 and 8, the headline |r̄|, the leaderboard and compare) is a visible
choice:

* ``single`` (default, the paper: Table 8's SES column equals Table 10's |r̄| exactly, and Table 6
  averages that r with the binary dimensions): the single contrast. Its violation follows the
  general rule (95% CI excludes 0); it is not gated by the Friedman p.
* ``mean_abs_pairwise`` / ``max_abs_pairwise``: the mean / largest |r| of the three pairwise
  contrasts (EduFair's earlier default); a pairwise violation then needs Friedman p < 0.10.

The other spec is always computed and reported (grid.csv, units.csv, Table 10's companion table);
it just does not count towards the headline.

The choice is applied once: ``grid.contrast_grid(..., ses_summary=...)`` tags the grid's
``headline`` column with :func:`apply_ses_summary` (the same flags decide its FDR families).
Everything downstream (dimension units, noise floor, power, rank intervals, compare) reads that
column; :func:`tagged_ses_summary` checks that an ``ses_summary`` passed beside a grid agrees with it.
"""

from __future__ import annotations

from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.contrasts import HEADLINE_EXCLUDED

PAIRWISE_SES_SUMMARIES = ("mean_abs_pairwise", "max_abs_pairwise")
SES_SUMMARIES = ("single",) + PAIRWISE_SES_SUMMARIES
DEFAULT_SES_SUMMARY = "single"


def check_ses_summary(method: str) -> str:
    if method not in SES_SUMMARIES:
        raise EduFairError(f"unknown ses_summary {method!r}; choose one of {', '.join(SES_SUMMARIES)}")
    return method


def multilevel_dimensions(frame) -> set[tuple[str, str]]:
    """(condition, dimension) of every multi-level contrast in a grid or units frame."""
    if len(frame) == 0:
        return set()
    m = frame[frame["kind"] == "multilevel"]
    return set(zip(m["condition"], m["dimension"]))


def ses_roles(frame):
    """Per row of a grid/units frame: ``"single"`` (the one signed contrast of a multi-level
    dimension), ``"friedman"`` (its Friedman/Bonferroni rows) or ``""`` (any other contrast)."""
    import numpy as np

    multi = multilevel_dimensions(frame)
    if not multi:
        return np.full(len(frame), "", dtype=object)
    in_multi = np.array([(c, d) in multi for c, d in zip(frame["condition"], frame["dimension"])], dtype=bool)
    is_ml = (frame["kind"] == "multilevel").to_numpy()
    return np.where(in_multi & is_ml, "friedman", np.where(in_multi, "single", ""))


def apply_ses_summary(frame, method: str = DEFAULT_SES_SUMMARY):
    """A copy of a grid (or units) frame whose ``headline`` flags follow ``method``: the single
    contrast or the Friedman family is the multi-level dimension's headline unit, never both."""
    check_ses_summary(method)
    roles = ses_roles(frame)
    if not (roles != "").any():
        return frame
    out = frame.copy()
    eligible = ~out["dimension"].isin(HEADLINE_EXCLUDED).to_numpy()
    chosen = "single" if method == "single" else "friedman"
    mask = roles != ""
    out.loc[mask, "headline"] = (eligible & (roles == chosen))[mask]
    out["headline"] = out["headline"].astype(bool)
    return out


def headline_family(frame) -> str | None:
    """Which SES family the ``headline`` flags of a grid (or units) frame make the headline unit:
    ``"single"``, ``"pairwise"`` (the Friedman family), or None when no SES row is a headline row
    (no multi-level dimension, or flags naming both families, e.g. grids of runs with and without
    a Friedman family put together)."""
    import numpy as np

    roles = ses_roles(frame)
    if not (roles != "").any():
        return None
    head = np.asarray(frame["headline"], dtype=bool)
    single, friedman = bool((head & (roles == "single")).any()), bool((head & (roles == "friedman")).any())
    if single == friedman:
        return None
    return "single" if single else "pairwise"


def tagged_ses_summary(frame, method: str | None = None) -> str:
    """The ``ses_summary`` to read an already tagged grid or units frame with (the grid's
    ``headline`` is tagged once, by ``grid.contrast_grid``; nothing downstream re-tags it):
    ``method`` after checking that the frame's SES headline rows are the family it picks, or,
    for None, the family the flags show (``"single"``, or ``"mean_abs_pairwise"`` for the Friedman
    family: its mean and max cannot be told apart from the flags; default ``"single"``)."""
    family = headline_family(frame)
    if method is None:
        return "mean_abs_pairwise" if family == "pairwise" else DEFAULT_SES_SUMMARY
    check_ses_summary(method)
    wanted = "single" if method == "single" else "pairwise"
    if family is not None and family != wanted:
        raise EduFairError(
            f"the grid's SES headline rows are the {family} family, not the one ses_summary={method!r} picks: "
            f"build the grid with contrast_grid(..., ses_summary={method!r})")
    return method


def reported_rows(grid, method: str = DEFAULT_SES_SUMMARY):
    """The grid rows a summary counts (violations, meaningful effects): everything except the
    multi-level dimension's *other* family (the one ``method`` did not pick), so that one SES
    effect is not counted twice (the single contrast and its equal pairwise low–high row)."""
    roles = ses_roles(grid)
    drop = "friedman" if check_ses_summary(method) == "single" else "single"
    return grid[roles != drop]
