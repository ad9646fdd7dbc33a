"""The compare folder of ``edufair compare``: the CI gate's verdict, per-unit changes and a manifest."""

from __future__ import annotations

import math
from pathlib import Path

from edufair_metrics.analysis.compare import CompareResult, compare_frames
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import atomic_write_json, atomic_write_text
from edufair_metrics.report.tables import to_markdown
from edufair_metrics.report.write import versions
from edufair_metrics.runlog import check_compatible, domain_labels
from edufair_metrics.runlog.runs import check_protocol


def run_compare(base, cand, out_dir: Path, params: StatParams, *, max_increase: float,
                new_violations: str) -> tuple[CompareResult, str]:
    """Compare two loaded runs, write compare.csv/.md and a manifest into ``out_dir``; returns the
    result and the text to print. Raises EduFairError when nothing is computable (no evidence is
    not a pass)."""
    params.validate()
    check_protocol([base, cand])  # the refusals of `edufair report`: a gate across judges, students, ... means nothing
    check_compatible([base, cand])
    if not max_increase >= 0:
        raise EduFairError(f"--max-increase must be >= 0, got {max_increase}")
    keep = params.keep_failed_dialogues
    res = compare_frames(scores_frame([base], keep_failed=keep), scores_frame([cand], keep_failed=keep), n_boot=params.n_boot, seed=params.seed, min_pairs=params.min_pairs,
                         ses_summary=params.ses_summary, max_increase=max_increase, new_violations=new_violations,
                         fdr_method=params.fdr_method)
    h = res.headline
    if not h["units"]:
        # A gate that passes on no evidence would let any fine-tune through: say so and exit 2.
        raise EduFairError(
            f"no bias measure is computable on the questions both runs share ({res.n_questions}): every "
            f"contrast has fewer than --min-pairs {params.min_pairs} complete pairs, so the gate cannot decide"
        )
    verdict = "FAIL" if res.failed else "PASS"
    cols = ["domain", "condition", "contrast", "metric", "abs_r_baseline", "abs_r_candidate", "delta",
            "delta_ci_low", "delta_ci_high", "delta_excess", "violation_baseline", "violation_candidate",
            "violation_fdr_baseline", "violation_fdr_candidate", "gate_violation"]
    labels = domain_labels([base, cand])  # "mathematics (GSM8K proxy)" where the bank says so
    table = res.units[cols].assign(domain=res.units["domain"].map(lambda d: labels.get(d, d)))
    head_line = (f"headline pedagogical |r̄|: baseline {h['baseline']:.3f} ({base.label}) -> candidate "
                 f"{h['candidate']:.3f} ({cand.label}); Δ {h['delta']:+.3f} "
                 f"[95% CI {h['delta_ci_low']:+.3f}, {h['delta_ci_high']:+.3f}], allowed +{max_increase:.3f}; "
                 f"{int(h['units'])} units, questions {res.n_questions}")
    noise_line = (f"beside it (not gated): excess |r̄| over the noise floor {h['excess_baseline']:.3f} -> "
                  f"{h['excess_candidate']:.3f}; Δ excess {h['delta_excess']:+.3f} "
                  f"[95% CI {h['delta_excess_ci_low']:+.3f}, {h['delta_excess_ci_high']:+.3f}]; pedagogical headline "
                  f"violations {int(h['violations_baseline'])} -> {int(h['violations_candidate'])} (raw), "
                  f"{int(h['violations_fdr_baseline'])} -> {int(h['violations_fdr_candidate'])} (FDR)")
    md = "\n".join([
        "# EduFair compare", "", head_line, "", noise_line, "",
        f"**{verdict}**" + (": " + "; ".join(res.reasons) if res.reasons else ""), "",
        to_markdown(table, "Change of |r| per unit (candidate − baseline), largest increase first",
                    "delta_excess: change of |r| minus its noise floor (mean |r| under random sign flips); "
                    "violation_fdr: also significant after the multiplicity correction (--fdr-method) within the run's tutor × metric kind "
                    "headline family. The gate (exit status) reads |r̄| and raw violations only "
                    "(edufair_metrics/analysis/compare.py)."),
    ])
    out_dir = Path(out_dir)
    atomic_write_text(out_dir / "compare.csv", res.units.to_csv(index=False))
    atomic_write_text(out_dir / "compare.md", md)
    atomic_write_json(out_dir / "compare_manifest.json", {
        "kind": "edufair-compare", "baseline": base.describe(), "candidate": cand.describe(),
        "parameters": {**params.to_dict(), "max_increase": max_increase, "new_violations": new_violations},
        "headline": {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in h.items()},
        "verdict": verdict, "reasons": res.reasons, "questions": res.n_questions, "versions": versions(),
    })
    lines = [head_line, noise_line]
    flagged = table[res.units["gate_violation"]]
    if len(flagged):
        lines.append(to_markdown(flagged, "Units failing the gate"))
    lines.append(to_markdown(table.head(10), "Largest increases"))
    lines.append(f"{verdict}" + (": " + "; ".join(res.reasons) if res.reasons else "") + f" (details in {out_dir})")
    return res, "\n".join(lines)
