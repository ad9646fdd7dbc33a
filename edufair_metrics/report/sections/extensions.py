"""summary.md's part on EduFair's extension conditions: every condition of the data outside the
paper's headline family (``protocol/data/presentation.yaml``), its units by verdict, its flagged
units and, for a many-names design, its name checks."""

from __future__ import annotations


import pandas

from edufair_metrics.analysis.verdicts import verdict_headline
from edufair_metrics.protocol.presentation import extension_conditions, presentation
from edufair_metrics.report.tables import to_markdown


FLAGGED_LISTED = 40  # flagged units of an extension condition listed in summary.md (all are in units.csv)

EXTENSION_NOTE = ("Not in the paper (protocol-extensions.yaml, protocol version edufair-ext-1): never pooled into "
                  "the headline above; each condition is its own FDR family per tutor × metric kind. Units by "
                  "verdict, all of the condition's contrasts.")

def extension_section(units, labels: dict[str, str] | None = None, grid=None) -> list[str]:
    """summary.md's part on EduFair's extension conditions present in ``units``: per condition and
    tutor the units by verdict and metric kind, and the flagged units; for many names per group the
    rows a name check reads as a group gap or a name artefact (``grid``)."""
    if "verdict" not in units.columns or not len(units):
        return []
    present = extension_conditions(units["condition"])  # every one in the data (protocol/data/presentation.yaml)
    if not present:
        return []
    lines = ["## EduFair extensions (not in the paper)", "", EXTENSION_NOTE, ""]
    for cond in present:
        title, files = presentation(cond).title, presentation(cond).tables
        u = units[units["condition"] == cond]
        parts = []
        for kind in dict.fromkeys(u["metric_kind"]):
            v = verdict_headline(u, kind=kind, headline_only=False)
            if len(v):
                parts.append(v.assign(kind=kind))
        if parts:
            v = pandas.concat(parts, ignore_index=True)
            table = v[["tutor", "kind", "units", "flag", "unconfirmed", "certify", "inconclusive", "insufficient"]]
            lines.append(to_markdown(table, f"{title}: units by verdict", f"Tables: {files}."))
        flagged = u[u["verdict"].isin(["flag", "unconfirmed"])]
        if len(flagged):
            rows = flagged[["tutor", "domain", "contrast", "metric", "verdict", "abs_r", "q_unit", "n_pairs_min"]].copy()
            rows["domain"] = rows["domain"].map(lambda d: (labels or {}).get(d, d))
            rows = rows.sort_values(["q_unit", "tutor", "domain", "contrast", "metric"]).reset_index(drop=True)
            more = f" {len(rows) - FLAGGED_LISTED} more in units.csv." if len(rows) > FLAGGED_LISTED else ""
            lines.append(to_markdown(rows.head(FLAGGED_LISTED), f"{title}: flagged units",
                                     "q_unit: the unit's FDR-adjusted p within its family (smallest first)." + more))
        else:
            lines.append(f"{title}: no unit is flagged.\n")
        names_rows = None if grid is None or "name_check" not in grid.columns else \
            grid[(grid["condition"] == cond) & (grid["kind"] == "names")]
        if names_rows is not None and len(names_rows):  # a many-names design: its name checks
            lines.extend(_name_check_lines(names_rows, labels))
    return lines

def _name_check_lines(grid, labels: dict[str, str] | None) -> list[str]:
    """The names rows whose name check says group gap or name artefact."""
    g = grid[(grid["kind"] == "names") & grid["name_check"].isin(["group gap", "name artefact"])]
    if not len(g):
        return ["Many names per group: no group gap and no name artefact (name checks in "
                "table_implicit_names_spread.md).\n"]
    g = g.sort_values(["name_check", "q_flag_fixed"])
    rows = pandas.DataFrame({
        "tutor": g["tutor"], "domain": g["domain"].map(lambda d: (labels or {}).get(d, d)), "contrast": g["contrast"],
        "metric": g["metric"], "name check": g["name_check"], "r": g["r"], "p (questions)": g["p_question"],
        "p (names)": g["p_name"], "heterogeneity p": g["name_het_p"],
        "farthest name": [f"{n} (r {x:+.2f})" if isinstance(n, str) else "—" for n, x in zip(g["name_outlier"],
                                                                                          g["name_outlier_r"])],
    }).reset_index(drop=True)
    more = f" {len(rows) - FLAGGED_LISTED} more in grid.csv." if len(rows) > FLAGGED_LISTED else ""
    return [to_markdown(rows.head(FLAGGED_LISTED), "Many names per group: group gaps and name artefacts",
                        "group gap: flagged over the questions and over the names; name artefact: flagged only with "
                        "the names fixed, and the names of a cell differ (heterogeneity p < 0.05): the gap sits in "
                        "one or a few names (farthest name: the one whose own r is farthest from the others')." + more)]
