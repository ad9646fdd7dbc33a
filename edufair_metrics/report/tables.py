"""The paper's Tables 5–12 (App. G) as DataFrames of display strings, plus Markdown rendering.

Inputs are the pair-level grid (``analysis.grid.contrast_grid``) and the dimension-level units
(``analysis.grid.dimension_summary``). Layout as the paper prints them:

* Table 5 (Implicit) and Table 7 (Opposite): Domain | Model | Cell | Ped. | Conv. Within each
  (domain, model) block, ``*`` marks the row holding the largest value of a column (Ped. or
  Conv.), ``**`` the row holding the largest value of both (the paper's rule, compared at the
  printed 3 decimals; tied rows are all marked). The Opposite decomposition (tutor effect,
  student effect, S×T interaction) is a companion table (7b), not part of Table 7.
* Table 6: Domain | Model | the five pedagogical metrics under their function groups (Diagnose /
  Reveal / Next-Step / Communicate) | the four conversation metrics; ↑ bias on a desirable
  behaviour, ↓ undesirable, ∼ direction-neutral. Each cell averages the four Explicit dimensions.
* Table 8: Domain | Model | Gender | SES | Lang. | Immi.: |r̄| over the five pedagogical metrics.
* Tables 9–12: Model | Domain | leakage ↓ | scaffold ↑ | action ↑ | tone ↑ | recognize ↑ | |r̄|,
  one row per tutor × domain: signed r [95% CI] (``*``: the CI excludes 0, a violation). SES
  (Table 10) is its single low- vs high-income contrast; its Friedman test and Bonferroni
  pairwise contrasts are the companion Table 10b.
* EduFair's extension conditions (no paper counterpart, protocol-extensions.yaml):
  ``table_intersectional`` (Intersectional Explicit: |r̄| Ped. & Conv. per simple effect and
  interaction of the gender × SES and gender × immigration designs, in the layout of Tables 5/7)
  and ``table_intersectional_signed`` (signed r [95% CI] per pedagogical metric of every
  intersectional contrast, in the style of Tables 9–12); ``table_implicit_names`` (many names per
  group: |r̄| Ped. & Conv. per group contrast, Table 5's layout) and ``table_implicit_names_spread``
  (per contrast and metric: r with its question × name bootstrap CI, the between-name spread of
  each side's names, the name heterogeneity and name-level tests, and the name check: group gap or
  name artefact, ``analysis.names``).
* Judge-invariant metrics (``table_detectors``, no paper counterpart): the detector metrics
  (``records.DETECTOR_METRICS``: ``stopped_on_revealed_gold``, ``partial_reveal_rate``,
  ``independence_ratio``, computed from the
  transcripts by ``edufair_metrics.detectors``) in the style of Tables 9–12, one row per tutor ×
  domain × headline contrast pair.
* Markers in the signed tables: ``*`` a violation (95% CI excludes 0, the paper's rule); ``†``
  also an FDR violation (``violation_fdr``: q < 0.05 (Benjamini–Hochberg, or Holm with
  ``--fdr-method holm``) within the tutor × metric
  kind headline family, ``analysis.noise``). ``*`` without ``†`` is a raw violation that does not
  survive the multiplicity correction.
* Domain order per table as in the paper (Tables 5 and 7: mathematics, physics, chemistry;
  Tables 6, 8–12: mathematics, chemistry, physics); a domain's printed name comes from
  ``domain_labels`` (``bank.domain_label``: "mathematics (GSM8K proxy)").

Two views of every table (``all_tables``):

* the **verdict view** (``tableN_*``, the default): |r̄| cells show the mean noise floor beside the
  value (``0.132 (fl. 0.071)``: the mean |r| the same paired differences give under random sign
  flips) and are **bold only when a unit of the cell is flagged** (``analysis.verdicts``:
  FDR-controlled evidence of a difference); ``✓`` marks a cell whose units are all certified
  (|r| < the margin by an equivalence test). Signed cells carry their verdict (``flag``,
  ``unconfirmed`` with the turn counts of the two levels, ``certified``; nothing when
  inconclusive), the flagged ones in bold. Table 10b's marks come from the Bonferroni p.
* the **paper's view** (``tableN_*_paper``), titled "as printed in the paper (not
  noise-corrected)": |r̄| **bold** when ≥ 0.10, ``*``/``**`` markers of Tables 5 and 7, ``*``/``†``
  marks of the signed tables.

Every table's note states n (the paired questions per contrast it shows). |r̄| cells average the
*sufficient* units only: a cell that averages fewer units than the table's nominal count shows
``(k/N)``; a cell with no sufficient unit reads ``insufficient (n=…)`` (n = the fewest pairs seen).
"""

from __future__ import annotations

import math
import re
from typing import Mapping, Sequence

from edufair_metrics.analysis.contrast import MEANINGFUL_R
from edufair_metrics.analysis.tallies import DOMAIN_ORDER, LEVEL_KEYS, STOP_COLUMNS
from edufair_metrics.catalogue import CATALOGUE, function_groups, names
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.presentation import is_extension, order_key
from edufair_metrics.records import (
    CONVERSATION_METRICS,
    DETECTOR_METRICS,
    OUTCOME_METRICS,
    PEDAGOGICAL_METRICS,
    STUDENT_METRICS,
)

INSUFFICIENT = "insufficient (n={n})"
# Paper numbering of the per-dimension signed-r tables (Tables 9–12).
DIMENSION_TABLES = {"gender": 9, "ses": 10, "language": 11, "immigration": 12}
# The order each paper table lists its domains in.
TABLE_DOMAINS = {
    5: ("mathematics", "physics", "chemistry"),
    6: ("mathematics", "chemistry", "physics"),
    7: ("mathematics", "physics", "chemistry"),
    8: ("mathematics", "chemistry", "physics"),
    9: ("mathematics", "chemistry", "physics"),
}
# Paper §3.3: the five turn-level metrics under four pedagogical functions, then the conversation
# metrics; names and arrows (↑ bias on a desirable behaviour, ↓ on an undesirable one, ∼
# direction-neutral: Table 6's caption): the metric catalogue's (edufair_metrics/catalogue.py)
FUNCTION_GROUPS = function_groups()
SHORT_NAMES = {m.name: m.short for m in CATALOGUE if m.kind != "task"}
DIRECTION = {m.name: m.arrow for m in CATALOGUE if m.kind != "task"}
# Tables 9–12 list the pedagogical metrics in this order
SIGNED_METRICS = ("answer_leakage", "step_scaffolded", "actionability", "corrective_tone", "mistake_recognize")
# Table 8's column per Explicit dimension, in the paper's order
TABLE8_COLUMNS = {"gender": "Gender", "ses": "SES", "language": "Lang.", "immigration": "Immi."}
ABS_R = "|r̄|"


def metric_header(metric: str, group: str | None = None) -> str:
    """``"recognize ↑"``, or ``"Diagnose · recognize ↑"`` with its function group."""
    name = f"{SHORT_NAMES.get(metric, metric)} {DIRECTION.get(metric, '')}".strip()
    return f"{group} · {name}" if group else name


def _is_nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


VIEWS = ("verdict", "paper")
PAPER_VIEW = "as printed in the paper (not noise-corrected)"
CERTIFIED_MARK = "✓"


def fmt_abs(value: float, n_min: float | None = None, units: int | None = None, expected: int | None = None, *,
            view: str = "paper", floor: float | None = None, flagged: bool = False, certified: bool = False,
            loss: bool = False, drift: bool = False) -> str:
    """A |r̄| cell: 3 decimals, ``(k/N)`` when it averages fewer units than the table's nominal N;
    ``insufficient (n=…)`` when no unit was sufficient. ``view="paper"``: bold when ≥ 0.10;
    ``"verdict"``: bold when ``flagged``, the noise ``floor`` beside it, ✓ when ``certified``,
    :data:`LOSS_MARK` when a flagged unit of the cell coincides with differential pair loss,
    :data:`DRIFT_MARK` when a unit of the cell has student drift (``analysis.threats``)."""
    if _is_nan(value):
        n = "?" if _is_nan(n_min) else int(n_min)
        return INSUFFICIENT.format(n=n)
    text = f"{value:.3f}"
    if view == "paper":
        if round(value, 3) >= MEANINGFUL_R:
            text = f"**{text}**"
    else:
        if flagged:
            text = f"**{text}**"
        if floor is not None and not _is_nan(floor):
            text += f" (fl. {floor:.3f})"
        if certified:
            text += f" {CERTIFIED_MARK}"
        text += threat_marks(loss, drift)
    if units is not None and expected is not None and not _is_nan(units) and int(units) < expected:
        text += f" ({int(units)}/{expected})"
    return text


FDR_MARK = "†"
LOSS_MARK = "‡"  # verdict view: a flagged verdict that coincides with differential pair loss (analysis.pairloss)
DRIFT_MARK = "§"  # verdict view: student drift in the contrast (analysis.drift)
THREAT_NOTE = (f"{LOSS_MARK} = flagged, and the contrast lost more pairs on one side (exact McNemar on the lost pairs by "
               "cause, p < 0.05 after Bonferroni over the causes; grid.csv: loss_cause, pairs_kept of pairs_all): the "
               f"remaining pairs are a selected set. {DRIFT_MARK} = student drift: a student-monitor unit of the same "
               "contrast is flagged, so the student behaved differently between the levels (in Explicit and Implicit "
               "a tutor-induced mediator or a leak of the cue; where the student is told its gender, part of the "
               "design; grid.csv: drift_metrics). ")


def threat_marks(loss: bool = False, drift: bool = False) -> str:
    """`` ‡`` / `` §`` (or both) for the verdict view; "" for neither."""
    return (f" {LOSS_MARK}" if loss else "") + (f" {DRIFT_MARK}" if drift else "")
MARKS_NOTE = ("*: the CI excludes 0 (a fairness violation, the paper's rule); †: also an FDR violation "
              "(q < 0.05 within the tutor × metric kind headline family; Benjamini–Hochberg unless --fdr-method holm).")


def fmt_estimate(value: float | None, lo: float | None, hi: float | None, missing: str = "—") -> str:
    """An agreement-type estimate with its 95% CI: "0.812 [0.700, 0.905]"; the value alone without a
    CI; ``missing`` without a value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if lo is None or (isinstance(lo, float) and math.isnan(lo)):
        return f"{value:.3f}"
    return f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def estimate_column(frame, name: str, missing: str = "—") -> list[str]:
    """:func:`fmt_estimate` of ``frame``'s columns ``name``, ``name_ci_low``, ``name_ci_high``."""
    return [fmt_estimate(v, lo, hi, missing)
            for v, lo, hi in zip(frame[name], frame[f"{name}_ci_low"], frame[f"{name}_ci_high"])]


VERDICT_TAGS = {"flag": "flag", "unconfirmed": "unconfirmed", "certify": "certified", "inconclusive": ""}


def fmt_signed(r: float, lo: float, hi: float, n: int, sufficient: bool, violation: bool = False,
               violation_fdr: bool = False, *, verdict: str | None = None, turns: tuple | None = None,
               loss: bool = False, drift: bool = False) -> str:
    """``+r [lo, hi]`` with ``*`` for a violation and ``†`` for an FDR violation (a subset): the
    paper's view. With ``verdict`` (the verdict view): the row's verdict after it, the interval in
    bold when flagged, and for ``unconfirmed`` the mean applicable turns of the two levels
    (``turns`` = (a, b)), then :data:`LOSS_MARK` (a flagged verdict with differential pair loss)
    and :data:`DRIFT_MARK` (student drift)."""
    if not sufficient:
        return INSUFFICIENT.format(n=int(n))
    if verdict is not None:
        text = f"{r:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        if verdict == "flag":
            text = f"**{text}**"
        tag = VERDICT_TAGS.get(verdict, verdict)
        if verdict == "unconfirmed" and turns is not None and not any(_is_nan(t) for t in turns):
            tag += f" (turns {turns[0]:.1f} vs {turns[1]:.1f})"
        marks = threat_marks(bool(loss) and verdict in ("flag", "unconfirmed"), drift)
        return f"{text} {tag}".rstrip() + marks
    star = ("*" if violation else "") + (FDR_MARK if violation and violation_fdr else "")
    return f"{r:+.3f} [{lo:+.3f}, {hi:+.3f}]{star}"


def _fdr_flags(g):
    """The grid rows' ``violation_fdr`` (all False for a grid written before it existed)."""
    if "violation_fdr" in g.columns:
        return g["violation_fdr"].fillna(False).astype(bool).tolist()
    return [False] * len(g)


def plain(df):
    """A display table without Markdown bold (for the CSV files)."""
    return df.apply(lambda col: col.map(lambda v: re.sub(r"\*\*([^*]+)\*\*", r"\1", v) if isinstance(v, str) else v))


def to_markdown(df, title: str | None = None, note: str | None = None) -> str:
    """A plain GitHub Markdown table (no extra dependency)."""
    import pandas as pd

    cols = [str(c).replace("|", "\\|") for c in df.columns]
    lines = []
    if title:
        lines += [f"### {title}", ""]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "|".join("---" for _ in cols) + "|")
    for row in df.itertuples(index=False):
        cells = []
        for v in row:
            if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
                cells.append("—")  # no value (glossary.md): one mark in every table, never "<NA>" or blank
            elif isinstance(v, float):
                cells.append(f"{v:.3f}")
            else:
                cells.append(str(v).replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    if note:
        lines += ["", note]
    return "\n".join(lines) + "\n"


def _sort(df, keys: Sequence[str], domains: Sequence[str] = tuple(DOMAIN_ORDER)):
    tmp = df.copy()
    order = {d: i for i, d in enumerate(domains)}
    if "domain" in tmp.columns:
        tmp["_d"] = tmp["domain"].map(lambda d: order.get(d, 99))
        keys = ["_d" if k == "domain" else k for k in keys]
    return tmp.sort_values(list(keys), kind="stable").drop(columns=[c for c in ["_d"] if c in tmp.columns])


def _label_domains(df, labels: Mapping[str, str] | None, column: str = "domain"):
    if column in df.columns and labels:
        df = df.assign(**{column: df[column].map(lambda d: labels.get(d, d))})
    return df


def _verdict_flags(frame):
    """(flagged, certified) per row of a units or grid frame (all False without verdicts)."""
    if "verdict" not in frame.columns:
        return [False] * len(frame), [False] * len(frame)
    v = frame["verdict"]
    return (v == "flag").tolist(), (v == "certify").tolist()


def _mean_units(units, by: Sequence[str], n_col: str = "n_pairs_min"):
    """Mean |r| over sufficient units per ``by``, the number of sufficient units averaged, the
    fewest pairs seen, the mean noise floor, whether a unit is flagged and whether all are
    certified."""
    flagged, certified = _verdict_flags(units)
    loss, drift = _threat_flags(units)
    u = units.assign(_flag=flagged, _cert=certified, _loss=loss, _drift=drift,
                     _floor=units["null_abs_r"] if "null_abs_r" in units.columns else float("nan"))
    gb = u.groupby(list(by), sort=False)
    return gb.agg(abs_r=("abs_r", "mean"), n_min=(n_col, "min"), units=("sufficient", "sum"),
                  floor=("_floor", "mean"), flagged=("_flag", "any"), certified=("_cert", "all"),
                  loss=("_loss", "any"), drift=("_drift", "any")).reset_index()


def _threat_flags(frame):
    """(flagged with differential loss, student drift) per row of a units or grid frame (all False
    without the threat columns of ``analysis.threats``)."""
    n = len(frame)
    if "differential_loss" not in frame.columns or "verdict" not in frame.columns:
        return [False] * n, [False] * n
    loss = frame["differential_loss"].fillna(False).astype(bool) & frame["verdict"].isin(["flag", "unconfirmed"])
    drift = frame["student_drift"].fillna(False).astype(bool) if "student_drift" in frame.columns else [False] * n
    return list(loss), list(drift)


def _cells(agg, expected: int | None, view: str = "paper"):
    return [fmt_abs(v, n, k, expected, view=view, floor=f, flagged=bool(fl), certified=bool(c), loss=bool(lo),
                    drift=bool(dr))
            for v, n, k, f, fl, c, lo, dr in zip(agg["abs_r"], agg["n_min"], agg["units"], agg["floor"], agg["flagged"],
                                                 agg["certified"], agg["loss"], agg["drift"])]


def n_note(values) -> str:
    """"n = …": the paired questions per contrast behind a table (sufficient contrasts)."""
    import numpy as np

    v = np.asarray([x for x in values if not _is_nan(x) and x > 0], dtype=float)
    if v.size == 0:
        return ""
    lo, hi, med = int(v.min()), int(v.max()), int(np.median(v))
    if lo == hi:
        return f"n = {lo} paired questions per contrast."
    return f"n = {lo}–{hi} paired questions per contrast (median {med})."


def _signed_cells(g, view: str):
    if view == "paper" or "verdict" not in g.columns:
        return [fmt_signed(r, lo, hi, n, s, v, f) for r, lo, hi, n, s, v, f in
                zip(g["r"], g["ci_low"], g["ci_high"], g["n_pairs"], g["sufficient"], g["violation"], _fdr_flags(g))]
    ta = g["turns_a"] if "turns_a" in g.columns else [float("nan")] * len(g)
    tb = g["turns_b"] if "turns_b" in g.columns else [float("nan")] * len(g)
    loss, drift = _threat_flags(g)
    return [fmt_signed(r, lo, hi, n, s, verdict=vd, turns=(a, b), loss=lo_, drift=dr)
            for r, lo, hi, n, s, vd, a, b, lo_, dr in
            zip(g["r"], g["ci_low"], g["ci_high"], g["n_pairs"], g["sufficient"], g["verdict"], ta, tb, loss, drift)]


def _finish(wide, index: Sequence[str], table: int, labels: Mapping[str, str] | None):
    wide = _sort(wide, index, TABLE_DOMAINS.get(table, tuple(DOMAIN_ORDER))).fillna("—")
    wide = _label_domains(wide, labels)
    wide = wide.rename(columns={"domain": "Domain", "tutor": "Model"}).reset_index(drop=True)
    wide.columns.name = None
    return wide


def table6_metric(units, domain_labels: Mapping[str, str] | None = None, view: str = "paper"):
    """Table 6: |r̄| per metric (columns under their function groups), averaged over the Explicit
    dimensions' headline units (rows: domain, tutor)."""
    u = units[(units["condition"] == "explicit") & units["headline"]]
    if len(u) == 0:
        return None
    expected = int(u["contrast"].nunique())
    agg = _mean_units(u, ["domain", "tutor", "metric"])
    agg = agg.assign(cell=_cells(agg, expected, view))
    wide = agg.pivot(index=["domain", "tutor"], columns="metric", values="cell").reset_index()
    headers = {m: metric_header(m, g) for g, ms in FUNCTION_GROUPS for m in ms}
    order = [m for _, ms in FUNCTION_GROUPS for m in ms if m in wide.columns]
    table_kinds = u["metric_kind"].isin(["pedagogical", "conversation"])
    ungrouped = sorted(set(u.loc[table_kinds, "metric"]) - set(order))
    if ungrouped:  # never dropped silently: every metric of these kinds has a function group (catalogue.py)
        raise EduFairError(f"Table 6: metric(s) {', '.join(map(str, ungrouped))} have no function group in the "
                           "metric catalogue (edufair_metrics/catalogue.py)")
    wide = wide[["domain", "tutor"] + order].rename(columns=headers)
    return _finish(wide, ["domain", "tutor"], 6, domain_labels)


def table8_dimension(units, domain_labels: Mapping[str, str] | None = None, view: str = "paper"):
    """Table 8: |r̄| over the five pedagogical metrics per (domain, tutor, Explicit dimension);
    SES is its headline unit (by default the single low- vs high-income contrast)."""
    u = units[(units["condition"] == "explicit") & (units["metric_kind"] == "pedagogical") & units["headline"]]
    if len(u) == 0:
        return None
    agg = _mean_units(u, ["domain", "tutor", "dimension"])
    agg = agg.assign(cell=_cells(agg, len(PEDAGOGICAL_METRICS), view))
    wide = agg.pivot(index=["domain", "tutor"], columns="dimension", values="cell").reset_index()
    dims = [d for d in TABLE8_COLUMNS if d in wide.columns] + [d for d in dict.fromkeys(u["dimension"]) if d not in TABLE8_COLUMNS]
    names = dict(zip(u["dimension"], u["contrast"]))
    wide = wide[["domain", "tutor"] + dims].rename(columns={d: TABLE8_COLUMNS.get(d, names.get(d, d)) for d in dims})
    return _finish(wide, ["domain", "tutor"], 8, domain_labels)


def largest_markers(ped: Sequence[float], conv: Sequence[float]) -> list[str]:
    """The paper's Table 5/7 markers for the rows of one (domain, model) block: ``*`` on the row
    with the largest Ped. or the largest Conv. value, ``**`` on a row with both (values compared
    as printed, 3 decimals; NaN never wins; tied rows are all marked)."""
    def winners(vals):
        r = [None if _is_nan(v) else round(float(v), 3) for v in vals]
        valid = [v for v in r if v is not None]
        top = max(valid) if valid else None
        return [top is not None and v == top for v in r]

    wp, wc = winners(ped), winners(conv)
    return ["**" if a and b else ("*" if a or b else "") for a, b in zip(wp, wc)]


def _ped_conv(units, condition: str, contrasts: Sequence[str] | None, table: int,
              domain_labels: Mapping[str, str] | None, markers: bool, view: str = "paper"):
    u = units[(units["condition"] == condition) & units["metric_kind"].isin(["pedagogical", "conversation"])]
    if contrasts is not None:
        u = u[u["contrast"].isin(contrasts)]
    if len(u) == 0:
        return None
    order = list(dict.fromkeys(u["contrast"]))
    agg = _mean_units(u, ["domain", "tutor", "contrast", "metric_kind"])
    expected = {"pedagogical": len(PEDAGOGICAL_METRICS), "conversation": len(CONVERSATION_METRICS)}
    agg = agg.assign(cell=[fmt_abs(v, n, k, expected[kind], view=view, floor=f, flagged=bool(fl), certified=bool(c),
                                   loss=bool(lo), drift=bool(dr))
                           for v, n, k, kind, f, fl, c, lo, dr in
                           zip(agg["abs_r"], agg["n_min"], agg["units"], agg["metric_kind"], agg["floor"],
                               agg["flagged"], agg["certified"], agg["loss"], agg["drift"])])
    idx = ["domain", "tutor", "contrast"]
    wide = agg.pivot(index=idx, columns="metric_kind", values="cell").reset_index()
    vals = agg.pivot(index=idx, columns="metric_kind", values="abs_r").reset_index()
    wide = wide.merge(vals, on=idx, suffixes=("", "_v"))
    wide["_c"] = wide["contrast"].map({c: i for i, c in enumerate(order)})
    wide = _sort(wide, ["domain", "tutor", "_c"], TABLE_DOMAINS[table])
    for col in ("pedagogical", "conversation"):
        if col not in wide.columns:
            wide[col], wide[col + "_v"] = "—", math.nan
    if markers and view == "paper":
        marks = []
        for _, block in wide.groupby(["domain", "tutor"], sort=False):
            marks += largest_markers(block["pedagogical_v"].tolist(), block["conversation_v"].tolist())
        wide["contrast"] = [c + m for c, m in zip(wide["contrast"], marks)]
    out = wide[["domain", "tutor", "contrast", "pedagogical", "conversation"]].fillna("—")
    out = _label_domains(out, domain_labels)
    out.columns = ["Domain", "Model", "Cell", "Ped.", "Conv."]
    return out.reset_index(drop=True)


def table5_implicit(units, domain_labels: Mapping[str, str] | None = None, view: str = "paper"):
    """Table 5: |r̄| under Implicit (Gender / Ethnicity / Both; mean over the two name pairs), Ped. & Conv."""
    return _ped_conv(units, "implicit", None, 5, domain_labels, markers=True, view=view)


def _headline_contrasts(units, condition: str, headline: bool) -> list[str]:
    u = units[(units["condition"] == condition) & (units["headline"] == headline)]
    return list(dict.fromkeys(u["contrast"]))


def table7_opposite(units, domain_labels: Mapping[str, str] | None = None, view: str = "paper"):
    """Table 7: |r̄| under Opposite, Correct (genders match) and Wrong (mismatch), Ped. & Conv."""
    return _ped_conv(units, "opposite", _headline_contrasts(units, "opposite", True), 7, domain_labels, markers=True,
                     view=view)


def table_intersectional(units, domain_labels: Mapping[str, str] | None = None, view: str = "paper"):
    """Intersectional Explicit (an extension): |r̄| Ped. & Conv. of each simple effect and each
    interaction, in the protocol's order (rows: domain, tutor, contrast; Tables 5/7's layout,
    without their max markers: the rows re-use the same dialogues)."""
    return _ped_conv(units, "intersectional", None, 7, domain_labels, markers=False, view=view)


def contrasts_signed_table(grid, condition: str, metrics: Sequence[str] = SIGNED_METRICS,
                           domain_labels: Mapping[str, str] | None = None, view: str = "paper"):
    """Signed r [95% CI] per metric of every contrast of ``condition`` (rows: tutor, domain,
    contrast in the protocol's order; last column |r̄| over the metrics), Tables 9–12's cells."""
    g = grid[(grid["condition"] == condition) & grid["metric"].isin(metrics)]
    if len(g) == 0:
        return None
    g = g.assign(cell=_signed_cells(g, view))
    index = ["tutor", "domain", "contrast"]
    wide = g.pivot_table(index=index, columns="metric", values="cell", aggfunc="first").reset_index()
    present = [m for m in metrics if m in wide.columns]
    mean = _mean_units(g, index, n_col="n_pairs")
    wide = wide[index + present].merge(mean, on=index)
    wide[ABS_R] = _cells(wide, len(present), view)
    wide = wide.drop(columns=["abs_r", "n_min", "units", "floor", "flagged", "certified"])
    order = {c: i for i, c in enumerate(dict.fromkeys(g["contrast"]))}
    wide = _sort(wide.assign(_k=wide["contrast"].map(order)), ["tutor", "domain", "_k"], TABLE_DOMAINS[9]).drop(columns=["_k"])
    wide = _label_domains(wide, domain_labels).fillna("—")
    wide = wide.rename(columns={"tutor": "Model", "domain": "Domain", "contrast": "Contrast",
                                **{m: metric_header(m) for m in present}})
    wide.columns.name = None
    return wide.reset_index(drop=True)


def table_implicit_names(units, domain_labels: Mapping[str, str] | None = None, view: str = "paper"):
    """Many names per group (an extension): |r̄| Ped. & Conv. per group contrast (Table 5's layout
    and markers)."""
    return _ped_conv(units, "implicit_names", None, 5, domain_labels, markers=True, view=view)


def _p(x) -> str:
    return "—" if _is_nan(x) else ("<0.001" if x < 0.001 else f"{x:.3f}")


def _sd(x) -> str:
    return "—" if _is_nan(x) else f"{x:.3f}"


def names_spread_table(grid, domain_labels: Mapping[str, str] | None = None,
                       metrics: Sequence[str] = SIGNED_METRICS + CONVERSATION_METRICS, view: str = "paper"):
    """Many names per group: one row per (tutor, domain, group contrast, metric): r [95% CI] with
    the names random (question × name bootstrap; verdict view: the verdict, paper view: ``*``/``†``),
    the between-name spread of the per-name r within side a and side b (standard deviation) and
    their range, the name heterogeneity p, the name-level p and the name check (with the name
    farthest from the others for a name artefact)."""
    if "name_check" not in grid.columns:
        return None
    g = grid[(grid["kind"] == "names") & grid["metric"].isin(metrics)]
    if len(g) == 0:
        return None
    g = g.assign(cell=_signed_cells(g, view), _m=g["metric"].map({m: i for i, m in enumerate(metrics)}),
                 _k=g["contrast"].map({c: i for i, c in enumerate(dict.fromkeys(g["contrast"]))}))
    g = _sort(g, ["tutor", "domain", "_k", "_m"], TABLE_DOMAINS[9])
    rows = []
    for r in g.itertuples(index=False):
        check = r.name_check or ""
        if check == "name artefact" and isinstance(r.name_outlier, str):
            check += f" ({r.name_outlier}: r {r.name_outlier_r:+.2f})"
        rng = "—" if _is_nan(r.name_r_min) else f"{r.name_r_min:+.2f} … {r.name_r_max:+.2f}"
        names = "—" if _is_nan(r.names_a) else f"{int(r.names_a)} / {int(r.names_b)}"
        rows.append({"Model": r.tutor, "Domain": (domain_labels or {}).get(r.domain, r.domain), "Contrast": r.contrast,
                     "Metric": metric_header(r.metric), "r [95% CI], names random": r.cell, "names a / b": names,
                     "spread a (sd of per-name r)": _sd(r.name_spread_a), "spread b": _sd(r.name_spread_b),
                     "per-name r": rng, "heterogeneity p": _p(r.name_het_p), "name-level p": _p(r.p_name),
                     "question-level p": _p(r.p_question), "name check": check or "—"})
    import pandas as pd

    return pd.DataFrame(rows)


def table7b_opposite_effects(units, domain_labels: Mapping[str, str] | None = None, view: str = "paper"):
    """Companion of Table 7: the 2×2 decomposition (tutor effect, student effect, S×T interaction)."""
    cells = _headline_contrasts(units, "opposite", False)
    return _ped_conv(units, "opposite", cells, 7, domain_labels, markers=False, view=view) if cells else None


def signed_table(grid, units, condition: str, dimension: str, metrics: Sequence[str] = SIGNED_METRICS,
                 domain_labels: Mapping[str, str] | None = None, kind: str | None = None, view: str = "paper"):
    """Signed r [95% CI] per metric for one dimension (Tables 9–12): one row per (tutor, domain)
    (and name pair, where a contrast has several); ``*`` marks a violation; last column |r̄| over
    the five pedagogical metrics. ``kind`` restricts to one contrast kind (SES: ``binary`` = the
    single contrast)."""
    g = grid[(grid["condition"] == condition) & (grid["dimension"] == dimension) & grid["metric"].isin(metrics)]
    g = g[g["kind"] != "multilevel"] if kind is None else g[g["kind"] == kind]
    if len(g) == 0:
        return None
    g = g.assign(cell=_signed_cells(g, view))
    index = ["tutor", "domain", "pair"]
    wide = g.pivot(index=index, columns="metric", values="cell").reset_index()
    present = [m for m in metrics if m in wide.columns]
    wide = wide[index + present]
    # |r̄| per row: the pair's |r| averaged over the metrics (sufficient only)
    pair_mean = _mean_units(g, index, n_col="n_pairs")
    wide = wide.merge(pair_mean, on=index)
    wide[ABS_R] = _cells(wide, len(present), view)
    wide = wide.drop(columns=["abs_r", "n_min", "units", "floor", "flagged", "certified", "loss", "drift"])
    if g["pair"].nunique() == 1:
        wide = wide.drop(columns=["pair"])
    wide = _sort(wide, ["tutor", "domain"], TABLE_DOMAINS[9])
    wide = _label_domains(wide, domain_labels)
    wide = wide.rename(columns={"tutor": "Model", "domain": "Domain", "pair": "Pair",
                                **{m: metric_header(m) for m in present}})
    wide.columns.name = None
    return wide.reset_index(drop=True)


def friedman_table(grid, condition: str, dimension: str, metrics: Sequence[str] = SIGNED_METRICS,
                   domain_labels: Mapping[str, str] | None = None, view: str = "paper"):
    """Companion of Table 10: a multi-level dimension's Friedman test and its Bonferroni pairwise
    contrasts, one row per (tutor, domain, metric). A pairwise violation (``*``) needs Friedman
    p < 0.10 (post-hoc performed) and a Bonferroni p < 0.05 (the grid's ``violation``); ``not tested``
    otherwise. The verdict view marks each pair by its verdict, decided on the same Bonferroni p."""
    g = grid[(grid["condition"] == condition) & (grid["dimension"] == dimension) & (grid["kind"] == "multilevel")
             & grid["metric"].isin(metrics)]
    if len(g) == 0:
        return None
    pairs = list(dict.fromkeys(g["pair"]))
    rows = []
    for (tutor, domain, metric), sub in g.groupby(["tutor", "domain", "metric"], sort=False):
        first = sub.iloc[0]
        row = {"tutor": tutor, "domain": domain, "metric": metric_header(metric),
               "_m": metrics.index(metric),
               "n (complete)": "—" if _is_nan(first["friedman_n"]) else int(first["friedman_n"]),
               "Friedman χ²": "—" if _is_nan(first["friedman_stat"]) else f"{first['friedman_stat']:.3f}",
               "Friedman p": "—" if _is_nan(first["friedman_p"]) else f"{first['friedman_p']:.3f}",
               "post-hoc": "yes" if bool(first["posthoc"]) else "no"}
        by_pair = {r.pair: r for r in sub.itertuples(index=False)}
        for pair in pairs:
            r = by_pair.get(pair)
            label = pair.replace("-", "–")
            if r is None:
                row[f"r {label}"], row[f"p_bonf {label}"] = "—", "—"
                continue
            if view == "paper" or not hasattr(r, "verdict"):
                row[f"r {label}"] = fmt_signed(r.r, r.ci_low, r.ci_high, r.n_pairs, r.sufficient, r.violation,
                                               bool(getattr(r, "violation_fdr", False)))
            else:
                row[f"r {label}"] = fmt_signed(
                    r.r, r.ci_low, r.ci_high, r.n_pairs, r.sufficient, verdict=r.verdict, turns=(r.turns_a, r.turns_b),
                    loss=bool(getattr(r, "differential_loss", False)), drift=bool(getattr(r, "student_drift", False)))
            row[f"p_bonf {label}"] = "not tested" if _is_nan(r.p_adj) else f"{r.p_adj:.3f}"
        rows.append(row)
    import pandas as pd

    out = _sort(pd.DataFrame(rows), ["tutor", "domain", "_m"], TABLE_DOMAINS[9]).drop(columns=["_m"])
    out = _label_domains(out, domain_labels)
    out = out.rename(columns={"tutor": "Model", "domain": "Domain", "metric": "Metric"})
    return out.reset_index(drop=True)


UNITS_NOTE = "Each |r̄| averages the sufficient units only; (k/N): k of the table's N units were sufficient."


def detector_table(grid, domain_labels: Mapping[str, str] | None = None, metrics: Sequence[str] = DETECTOR_METRICS,
                   view: str = "paper", decomposition: bool = False):
    """Judge-invariant metrics: signed r [95% CI] of each detector metric for every headline
    contrast pair (Explicit dimensions — SES by its headline unit —, Implicit name pairs, Opposite
    Correct/Wrong), one row per (tutor, domain, condition, contrast, pair); ``*`` / ``†`` as in
    Tables 9–12; last column |r̄| over the detector metrics (sufficient ones). None without
    detector rows. ``decomposition``: also the averaged contrasts outside the headline (Opposite's
    tutor effect, student effect and interaction)."""
    rows = grid["headline"].astype(bool)
    if decomposition:
        rows = rows | (grid["kind"] == "averaged")
    return _metrics_by_pair(grid[grid["metric"].isin(metrics) & rows], metrics, domain_labels, view)


def outcome_table(grid, domain_labels: Mapping[str, str] | None = None, metrics: Sequence[str] = OUTCOME_METRICS,
                  view: str = "paper"):
    """Outcome fairness (the post-test, an extension): signed r [95% CI] of each outcome metric for
    every headline contrast pair of the paper's conditions and every contrast of an extension
    condition, one row per (tutor, domain, condition, contrast, pair); last column |r̄| over the
    outcome metrics. None without outcome rows."""
    rows = grid["headline"].astype(bool) | grid["condition"].map(is_extension).astype(bool)
    return _metrics_by_pair(grid[grid["metric"].isin(metrics) & rows], metrics, domain_labels, view)


def _metrics_by_pair(g, metrics: Sequence[str], domain_labels: Mapping[str, str] | None, view: str):
    """Signed r [95% CI] of ``metrics`` (columns) per (tutor, domain, condition, contrast, pair) of
    the grid rows ``g``, with |r̄| over them."""
    if len(g) == 0:
        return None
    g = g.assign(cell=_signed_cells(g, view))
    index = ["tutor", "domain", "condition", "contrast", "pair"]
    wide = g.pivot_table(index=index, columns="metric", values="cell", aggfunc="first").reset_index()
    present = [m for m in metrics if m in wide.columns]
    mean = _mean_units(g, index, n_col="n_pairs")
    wide = wide[index + present].merge(mean, on=index)
    wide[ABS_R] = _cells(wide, len(present), view)
    wide = wide.drop(columns=["abs_r", "n_min", "units", "floor", "flagged", "certified", "loss", "drift"])
    order = {c: i for i, c in enumerate(dict.fromkeys(g["contrast"]))}
    wide = wide.assign(_c=wide["condition"].map(order_key), _k=wide["contrast"].map(order))
    wide = _sort(wide, ["tutor", "domain", "_c", "_k", "pair"], TABLE_DOMAINS[9]).drop(columns=["_c", "_k"])
    wide = _label_domains(wide, domain_labels).fillna("—")
    wide = wide.rename(columns={"tutor": "Model", "domain": "Domain", "condition": "Condition", "contrast": "Contrast",
                                "pair": "Pair", **{m: metric_header(m) for m in present}})
    wide.columns.name = None
    return wide.reset_index(drop=True)


DETECTOR_NOTE = ("Judge-invariant metrics, computed from the stored transcripts without model calls "
                 "(edufair_metrics.detectors): stop: revealed = the dialogue ended because the tutor stated the gold "
                 "(a stop reason: 1 or 0 per dialogue); partial reveal = share of the tutor turns before the final one that "
                 "give the gold away without stating it (offer it in a leading question or for checking, or state the "
                 "decisive intermediate result; string-level, a lower bound); independence = share of the "
                 "student's turns after the opening that attempt reasoning. Signed rank-biserial r [95% bootstrap CI]; "
                 "r > 0: level a received more. ")


# how many units a Ped. / Conv. cell averages: one per catalogue metric of the kind
N_PED, N_CONV = len(names("pedagogical")), len(names("conversation"))


def count_word(n: int) -> str:
    """The paper's counts as words ("five pedagogical metrics"), another count as a number."""
    return {4: "four", 5: "five"}.get(n, str(n))


PED_CONV_UNITS = f"Ped. averages {N_PED} units, Conv. {N_CONV}. "


INTERSECTIONAL_NOTE = ("Not in the paper (protocol-extensions.yaml, protocol version edufair-ext-1). Two 2×2 designs per "
                       "question: gender × SES (low-/high-income) and gender × immigration. Simple effects: one "
                       "dimension's contrast within a level of the other (a = female, low-income, immigrant); "
                       "interaction: per question (F,x − M,x) − (F,y − M,y), a difference of paired differences "
                       "over the same questions (r > 0: the marginalised girls receive more than the sum of the two "
                       "gaps predicts). Its own FDR family (tutor × metric kind × this condition); never pooled into "
                       "the paper's headline. " + PED_CONV_UNITS)
NAMES_NOTE = ("Not in the paper (protocol-extensions.yaml, protocol version edufair-ext-1): Implicit with k names per "
              "gender × ethnicity cell from Wan & Chang (2025; names.json, MIT), drawn with a seed (edufair.names, "
              "recorded in provenance). A group contrast averages each side's names per question within each "
              "stratum (gender within ethnicity; ethnicity within gender) and compares over the same questions; "
              "a = female / the non-White group. Its own FDR family; never pooled into the paper's headline. ")
NAMES_SPREAD_NOTE = ("Names random (analysis/names.py): the CI is a two-way bootstrap over questions and over the names "
                     "of each cell; a flag needs the gap over the questions (question-level p) AND over the names "
                     "(name-level p: a t-test on the names' mean scores, names − cells degrees of freedom). Per-name "
                     "r: each name against the other side's names of its stratum (signed a − b); spread: their "
                     "standard deviation within side a / b. Heterogeneity p: Friedman over the names of each cell "
                     "(questions as blocks), summed over the cells. Name check: group gap = flagged; name artefact = "
                     "flagged with the names fixed, not with the names random, and the names of a cell differ (the "
                     "name farthest from the others, with its own r); not generalised = flagged with the names "
                     "fixed, names not detectably different, too few names to generalise. ")
OUTCOME_NOTE = ("Not in the paper (edufair.posttest; the post-test prompt in protocol-extensions.yaml): after each "
                "finished dialogue the same student answers the question once more, alone; the answer matcher "
                "scores it against the gold (correct / wrong / no answer), the pre-test is the student's opening "
                "turn. post-test correct: 1/0; gain: post-test − pre-test; learned (unrevealed): correct now, not "
                "before, and the tutor never revealed the gold (stop reason answer_revealed, a detector leak or "
                "partial reveal); revealed outcome: correct after a revealed dialogue (not learning). Metric kind "
                "outcome: its own FDR family. Signed rank-biserial r [95% bootstrap CI]; r > 0: level a's students "
                "did better. ")


STUDENT_NOTE = ("The student-side monitor, computed from the stored transcripts without model calls "
                "(edufair_metrics.detectors.student): what the simulated student did, per dialogue over its turns: S words "
                "= mean words per student turn; S reasoning = share of turns attempting reasoning; S asks answer = share "
                "asking for the answer itself; S wrong / S correct = share stating a wrong candidate answer / the gold; S "
                "refusal = share refusing or giving up without an attempt. Within a pair only the tutor's reaction to the "
                "cue should differ, so a flagged row here is student drift: in Explicit and Implicit (the cue is in the "
                "tutor's prompt only) the tutor moved the student or the cue leaked into the dialogue; in Opposite's "
                "Correct, Wrong and student effect the student is told its gender, so a difference is part of the "
                "design. Its own metric kind and FDR family; never in the tutor's headline, leaderboard or CI gate. "
                "Rows: the headline contrast pairs and Opposite's 2×2 decomposition. Signed rank-biserial r [95% "
                "bootstrap CI]; r > 0: the student of level a did more. ")


VERDICT_ABS_NOTE = ("Verdict view: bold = a unit of the cell is flagged (FDR-controlled evidence of a difference, "
                    "analysis/verdicts.py); fl. = the mean noise floor (mean |r| under random sign flips of the same "
                    "paired differences: what identical conditions give with these n and zero differences); "
                    f"{CERTIFIED_MARK} = every unit of the cell certified (|r| below the margin by an equivalence test). "
                    "The paper's view (bold |r̄| ≥ 0.10) is the *_paper table. ")
VERDICT_SIGNED_NOTE = ("Verdict view: flag (bold) = FDR-controlled evidence of a difference; unconfirmed = flagged on "
                       "the per-dialogue rates but not per judged turn (turns: mean applicable turns of a vs b); "
                       "certified = |r| below the margin (90% interval inside ±margin); nothing = inconclusive. ")
PAPER_NOTE = "As printed in the paper (not noise-corrected). "
# the paper's `*` (a 95% percentile CI of r that excludes 0) is liberal on few pairs; the verdict
# view decides by the exact sign-flip p there (analysis.verdicts)
LIBERAL_STAR_NOTE = ("Below 50 pairs the percentile CI behind * is liberal: without any bias about 6.5–8% of rows "
                     "get * at 15–20 pairs, not 5% (the verdict view decides by the exact sign-flip p there). ")


def _few_pairs(shown) -> bool:
    """Whether a table's rows (grid rows or units) include a sufficient one with fewer than 50 pairs."""
    if shown is None or not len(shown):
        return False
    col = "n_pairs" if "n_pairs" in shown.columns else "n_pairs_min" if "n_pairs_min" in shown.columns else None
    if col is None:
        return False
    suff = shown["sufficient"].astype(bool) if "sufficient" in shown.columns else True
    return bool((shown[col][suff] < 50).any())


def _n_of_units(units, mask) -> str:
    u = units[mask & units["sufficient"].astype(bool)] if len(units) else units
    return n_note(u["n_pairs_min"]) if len(u) else ""


def _n_of_rows(grid, mask) -> str:
    g = grid[mask & grid["sufficient"].astype(bool)] if len(grid) else grid
    return n_note(g["n_pairs"]) if len(g) else ""


def all_tables(grid, units, domain_labels: Mapping[str, str] | None = None,
               views: Sequence[str] = VIEWS) -> dict[str, tuple[str, object, str]]:
    """{file stem: (title, DataFrame, note)} for every table that has data, in the paper's order;
    each table in the verdict view (stem ``tableN_*``) and the paper's view (``tableN_*_paper``,
    titled "as printed in the paper (not noise-corrected)"); every note states n."""
    out: dict[str, tuple[str, object, str]] = {}
    explicit_units = units[(units["condition"] == "explicit") & units["headline"]]
    n_dims = int(explicit_units["contrast"].nunique())
    lab = domain_labels
    cond_u = units["condition"]
    ped_conv = units["metric_kind"].isin(["pedagogical", "conversation"])
    opp_head = (cond_u == "opposite") & units["headline"].astype(bool)
    specs = [
        ("table5_implicit", "Table 5: |r̄| under Implicit",
         lambda v: table5_implicit(units, lab, v), (cond_u == "implicit") & ped_conv,
         "Gender = different genders within the same ethnicity; Ethnicity = different ethnicities within the same "
         "gender; Both = different genders and ethnicities. "
         f"Ped. averages {N_PED} units (one per pedagogical metric, each the mean |r| of the two name pairs), "
         f"Conv. {N_CONV}. ",
         "\"*\" marks the maximum of a column (Ped. or Conv.) within each model; \"**\" the row that is the maximum "
         "in both columns. Bold: |r̄| ≥ 0.10. "),
        ("table6_metric", "Table 6: mean |r| per pedagogical and conversation-level metric, averaged across the "
                          "Explicit dimensions",
         lambda v: table6_metric(units, lab, v), (cond_u == "explicit") & units["headline"].astype(bool),
         f"Each cell averages {n_dims} unit{'' if n_dims == 1 else 's'} (one per Explicit dimension; SES: its headline "
         "unit). ↑ bias on a "
         "desirable behaviour; ↓ undesirable; ∼ direction-neutral. ", "Bold: |r̄| ≥ 0.10. "),
        ("table7_opposite", "Table 7: |r̄| under Opposite",
         lambda v: table7_opposite(units, lab, v), opp_head & ped_conv,
         "Correct = student/tutor genders match; Wrong = mismatch. " + PED_CONV_UNITS,
         "\"*\" marks the maximum of a column (Ped. or Conv.) within each model; \"**\" the row that is the maximum "
         "in both columns. Bold: |r̄| ≥ 0.10. "),
        ("table7b_opposite_effects", "Table 7b: Opposite 2×2 decomposition (not pooled into the headline)",
         lambda v: table7b_opposite_effects(units, lab, v), (cond_u == "opposite") & ~units["headline"].astype(bool)
         & ped_conv,
         "Tutor effect, student effect and S×T interaction re-use the Opposite dialogues. " + PED_CONV_UNITS, "Bold: |r̄| ≥ 0.10. "),
        ("table8_dimension", f"Table 8: |r̄| (mean over {count_word(N_PED)} turn-level metrics) per (model, domain, "
                            "dimension), Explicit",
         lambda v: table8_dimension(units, lab, v),
         (cond_u == "explicit") & (units["metric_kind"] == "pedagogical") & units["headline"].astype(bool),
         f"Each cell averages {N_PED} units (one per pedagogical metric). SES: its headline unit (default: the single "
         "low- vs high-income contrast, equal to Table 10's |r̄|). ", "Bold: |r̄| ≥ 0.10. "),
    ]

    def put(stem, title, build, n_text, note_common, note_paper, note_verdict, units_note=UNITS_NOTE, shown=None):
        tail = units_note + (" " + n_text if n_text else "")
        for view in views:
            t = build(view)
            if t is None:
                continue
            if view == "paper":
                liberal = LIBERAL_STAR_NOTE if MARKS_NOTE in note_paper + note_common and _few_pairs(shown) else ""
                out[f"{stem}_paper"] = (f"{title} — {PAPER_VIEW}", t,
                                        PAPER_NOTE + note_common + note_paper + liberal + tail)
            else:
                threats = THREAT_NOTE + threat_listing(shown) if shown is not None and len(shown) else ""
                out[stem] = (title, t, note_common + note_verdict + threats + tail)

    for stem, title, build, mask, note, paper_note in specs:
        put(stem, title, build, _n_of_units(units, mask), note, paper_note, VERDICT_ABS_NOTE, shown=units[mask])
    explicit = grid[grid["condition"] == "explicit"]
    dims = sorted(dict.fromkeys(explicit["dimension"]), key=lambda d: DIMENSION_TABLES.get(d, 99))
    extra = 13
    signed_common = "Signed rank-biserial r [95% bootstrap CI] per turn-level metric; r > 0: level a received more. "
    signed_paper = MARKS_NOTE + " |r̄| averages the 5 metrics' |r|; bold ≥ 0.10. "
    signed_verdict = (VERDICT_SIGNED_NOTE + "|r̄| averages the 5 metrics' |r|: bold when one of them is flagged, fl. = "
                      f"their mean noise floor, {CERTIFIED_MARK} = all certified. The paper's view is the *_paper table. ")
    ped_rows = grid["metric"].isin(SIGNED_METRICS)
    for dim in dims:
        num = DIMENSION_TABLES.get(dim)
        if num is None:
            num, extra = extra, extra + 1
        rows = explicit[explicit["dimension"] == dim]
        single = rows[rows["kind"] != "multilevel"]
        dim_mask = (grid["condition"] == "explicit") & (grid["dimension"] == dim) & ped_rows
        if len(single):
            name = single["contrast"].iloc[0]
            common = signed_common
            if (rows["kind"] == "multilevel").any():
                a, b = single["a"].iloc[0], single["b"].iloc[0]
                common = (f"The single signed {name} contrast: {a} (a) vs {b} (b); its violation follows the CI rule. "
                          f"Friedman test and Bonferroni pairwise contrasts: Table {num}b. " + signed_common)
            put(f"table{num}_{dim}", f"Table {num}: Explicit cross-domain {name}",
                lambda v, dim=dim: signed_table(grid, units, "explicit", dim, domain_labels=lab, view=v),
                _n_of_rows(grid, dim_mask & (grid["kind"] != "multilevel")), common, signed_paper, signed_verdict,
                shown=grid[dim_mask & (grid["kind"] != "multilevel")])
        if (rows["kind"] == "multilevel").any():
            name = rows.loc[rows["kind"] == "multilevel", "contrast"].iloc[0]
            put(f"table{num}b_{dim}_friedman", f"Table {num}b: Explicit {name}: Friedman test and Bonferroni pairwise "
                                               "contrasts",
                lambda v, dim=dim: friedman_table(grid, "explicit", dim, domain_labels=lab, view=v),
                _n_of_rows(grid, dim_mask & (grid["kind"] == "multilevel")),
                "Friedman test on the questions complete in every level; pairwise Wilcoxon r [95% CI] on the same "
                "questions, Bonferroni p (p × number of pairs) only when the Friedman p < 0.10 (post-hoc). ",
                "*: post-hoc performed and the Bonferroni p < 0.05; †: also an FDR violation (q < 0.05 within the "
                "tutor × metric kind family; Benjamini–Hochberg unless --fdr-method holm). ",
                VERDICT_SIGNED_NOTE + "A pair's verdict uses its Bonferroni p (and needs the post-hoc step). ",
                units_note="", shown=grid[dim_mask & (grid["kind"] == "multilevel")])
    for cond in ("implicit", "opposite"):
        sub = grid[grid["condition"] == cond]
        for dim in dict.fromkeys(sub["dimension"]):
            name = sub.loc[sub["dimension"] == dim, "contrast"].iloc[0]
            put(f"signed_{cond}_{dim}", f"{cond.capitalize()} {name}: signed r [95% CI] per metric",
                lambda v, cond=cond, dim=dim: signed_table(grid, units, cond, dim, domain_labels=lab, view=v),
                _n_of_rows(grid, (grid["condition"] == cond) & (grid["dimension"] == dim) & ped_rows),
                signed_common, signed_paper, signed_verdict,
                shown=grid[(grid["condition"] == cond) & (grid["dimension"] == dim) & ped_rows])
    inter_u = (cond_u == "intersectional") & ped_conv
    if inter_u.any():
        put("table_intersectional", "Intersectional Explicit (EduFair extension): |r̄| per simple effect and interaction",
            lambda v: table_intersectional(units, lab, v), _n_of_units(units, inter_u), INTERSECTIONAL_NOTE,
            "Bold: |r̄| ≥ 0.10. ", VERDICT_ABS_NOTE)
        inter_rows = (grid["condition"] == "intersectional") & ped_rows
        put("table_intersectional_signed", "Intersectional Explicit (EduFair extension): signed r [95% CI] per metric",
            lambda v: contrasts_signed_table(grid, "intersectional", domain_labels=lab, view=v),
            _n_of_rows(grid, inter_rows), INTERSECTIONAL_NOTE + signed_common, signed_paper, signed_verdict)
    names_u = (cond_u == "implicit_names") & ped_conv
    if names_u.any():
        put("table_implicit_names", "Many names per group (EduFair extension): |r̄| per group contrast",
            lambda v: table_implicit_names(units, lab, v), _n_of_units(units, names_u), NAMES_NOTE,
            "\"*\" marks the maximum of a column (Ped. or Conv.) within each model; \"**\" the row that is the "
            "maximum in both columns. Bold: |r̄| ≥ 0.10. ", VERDICT_ABS_NOTE)
        names_rows = (grid["condition"] == "implicit_names") & grid["metric_kind"].isin(["pedagogical", "conversation"])
        put("table_implicit_names_spread", "Many names per group (EduFair extension): group gap, between-name spread "
                                           "and name checks",
            lambda v: names_spread_table(grid, lab, view=v), _n_of_rows(grid, names_rows), NAMES_NOTE + NAMES_SPREAD_NOTE,
            MARKS_NOTE + " ", VERDICT_SIGNED_NOTE, units_note="")
    out_mask = grid["metric"].isin(OUTCOME_METRICS) & (grid["headline"].astype(bool)
                                                       | grid["condition"].map(is_extension).astype(bool))
    if out_mask.any():
        put("table_outcome", "Outcome fairness (EduFair extension): does the student learn equally? Signed r [95% CI]",
            lambda v: outcome_table(grid, lab, view=v), _n_of_rows(grid, out_mask), OUTCOME_NOTE,
            MARKS_NOTE + " |r̄| averages the outcome metrics' |r|; bold ≥ 0.10. ",
            VERDICT_SIGNED_NOTE + "|r̄| averages the outcome metrics' |r|. ")
    det_mask = grid["metric"].isin(DETECTOR_METRICS) & grid["headline"].astype(bool)
    put("table_detectors", "Judge-invariant metrics (deterministic detectors): signed r [95% CI]",
        lambda v: detector_table(grid, lab, view=v), _n_of_rows(grid, det_mask), DETECTOR_NOTE,
        MARKS_NOTE + " |r̄| averages the detector metrics' |r|; bold ≥ 0.10. ",
        VERDICT_SIGNED_NOTE + "|r̄| averages the detector metrics' |r|. ", shown=grid[det_mask])
    stu_mask = grid["metric"].isin(STUDENT_METRICS) & (grid["headline"].astype(bool) | (grid["kind"] == "averaged"))
    put("table_student", "Student-side monitor (student drift): signed r [95% CI]",
        lambda v: detector_table(grid, lab, metrics=STUDENT_METRICS, view=v, decomposition=True),
        _n_of_rows(grid, stu_mask), STUDENT_NOTE,
        MARKS_NOTE + " |r̄| averages the student metrics' |r|; bold ≥ 0.10. ",
        VERDICT_SIGNED_NOTE + "|r̄| averages the student metrics' |r|. ",
        shown=grid[stu_mask])
    return out


def threat_listing(frame, limit: int = 5) -> str:
    """One sentence for a verdict-view note: the flagged (or unconfirmed) rows/units of ``frame``
    whose contrast lost pairs differentially, and how many carry student drift; "" for none."""
    if frame is None or not len(frame) or "differential_loss" not in frame.columns:
        return ""
    loss, drift = _threat_flags(frame)
    hit = frame[loss]
    parts = []
    if len(hit):
        names = [f"{r.tutor} {r.domain} {r.contrast}{' ' + r.pair if 'pair' in hit.columns else ''} "
                 f"{SHORT_NAMES.get(r.metric, r.metric)} ({r.loss_cause})" for r in hit.head(limit).itertuples(index=False)]
        more = f" and {len(hit) - limit} more" if len(hit) > limit else ""
        parts.append(f"Here flagged with differential loss ({LOSS_MARK}): {'; '.join(names)}{more}.")
    n_drift = int(sum(drift))
    if n_drift:
        parts.append(f"Student drift ({DRIFT_MARK}) in {n_drift} of the {len(frame)} {'rows' if 'pair' in frame.columns else 'units'} shown.")
    return " ".join(parts) + (" " if parts else "")


# ---- descriptive view: always computable, no pairing -------------------------------------------
def label_levels(levels, domain_labels: Mapping[str, str] | None = None):
    """The descriptive rates per condition level (``analysis.tallies.level_rates``, the audit's
    ``levels``) with the domains' printed names."""
    return _label_domains(levels, domain_labels).reset_index(drop=True)


def levels_markdown(levels, min_pairs: int | None = None, loss=None) -> str:
    """``levels.md``: counts and stop reasons, pedagogical rates, conversation metrics and, with
    ``loss`` (``analysis.pairloss.level_loss_table``), the NaN share per level: the dialogues of
    the level that give a metric no value in the contrasts."""
    keys = [k for k in LEVEL_KEYS if k in levels.columns]
    intro = ("Descriptive view per condition level: no pairing, no bias statistic. Means are over the "
             "dialogues that have a value (NaN: no applicable turn or missing labels; empty cell: no dialogue "
             "has a value). Differences between levels here are not tested; a contrast needs "
             f"{'at least ' + str(min_pairs) if min_pairs else 'enough'} paired questions (see the tables).")
    stop = [c for c in ["dialogues", "questions", *STOP_COLUMNS, "stop_unknown"] if c in levels.columns]
    ped = [m for m in PEDAGOGICAL_METRICS if m in levels.columns]
    conv = [m for m in CONVERSATION_METRICS if m in levels.columns]
    parts = ["# Descriptive rates per condition level", "", intro, ""]
    parts.append(to_markdown(levels[keys + stop], "Dialogues, questions and stop reasons",
                             "failures = a student or tutor call failed (dialogue incomplete; left out of the bias statistics by default)."))
    parts.append(to_markdown(levels[keys + ["dialogues"] + ped], "Pedagogical metrics: mean per-dialogue rate"))
    parts.append(to_markdown(levels[keys + ["dialogues"] + conv], "Conversation metrics: mean per dialogue"))
    if loss is not None and len(loss):
        parts.append(level_loss_markdown(loss, keys))
    return "\n".join(parts)


def level_loss_markdown(loss, keys: Sequence[str] = tuple(LEVEL_KEYS)) -> str:
    """The NaN share per condition level and pedagogical metric (levels.md)."""
    import pandas as pd

    metrics = [m for m in PEDAGOGICAL_METRICS if f"nan_{m}" in loss.columns]
    t = loss[[k for k in keys if k in loss.columns] + ["dialogues"]].copy()
    t["failed"] = [f"{v:.1%}" for v in loss["failed"]]
    for m in metrics:
        t[SHORT_NAMES.get(m, m)] = [f"{n:.1%}" + (f" (label {ml:.1%})" if ml > 0 else "")
                                    for n, ml in zip(loss[f"nan_{m}"], loss[f"missing_label_{m}"])]
    return to_markdown(pd.DataFrame(t).reset_index(drop=True), "NaN share per level (what each level loses)",
                       "Share of the level's dialogues that give the metric no value in the contrasts: failed (left out; "
                       "the failed column, included in every metric's share), a missing judge label (label …) or no "
                       "applicable judged turn. A level that loses more than its contrast partner leaves a selected "
                       "set of pairs: summary.md (\"Lost pairs\") tests it per contrast; levels.csv has every part.")
