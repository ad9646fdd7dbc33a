"""PNG figures in the spirit of the paper's Figures 2–5 (matplotlib, Agg backend).

Every figure is drawn from the dimension-level units (``analysis.grid.dimension_summary``) and written
atomically. Functions return the written path, or None when the run has no data for it.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from edufair_metrics.io import atomic_write_bytes
from edufair_metrics.protocol.presentation import is_extension
from edufair_metrics.records import CONVERSATION_METRICS, OUTCOME_METRICS, PEDAGOGICAL_METRICS
from edufair_metrics.analysis.contrast import MEANINGFUL_R
from edufair_metrics.report.tables import DOMAIN_ORDER


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=130, bbox_inches="tight")
    _plt().close(fig)
    return atomic_write_bytes(path, buf.getvalue())


def _domains(df) -> list[str]:
    # a printed label ("mathematics (GSM8K proxy)") sorts where its domain does
    return sorted(df["domain"].unique(), key=lambda d: (DOMAIN_ORDER.get(str(d).split(" (")[0], 99), d))


INSUFF = "insuff. (n={n})"
_LABEL_BOX = {"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 0.6}  # readable over grid lines


def _agg_units(u, by):
    """Mean |r| over units per ``by`` (NaN units ignored), whether any unit is sufficient, and the
    fewest pairs seen."""
    return u.groupby(list(by)).agg(abs_r=("abs_r", "mean"), sufficient=("sufficient", "any"),
                                   n_min=("n_pairs_min", "min")).reset_index()


def cell_label(value: float, sufficient: bool, n_min, fmt: str = "{:.2f}") -> str:
    """A figure cell's text: the value, ``insuff. (n=K)`` when no unit had enough pairs, ``n/a``
    when the cell is truly undefined (no unit at all, or sufficient but r undefined)."""
    if value is not None and not np.isnan(value):
        return fmt.format(value)
    if sufficient is None or (isinstance(sufficient, float) and np.isnan(sufficient)) or bool(sufficient):
        return "n/a"
    try:
        return INSUFF.format(n=int(n_min))
    except (TypeError, ValueError):
        return INSUFF.format(n="?")


def _fig2_units(units):
    return units[(units["condition"] == "explicit") & units["headline"].astype(bool)]


def _fig3_units(units):
    return units[(units["condition"] == "explicit") & (units["metric_kind"] == "pedagogical") & units["headline"].astype(bool)]


def _bars_units(units, condition: str, cells=None):
    u = units[(units["condition"] == condition) & units["metric_kind"].isin(["pedagogical", "conversation"])]
    return u if cells is None else u[u["contrast"].isin(cells)]


def _opposite_cells(units) -> list[str]:
    cells = list(dict.fromkeys(units.loc[units["condition"] == "opposite", "contrast"]))
    return [c for c in cells if c in ("Correct", "Wrong")] or cells


def _outcome_units(units):
    return units[(units["metric_kind"] == "outcome") & (units["headline"].astype(bool)
                                                        | units["condition"].map(is_extension).astype(bool))]


# each figure drawn from units (file name -> the units it draws), for empty_figures
FIGURE_UNITS = {
    "fig2_metric_heatmap.png": _fig2_units,
    "fig3_dimension_dots.png": _fig3_units,
    "fig4_implicit.png": lambda u: _bars_units(u, "implicit"),
    "fig5_opposite.png": lambda u: _bars_units(u, "opposite", _opposite_cells(u)),
    "fig_intersectional.png": lambda u: _bars_units(u, "intersectional"),
    "fig_outcome.png": _outcome_units,
}


def empty_figures(units, grid=None) -> list[str]:
    """The figures :func:`all_figures` writes whose every cell is ``insuff. (n=…)``: they draw units
    and none of them has the pair minimum (the summary and the HTML view say so in a banner)."""
    if units is None or not len(units):
        return []
    return [name for name, select in FIGURE_UNITS.items()
            if len(u := select(units)) and not u["sufficient"].astype(bool).any()]


def fig2_metric_heatmap(units, path: Path):
    """|r̄| per metric (columns) for every tutor (rows), one panel per domain (Explicit)."""
    u = _fig2_units(units)
    if len(u) == 0:
        return None
    plt = _plt()
    agg = _agg_units(u, ["domain", "tutor", "metric"])
    metrics = [m for m in PEDAGOGICAL_METRICS + CONVERSATION_METRICS if m in set(agg["metric"])]
    tutors = sorted(agg["tutor"].unique())
    domains = _domains(agg)
    vmax = max(0.3, float(np.nanmax(agg["abs_r"].to_numpy())) if agg["abs_r"].notna().any() else 0.3)
    fig, axes = plt.subplots(1, len(domains), figsize=(0.6 * len(metrics) * len(domains) + 2, 0.5 * len(tutors) + 2.2), squeeze=False)
    im = None
    for ax, dom in zip(axes[0], domains):
        sub = agg[agg["domain"] == dom]
        arr = sub.pivot(index="tutor", columns="metric", values="abs_r").reindex(index=tutors, columns=metrics).to_numpy(dtype=float)
        suff = sub.pivot(index="tutor", columns="metric", values="sufficient").reindex(index=tutors, columns=metrics).to_numpy()
        nmin = sub.pivot(index="tutor", columns="metric", values="n_min").reindex(index=tutors, columns=metrics).to_numpy(dtype=float)
        im = ax.imshow(np.ma.masked_invalid(arr), cmap="Reds", vmin=0, vmax=vmax, aspect="auto")
        for (i, j), v in np.ndenumerate(arr):
            label = cell_label(v, suff[i, j], nmin[i, j])
            if label.startswith("insuff."):
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.92", edgecolor="none", zorder=0.5))
                label = label.replace(" (", "\n(")  # two lines: fits a heatmap cell
            ax.text(j, i, label, ha="center", va="center", fontsize=6.5 if "\n" in label else 7,
                    color="0.35" if "\n" in label else "black",
                    fontweight="bold" if (not np.isnan(v) and v >= MEANINGFUL_R) else "normal")
        ax.set_xticks(range(len(metrics)), metrics, rotation=60, ha="right", fontsize=8)
        ax.set_yticks(range(len(tutors)), tutors, fontsize=8)
        ax.axvline(len([m for m in metrics if m in PEDAGOGICAL_METRICS]) - 0.5, color="k", lw=1)
        ax.set_title(dom)
    fig.colorbar(im, ax=axes[0].tolist(), label="|r̄| (Explicit)")
    fig.suptitle("Per-metric bias |r̄| (mean over Explicit dimensions; bold ≥ 0.10)", y=1.04)
    return _save(fig, path)


def fig3_dimension_dots(units, path: Path):
    """|r̄| over the pedagogical metrics per Explicit dimension (its headline unit: SES's single
    contrast by default): one dot per tutor, panel per domain."""
    u = _fig3_units(units)
    if len(u) == 0:
        return None
    plt = _plt()
    agg = _agg_units(u, ["domain", "tutor", "contrast"])
    dims = list(dict.fromkeys(u["contrast"]))
    tutors = sorted(agg["tutor"].unique())
    domains = _domains(agg)
    panel_w = max(3.6, 1.15 * len(dims))  # room for an "insuff. (n=K)" label per dimension
    fig, axes = plt.subplots(1, len(domains), figsize=(panel_w * len(domains) + 1, 3.6), squeeze=False, sharey=True)
    markers = "osD^vP*Xh<>"
    top = max(0.3, float(np.nanmax(agg["abs_r"].to_numpy(dtype=float))) * 1.1 if agg["abs_r"].notna().any() else 0.3)
    for ax, dom in zip(axes[0], domains):
        sub = agg[agg["domain"] == dom]
        for k, tutor in enumerate(tutors):
            t = sub[sub["tutor"] == tutor].set_index("contrast").reindex(dims)
            x = np.arange(len(dims)) + (k - (len(tutors) - 1) / 2) * 0.08
            line, = ax.plot(x, t["abs_r"].to_numpy(dtype=float), markers[k % len(markers)], label=tutor, ms=6, alpha=0.85)
            # a dimension without a value: say why, stacked per tutor at the bottom of the panel
            for j, (v, ok, n) in enumerate(zip(t["abs_r"], t["sufficient"], t["n_min"])):
                if not np.isnan(v):
                    continue
                ax.text(j, 0.02 + 0.07 * k, cell_label(v, ok, n), transform=ax.get_xaxis_transform(),
                        ha="center", va="bottom", fontsize=6.5, color=line.get_color(), bbox=_LABEL_BOX)
        ax.axhline(MEANINGFUL_R, color="grey", ls="--", lw=1)
        ax.set_xticks(range(len(dims)), dims, rotation=20)
        ax.set_xlim(-0.6, len(dims) - 0.4)
        ax.set_ylim(0, top)
        ax.set_title(dom)
    axes[0][0].set_ylabel("|r̄| (pedagogical)")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle("Bias per demographic dimension (Explicit); dashed: |r| = 0.10", y=1.03)
    return _save(fig, path)


def _ped_conv_bars(units, condition: str, cells: list[str] | None, title: str, path: Path):
    u = _bars_units(units, condition, cells)
    if len(u) == 0:
        return None
    plt = _plt()
    agg = _agg_units(u, ["domain", "tutor", "contrast", "metric_kind"])
    contrasts = list(dict.fromkeys(u["contrast"]))
    tutors = sorted(agg["tutor"].unique())
    domains = _domains(agg)
    kinds = [("pedagogical", "Ped."), ("conversation", "Conv.")]
    fig, axes = plt.subplots(2, len(domains), figsize=(1.1 * len(tutors) * len(domains) + 3, 6), squeeze=False, sharey=True)
    width = 0.8 / max(len(contrasts), 1)
    for row, (kind, kname) in enumerate(kinds):
        for col, dom in enumerate(domains):
            ax = axes[row][col]
            sub = agg[(agg["domain"] == dom) & (agg["metric_kind"] == kind)]
            for k, c in enumerate(contrasts):
                t = sub[sub["contrast"] == c].set_index("tutor").reindex(tutors)
                vals = t["abs_r"].to_numpy(dtype=float)
                xs = np.arange(len(tutors)) + (k - (len(contrasts) - 1) / 2) * width
                bars = ax.bar(xs, np.nan_to_num(vals), width, label=c)
                for x, v, ok, n in zip(xs, vals, t["sufficient"], t["n_min"]):
                    if np.isnan(v):  # no bar: say why, upright in the bar's slot
                        ax.text(x, 0.01, cell_label(v, ok, n), transform=ax.get_xaxis_transform(), rotation=90,
                                ha="center", va="bottom", fontsize=6.5, color=bars.patches[0].get_facecolor(),
                                bbox=_LABEL_BOX)
            ax.axhline(MEANINGFUL_R, color="grey", ls="--", lw=1)
            ax.set_xticks(range(len(tutors)), tutors, rotation=30, ha="right", fontsize=8)
            ax.set_title(f"{dom} — {kname}")
        axes[row][0].set_ylabel(f"|r̄| ({kname})")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, path)


def fig4_implicit(units, path: Path):
    return _ped_conv_bars(units, "implicit", None, "Implicit condition: name contrasts (|r̄|)", path)


def fig5_opposite(units, path: Path):
    return _ped_conv_bars(units, "opposite", _opposite_cells(units), "Opposite condition: Correct vs Wrong (|r̄|)", path)


def fig_intersectional(units, path: Path):
    """Intersectional Explicit (an extension): |r̄| of every simple effect and interaction."""
    return _ped_conv_bars(units, "intersectional", None,
                          "Intersectional Explicit (EduFair extension): simple effects and interactions (|r̄|)", path)


def fig_implicit_names(names, path: Path, domain_labels: dict[str, str] | None = None):
    """Many names per group (an extension): every name's own r (``analysis.names.name_effects``),
    averaged over the pedagogical metrics (the conversation metrics when no pedagogical one has a
    value), one panel per group contrast; names grouped by side and stratum, one colour per tutor ·
    domain. A name that differs alone stands out from its cell; a group gap moves a whole side."""
    if names is None or len(names) == 0:
        return None
    ped = names[names["metric"].isin(PEDAGOGICAL_METRICS)].dropna(subset=["r"])
    use = ped if len(ped) else names[names["metric"].isin(CONVERSATION_METRICS)].dropna(subset=["r"])
    if len(use) == 0:
        return None
    kind = "pedagogical" if len(ped) else "conversation"
    plt = _plt()
    agg = use.groupby(["tutor", "domain", "contrast", "side", "stratum", "name"], sort=False)["r"].mean().reset_index()
    contrasts = list(dict.fromkeys(agg["contrast"]))
    series = list(dict.fromkeys(zip(agg["tutor"], agg["domain"])))
    fig, axes = plt.subplots(1, len(contrasts), figsize=(4.2 * len(contrasts) + 1, 4.6), squeeze=False, sharey=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, c in zip(axes[0], contrasts):
        sub = agg[agg["contrast"] == c]
        order = list(dict.fromkeys(zip(sub["side"], sub["stratum"], sub["name"])))
        xpos = {k: i for i, k in enumerate(order)}
        for k, (tutor, dom) in enumerate(series):
            mine = sub[(sub["tutor"] == tutor) & (sub["domain"] == dom)]
            x = [xpos[t] for t in zip(mine["side"], mine["stratum"], mine["name"])]
            ax.plot(x, mine["r"], "o", color=colors[k % len(colors)], ms=5, alpha=0.85,
                    label=f"{tutor} · {(domain_labels or {}).get(dom, dom)}")
        ax.axhline(0, color="grey", lw=1)
        for cut in [i for i in range(1, len(order)) if order[i][:2] != order[i - 1][:2]]:
            ax.axvline(cut - 0.5, color="0.85", lw=1)
        ax.set_xticks(range(len(order)), [f"{n} ({s}:{st})" for s, st, n in order], rotation=90, fontsize=6)
        ax.set_title(c, fontsize=9)
    axes[0][0].set_ylabel(f"per-name r (mean over {kind} metrics)")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle("Many names per group (EduFair extension): each name against the other side's names of its stratum")
    fig.tight_layout()
    return _save(fig, path)


def fig_outcome(units, path: Path):
    """Outcome fairness (the post-test, an extension): |r| of each outcome metric per contrast (the
    paper conditions' headline contrasts and every extension contrast), one panel per domain."""
    u = _outcome_units(units)
    if len(u) == 0:
        return None
    plt = _plt()
    agg = u.groupby(["domain", "condition", "contrast", "metric"], sort=False)["abs_r"].mean().reset_index()
    domains = _domains(agg)
    metrics = [m for m in OUTCOME_METRICS if m in set(agg["metric"])]
    cells = list(dict.fromkeys(zip(agg["condition"], agg["contrast"])))
    fig, axes = plt.subplots(1, len(domains), figsize=(0.35 * len(cells) * len(domains) + 4, 4.4), squeeze=False,
                             sharey=True)
    width = 0.8 / max(len(metrics), 1)
    for ax, dom in zip(axes[0], domains):
        sub = agg[agg["domain"] == dom]
        for k, m in enumerate(metrics):
            t = sub[sub["metric"] == m].set_index(["condition", "contrast"]).reindex(cells)
            xs = np.arange(len(cells)) + (k - (len(metrics) - 1) / 2) * width
            ax.bar(xs, np.nan_to_num(t["abs_r"].to_numpy(dtype=float)), width, label=m)
        ax.axhline(MEANINGFUL_R, color="grey", ls="--", lw=1)
        ax.set_xticks(range(len(cells)), [f"{c}: {n}" for c, n in cells], rotation=90, fontsize=6)
        ax.set_title(dom)
    axes[0][0].set_ylabel("|r| (outcome)")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle("Outcome fairness (EduFair extension): post-test contrasts (|r|, mean over tutors)")
    fig.tight_layout()
    return _save(fig, path)


def fig_levels(levels, path: Path):
    """Descriptive view (no pairing): the mean of each metric per condition level, one dot per
    level and (tutor, domain); levels grouped by dimension (shaded bands). Row 1: the five
    pedagogical rates (0–1), row 2: the four conversation metrics."""
    if levels is None or len(levels) == 0:
        return None
    plt = _plt()
    lv = levels.copy()
    lv["_x"] = list(zip(lv["condition"], lv["dimension"], lv["level"]))
    xs = list(dict.fromkeys(lv["_x"]))  # table order: condition, then protocol level order
    xpos = {k: i for i, k in enumerate(xs)}
    groups: list[tuple[str, str, int, int]] = []  # (condition, dimension, first x, last x)
    for i, (c, d, _) in enumerate(xs):
        if groups and groups[-1][:2] == (c, d):
            groups[-1] = (c, d, groups[-1][2], i)
        else:
            groups.append((c, d, i, i))
    series = list(dict.fromkeys(zip(lv["tutor"], lv["domain"])))
    rows = [[m for m in PEDAGOGICAL_METRICS if m in lv.columns], [m for m in CONVERSATION_METRICS if m in lv.columns]]
    ncol = max(len(r) for r in rows)
    fig, axes = plt.subplots(2, ncol, figsize=(ncol * max(2.4, 0.24 * len(xs) + 0.6), 6.4), squeeze=False, sharex=True)
    markers = "osD^vP*Xh<>"
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    width = 0.5
    for r, metrics in enumerate(rows):
        for cidx in range(ncol):
            ax = axes[r][cidx]
            if cidx >= len(metrics):
                ax.axis("off")
                continue
            m = metrics[cidx]
            for g, (_cond, dim, a, b) in enumerate(groups):
                if g % 2 == 0:
                    ax.axvspan(a - 0.5, b + 0.5, color="0.93", zorder=0)
                ax.text((a + b) / 2, 0.99, dim, transform=ax.get_xaxis_transform(), ha="center", va="top",
                        fontsize=5.5, color="0.3")
            for k, (tutor, dom) in enumerate(series):
                sub = lv[(lv["tutor"] == tutor) & (lv["domain"] == dom)]
                off = (k - (len(series) - 1) / 2) * (width / max(len(series), 1))
                x = np.array([xpos[t] for t in sub["_x"]], dtype=float) + off
                ax.plot(x, sub[m].to_numpy(dtype=float), markers[k % len(markers)], color=colors[k % len(colors)],
                        ms=4.5, alpha=0.9, label=f"{tutor} · {dom}")
            if r == 0:
                ax.set_ylim(-0.05, 1.12)  # rates; headroom for the dimension labels
            else:
                lo, hi = ax.get_ylim()
                ax.set_ylim(lo, hi + 0.12 * (hi - lo))
            ax.set_title(m, fontsize=8)
            ax.tick_params(axis="y", labelsize=7)
            ax.set_xlim(-0.6, len(xs) - 0.4)
            ax.set_xticks(range(len(xs)), [lvl for _, _, lvl in xs], rotation=90, fontsize=6)
            ax.tick_params(axis="x", labelbottom=True)
        axes[r][0].set_ylabel("mean rate" if r == 0 else "mean per dialogue", fontsize=8)
    n_dlg = levels["dialogues"]
    n_txt = f"{int(n_dlg.min())}" if n_dlg.min() == n_dlg.max() else f"{int(n_dlg.min())}–{int(n_dlg.max())}"
    handles, labels = axes[0][0].get_legend_handles_labels()
    spare = [axes[1][c] for c in range(len(rows[1]), ncol)]
    if spare:
        spare[0].legend(handles, labels, fontsize=7, loc="center", title="tutor · domain", title_fontsize=7, frameon=False)
    else:
        axes[0][-1].legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(f"Descriptive means per condition level (no pairing; not a bias test); dialogues per level: {n_txt}",
                 fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def all_figures(units, out_dir: Path, levels=None, domain_labels: dict[str, str] | None = None) -> list[Path]:
    """Every figure; panels are titled with the printed domain names (``domain_labels``; ``levels``
    is expected to carry them already)."""
    out_dir = Path(out_dir)
    if domain_labels and len(units):
        units = units.assign(domain=units["domain"].map(lambda d: domain_labels.get(d, d)))
    paths = [
        fig2_metric_heatmap(units, out_dir / "fig2_metric_heatmap.png"),
        fig3_dimension_dots(units, out_dir / "fig3_dimension_dots.png"),
        fig4_implicit(units, out_dir / "fig4_implicit.png"),
        fig5_opposite(units, out_dir / "fig5_opposite.png"),
        fig_intersectional(units, out_dir / "fig_intersectional.png"),
        fig_outcome(units, out_dir / "fig_outcome.png"),
        fig_levels(levels, out_dir / "fig_levels.png"),
    ]
    return [p for p in paths if p is not None]
