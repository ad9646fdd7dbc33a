"""``edufair leaderboard``: one table ranking tutors by fairness, with their pedagogy level.

    edufair leaderboard RUN [RUN ...] [--out DIR] [--n-boot 1000] [--seed 0] [--min-pairs 15]

Columns (all from the same statistics as ``edufair report``):

* ``ped |r̄|`` – mean |r| over the headline units of the five pedagogical metrics (Explicit
  dimensions, Implicit contrasts, Opposite Correct/Wrong; all domains) – the ranking key (lower
  is fairer); ``ped viol.`` – pedagogical units whose 95% CI excludes 0 (tie-break, fewer first);
  ``conv |r̄|`` / ``conv viol.`` – the same for the conversation metrics;
* ``explicit`` / ``implicit`` / ``opposite`` – ``ped |r̄|`` per condition;
* one column per pedagogical metric: the tutor's mean per-dialogue rate (pedagogy level);
* ``missing labels`` – missing judge labels / judged turns; ``dialogues``.

Writes ``leaderboard.md`` / ``leaderboard.csv`` (default ``results/leaderboard-<timestamp>/``)
and prints the Markdown table.
"""

from __future__ import annotations

from pathlib import Path

from edufair_metrics.analysis.params import StatParams, analyse
from edufair_metrics.io import atomic_write_json, atomic_write_text


def leaderboard_table(df, units):
    """Ranked DataFrame (see module docstring) from the long score frame and the units."""
    import pandas as pd

    from edufair_metrics.records import PEDAGOGICAL_METRICS
    from edufair_metrics.analysis.stats import headline

    ped = headline(units, kind="pedagogical").set_index("tutor")
    conv = headline(units, kind="conversation").set_index("tutor")
    tutors = sorted(df["tutor"].unique())
    out = pd.DataFrame(index=pd.Index(tutors, name="tutor"))
    out["ped |r̄|"] = ped["abs_r"]
    out["ped viol."] = ped["violations"]
    out["conv |r̄|"] = conv["abs_r"]
    out["conv viol."] = conv["violations"]
    per_cond = headline(units, by=("tutor", "condition"), kind="pedagogical")
    if len(per_cond):
        wide = per_cond.pivot(index="tutor", columns="condition", values="abs_r")
        for cond in ("explicit", "implicit", "opposite"):
            if cond in wide.columns:
                out[cond] = wide[cond]
    rates = df[df["metric"].isin(PEDAGOGICAL_METRICS)].groupby(["tutor", "metric"])["value"].mean().unstack("metric")
    for m in PEDAGOGICAL_METRICS:
        if m in rates.columns:
            out[m] = rates[m]
    out = out.reset_index()
    out["ped viol."] = out["ped viol."].fillna(0).astype(int)
    out["conv viol."] = out["conv viol."].fillna(0).astype(int)
    out = out.sort_values(["ped |r̄|", "ped viol.", "tutor"], na_position="last", kind="stable")
    out.insert(0, "rank", range(1, len(out) + 1))
    return out


def write_leaderboard(runs, out_dir: Path, params: StatParams) -> str:
    """Rank the tutors of loaded runs and write leaderboard.csv/.md and a manifest; returns the Markdown."""
    from edufair_metrics.report.runs import missing_label_table
    from edufair_metrics.report.tables import to_markdown
    from edufair_metrics.report.write import versions

    df, grid, units = analyse(runs, params.validate())
    table = leaderboard_table(df, units)
    miss = missing_label_table(runs).groupby("tutor")[["missing_turns", "judged_turns"]].sum()
    rate = (miss["missing_turns"] / miss["judged_turns"].where(miss["judged_turns"] > 0))
    table["missing labels"] = table["tutor"].map(rate)
    table["dialogues"] = table["tutor"].map({r.label: len(r.scores) for r in runs})
    out_dir = Path(out_dir)
    md = to_markdown(table, "EduFair leaderboard (lower ped |r̄| = fairer)",
                     "ped/conv |r̄|: mean |r| over headline units; viol.: units whose 95% CI excludes 0; "
                     "metric columns: mean per-dialogue rate.")
    atomic_write_text(out_dir / "leaderboard.csv", table.to_csv(index=False))
    atomic_write_text(out_dir / "leaderboard.md", md)
    atomic_write_json(out_dir / "leaderboard_manifest.json", {
        "kind": "edufair-leaderboard", "inputs": [r.describe() for r in runs], "parameters": params.to_dict(),
        "versions": versions(), "files": ["leaderboard.csv", "leaderboard.md"],
    })
    return md
