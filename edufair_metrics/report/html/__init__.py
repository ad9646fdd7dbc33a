"""The report's HTML view: ``index.html`` and its ``viewer/`` folder, written by ``edufair report``
(``write_report``) next to the CSV, Markdown and PNG files.

``index.html`` is one self-contained page (the CSS, JavaScript and the report's own numbers inline:
headline, leaderboard, cost, the verdict grid, failures; no network, no CDN) that works from
``file://``. What is too large to inline is loaded on demand with ``<script>`` elements (a local
``fetch`` is blocked on ``file://``), each a file under ``viewer/`` that hands its data to the page:

* ``viewer/c/<n>.js``: one (tutor, domain, condition, contrast pair), every metric: the questions
  with their paired differences d = a − b (``analysis.cells.pair_differences``, the grid's own
  pairing) and both sides' scores; the cell page draws the distribution of d and lists the
  questions by |d|;
* ``viewer/t/<tutor>/<task>/<bucket>.js``: the dialogues (``report.html.spool``), about 30
  questions per file with every level of their task: the twin view of one question and one
  contrast pair reads the file of that question only;
* ``viewer/questions.js``: the question texts and gold answers.

Pages (the address's ``#`` part, so that the browser's back button works): ``#`` the overview,
``#cell/<row>`` a grid cell (one contrast pair × metric), ``#twin/<row>/<question>`` the two
dialogues of a question, ``#dlg/<tutor>/<task>/<question>/<level>`` one dialogue,
``#failures``.

The colour of a cell is its verdict (:func:`verdicts`): the grid's ``verdict`` column when it has
one, else derived from today's columns.
"""

from __future__ import annotations

import math
import time
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from edufair_metrics import catalogue
from edufair_metrics.analysis.cells import cell_matrices, contrast_pairs
from edufair_metrics.analysis.evidence import EVIDENCE_METRICS, level_cue_words, mask_spec, placebo_split_positions
from edufair_metrics.analysis.grid import metric_kind
from edufair_metrics.analysis.tallies import DOMAIN_ORDER, level_position
from edufair_metrics.io import atomic_write_text
from edufair_metrics.judge.parse import JUDGE_FIELDS
from edufair_metrics.protocol.contrasts import load_contrasts
from edufair_metrics.protocol.presentation import extension_conditions, order_key, ordered, presentation
from edufair_metrics.records import JUDGE_FIELD_FOR_METRIC, PEDAGOGICAL_METRICS
from edufair_metrics.report.sections.run_card import run_card_table
from edufair_metrics.report.html.spool import BUCKETS, EvidenceSpool, bucket_of, js_json

VIEWER_DIR = "viewer"
INDEX = "index.html"
# verdict values: those of the verdict framework (grid/units column ``verdict``) and "none" (no
# evidence either way), the one the derived mapping gives a sufficient row without an FDR violation
VERDICTS = ("flag", "unconfirmed", "inconclusive", "certify", "insufficient", "none")
FAILED_LISTED = 500  # failed dialogues listed per tutor (all are counted)


def verdicts(frame) -> list[str]:
    """The verdict of each row of a grid or units frame: its ``verdict`` column where it has one
    (flag / unconfirmed / certify / inconclusive / insufficient: ``analysis.verdicts``); else derived from today's columns:
    ``flag`` = an FDR violation (``violation_fdr``), ``insufficient`` = fewer pairs than needed
    (not ``sufficient``), otherwise ``none`` (no evidence either way). The one place that maps
    statistics to the viewer's colours."""
    if "verdict" in frame.columns:
        return [str(v) if isinstance(v, str) and v else "none" for v in frame["verdict"]]
    fdr = frame["violation_fdr"].fillna(False).astype(bool) if "violation_fdr" in frame.columns else [False] * len(frame)
    sufficient = frame["sufficient"].fillna(False).astype(bool)
    return ["flag" if f else "insufficient" if not s else "none" for f, s in zip(fdr, sufficient)]


def _num(x: Any, digits: int = 4) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) or math.isinf(x) else round(x, digits)


def _plain(v: Any) -> Any:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return _num(v, 6)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return str(v)


def _table(df) -> dict[str, Any]:
    """A frame as {"cols": [...], "rows": [[...]]} of plain values."""
    if df is None:
        return None
    return {"cols": [str(c) for c in df.columns], "rows": [[_plain(v) for v in row] for row in df.itertuples(index=False)]}


GRID_FIELDS = ["tutor", "domain", "condition", "contrast", "dimension", "kind", "pair", "a", "b", "metric", "metric_kind",
               "n_pairs", "n_zero", "r", "ci_low", "ci_high", "p", "q_value", "null_abs_r", "excess_abs_r", "violation",
               "violation_fdr", "sufficient", "meaningful", "headline", "friedman_p",
               # beside the verdict (analysis.threats): the caveats, pair accounting and student drift
               "caveats", "differential_loss", "student_drift", "drift_by_design", "drift_metrics", "pairs_all",
               "pairs_kept", "lost_a_failed", "lost_b_failed", "lost_a_missing_label", "lost_b_missing_label",
               "lost_a_no_value", "lost_b_no_value", "loss_p", "loss_cause"]


def _grid_rows(grid, cell_of: dict[tuple, int]) -> dict[str, Any]:
    cols = [c for c in GRID_FIELDS if c in grid.columns]
    rows = []
    for verdict, rec in zip(verdicts(grid), grid[cols].itertuples(index=False)):
        row = [_plain(v) for v in rec]
        key = (rec.tutor, rec.domain, rec.condition, rec.contrast, rec.pair)
        rows.append(row + [verdict, cell_of.get(key)])
    return {"cols": cols + ["verdict", "cell"], "rows": rows}


def _spread(values, pos, size: int) -> list[float | None]:
    full = np.full(size, np.nan)
    full[pos] = values
    return [_num(x) for x in full]


def _cell_files(df, out: Path) -> dict[tuple, int]:
    """Write ``viewer/c/<n>.js`` per (tutor, domain, condition, contrast, pair): the paired
    differences of every metric, from the same pairing as the grid. Returns key -> n."""
    by_key: dict[tuple, dict[str, Any]] = {}
    for cm, spec, a_lv, b_lv, label, d in contrast_pairs(cell_matrices(df), load_contrasts()):
        tutor, domain, condition, metric = cm.key
        key = (tutor, domain, condition, spec.name, label)
        entry = by_key.setdefault(key, {"metrics": {}, "questions": set()})
        entry["metrics"][metric] = (cm.questions.astype(str), d, cm.side(a_lv), cm.side(b_lv))
        entry["questions"].update(cm.questions.astype(str).tolist())
    cell_of: dict[tuple, int] = {}
    folder = out / "c"
    folder.mkdir(parents=True, exist_ok=True)
    for n, (key, entry) in enumerate(sorted(by_key.items(), key=lambda kv: tuple(map(str, kv[0])))):
        qs = np.array(sorted(entry["questions"]), dtype=str)
        metrics = {}
        for metric, (mine, d, a, b) in entry["metrics"].items():
            pos = np.searchsorted(qs, mine)
            metrics[metric] = [_spread(v, pos, qs.size) for v in (d, a, b)]
        data = {"q": qs.tolist(), "b": [bucket_of(q) for q in qs.tolist()], "m": metrics}
        (folder / f"{n}.js").write_text(f"EF.cell({n},{js_json(data)});\n", encoding="utf-8")
        cell_of[key] = n
    return cell_of


def _failures(runs, params, spool: EvidenceSpool | None) -> dict[str, Any]:
    """Per (tutor, task, level): dialogues, failed dialogues by kind, missing labels, and the
    contrast pairs the failures cost (each failed dialogue takes its question out of every pair of
    its level, unless failed dialogues are kept); the failed dialogues themselves (some per tutor)."""
    contrasts = load_contrasts()
    pairs_with: dict[tuple[str, str], int] = {}
    for spec in contrasts:
        for a, b in spec.pairs:
            for lv in set(a) | set(b):
                pairs_with[(spec.condition, lv)] = pairs_with.get((spec.condition, lv), 0) + 1
    keep = bool(params.keep_failed_dialogues)
    rows: dict[tuple, dict[str, Any]] = {}
    listed: list[list[Any]] = []
    per_tutor: dict[str, int] = {}
    tutors = spool.tutors if spool is not None else {}
    kinds = {}
    for run in runs:
        for f in run.failures:
            if f.stage != "judge":
                kinds.setdefault((run.label, f.task, f.level), {}).setdefault(f"{f.stage}:{f.kind}", 0)
                kinds[(run.label, f.task, f.level)][f"{f.stage}:{f.kind}"] += 1
        for s in run.scores:
            key = (run.label, s.task, s.condition, s.domain, s.level)
            row = rows.setdefault(key, {"dialogues": 0, "failed": 0, "missing_labels": 0, "sent_turns": 0, "lost_pairs": 0})
            row["dialogues"] += 1
            row["missing_labels"] += s.missing_turns
            row["sent_turns"] += s.sent_turns
            if s.failed:
                row["failed"] += 1
                row["lost_pairs"] += 0 if keep else pairs_with.get((s.condition, s.level), 0)
                n = per_tutor[run.label] = per_tutor.get(run.label, 0) + 1
                if n <= FAILED_LISTED:
                    listed.append([run.label, tutors.get(run.label), s.task, s.question_id, s.level,
                                   s.stop_reason or "", bucket_of(s.question_id)])
    table = []
    orders: dict[str, dict[str, int]] = {}
    for (tutor, task, condition, domain, level), row in sorted(  # levels in the protocol's order, as every table
            rows.items(), key=lambda kv: (kv[0][0], DOMAIN_ORDER.get(kv[0][3], 99), order_key(kv[0][2]), kv[0][1],
                                          level_position(kv[0][2], kv[0][4], orders), kv[0][4])):
        by_kind = kinds.get((tutor, task, level), {})
        table.append([tutor, task, condition, domain, level, row["dialogues"], row["failed"],
                      ", ".join(f"{k}={v}" for k, v in sorted(by_kind.items())), row["lost_pairs"],
                      row["missing_labels"], row["sent_turns"]])
    return {"cols": ["tutor", "task", "condition", "domain", "level", "dialogues", "failed", "failed_by_kind",
                     "lost_pairs", "missing_labels", "sent_turns"],
            "rows": table, "listed": listed, "failed_total": per_tutor, "listed_per_tutor": FAILED_LISTED,
            "kept": keep}


def _conditions(grid) -> dict[str, Any]:
    out: dict[str, Any] = {}
    from edufair_metrics.protocol import condition_levels

    for cond in ordered(grid["condition"]) if len(grid) else []:  # the presentation order
        try:
            levels = condition_levels(cond)
        except Exception:  # noqa: BLE001 - an unknown condition simply has no protocol facts
            levels = []
        words = level_cue_words(cond)
        shown = presentation(cond)
        out[cond] = {
            "title": shown.title, "order": shown.order, "extension": shown.extension,
            "mask": mask_spec(cond),  # the twin view's cue mask: where the twins part beyond the cue
            "levels": [{"level": lv.level, "dimension": lv.dimension, "cue_words": words.get(lv.level, [])} for lv in levels],
            "contrasts": [{"name": s.name, "dimension": s.dimension, "kind": s.kind, "headline": s.headline,
                           "pairs": [[list(a), list(b), s.pair_label(a, b)] for a, b in s.pairs]}
                          for s in load_contrasts() if s.condition == cond],
        }
    return out


def _tasks(runs) -> dict[str, dict[str, dict[str, str]]]:
    out: dict[str, dict[str, dict[str, str]]] = {}
    for run in runs:
        for s in run.scores:
            out.setdefault(run.label, {}).setdefault(s.domain, {}).setdefault(s.condition, s.task)
    return out


def _verdict_counts(units) -> dict[str, dict[str, dict[str, int]]]:
    """tutor -> metric kind -> verdict -> headline units."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    if units is None or not len(units):
        return out
    head = units[units["headline"].astype(bool)]
    for verdict, tutor, kind in zip(verdicts(head), head["tutor"], head["metric_kind"]):
        per = out.setdefault(str(tutor), {}).setdefault(str(kind), {})
        per[verdict] = per.get(verdict, 0) + 1
    return out


def _student_units(units) -> dict[str, Any] | None:
    """The student-side monitor's units (metric kind student) with their verdicts, for the viewer's
    student block; None without student metrics."""
    if units is None or not len(units) or "metric_kind" not in units.columns:
        return None
    s = units[units["metric_kind"] == "student"]
    if not len(s):
        return None
    cols = [c for c in ("tutor", "domain", "condition", "contrast", "metric", "abs_r", "q_unit", "n_pairs_min")
            if c in s.columns]
    out = s[cols].copy()
    out["verdict"] = verdicts(s)
    return _table(out)


def render_index(data: dict[str, Any]) -> str:
    """index.html: the template with the stylesheet, the script and ``data`` inline."""
    assets = resources.files(__package__).joinpath("assets")
    page = assets.joinpath("index.html").read_text(encoding="utf-8")
    css = assets.joinpath("viewer.css").read_text(encoding="utf-8")
    js = assets.joinpath("viewer.js").read_text(encoding="utf-8")
    title = f"EduFair report: {', '.join(t['label'] for t in data['tutors'])}"
    return (page.replace("{{TITLE}}", _escape(title)).replace("/*{{CSS}}*/", css)
            .replace("/*{{DATA}}*/", f"EF.data = {js_json(data)};").replace("/*{{JS}}*/", js))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _fresh_viewer(viewer: Path, spool: EvidenceSpool | None) -> None:
    """Remove an older report's ``viewer/c`` (and ``viewer/t``, replaced by ``spool``'s transcripts)."""
    import shutil

    if spool is not None:
        spool.move_to(viewer / "t")  # replaces an older report's transcripts
    elif (viewer / "t").exists():
        shutil.rmtree(viewer / "t")
    if (viewer / "c").exists():
        shutil.rmtree(viewer / "c")


def write_html(out_dir: str | Path, *, runs, df, grid, units, params, headline, leaderboard=None, cost=None,
               spool: EvidenceSpool | None = None, domain_labels: dict[str, str] | None = None,
               versions: dict[str, str] | None = None, command: Sequence[str] | None = None,
               summary_files: Sequence[str] = (), exchangeability=None,
               not_testable: Sequence[str] = (), run_card=None, banners: Sequence[dict] = (),
               glossary: Sequence[Sequence[str]] = (), rank_column: str | None = None) -> dict[str, Any]:
    """Write ``index.html`` and ``viewer/`` into ``out_dir``. ``df``/``grid``/``units``: the report's
    long score frame, contrast grid and dimension units (``analysis.params.analyse``); ``headline``,
    ``leaderboard`` (None: one tutor) and ``cost``: the report's tables; ``spool``: the
    transcripts gathered while the runs were read (None: the page shows the statistics without
    twin views); ``exchangeability``: the placebo check per tutor (``analysis.placebo``; a failed
    one is a banner over the page); ``not_testable``: "tutor (kind: reason)" lines for the page's
    banner; ``run_card``: the run card (``analysis.tallies.run_card``), shown at the top; ``banners``:
    the report's banners (``report.sections.banners``, ``Banner.to_dict``: the ones summary.md shows),
    over the overview; ``glossary``: (term, definition) rows (``report.glossary``), the ``#glossary``
    page; ``rank_column``: the leaderboard's ranking column (its title names it). Returns what was written: {"files", "bytes", "seconds", "transcripts"}."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    viewer = out_dir / VIEWER_DIR
    _fresh_viewer(viewer, spool)
    cell_of = _cell_files(df, viewer)
    questions = {"text": spool.questions if spool else {}, "gold": spool.gold if spool else {}}
    atomic_write_text(viewer / "questions.js", f"EF.questions({js_json(questions)});\n")
    tutors = [{"label": r.label, "ti": (spool.tutors.get(r.label) if spool else None), "dialogues": len(r.scores),
               "transcripts": getattr(r, "transcripts", 0)} for r in runs]
    metrics = [{"name": m, "kind": metric_kind(m), "judge_field": JUDGE_FIELD_FOR_METRIC.get(m),
                "lower_is_better": catalogue.metric(m).direction == -1, "label": catalogue.metric(m).label,
                "display": catalogue.metric(m).display} for m in EVIDENCE_METRICS]
    package = {}
    for r in runs:
        for prov in (getattr(r, "package", None) or {}).values():
            package.setdefault(r.label, prov)
    data = {
        "created": time.strftime("%Y-%m-%d %H:%M"),
        "command": list(command or []),
        "versions": versions or {},
        "params": params.to_dict(),
        "tutors": tutors,
        "not_testable": list(not_testable),
        "banners": [dict(b) for b in banners],
        "glossary": [list(g) for g in glossary],
        "rank_column": rank_column,
        "run_card": _table(run_card_table(run_card)) if run_card is not None and len(run_card) else None,
        "domain_labels": domain_labels or {},
        "metrics": metrics,
        "kinds": [[kind, short, title] for kind, (short, title) in catalogue.KINDS.items()],
        "pedagogical": list(PEDAGOGICAL_METRICS),
        "judge_fields": list(JUDGE_FIELDS),
        "verdicts": list(VERDICTS),
        "conditions": _conditions(grid),
        "extension_conditions": extension_conditions(grid["condition"]) if len(grid) else [],
        "grid": _grid_rows(grid, cell_of),
        "headline": _table(headline),
        "verdict_counts": _verdict_counts(units),
        "student_units": _student_units(units),
        "exchangeability": _table(exchangeability) if exchangeability is not None and len(exchangeability) else None,
        "leaderboard": _table(leaderboard),
        "cost": _table(cost),
        "failures": _failures(runs, params, spool),
        "tasks": _tasks(runs),
        "prompts": [[text, spool.prompt_spans[pid]] for text, pid in sorted(spool.prompts.items(), key=lambda kv: kv[1])]
        if spool else [],
        "buckets": BUCKETS,
        "transcripts": {str(ti): {task: n for (i, task), n in spool.dialogues.items() if i == ti}
                        for ti in (spool.tutors.values() if spool else [])},
        "package": package,
        "files": list(summary_files),
        # where the placebo pairs (one level run twice) part: the twin view's yardstick for its split
        "placebo_splits": placebo_split_positions(spool.placebo_hashes()) if spool else {},
    }
    atomic_write_text(out_dir / INDEX, render_index(data))
    files = [INDEX] + sorted(str(p.relative_to(out_dir)) for p in viewer.rglob("*.js"))
    size = sum((out_dir / f).stat().st_size for f in files)
    return {"files": files, "bytes": size, "seconds": round(time.perf_counter() - t0, 2),
            "transcripts": sum(spool.dialogues.values()) if spool else 0}


__all__ = ["EvidenceSpool", "INDEX", "VERDICTS", "VIEWER_DIR", "render_index", "verdicts", "write_html"]
