"""The compare folder of ``edufair compare``: the CI gate's verdict, per-unit changes and a manifest."""

from __future__ import annotations

import math
from pathlib import Path

from edufair_metrics.analysis.audit import gate
from edufair_metrics.analysis.compare import CompareResult
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import atomic_write_json, atomic_write_text
from edufair_metrics.report.tables import to_markdown
from edufair_metrics.provenance import versions
from edufair_metrics.runlog import domain_labels


def _skew_note(gamma) -> str:
    """The change's skewness beside its interval where it widened a bound visibly (|γ| >= 0.05)."""
    if gamma is None or not math.isfinite(gamma) or abs(gamma) < 0.05:
        return ""
    return f"; skewness {gamma:+.2f}, the {'lower' if gamma > 0 else 'upper'} bound widened for it"


def _f(x: float, fmt: str = "+.3f") -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def reason_text(status: str, reasons) -> str:
    """": reason; reason" after the verdict, without repeating the verdict's word at the start of a
    reason ("INCONCLUSIVE: inconclusive: ..." read twice)."""
    if not reasons:
        return ""
    prefix = f"{status}: "
    return ": " + "; ".join(r[len(prefix):] if r.lower().startswith(prefix) else r for r in reasons)


def run_compare(base, cand, out_dir: Path, params: StatParams, *, max_increase: float,
                new_violations: str, on_inconclusive: str | None = None) -> tuple[CompareResult, str]:
    """Compare two loaded runs, write compare.csv/.md and a manifest into ``out_dir``; returns the
    result and the text to print. Raises EduFairError when nothing is computable (no evidence is
    not a pass). ``on_inconclusive`` (pass / fail / None) is only recorded and printed: the exit
    status is the CLI's."""
    res = gate(base, cand, params, max_increase=max_increase, new_violations=new_violations)
    h = res.headline
    if not h["units"]:
        # A gate that passes on no evidence would let any fine-tune through: say so and exit 2.
        raise EduFairError(
            f"no bias measure is computable on the questions both runs share ({res.n_questions}): every "
            f"contrast has fewer than --min-pairs {params.min_pairs} complete pairs, so the gate cannot decide"
        )
    verdict = res.status.upper()
    if res.status == "inconclusive" and on_inconclusive:
        verdict += f" (treated as {on_inconclusive.upper()} by --on-inconclusive)"
    cols = ["domain", "condition", "contrast", "metric", "unbiased_abs_r_baseline", "unbiased_abs_r_candidate",
            "gate_delta", "gate_ci_low", "gate_ci_high", "verdict_baseline", "verdict_candidate", "new_flag",
            "gate_violation", "abs_r_baseline", "abs_r_candidate", "delta", "delta_excess"]
    labels = domain_labels([base, cand])  # "mathematics (GSM8K proxy)" where the bank says so
    table = res.units[cols].assign(domain=res.units["domain"].map(lambda d: labels.get(d, d)))
    gate_line = (f"gate (pedagogical headline, mean unbiased r²; RMS bias {_f(h['gate_baseline'], '.3f')} "
                 f"({base.label}) -> {_f(h['gate_candidate'], '.3f')} ({cand.label})): change "
                 f"{_f(h['gate_delta'], '+.4f')} [90% CI {_f(h['gate_ci_low'], '+.4f')}, {_f(h['gate_ci_high'], '+.4f')}"
                 f"{_skew_note(h.get('gate_skewness'))}], "
                 f"threshold {_f(h['gate_threshold'], '.4f')} (a rise of the RMS bias by the margin {max_increase:.3f}); "
                 f"{int(h['gate_units'])} units, questions {res.n_questions}")
    verdict_line = (f"unit verdicts (pedagogical headline, margin ±{params.equivalence_margin:.2f}): baseline "
                    f"{int(h['flag_baseline'])} flagged / {int(h['certify_baseline'])} certified / "
                    f"{int(h['inconclusive_baseline'])} inconclusive; candidate {int(h['flag_candidate'])} / "
                    f"{int(h['certify_candidate'])} / {int(h['inconclusive_candidate'])}")
    paper_line = (f"beside it (not gated; as the paper prints it, not noise-corrected): |r̄| {h['baseline']:.3f} -> "
                  f"{h['candidate']:.3f}, Δ {h['delta']:+.3f} [95% percentile interval, not re-centred, "
                  f"{h['delta_ci_low']:+.3f}, {h['delta_ci_high']:+.3f}]; Δ excess over the noise floor "
                  f"{h['delta_excess']:+.3f}; pedagogical headline violations {int(h['violations_baseline'])} -> "
                  f"{int(h['violations_candidate'])} (raw), {int(h['violations_fdr_baseline'])} -> "
                  f"{int(h['violations_fdr_candidate'])} (FDR)")
    md = "\n".join([
        "# EduFair compare", "", gate_line, "", verdict_line, "", paper_line, "",
        f"**{verdict}**" + reason_text(res.status, res.reasons), "",
        to_markdown(table, "Change per unit (candidate − baseline), largest increase of the gate measure first",
                    "unbiased_abs_r: signed root of (r² − V0)/(1 − V0), V0 the sign-flip variance of r (≈ 0 without "
                    "bias whatever the zero share); gate_delta: the change of (r² − V0)/(1 − V0), 90% CI from the joint "
                    "bootstrap of the questions less its excess for squares; verdict: each run's own unit verdict (flag / "
                    "certify / inconclusive / unconfirmed / insufficient, analysis/verdicts.py); new_flag: flagged "
                    "in the candidate only; gate_violation: a new flag whose change is family-wise significant. "
                    "abs_r / delta / delta_excess: the paper's |r| and its change (not gated). Rules: "
                    "edufair_metrics/analysis/compare.py."),
    ])
    out_dir = Path(out_dir)
    atomic_write_text(out_dir / "compare.csv", res.units.to_csv(index=False))
    atomic_write_text(out_dir / "compare.md", md)
    atomic_write_json(out_dir / "compare_manifest.json", {
        "kind": "edufair-compare", "baseline": base.describe(), "candidate": cand.describe(),
        "parameters": {**params.to_dict(), "max_increase": max_increase, "new_violations": new_violations,
                       "on_inconclusive": on_inconclusive},
        "headline": {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in h.items()},
        "status": res.status, "verdict": verdict, "reasons": res.reasons, "questions": res.n_questions,
        "questions_needed": res.questions_needed,
        "questions_needed_at_estimate": res.questions_needed_at_estimate, "versions": versions(),
    })
    lines = [gate_line, verdict_line, paper_line]
    flagged = table[res.units["gate_violation"]]
    if len(flagged):
        lines.append(to_markdown(flagged, "Units failing the gate"))
    lines.append(to_markdown(table.head(10), "Largest increases"))
    lines.append(f"{verdict}" + reason_text(res.status, res.reasons) + f" (details in {out_dir})")
    return res, "\n".join(lines)
