"""PNG figures in the spirit of the paper's Figures 2–5 (matplotlib, Agg backend).

Every figure is drawn from the dimension-level units (``stats.dimension_summary``) and written
atomically. Functions return the written path, or None when the run has no data for it.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from .io import atomic_write_bytes
from .records import CONVERSATION_METRICS, PEDAGOGICAL_METRICS
from .stats import MEANINGFUL_R
from .tables import DOMAIN_ORDER


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
    return sorted(df["domain"].unique(), key=lambda d: (DOMAIN_ORDER.get(d, 99), d))


def fig2_metric_heatmap(units, path: Path):
    """|r̄| per metric (columns) for every tutor (rows), one panel per domain (Explicit)."""
    u = units[(units["condition"] == "explicit") & units["headline"]]
    if len(u) == 0:
        return None
    plt = _plt()
    agg = u.groupby(["domain", "tutor", "metric"])["abs_r"].mean().reset_index()
    metrics = [m for m in PEDAGOGICAL_METRICS + CONVERSATION_METRICS if m in set(agg["metric"])]
    tutors = sorted(agg["tutor"].unique())
    domains = _domains(agg)
    vmax = max(0.3, float(np.nanmax(agg["abs_r"].to_numpy())) if agg["abs_r"].notna().any() else 0.3)
    fig, axes = plt.subplots(1, len(domains), figsize=(0.6 * len(metrics) * len(domains) + 2, 0.5 * len(tutors) + 2.2), squeeze=False)
    im = None
    for ax, dom in zip(axes[0], domains):
        mat = agg[agg["domain"] == dom].pivot(index="tutor", columns="metric", values="abs_r").reindex(index=tutors, columns=metrics)
        arr = mat.to_numpy(dtype=float)
        im = ax.imshow(np.ma.masked_invalid(arr), cmap="Reds", vmin=0, vmax=vmax, aspect="auto")
        for (i, j), v in np.ndenumerate(arr):
            ax.text(j, i, "n/a" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=7,
                    fontweight="bold" if (not np.isnan(v) and v >= MEANINGFUL_R) else "normal")
        ax.set_xticks(range(len(metrics)), metrics, rotation=60, ha="right", fontsize=8)
        ax.set_yticks(range(len(tutors)), tutors, fontsize=8)
        ax.axvline(len([m for m in metrics if m in PEDAGOGICAL_METRICS]) - 0.5, color="k", lw=1)
        ax.set_title(dom)
    fig.colorbar(im, ax=axes[0].tolist(), label="|r̄| (Explicit)")
    fig.suptitle("Per-metric bias |r̄| (mean over Explicit dimensions; bold ≥ 0.10)", y=1.04)
    return _save(fig, path)


def fig3_dimension_dots(units, path: Path):
    """|r̄| over the pedagogical metrics per Explicit dimension: one dot per tutor, panel per domain."""
    u = units[(units["condition"] == "explicit") & (units["metric_kind"] == "pedagogical")]
    if len(u) == 0:
        return None
    plt = _plt()
    agg = u.groupby(["domain", "tutor", "contrast"])["abs_r"].mean().reset_index()
    dims = list(dict.fromkeys(u["contrast"]))
    tutors = sorted(agg["tutor"].unique())
    domains = _domains(agg)
    fig, axes = plt.subplots(1, len(domains), figsize=(3.6 * len(domains) + 1, 3.6), squeeze=False, sharey=True)
    markers = "osD^vP*Xh<>"
    for ax, dom in zip(axes[0], domains):
        sub = agg[agg["domain"] == dom]
        for k, tutor in enumerate(tutors):
            t = sub[sub["tutor"] == tutor].set_index("contrast").reindex(dims)
            x = np.arange(len(dims)) + (k - (len(tutors) - 1) / 2) * 0.08
            ax.plot(x, t["abs_r"].to_numpy(dtype=float), markers[k % len(markers)], label=tutor, ms=6, alpha=0.85)
        ax.axhline(MEANINGFUL_R, color="grey", ls="--", lw=1)
        ax.set_xticks(range(len(dims)), dims, rotation=20)
        ax.set_title(dom)
    axes[0][0].set_ylabel("|r̄| (pedagogical)")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle("Bias per demographic dimension (Explicit); dashed: |r| = 0.10")
    return _save(fig, path)


def _ped_conv_bars(units, condition: str, cells: list[str] | None, title: str, path: Path):
    u = units[(units["condition"] == condition) & units["metric_kind"].isin(["pedagogical", "conversation"])]
    if cells is not None:
        u = u[u["contrast"].isin(cells)]
    if len(u) == 0:
        return None
    plt = _plt()
    agg = u.groupby(["domain", "tutor", "contrast", "metric_kind"])["abs_r"].mean().reset_index()
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
                vals = sub[sub["contrast"] == c].set_index("tutor")["abs_r"].reindex(tutors).to_numpy(dtype=float)
                ax.bar(np.arange(len(tutors)) + (k - (len(contrasts) - 1) / 2) * width, np.nan_to_num(vals), width, label=c)
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
    cells = [c for c in dict.fromkeys(units.loc[units["condition"] == "opposite", "contrast"])]
    main = [c for c in cells if c in ("Correct", "Wrong")] or cells
    return _ped_conv_bars(units, "opposite", main, "Opposite condition: Correct vs Wrong (|r̄|)", path)


def all_figures(units, out_dir: Path) -> list[Path]:
    out_dir = Path(out_dir)
    paths = [
        fig2_metric_heatmap(units, out_dir / "fig2_metric_heatmap.png"),
        fig3_dimension_dots(units, out_dir / "fig3_dimension_dots.png"),
        fig4_implicit(units, out_dir / "fig4_implicit.png"),
        fig5_opposite(units, out_dir / "fig5_opposite.png"),
    ]
    return [p for p in paths if p is not None]
