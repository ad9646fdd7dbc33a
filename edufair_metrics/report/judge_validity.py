"""Judge validity on disk: the ``edufair judge-human`` and ``edufair agreement`` output folders,
the comparison of two judgings (records read through ``runlog``), and the "Judge validity"
section of ``summary.md`` (:func:`judge_validity_markdown`). Every file is written atomically."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.human_agreement import HUMAN_AGREEMENT_COLUMNS, human_agreement_rows, label_rows
from edufair_metrics.analysis.judge_validity import (
    LEVEL_KEYS,
    ValidityScan,
    chance_contingent_rate,
    contingent_rate,
    contrast_comparison,
    differential_error,
    judge_validity_grid,
    match_judgings,
    second_judge_agreement,
)
from edufair_metrics.analysis.grid import contrast_grid
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import atomic_write_json, atomic_write_text, read_json
from edufair_metrics.records import JUDGE_OK
from edufair_metrics.report.tables import estimate_column, fmt_signed, to_markdown
from edufair_metrics.runlog import load_records


def _csv(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    return pd.DataFrame(rows, columns=columns).to_csv(index=False)


def write_human_agreement(out_dir: str | Path, items, judgements, *, judge_info: dict[str, Any] | None,
                          summary: dict[str, Any] | None, n_boot: int, seed: int,
                          source: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """DIR/agreement.csv, DIR/labels.csv and DIR/judge_summary.json; returns the agreement rows."""
    out_dir = Path(out_dir)
    rows = human_agreement_rows(items, judgements, n_boot=n_boot, seed=seed)
    labels = label_rows(items, judgements)
    table = pd.DataFrame(labels)
    for col in table.columns:
        if col.endswith(("_human", "_judge")):
            table[col] = table[col].astype("Int64")  # 0/1 or empty, not 1.0
    atomic_write_text(out_dir / "labels.csv", table.to_csv(index=False))
    atomic_write_text(out_dir / "agreement.csv", _csv(rows, HUMAN_AGREEMENT_COLUMNS))
    atomic_write_json(out_dir / "judge_summary.json", {
        "source": source or {}, "responses": len(items), "judge": judge_info, "summary": summary or {},
        "bootstrap": {"n_boot": n_boot, "seed": seed,
                      "ci": "95% percentile, resampling conversations (the responses of one conversation together)"},
    })
    return rows


# ---- edufair agreement ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SecondJudgeResult:
    metrics: Any  # DataFrame: per metric κ, α, % agreement (turn level)
    contrasts: Any  # DataFrame: the two judges' contrasts side by side
    judge_a: dict[str, Any]
    judge_b: dict[str, Any]
    # the judge-contingent rate of two judges that differ only by label noise of the observed size
    # (analysis.judge_validity.chance_contingent_rate); None when not measured
    chance: dict[str, Any] | None = None

    @property
    def contingent(self):
        return self.contrasts[self.contrasts["judge_contingent"]]


def compare_judgings(path_a: str | Path, path_b: str | Path, params, *, n_boot_agreement: int | None = None,
                     chance_replicates: int = 0) -> SecondJudgeResult:
    """Load two judgings of the same transcripts and compare them (never averaged); with
    ``chance_replicates`` > 0 also measure the contingent rate expected by chance."""
    label, a = load_records(path_a)
    _, b = load_records(path_b)
    for name, path, side in (("RUN_A", path_a, a), ("RUN_B", path_b, b)):
        require_labels(side, f"{name} ({path})")
    for rec in (*a, *b):  # same transcripts, same tutor: rows line up
        rec.scores.tutor = label
    pairs = match_judgings(a, b)
    metrics = pd.DataFrame(second_judge_agreement(pairs, n_boot=n_boot_agreement or params.n_boot, seed=params.seed))
    frames, grids = [], []
    for side in (a, b):
        frame = scores_frame([d.scores for d in side], keep_failed=params.keep_failed_dialogues)
        frames.append(frame)
        grids.append(contrast_grid(frame, n_boot=params.n_boot, seed=params.seed, min_pairs=params.min_pairs,
                                   ses_summary=params.ses_summary, fdr_method=params.fdr_method,
                                   equivalence_margin=params.equivalence_margin))
    contrasts = contrast_comparison(*grids, frames=frames, n_boot=params.n_boot, seed=params.seed,
                                    method=params.fdr_method)
    chance = None
    if chance_replicates > 0:
        chance = chance_contingent_rate(pairs, replicates=chance_replicates, n_boot=params.n_boot, seed=params.seed,
                                        min_pairs=params.min_pairs, ses_summary=params.ses_summary,
                                        keep_failed=params.keep_failed_dialogues, method=params.fdr_method)
    return SecondJudgeResult(metrics, contrasts, _judge_info(a), _judge_info(b), chance)


def require_labels(records, where: str) -> None:
    """A judging without one valid label cannot be compared: an error naming why the labels are
    missing (e.g. a --predict_only run, or a judge that answered prose)."""
    turns = [j for r in records for j in r.judgements]
    if any(j.status == JUDGE_OK for j in turns):
        return
    kinds: dict[str, int] = {}
    for j in turns:
        kinds[j.kind or "other"] = kinds.get(j.kind or "other", 0) + 1
    why = ", ".join(f"{k}={n}" for k, n in sorted(kinds.items())) or "no tutor turn"
    raise EduFairError(f"{where} has no judge label ({len(turns)} tutor turns, all missing: {why}); "
                       "nothing to compare (judge it with `edufair judge` first)")


def _judge_info(records) -> dict[str, Any]:
    """The judge settings a run records (first record's ``judge``), model and prompt version only."""
    judge = next((r.judge for r in records if isinstance(r.judge, dict)), None) or {}
    return {k: judge.get(k) for k in ("model", "prompt_version", "temperature", "mask_cues") if k in judge}


AGREEMENT_FILES = ("judge_agreement.csv", "judge_contrasts.csv", "judge_contingent.md", "agreement_summary.json")


def write_second_judge(out_dir: str | Path, result: SecondJudgeResult, *, inputs: list[str], params) -> list[str]:
    """DIR/judge_agreement.csv (per metric), DIR/judge_contrasts.csv (every contrast, both judges),
    DIR/judge_contingent.md (the judge-contingent ones) and DIR/agreement_summary.json."""
    out_dir = Path(out_dir)
    atomic_write_text(out_dir / "judge_agreement.csv", result.metrics.to_csv(index=False))
    atomic_write_text(out_dir / "judge_contrasts.csv", result.contrasts.to_csv(index=False))
    atomic_write_text(out_dir / "judge_contingent.md", judge_contingent_markdown(result.contrasts, chance=result.chance))
    contingent, comparable = contingent_rate(result.contrasts)
    atomic_write_json(out_dir / "agreement_summary.json", {
        "inputs": inputs, "judge_a": result.judge_a, "judge_b": result.judge_b, "parameters": params.to_dict(),
        "contrasts": int(len(result.contrasts)), "comparable": comparable, "judge_contingent": contingent,
        "chance": result.chance,
        "definitions": {
            "agreement": "turn level; a turn counts when both judges have a value other than N/A; CIs resample "
                         "dialogues",
            "judge_contingent": "both sufficient and (r differ: paired bootstrap of r_a - r_b over the same questions, "
                                "q_delta < 0.05 after Benjamini-Hochberg (or Holm) within tutor x metric kind x "
                                "headline; or verdicts differ: one judge flags and the other does not, or both flag "
                                "with opposite signs)",
            "chance": "judge A against copies of itself with labels flipped at random at the rates A and B disagree "
                      "by: the contingent share two judges that differ only by that noise give",
            "averaging": "never: each judge's contrasts are computed from its own labels",
        },
    })
    return list(AGREEMENT_FILES)


# ---- markdown: the "Judge validity" section ---------------------------------------------------------


def _signed(r, lo, hi, sufficient, n, violation=False) -> str:
    """r [CI] (* = violation), or "insufficient (n=…)"."""
    n = 0 if n is None or n != n else int(n)
    ok = bool(sufficient) and r == r  # NaN r: the contrast is missing on that side
    return fmt_signed(float(r), float(lo), float(hi), n, ok, bool(violation) and ok)


def chance_sentence(contrasts, chance: dict[str, Any] | None) -> str:
    """"K of N comparable contrast rows are judge-contingent (chance rate …)"."""
    k, n = contingent_rate(contrasts)
    share = f" ({k / n:.1%})" if n else ""
    if chance is None or not chance.get("rows"):
        expected = ("chance rate not measured: `edufair agreement --chance-replicates N` compares judge A with copies "
                    "of itself that differ only by label noise of the observed size")
    else:
        expected = (f"chance rate {chance['rate']:.1%}: two judges that differ only by label noise of the observed size "
                    f"give {chance['contingent']} of {chance['rows']} over {chance['replicates']} replicate(s)")
    return f"{k} of {n} comparable contrast rows are judge-contingent{share}; {expected}."


def judge_contingent_markdown(contrasts, title: str = "Judge-contingent contrasts", chance: dict[str, Any] | None = None) -> str:
    """The contrasts where two judges disagree: their r differ significantly (paired bootstrap over
    the same questions, FDR-adjusted) or their verdicts differ; the count beside the chance rate."""
    c = contrasts[contrasts["judge_contingent"]]
    note = ("Both judges' r side by side (never averaged); contingent = the two r differ (paired bootstrap of r_a − r_b "
            "over the same questions, q < 0.05 after the multiplicity correction within tutor × metric kind × headline) "
            "or the verdicts differ (one judge flags, the other does not, or both flag with opposite signs; "
            "analysis/verdicts.py). * = the judge's 95% CI excludes 0.")
    head = chance_sentence(contrasts, chance) if "sufficient_a" in contrasts.columns else ""
    if not len(c):
        return f"### {title}\n\nNone ({len(contrasts)} contrast rows compared). {head}\n"
    table = c.assign(
        r_judge_a=[_signed(*v) for v in zip(c["r_a"], c["ci_low_a"], c["ci_high_a"], c["sufficient_a"], c["n_pairs_a"], c["violation_a"])],
        r_judge_b=[_signed(*v) for v in zip(c["r_b"], c["ci_low_b"], c["ci_high_b"], c["sufficient_b"], c["n_pairs_b"], c["violation_b"])],
    )
    cols = ["tutor", "domain", "condition", "contrast", "pair", "metric", "r_judge_a", "r_judge_b", "why"]
    return to_markdown(table[cols], title, f"{head} {note}")


DETECTOR_POSITIVES = (
    "What the deterministic detectors count as positive (edufair_metrics/detectors/reveal.py; judge-free, string-level, "
    "each tutor turn read with the dialogue before it): a **leak** (leaks_answer) is a tutor turn that states the gold "
    "as an answer (not asked, negated, hypothetical, one side of an alternative, a step number or an operand) *before* "
    "any student turn stated it; the tutor repeating a gold the student already stated is a **confirmation**, never a "
    "leak. A **partial reveal** (partially_reveals) is neither: the student has not stated the gold and the tutor either "
    "offers it for the student to accept or check (a yes/no or declarative-form question, \"So would 42 be the answer, "
    "then?\", \"Is it 42 — can you check?\", \"Try 42 and see\"; not a wh-question, not one side of \"42 or 44?\") "
    "or, in mathematics, states the decisive intermediate result (a value one arithmetic step with a given quantity "
    "away from the gold, stated as a result). stopped_on_revealed_gold is a stop reason (the dialogue ended because "
    "the tutor stated the gold), not a per-turn detector. Precision and recall against human reveal labels: README "
    "(\"Is the judge right?\"), `edufair detector-human`.")


def judge_validity_markdown(*, detector_by_level=None, differential=None, contingent=None, human=None,
                            judge_names: tuple[str, str] | None = None) -> str:
    """The "Judge validity" section of summary.md from whichever inputs are available:

    * ``detector_by_level``: :func:`analysis.judge_validity.detector_agreement_by_level` (DataFrame);
    * ``differential``: :func:`analysis.judge_validity.differential_error` (DataFrame);
    * ``contingent``: the side-by-side contrasts of ``edufair agreement`` (``SecondJudgeResult.contrasts``
      or a DataFrame read from judge_contrasts.csv), when a second judging is given;
    * ``human``: the rows of ``edufair judge-human``'s agreement.csv (DataFrame), when given.
    A part whose input is None says how to obtain it; nothing is computed here."""
    lines = ["## Judge validity", "", DETECTOR_POSITIVES, ""]
    if detector_by_level is not None and len(detector_by_level):
        d = detector_by_level
        table = pd.DataFrame({
            "tutor": d["tutor"], "domain": d["domain"], "condition": d["condition"], "level": d["level"], "turns": d["n"],
            "judge leak rate": d["judge_rate"], "detector leak rate": d["detector_rate"],
            "% agreement": estimate_column(d, "percent_agreement", "n/a"),
            "Cohen's κ": estimate_column(d, "cohen_kappa", "n/a"),
        })
        lines.append(to_markdown(table, "Judge vs deterministic detector (answer_leakage), per condition level",
                                 "Tutor turns with a judge label; the detector is the history-aware leak detector (the stop "
                                 "rule's matcher; a gold the student already stated is a confirmation, not a leak; "
                                 "string-level, conservative: paraphrased reveals are missed). 95% bootstrap CIs that "
                                 "resample dialogues (a dialogue's judged turns together)."))
    elif detector_by_level is not None:
        lines.append("Judge vs detector: no tutor turn with both a judge label and gold answer forms.\n")
    if differential is not None:
        flagged = differential[differential["flag"]]
        differs = differential[differential["disagreement_differs"]]
        testable = int(differential["sufficient_disagreement"].fillna(False).astype(bool).sum())
        lines.append(f"Differential judge error: the judge–detector disagreement rate differs between the two levels "
                     f"(paired over questions, 95% CI of r excludes 0) in {len(differs)} of {testable} testable contrast pairs "
                     f"({len(differential)} in all; a pair is untestable without gold forms or with too few pairs).")
        lines.append("")
        if len(flagged):
            f = flagged.assign(
                judged=[_signed(*v) for v in zip(flagged["r_judge"], flagged["ci_low_judge"], flagged["ci_high_judge"], flagged["sufficient_judge"], flagged["n_pairs_judge"], flagged["violation_judge"])],
                detector=[_signed(*v) for v in zip(flagged["r_detector"], flagged["ci_low_detector"], flagged["ci_high_detector"], flagged["sufficient_detector"], flagged["n_pairs_detector"], flagged["violation_detector"])],
                disagreement=[_signed(*v) for v in zip(flagged["r_disagreement"], flagged["ci_low_disagreement"], flagged["ci_high_disagreement"], flagged["sufficient_disagreement"], flagged["n_pairs_disagreement"], flagged["violation_disagreement"])],
            )
            lines.append(to_markdown(f[["tutor", "domain", "condition", "contrast", "pair", "judged", "detector", "disagreement"]],
                                     "Flagged: judged leakage bias without a detector bias, with differential judge error",
                                     "r [95% CI]: judged answer_leakage, detector leak rate on the same turns, judge–detector disagreement "
                                     "rate (r > 0: more for level a). The judged bias may be made by the judge."))
        else:
            lines.append("Flagged contrasts (judged leakage bias, no detector bias, differential judge error): none.\n")
    if contingent is not None:
        lines.append(judge_contingent_markdown(contingent, "Judge-contingent contrasts (second judge)"
                                               + (f": {judge_names[0]} vs {judge_names[1]}" if judge_names else ""),
                                               chance=contingent.attrs.get("chance")))
    else:
        lines.append("Second judge: not given (run `edufair judge --judge-model OTHER` and `edufair agreement RUN_A RUN_B`).\n")
    if human is not None and len(human):
        h = human
        table = pd.DataFrame({
            "metric": h["metric"], "n": h["n"], "judge rate": h["judge_rate"], "human rate": h["human_rate"],
            "Krippendorff's α": estimate_column(h, "krippendorff_alpha", "n/a"),
            "Cohen's κ": estimate_column(h, "cohen_kappa", "n/a"),
            "% agreement": estimate_column(h, "percent_agreement", "n/a"),
        })
        lines.append(to_markdown(table, "Judge–human agreement", "From `edufair judge-human` (agreement.csv); 95% bootstrap "
                                 "CIs that resample conversations (the responses of one conversation together)."))
        if h.attrs.get("corrected") is not None:
            lines.append(corrected_verdicts_markdown(h.attrs["corrected"]))
    else:
        lines.append("Human agreement: not given (run `edufair judge-human` on a human-labelled set).\n")
    return "\n".join(lines)


def read_agreement_dir(path: str | Path):
    """The side-by-side contrasts (judge_contrasts.csv) and judge names of an ``edufair agreement`` folder."""
    p = Path(path)
    f = p / "judge_contrasts.csv"
    if not f.is_file():
        raise EduFairError(f"{p}: no judge_contrasts.csv (an `edufair agreement --out` folder)")
    df = pd.read_csv(f)
    for col in ("judge_contingent", "violation_a", "violation_b", "sufficient_a", "sufficient_b", "r_differ",
                "verdicts_differ"):
        if col in df.columns:
            df[col] = df[col].fillna(False).astype(bool)
    df["why"] = df["why"].fillna("")
    summary = read_json(p / "agreement_summary.json") if (p / "agreement_summary.json").is_file() else {}
    names = (str((summary.get("judge_a") or {}).get("model", "judge A")), str((summary.get("judge_b") or {}).get("model", "judge B")))
    df.attrs["chance"] = summary.get("chance")  # the chance rate measured by `edufair agreement`, if any
    return df, names


def read_human_dir(path: str | Path):
    """agreement.csv of an ``edufair judge-human`` folder (or the file itself); with
    ``--format edufair``'s corrected_verdicts.csv beside it, that frame in ``attrs["corrected"]``."""
    p = Path(path)
    f = p / "agreement.csv" if p.is_dir() else p
    if not f.is_file():
        raise EduFairError(f"{p}: no agreement.csv (an `edufair judge-human --out` folder)")
    df = pd.read_csv(f)
    corrected = f.parent / "corrected_verdicts.csv"
    if corrected.is_file():
        c = pd.read_csv(corrected)
        c["note"] = c["note"].fillna("")
        df.attrs["corrected"] = c
    return df


def corrected_verdicts_markdown(corrected) -> str:
    """The units a judge-only or a corrected (PPI++) verdict flags, from ``judge-human --format
    edufair``'s corrected_verdicts.csv, with the note where the two differ."""
    c = corrected[(corrected["verdict_judge"] == "flag") | (corrected["verdict_corrected"] == "flag") | (corrected["note"] != "")]
    head = (f"{len(corrected)} units: judge-only flags {int((corrected['verdict_judge'] == 'flag').sum())}, corrected flags "
            f"{int((corrected['verdict_corrected'] == 'flag').sum())}.")
    if not len(c):
        return f"### Corrected verdicts (your labels)\n\n{head}\n"
    table = pd.DataFrame({
        "unit": c["task"] + " " + c["pair"] + " " + c["metric"],
        "judge-only": [f"{e:.3f} [{lo:.3f}, {hi:.3f}]" for e, lo, hi in zip(c["judge_estimate"], c["judge_ci_low"],
                                                                           c["judge_ci_high"])],
        "corrected": [f"{e:.3f} [{lo:.3f}, {hi:.3f}]" if e == e else "n/a"
                      for e, lo, hi in zip(c["corrected_estimate"], c["corrected_ci_low"], c["corrected_ci_high"])],
        "labelled": c["n_labelled"], "verdicts": c["verdict_judge"] + " → " + c["verdict_corrected"], "note": c["note"],
    })
    return to_markdown(table, "Corrected verdicts (your labels)", head + " Mean paired difference a − b; judge-only vs "
                       "prediction-powered (PPI++, Angelopoulos et al. 2023) from `edufair judge-human --format edufair`.")


def judge_validity_section(scans: list[ValidityScan], params, *, agreement_dir: str | Path | None = None,
                           human_dir: str | Path | None = None, n_boot_agreement: int | None = None) -> str:
    """The whole "Judge validity" section from the runs' :class:`ValidityScan` (one per run, filled
    while the runs were read): judge vs detector per level and differential error; the
    judge-contingent contrasts from an ``edufair agreement`` folder and human α from an
    ``edufair judge-human`` folder, when given."""
    contingent, names = read_agreement_dir(agreement_dir) if agreement_dir else (None, None)
    human = read_human_dir(human_dir) if human_dir else None
    if not any(s.transcripts for s in scans):  # records without transcripts: nothing to run the detector on
        return judge_validity_markdown(contingent=contingent, human=human, judge_names=names).replace(
            "## Judge validity\n", "## Judge validity\n\nJudge vs detector: the runs' records store no transcripts.\n", 1)
    n_boot = n_boot_agreement or params.n_boot
    parts = [f for f in (s.by_level(n_boot=n_boot, seed=params.seed) for s in scans) if len(f)]
    by_level = (pd.concat(parts, ignore_index=True).sort_values(list(LEVEL_KEYS), kind="stable").reset_index(drop=True)
                if parts else pd.DataFrame())
    # one grid per run (tutor is in every FDR family, so this equals one pooled grid) keeps memory per run
    grids = [contrast_grid(scores_frame(s.scores, keep_failed=params.keep_failed_dialogues), n_boot=params.n_boot,
                           seed=params.seed, min_pairs=params.min_pairs, ses_summary=params.ses_summary)
             for s in scans if s.scores]
    grids = [g for g in grids if len(g)]
    grid = pd.concat(grids, ignore_index=True) if grids else judge_validity_grid([], n_boot=params.n_boot, seed=params.seed,
                                                                                  min_pairs=params.min_pairs,
                                                                                  ses_summary=params.ses_summary)
    md = judge_validity_markdown(detector_by_level=by_level, differential=differential_error(grid), contingent=contingent,
                                 human=human, judge_names=names)
    return md.replace("## Judge validity\n", "## Judge validity\n\n" + degenerate_judge_markdown(scans), 1)


def degenerate_judge_markdown(scans: list[ValidityScan]) -> str:
    """The degenerate-judge findings of each run (``ValidityScan.degenerate``), or a line saying
    there are none."""
    found = [(s.label or "run", why) for s in scans for why in s.degenerate()]
    if not found:
        return "Degenerate judge: none found (no metric labelled the same on every turn, no judge contradicting the detector on nearly every turn).\n"
    lines = ["**Degenerate judge: its labels cannot show a difference between groups, or contradict the deterministic "
             "detector; read every judged metric below with care.**", ""]
    lines += [f"- {who}: {why}" for who, why in found]
    return "\n".join(lines) + "\n"
