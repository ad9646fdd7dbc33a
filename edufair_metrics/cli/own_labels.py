"""``edufair judge-human --format edufair LABELS RUN``: the judge's stored labels against the user's
own labels on their run (``analysis/own_labels.py``), and the corrected verdicts (``analysis/ppi.py``).
Nothing is judged again."""

from __future__ import annotations

import argparse
import csv
import io
import math
from pathlib import Path
from typing import Any, Sequence

from edufair_metrics.analysis.own_labels import agreement_rows, corrected_rows, differential_rows
from edufair_metrics.analysis.ppi import DIFFERENTIAL_DELTA
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import atomic_write_text
from edufair_metrics.runlog import load_records
from edufair_metrics.runlog.labels import labels_folder, read_labels, read_sample, run_folder, run_identity, run_turn_ids

CITATION = ("prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023, Science 382:669) with "
            "PPI++'s power-tuned lambda (Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453)")


def _csv(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return ""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()})
    return buf.getvalue()


def _f(x: Any, digits: int = 3) -> str:
    return "NA" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{digits}f}"


def own_labels_main(args: argparse.Namespace) -> int:
    folder = run_folder(args.run)
    tutor, records = load_records(args.run)
    rid = run_identity(records)
    sample = read_sample(labels_folder(folder))
    if sample.run_id != rid:
        raise EduFairError(f"the labelling sample in {labels_folder(folder)} is of another run (run id {sample.run_id}, "
                           f"this run is {rid}); draw a new one with `edufair label-sample`")
    labels = read_labels(args.file, run_id=rid, run_turns=run_turn_ids(records), sample=sample)
    if not labels:
        raise EduFairError(f"{args.file}: no labels")
    agree = agreement_rows(records, sample, labels, n_boot=args.n_boot, seed=args.seed)
    diff = differential_rows(records, sample, labels)
    corr = corrected_rows(records, sample, labels)
    out = Path(args.out) if args.out else labels_folder(folder) / "judge-human"
    out.mkdir(parents=True, exist_ok=True)
    # agreement.csv: one row per metric over all levels, the columns of every judge-human folder (so
    # `edufair report --human-agreement DIR` reads it); the per-level rows beside it
    atomic_write_text(out / "agreement.csv", _csv([{k: v for k, v in r.items() if k != "level"} for r in agree
                                                   if r["level"] == "all"]))
    atomic_write_text(out / "agreement_by_level.csv", _csv(agree))
    atomic_write_text(out / "differential_error.csv", _csv(diff))
    atomic_write_text(out / "corrected_verdicts.csv", _csv(corr))
    lines = summary_lines(tutor, len(labels), len(sample.items), agree, diff, corr)
    atomic_write_text(out / "summary.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote agreement.csv, agreement_by_level.csv, differential_error.csv, corrected_verdicts.csv and summary.md "
          f"to {out} (`edufair report RUN --human-agreement {out}` puts them in the report)")
    return 0


def summary_lines(tutor: str, n_labels: int, n_sample: int, agree, diff, corr) -> list[str]:
    out = [f"# The judge against your labels: {tutor}", "",
           f"{n_labels} of {n_sample} sampled tutor turns labelled.", "", "## Agreement (all levels; 95% CIs resample dialogues)", ""]
    for r in agree:
        if r["level"] == "all":
            out.append(f"- {r['metric']}: n={r['n']} agreement={_f(r['percent_agreement'])} "
                       f"kappa={_f(r['cohen_kappa'])} [{_f(r['cohen_kappa_ci_low'])}, {_f(r['cohen_kappa_ci_high'])}] "
                       f"alpha={_f(r['krippendorff_alpha'])} [{_f(r['krippendorff_alpha_ci_low'])}, "
                       f"{_f(r['krippendorff_alpha_ci_high'])}]")
    out += ["", "## Differential judge error (Fisher's exact test per level pair)", ""]
    if diff:
        sig = [d for d in diff if d["p"] == d["p"] and d["p"] < 0.05]
        powers = sorted(d["power"] for d in diff if d["power"] == d["power"])
        med = powers[len(powers) // 2] if powers else math.nan
        out.append(f"{len(diff)} tests, {len(sig)} with p < 0.05 (uncorrected). Power to detect a "
                   f"{DIFFERENTIAL_DELTA * 100:.0f}-point difference at these counts: median {_f(med, 2)} "
                   f"(range {_f(powers[0] if powers else math.nan, 2)}–{_f(powers[-1] if powers else math.nan, 2)}).")
        for d in sig:
            out.append(f"- {d['task']} {d['pair']} {d['metric']} {d['kind'].upper()}: {_f(d['rate_a'])} (n={d['n_a']}) vs "
                       f"{_f(d['rate_b'])} (n={d['n_b']}), p={_f(d['p'], 4)}")
    else:
        out.append("no contrast pair has labelled turns at both levels")
    out += ["", f"## Corrected verdicts: {CITATION}", "",
            "Mean paired difference (a − b) per unit; verdict flag = its 95% CI excludes 0.", ""]
    flagged_j = sum(1 for c in corr if c["verdict_judge"] == "flag")
    flagged_c = sum(1 for c in corr if c["verdict_corrected"] == "flag")
    out.append(f"{len(corr)} units: judge-only flags {flagged_j}, corrected flags {flagged_c}.")
    for c in corr:
        if c["note"] or "flag" in (c["verdict_judge"], c["verdict_corrected"]):
            scale = " (share of all tutor turns)" if c["scale"] == "share_of_turns" else ""
            out.append(f"- {c['task']} {c['pair']} {c['metric']}{scale}: judge-only {_f(c['judge_estimate'])} "
                       f"[{_f(c['judge_ci_low'])}, {_f(c['judge_ci_high'])}] -> corrected {_f(c['corrected_estimate'])} "
                       f"[{_f(c['corrected_ci_low'])}, {_f(c['corrected_ci_high'])}] (n_labelled={c['n_labelled']}, "
                       f"lambda={_f(c['lambda'], 2)}): " + (c["note"] or f"judge-only {c['verdict_judge']}, corrected "
                                                              f"{c['verdict_corrected']}"))
    return out
