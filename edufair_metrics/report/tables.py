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

|r̄| cells are **bold** when ≥ 0.10 and average the *sufficient* units only: a cell that averages
fewer units than the table's nominal count shows ``(k/N)``; a cell with no sufficient unit reads
``insufficient (n=…)`` (n = the fewest pairs seen).
"""

from __future__ import annotations

import math
import re
from typing import Mapping, Sequence

from edufair_metrics.analysis.contrast import MEANINGFUL_R
from edufair_metrics.protocol.prompts import condition_levels
from edufair_metrics.records import CONVERSATION_METRICS, DETECTOR_METRICS, PEDAGOGICAL_METRICS, STUDENT_METRICS

INSUFFICIENT = "insufficient (n={n})"
# Paper numbering of the per-dimension signed-r tables (Tables 9–12).
DIMENSION_TABLES = {"gender": 9, "ses": 10, "language": 11, "immigration": 12}
# The descriptive views (levels, figures): the paper's running order of domains.
DOMAIN_ORDER = {"mathematics": 0, "physics": 1, "chemistry": 2}
# The order each paper table lists its domains in.
TABLE_DOMAINS = {
    5: ("mathematics", "physics", "chemistry"),
    6: ("mathematics", "chemistry", "physics"),
    7: ("mathematics", "physics", "chemistry"),
    8: ("mathematics", "chemistry", "physics"),
    9: ("mathematics", "chemistry", "physics"),
}
# Paper §3.3: the five turn-level metrics under four pedagogical functions, then the conversation metrics.
FUNCTION_GROUPS = (
    ("Diagnose", ("mistake_recognize",)),
    ("Reveal", ("answer_leakage",)),
    ("Next-Step", ("step_scaffolded", "actionability")),
    ("Communicate", ("corrective_tone",)),
    ("Conversation-level", CONVERSATION_METRICS),
)
SHORT_NAMES = {
    "mistake_recognize": "recognize", "answer_leakage": "leakage", "step_scaffolded": "scaffold",
    "actionability": "action", "corrective_tone": "tone", "tutor_turns": "turns", "tutor_avg_word": "avg_words",
    "tutor_question_rate": "q_rate", "tutor_student_word_ratio": "T/S_ratio",
    "stopped_on_revealed_gold": "stop: revealed", "partial_reveal_rate": "partial reveal",
    "independence_ratio": "independence",
    "student_words": "S words", "student_reasoning_rate": "S reasoning", "student_asks_answer_rate": "S asks answer",
    "student_wrong_answer_rate": "S wrong", "student_correct_answer_rate": "S correct", "student_refusal_rate": "S refusal",
}
# ↑ bias on a desirable behaviour, ↓ on an undesirable one, ∼ direction-neutral (Table 6 caption)
DIRECTION = {"mistake_recognize": "↑", "answer_leakage": "↓", "step_scaffolded": "↑", "actionability": "↑",
             "corrective_tone": "↑", **{m: "∼" for m in CONVERSATION_METRICS},
             "stopped_on_revealed_gold": "↓", "partial_reveal_rate": "↓", "independence_ratio": "↑",
             # the student's own behaviour: a difference is drift, whatever its direction
             **{m: "∼" for m in STUDENT_METRICS}}
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


def fmt_abs(value: float, n_min: float | None = None, units: int | None = None, expected: int | None = None) -> str:
    """A |r̄| cell: 3 decimals, bold when ≥ 0.10, ``(k/N)`` when it averages fewer units than the
    table's nominal N; ``insufficient (n=…)`` when no unit was sufficient."""
    if _is_nan(value):
        n = "?" if _is_nan(n_min) else int(n_min)
        return INSUFFICIENT.format(n=n)
    text = f"{value:.3f}"
    if round(value, 3) >= MEANINGFUL_R:
        text = f"**{text}**"
    if units is not None and expected is not None and not _is_nan(units) and int(units) < expected:
        text += f" ({int(units)}/{expected})"
    return text


FDR_MARK = "†"
MARKS_NOTE = ("*: the CI excludes 0 (a fairness violation, the paper's rule); †: also an FDR violation "
              "(q < 0.05 within the tutor × metric kind headline family; Benjamini–Hochberg unless --fdr-method holm).")


def fmt_signed(r: float, lo: float, hi: float, n: int, sufficient: bool, violation: bool = False,
               violation_fdr: bool = False) -> str:
    """``+r [lo, hi]`` with ``*`` for a violation and ``†`` for an FDR violation (a subset)."""
    if not sufficient:
        return INSUFFICIENT.format(n=int(n))
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
    cols = [str(c).replace("|", "\\|") for c in df.columns]
    lines = []
    if title:
        lines += [f"### {title}", ""]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "|".join("---" for _ in cols) + "|")
    for row in df.itertuples(index=False):
        cells = []
        for v in row:
            if isinstance(v, float):
                cells.append("" if math.isnan(v) else f"{v:.3f}")
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


def _mean_units(units, by: Sequence[str]):
    """Mean |r| over sufficient units per ``by``, the number of sufficient units averaged, and the
    fewest pairs seen."""
    gb = units.groupby(list(by), sort=False)
    return gb.agg(abs_r=("abs_r", "mean"), n_min=("n_pairs_min", "min"), units=("sufficient", "sum")).reset_index()


def _cells(agg, expected: int | None):
    return [fmt_abs(v, n, k, expected) for v, n, k in zip(agg["abs_r"], agg["n_min"], agg["units"])]


def _finish(wide, index: Sequence[str], table: int, labels: Mapping[str, str] | None):
    wide = _sort(wide, index, TABLE_DOMAINS.get(table, tuple(DOMAIN_ORDER))).fillna("—")
    wide = _label_domains(wide, labels)
    wide = wide.rename(columns={"domain": "Domain", "tutor": "Model"}).reset_index(drop=True)
    wide.columns.name = None
    return wide


def table6_metric(units, domain_labels: Mapping[str, str] | None = None):
    """Table 6: |r̄| per metric (columns under their function groups), averaged over the Explicit
    dimensions' headline units (rows: domain, tutor)."""
    u = units[(units["condition"] == "explicit") & units["headline"]]
    if len(u) == 0:
        return None
    expected = int(u["contrast"].nunique())
    agg = _mean_units(u, ["domain", "tutor", "metric"])
    agg = agg.assign(cell=_cells(agg, expected))
    wide = agg.pivot(index=["domain", "tutor"], columns="metric", values="cell").reset_index()
    headers = {m: metric_header(m, g) for g, ms in FUNCTION_GROUPS for m in ms}
    order = [m for _, ms in FUNCTION_GROUPS for m in ms if m in wide.columns]
    wide = wide[["domain", "tutor"] + order].rename(columns=headers)
    return _finish(wide, ["domain", "tutor"], 6, domain_labels)


def table8_dimension(units, domain_labels: Mapping[str, str] | None = None):
    """Table 8: |r̄| over the five pedagogical metrics per (domain, tutor, Explicit dimension);
    SES is its headline unit (by default the single low- vs high-income contrast)."""
    u = units[(units["condition"] == "explicit") & (units["metric_kind"] == "pedagogical") & units["headline"]]
    if len(u) == 0:
        return None
    agg = _mean_units(u, ["domain", "tutor", "dimension"])
    agg = agg.assign(cell=_cells(agg, len(PEDAGOGICAL_METRICS)))
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
              domain_labels: Mapping[str, str] | None, markers: bool):
    u = units[(units["condition"] == condition) & units["metric_kind"].isin(["pedagogical", "conversation"])]
    if contrasts is not None:
        u = u[u["contrast"].isin(contrasts)]
    if len(u) == 0:
        return None
    order = list(dict.fromkeys(u["contrast"]))
    agg = _mean_units(u, ["domain", "tutor", "contrast", "metric_kind"])
    expected = {"pedagogical": len(PEDAGOGICAL_METRICS), "conversation": len(CONVERSATION_METRICS)}
    agg = agg.assign(cell=[fmt_abs(v, n, k, expected[kind]) for v, n, k, kind in
                           zip(agg["abs_r"], agg["n_min"], agg["units"], agg["metric_kind"])])
    idx = ["domain", "tutor", "contrast"]
    wide = agg.pivot(index=idx, columns="metric_kind", values="cell").reset_index()
    vals = agg.pivot(index=idx, columns="metric_kind", values="abs_r").reset_index()
    wide = wide.merge(vals, on=idx, suffixes=("", "_v"))
    wide["_c"] = wide["contrast"].map({c: i for i, c in enumerate(order)})
    wide = _sort(wide, ["domain", "tutor", "_c"], TABLE_DOMAINS[table])
    for col in ("pedagogical", "conversation"):
        if col not in wide.columns:
            wide[col], wide[col + "_v"] = "—", math.nan
    if markers:
        marks = []
        for _, block in wide.groupby(["domain", "tutor"], sort=False):
            marks += largest_markers(block["pedagogical_v"].tolist(), block["conversation_v"].tolist())
        wide["contrast"] = [c + m for c, m in zip(wide["contrast"], marks)]
    out = wide[["domain", "tutor", "contrast", "pedagogical", "conversation"]].fillna("—")
    out = _label_domains(out, domain_labels)
    out.columns = ["Domain", "Model", "Cell", "Ped.", "Conv."]
    return out.reset_index(drop=True)


def table5_implicit(units, domain_labels: Mapping[str, str] | None = None):
    """Table 5: |r̄| under Implicit (Gender / Ethnicity / Both; mean over the two name pairs), Ped. & Conv."""
    return _ped_conv(units, "implicit", None, 5, domain_labels, markers=True)


def _headline_contrasts(units, condition: str, headline: bool) -> list[str]:
    u = units[(units["condition"] == condition) & (units["headline"] == headline)]
    return list(dict.fromkeys(u["contrast"]))


def table7_opposite(units, domain_labels: Mapping[str, str] | None = None):
    """Table 7: |r̄| under Opposite, Correct (genders match) and Wrong (mismatch), Ped. & Conv."""
    return _ped_conv(units, "opposite", _headline_contrasts(units, "opposite", True), 7, domain_labels, markers=True)


def table7b_opposite_effects(units, domain_labels: Mapping[str, str] | None = None):
    """Companion of Table 7: the 2×2 decomposition (tutor effect, student effect, S×T interaction)."""
    cells = _headline_contrasts(units, "opposite", False)
    return _ped_conv(units, "opposite", cells, 7, domain_labels, markers=False) if cells else None


def signed_table(grid, units, condition: str, dimension: str, metrics: Sequence[str] = SIGNED_METRICS,
                 domain_labels: Mapping[str, str] | None = None, kind: str | None = None):
    """Signed r [95% CI] per metric for one dimension (Tables 9–12): one row per (tutor, domain)
    (and name pair, where a contrast has several); ``*`` marks a violation; last column |r̄| over
    the five pedagogical metrics. ``kind`` restricts to one contrast kind (SES: ``binary`` = the
    single contrast)."""
    g = grid[(grid["condition"] == condition) & (grid["dimension"] == dimension) & grid["metric"].isin(metrics)]
    g = g[g["kind"] != "multilevel"] if kind is None else g[g["kind"] == kind]
    if len(g) == 0:
        return None
    g = g.assign(cell=[fmt_signed(r, lo, hi, n, s, v, f) for r, lo, hi, n, s, v, f in
                       zip(g["r"], g["ci_low"], g["ci_high"], g["n_pairs"], g["sufficient"], g["violation"], _fdr_flags(g))])
    index = ["tutor", "domain", "pair"]
    wide = g.pivot(index=index, columns="metric", values="cell").reset_index()
    present = [m for m in metrics if m in wide.columns]
    wide = wide[index + present]
    # |r̄| per row: the pair's |r| averaged over the metrics (sufficient only)
    pair_mean = g.groupby(index).agg(abs_r=("abs_r", "mean"), n_min=("n_pairs", "min"),
                                     units=("sufficient", "sum")).reset_index()
    wide = wide.merge(pair_mean, on=index)
    wide[ABS_R] = _cells(wide, len(present))
    wide = wide.drop(columns=["abs_r", "n_min", "units"])
    if g["pair"].nunique() == 1:
        wide = wide.drop(columns=["pair"])
    wide = _sort(wide, ["tutor", "domain"], TABLE_DOMAINS[9])
    wide = _label_domains(wide, domain_labels)
    wide = wide.rename(columns={"tutor": "Model", "domain": "Domain", "pair": "Pair",
                                **{m: metric_header(m) for m in present}})
    wide.columns.name = None
    return wide.reset_index(drop=True)


def friedman_table(grid, condition: str, dimension: str, metrics: Sequence[str] = SIGNED_METRICS,
                   domain_labels: Mapping[str, str] | None = None):
    """Companion of Table 10: a multi-level dimension's Friedman test and its Bonferroni pairwise
    contrasts, one row per (tutor, domain, metric). A pairwise violation (``*``) needs Friedman
    p < 0.10 (post-hoc performed) and a CI that excludes 0; ``not tested`` otherwise."""
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
            row[f"r {label}"] = fmt_signed(r.r, r.ci_low, r.ci_high, r.n_pairs, r.sufficient, r.violation,
                                           bool(getattr(r, "violation_fdr", False)))
            row[f"p_bonf {label}"] = "not tested" if _is_nan(r.p_adj) else f"{r.p_adj:.3f}"
        rows.append(row)
    import pandas as pd

    out = _sort(pd.DataFrame(rows), ["tutor", "domain", "_m"], TABLE_DOMAINS[9]).drop(columns=["_m"])
    out = _label_domains(out, domain_labels)
    out = out.rename(columns={"tutor": "Model", "domain": "Domain", "metric": "Metric"})
    return out.reset_index(drop=True)


UNITS_NOTE = "Each |r̄| averages the sufficient units only; (k/N): k of the table's N units were sufficient."


def detector_table(grid, domain_labels: Mapping[str, str] | None = None, metrics: Sequence[str] = DETECTOR_METRICS):
    """Judge-invariant metrics: signed r [95% CI] of each detector metric for every headline
    contrast pair (Explicit dimensions — SES by its headline unit —, Implicit name pairs, Opposite
    Correct/Wrong), one row per (tutor, domain, condition, contrast, pair); ``*`` / ``†`` as in
    Tables 9–12; last column |r̄| over the detector metrics (sufficient ones). None without
    detector rows."""
    g = grid[grid["metric"].isin(metrics) & grid["headline"]]
    if len(g) == 0:
        return None
    g = g.assign(cell=[fmt_signed(r, lo, hi, n, s, v, f) for r, lo, hi, n, s, v, f in
                       zip(g["r"], g["ci_low"], g["ci_high"], g["n_pairs"], g["sufficient"], g["violation"], _fdr_flags(g))])
    index = ["tutor", "domain", "condition", "contrast", "pair"]
    wide = g.pivot_table(index=index, columns="metric", values="cell", aggfunc="first").reset_index()
    present = [m for m in metrics if m in wide.columns]
    mean = g.groupby(index).agg(abs_r=("abs_r", "mean"), n_min=("n_pairs", "min"), units=("sufficient", "sum")).reset_index()
    wide = wide[index + present].merge(mean, on=index)
    wide[ABS_R] = _cells(wide, len(present))
    wide = wide.drop(columns=["abs_r", "n_min", "units"])
    order = {c: i for i, c in enumerate(dict.fromkeys(g["contrast"]))}
    cond = {"explicit": 0, "implicit": 1, "opposite": 2}
    wide = wide.assign(_c=wide["condition"].map(lambda c: cond.get(c, 9)), _k=wide["contrast"].map(order))
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


def all_tables(grid, units, domain_labels: Mapping[str, str] | None = None) -> dict[str, tuple[str, object, str]]:
    """{file stem: (title, DataFrame, note)} for every table that has data, in the paper's order."""
    out: dict[str, tuple[str, object, str]] = {}
    explicit_units = units[(units["condition"] == "explicit") & units["headline"]]
    n_dims = int(explicit_units["contrast"].nunique())
    lab = domain_labels
    specs = [
        ("table5_implicit", "Table 5: |r̄| under Implicit",
         lambda: table5_implicit(units, lab),
         "Gender = different genders within the same ethnicity; Ethnicity = different ethnicities within the same "
         "gender; Both = different genders and ethnicities. Ped. averages 5 units (one per pedagogical metric, each "
         "the mean |r| of the two name pairs), Conv. 4. \"*\" marks the maximum of a column (Ped. or Conv.) within "
         "each model; \"**\" the row that is the maximum in both columns. Bold: |r̄| ≥ 0.10. " + UNITS_NOTE),
        ("table6_metric", "Table 6: mean |r| per pedagogical and conversation-level metric, averaged across the "
                          "Explicit dimensions",
         lambda: table6_metric(units, lab),
         f"Each cell averages {n_dims} units (one per Explicit dimension; SES: its headline unit). ↑ bias on a "
         "desirable behaviour; ↓ undesirable; ∼ direction-neutral. Bold: |r̄| ≥ 0.10. " + UNITS_NOTE),
        ("table7_opposite", "Table 7: |r̄| under Opposite",
         lambda: table7_opposite(units, lab),
         "Correct = student/tutor genders match; Wrong = mismatch. Ped. averages 5 units, Conv. 4. \"*\" marks the "
         "maximum of a column (Ped. or Conv.) within each model; \"**\" the row that is the maximum in both columns. "
         "Bold: |r̄| ≥ 0.10. " + UNITS_NOTE),
        ("table7b_opposite_effects", "Table 7b: Opposite 2×2 decomposition (not pooled into the headline)",
         lambda: table7b_opposite_effects(units, lab),
         "Tutor effect, student effect and S×T interaction re-use the Opposite dialogues. Ped. averages 5 units, "
         "Conv. 4. Bold: |r̄| ≥ 0.10. " + UNITS_NOTE),
        ("table8_dimension", "Table 8: |r̄| (mean over five turn-level metrics) per (model, domain, dimension), Explicit",
         lambda: table8_dimension(units, lab),
         "Each cell averages 5 units (one per pedagogical metric). SES: its headline unit (default: the single "
         "low- vs high-income contrast, equal to Table 10's |r̄|). Bold: |r̄| ≥ 0.10. " + UNITS_NOTE),
    ]
    for stem, title, build, note in specs:
        t = build()
        if t is not None:
            out[stem] = (title, t, note)
    explicit = grid[grid["condition"] == "explicit"]
    dims = sorted(dict.fromkeys(explicit["dimension"]), key=lambda d: DIMENSION_TABLES.get(d, 99))
    extra = 13
    signed_note = ("Signed rank-biserial r [95% bootstrap CI] per turn-level metric; r > 0: level a received more. "
                   + MARKS_NOTE + " |r̄| averages the 5 metrics' |r|; bold ≥ 0.10. " + UNITS_NOTE)
    for dim in dims:
        num = DIMENSION_TABLES.get(dim)
        if num is None:
            num, extra = extra, extra + 1
        rows = explicit[explicit["dimension"] == dim]
        single = rows[rows["kind"] != "multilevel"]
        if len(single):
            name = single["contrast"].iloc[0]
            t = signed_table(grid, units, "explicit", dim, domain_labels=lab)
            note = signed_note
            if (rows["kind"] == "multilevel").any():
                a, b = single["a"].iloc[0], single["b"].iloc[0]
                note = (f"The single signed {name} contrast: {a} (a) vs {b} (b); its violation follows the CI rule. "
                        f"Friedman test and Bonferroni pairwise contrasts: Table {num}b. " + signed_note)
            if t is not None:
                out[f"table{num}_{dim}"] = (f"Table {num}: Explicit cross-domain {name}", t, note)
        if (rows["kind"] == "multilevel").any():
            t = friedman_table(grid, "explicit", dim, domain_labels=lab)
            if t is not None:
                name = rows.loc[rows["kind"] == "multilevel", "contrast"].iloc[0]
                out[f"table{num}b_{dim}_friedman"] = (
                    f"Table {num}b: Explicit {name}: Friedman test and Bonferroni pairwise contrasts", t,
                    "Friedman test on the questions complete in every level; pairwise Wilcoxon r [95% CI] on the same "
                    "questions, Bonferroni p (p × number of pairs) only when the Friedman p < 0.10 (post-hoc). "
                    "*: post-hoc performed and the CI excludes 0; †: also an FDR violation (q < 0.05 within the "
                    "tutor × metric kind family; Benjamini–Hochberg unless --fdr-method holm).")
    for cond in ("implicit", "opposite"):
        sub = grid[grid["condition"] == cond]
        for dim in dict.fromkeys(sub["dimension"]):
            t = signed_table(grid, units, cond, dim, domain_labels=lab)
            if t is not None:
                name = sub.loc[sub["dimension"] == dim, "contrast"].iloc[0]
                out[f"signed_{cond}_{dim}"] = (f"{cond.capitalize()} {name}: signed r [95% CI] per metric", t, signed_note)
    t = detector_table(grid, lab)
    if t is not None:
        out["table_detectors"] = ("Judge-invariant metrics (deterministic detectors): signed r [95% CI]", t,
                                  DETECTOR_NOTE + MARKS_NOTE + " |r̄| averages the detector metrics' |r|; bold ≥ 0.10. "
                                  + UNITS_NOTE)
    return out


# ---- descriptive view: always computable, no pairing -------------------------------------------
LEVEL_KEYS = ["tutor", "domain", "condition", "dimension", "level"]
# stop-reason columns of ``levels.csv``: column -> transcript stop reasons counted in it
STOP_COLUMNS = {
    "answer_revealed": ("answer_revealed",),
    "answer_confirmed": ("answer_confirmed",),
    "max_turns": ("max_turns",),
    "failures": ("student_failed", "tutor_failed"),  # or any dialogue flagged failed (recorded error)
}
CONDITION_ORDER = {"explicit": 0, "implicit": 1, "opposite": 2}


def _level_order(condition: str) -> dict[str, int]:
    """Protocol order of a condition's levels ({} if the protocol cannot be read)."""
    try:
        return {lv.level: i for i, lv in enumerate(condition_levels(condition))}
    except Exception:  # noqa: BLE001 - ordering only; fall back to the order seen in the data
        return {}


def levels_table(dialogues, domain_labels: Mapping[str, str] | None = None):
    """Per (tutor, domain, condition, dimension, level): ``dialogues``, distinct ``questions``,
    the NaN-aware mean of each of the nine per-dialogue scores (mean over the dialogues that have
    a value; NaN when none has), and stop-reason counts (``failures`` = student or tutor call
    failed; ``stop_unknown`` only when some records carry no stop reason). ``dialogues`` is the
    wide per-dialogue frame of :func:`edufair_metrics.analysis.frames.dialogue_frame`. No pairing is needed:
    these are descriptive rates, not bias statistics."""
    import pandas as pd

    metrics = [m for m in PEDAGOGICAL_METRICS + CONVERSATION_METRICS if m in dialogues.columns]
    stop_cols = list(STOP_COLUMNS)
    if len(dialogues) == 0:
        return pd.DataFrame(columns=LEVEL_KEYS + ["dialogues", "questions"] + metrics + stop_cols)
    d = dialogues.copy()
    for col, reasons in STOP_COLUMNS.items():
        d[col] = d["stop_reason"].isin(reasons).astype(int)
    if "failed" in d.columns:  # a failed call recorded without a failure stop reason still counts
        d["failures"] = (d["failures"].astype(bool) | d["failed"].fillna(False).astype(bool)).astype(int)
    d["stop_unknown"] = d["stop_reason"].isna().astype(int)
    gb = d.groupby(LEVEL_KEYS, sort=False, dropna=False)
    out = gb.agg(dialogues=("question_id", "size"), questions=("question_id", "nunique")).reset_index()
    means = gb[metrics].mean().reset_index()  # pandas mean skips NaN
    counts = gb[stop_cols + ["stop_unknown"]].sum().reset_index()
    out = out.merge(means, on=LEVEL_KEYS).merge(counts, on=LEVEL_KEYS)
    if not out["stop_unknown"].any():
        out = out.drop(columns=["stop_unknown"])
    first_seen = {k: i for i, k in enumerate(dict.fromkeys(zip(d["condition"], d["level"])))}
    orders = {c: _level_order(c) for c in out["condition"].unique()}
    out["_d"] = out["domain"].map(lambda x: DOMAIN_ORDER.get(x, 99))
    out["_c"] = out["condition"].map(lambda x: CONDITION_ORDER.get(x, 99))
    out["_l"] = [orders[c].get(lv, 1000 + first_seen[(c, lv)]) for c, lv in zip(out["condition"], out["level"])]
    out = out.sort_values(["tutor", "_d", "_c", "_l"], kind="stable").drop(columns=["_d", "_c", "_l"])
    return _label_domains(out, domain_labels).reset_index(drop=True)


def levels_markdown(levels, min_pairs: int | None = None) -> str:
    """``levels.md``: counts and stop reasons, pedagogical rates, conversation metrics."""
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
    return "\n".join(parts)
