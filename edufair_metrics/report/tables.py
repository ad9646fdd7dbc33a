"""The paper's Tables 5–12 (App. G) as DataFrames of display strings, plus Markdown rendering.

Inputs are the pair-level grid (``analysis.stats.contrast_grid``) and the dimension-level units
(``analysis.stats.dimension_summary``). |r̄| cells average the units' |r| over the sufficient units
only; a cell with no sufficient unit reads ``insufficient (n=…)`` (n = the fewest pairs seen).
"""

from __future__ import annotations

import math
from typing import Sequence

from edufair_metrics.records import CONVERSATION_METRICS, PEDAGOGICAL_METRICS

INSUFFICIENT = "insufficient (n={n})"
# Paper numbering of the per-dimension signed-r tables (Tables 9–12).
DIMENSION_TABLES = {"gender": 9, "ses": 10, "language": 11, "immigration": 12}
DOMAIN_ORDER = {"mathematics": 0, "physics": 1, "chemistry": 2}


def fmt_abs(value: float, n_min: float | None = None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        n = "?" if n_min is None or (isinstance(n_min, float) and math.isnan(n_min)) else int(n_min)
        return INSUFFICIENT.format(n=n)
    return f"{value:.3f}"


def fmt_signed(r: float, lo: float, hi: float, n: int, sufficient: bool, violation: bool = False) -> str:
    if not sufficient:
        return INSUFFICIENT.format(n=int(n))
    star = "*" if violation else ""
    return f"{r:+.3f} [{lo:+.3f}, {hi:+.3f}]{star}"


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


def _sort(df, keys: Sequence[str]):
    tmp = df.copy()
    if "domain" in tmp.columns:
        tmp["_d"] = tmp["domain"].map(lambda d: DOMAIN_ORDER.get(d, 99))
        keys = ["_d" if k == "domain" else k for k in keys]
    return tmp.sort_values(list(keys), kind="stable").drop(columns=[c for c in ["_d"] if c in tmp.columns])


def _mean_units(units, by: Sequence[str]):
    """Mean |r| over sufficient units per ``by`` and the fewest pairs, as a frame."""
    gb = units.groupby(list(by), sort=False)
    out = gb.agg(abs_r=("abs_r", "mean"), n_min=("n_pairs_min", "min"), units=("sufficient", "sum")).reset_index()
    return out


def _pivot_display(agg, index: Sequence[str], column: str, order: Sequence[str]):

    agg = agg.assign(cell=[fmt_abs(v, n) for v, n in zip(agg["abs_r"], agg["n_min"])])
    wide = agg.pivot(index=list(index), columns=column, values="cell").reset_index()
    cols = list(index) + [c for c in order if c in wide.columns] + [c for c in wide.columns if c not in order and c not in index]
    wide = wide[cols]
    wide.columns.name = None
    return _sort(wide, index).fillna("—")


def table6_metric(units):
    """|r̄| per metric, averaged over the Explicit dimensions (rows: domain, tutor)."""
    u = units[(units["condition"] == "explicit") & units["headline"]]
    if len(u) == 0:
        return None
    agg = _mean_units(u, ["domain", "tutor", "metric"])
    return _pivot_display(agg, ["domain", "tutor"], "metric", PEDAGOGICAL_METRICS + CONVERSATION_METRICS)


def table8_dimension(units):
    """|r̄| over the five pedagogical metrics per (domain, tutor, Explicit dimension)."""
    u = units[(units["condition"] == "explicit") & (units["metric_kind"] == "pedagogical")]
    if len(u) == 0:
        return None
    agg = _mean_units(u, ["domain", "tutor", "contrast"])
    order = list(dict.fromkeys(u["contrast"]))
    return _pivot_display(agg, ["domain", "tutor"], "contrast", order)


def _ped_conv(units, condition: str, label: str):
    u = units[(units["condition"] == condition) & units["metric_kind"].isin(["pedagogical", "conversation"])]
    if len(u) == 0:
        return None
    agg = _mean_units(u, ["domain", "tutor", "contrast", "metric_kind"])
    order = list(dict.fromkeys(u["contrast"]))
    agg["_c"] = agg["contrast"].map({c: i for i, c in enumerate(order)})
    agg = agg.assign(cell=[fmt_abs(v, n) for v, n in zip(agg["abs_r"], agg["n_min"])])
    wide = agg.pivot(index=["domain", "tutor", "_c", "contrast"], columns="metric_kind", values="cell").reset_index()
    wide = wide.rename(columns={"contrast": label, "pedagogical": "Ped.", "conversation": "Conv."})
    wide = _sort(wide, ["domain", "tutor", "_c"]).drop(columns=["_c"])
    cols = ["domain", "tutor", label] + [c for c in ("Ped.", "Conv.") if c in wide.columns]
    out = wide[cols].fillna("—")
    out.columns.name = None
    return out


def table5_implicit(units):
    """|r̄| under Implicit (Gender / Ethnicity / Both; mean over the two name pairs), Ped. & Conv."""
    return _ped_conv(units, "implicit", "contrast")


def table7_opposite(units):
    """|r̄| under Opposite: Correct, Wrong, and the tutor/student/interaction effects, Ped. & Conv."""
    return _ped_conv(units, "opposite", "cell")


def signed_table(grid, units, condition: str, dimension: str, metrics: Sequence[str] = PEDAGOGICAL_METRICS):
    """Signed r [95% CI] per metric for one dimension (Tables 9–12); one row per (tutor, domain,
    pair); ``*`` marks a violation; last column |r̄| over the five pedagogical metrics."""

    g = grid[(grid["condition"] == condition) & (grid["dimension"] == dimension) & grid["metric"].isin(metrics)]
    if len(g) == 0:
        return None
    g = g.assign(cell=[fmt_signed(r, lo, hi, n, s, v) for r, lo, hi, n, s, v in
                       zip(g["r"], g["ci_low"], g["ci_high"], g["n_pairs"], g["sufficient"], g["violation"])])
    index = ["tutor", "domain", "pair"]
    wide = g.pivot(index=index, columns="metric", values="cell").reset_index()
    wide = wide[index + [m for m in metrics if m in wide.columns]]
    # |r̄| per row: the pair's |r| averaged over metrics (sufficient only)
    pair_mean = g.groupby(index).agg(abs_r=("abs_r", "mean"), n_min=("n_pairs", "min")).reset_index()
    wide = wide.merge(pair_mean, on=index)
    wide["|r̄|"] = [fmt_abs(v, n) for v, n in zip(wide.pop("abs_r"), wide.pop("n_min"))]
    if (g["kind"] == "multilevel").any():
        fr = g.groupby(index).agg(friedman_p=("friedman_p", "first"), p_adj=("p_adj", "min")).reset_index()
        wide = wide.merge(fr, on=index)
        wide["Friedman p"] = [("—" if math.isnan(p) else f"{p:.3f}") for p in wide.pop("friedman_p")]
        wide["min Bonferroni p"] = [("not tested" if math.isnan(p) else f"{p:.3f}") for p in wide.pop("p_adj")]
    if g["pair"].nunique() == 1:
        wide = wide.drop(columns=["pair"])
    wide = _sort(wide, ["tutor", "domain"])
    wide.columns.name = None
    return wide


def all_tables(grid, units) -> dict[str, tuple[str, object]]:
    """{file stem: (title, DataFrame)} for every table that has data."""
    out: dict[str, tuple[str, object]] = {}
    for stem, title, build in (
        ("table5_implicit", "Table 5: |r̄| under Implicit (mean over the two name pairs)", table5_implicit),
        ("table6_metric", "Table 6: |r̄| per metric, averaged across the Explicit dimensions", table6_metric),
        ("table7_opposite", "Table 7: |r̄| under Opposite (Correct = genders match, Wrong = mismatch)", table7_opposite),
        ("table8_dimension", "Table 8: |r̄| over the five pedagogical metrics per Explicit dimension", table8_dimension),
    ):
        t = build(units)
        if t is not None:
            out[stem] = (title, t)
    explicit = grid[grid["condition"] == "explicit"]
    dims = list(dict.fromkeys(explicit["dimension"]))
    extra = 13
    for dim in dims:
        num = DIMENSION_TABLES.get(dim)
        if num is None:
            num, extra = extra, extra + 1
        t = signed_table(grid, units, "explicit", dim)
        if t is not None:
            name = explicit.loc[explicit["dimension"] == dim, "contrast"].iloc[0]
            out[f"table{num}_{dim}"] = (f"Table {num}: Explicit {name}, signed r [95% CI] per metric (* = violation)", t)
    for cond in ("implicit", "opposite"):
        sub = grid[grid["condition"] == cond]
        for dim in dict.fromkeys(sub["dimension"]):
            t = signed_table(grid, units, cond, dim)
            if t is not None:
                name = sub.loc[sub["dimension"] == dim, "contrast"].iloc[0]
                out[f"signed_{cond}_{dim}"] = (f"{cond.capitalize()} {name}: signed r [95% CI] per metric (* = violation)", t)
    return out


# ---- descriptive view: always computable, no pairing -------------------------------------------
LEVEL_KEYS = ["tutor", "domain", "condition", "dimension", "level"]
# stop-reason columns of ``levels.csv``: column -> transcript stop reasons counted in it
STOP_COLUMNS = {
    "answer_revealed": ("answer_revealed",),
    "answer_confirmed": ("answer_confirmed",),
    "max_turns": ("max_turns",),
    "failures": ("student_failed", "tutor_failed"),
}
CONDITION_ORDER = {"explicit": 0, "implicit": 1, "opposite": 2}


def _level_order(condition: str) -> dict[str, int]:
    """Protocol order of a condition's levels ({} if the protocol cannot be read)."""
    try:
        from edufair_metrics.protocol.prompts import condition_levels

        return {lv.level: i for i, lv in enumerate(condition_levels(condition))}
    except Exception:  # noqa: BLE001 - ordering only; fall back to the order seen in the data
        return {}


def levels_table(dialogues):
    """Per (tutor, domain, condition, dimension, level): ``dialogues``, distinct ``questions``,
    the NaN-aware mean of each of the nine per-dialogue scores (mean over the dialogues that have
    a value; NaN when none has), and stop-reason counts (``failures`` = student or tutor call
    failed; ``stop_unknown`` only when some records carry no stop reason). ``dialogues`` is the
    wide per-dialogue frame of :func:`edufair_metrics.report.runs.dialogue_frame`. No pairing is needed:
    these are descriptive rates, not bias statistics."""
    import pandas as pd

    metrics = [m for m in PEDAGOGICAL_METRICS + CONVERSATION_METRICS if m in dialogues.columns]
    stop_cols = list(STOP_COLUMNS)
    if len(dialogues) == 0:
        return pd.DataFrame(columns=LEVEL_KEYS + ["dialogues", "questions"] + metrics + stop_cols)
    d = dialogues.copy()
    for col, reasons in STOP_COLUMNS.items():
        d[col] = d["stop_reason"].isin(reasons).astype(int)
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
    return out.reset_index(drop=True)


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
                             "failures = student or tutor call failed after retries (dialogue incomplete)."))
    parts.append(to_markdown(levels[keys + ["dialogues"] + ped], "Pedagogical metrics: mean per-dialogue rate"))
    parts.append(to_markdown(levels[keys + ["dialogues"] + conv], "Conversation metrics: mean per dialogue"))
    return "\n".join(parts)
