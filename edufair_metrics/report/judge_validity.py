"""Judge validity on disk: the ``edufair judge-human`` and ``edufair agreement`` output folders,
the reader of judged records (samples files with transcripts and judgements), and the "Judge
validity" section of ``summary.md`` (:func:`judge_validity_markdown`). Every file is written
atomically."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edufair_metrics.io import atomic_write_json, atomic_write_text


def _csv(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    import pandas as pd

    return pd.DataFrame(rows, columns=columns).to_csv(index=False)


def write_human_agreement(out_dir: str | Path, items, judgements, *, judge_info: dict[str, Any] | None,
                          summary: dict[str, Any] | None, n_boot: int, seed: int,
                          source: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """DIR/agreement.csv, DIR/labels.csv and DIR/judge_summary.json; returns the agreement rows."""
    from edufair_metrics.analysis.human_agreement import HUMAN_AGREEMENT_COLUMNS, human_agreement_rows, label_rows

    out_dir = Path(out_dir)
    rows = human_agreement_rows(items, judgements, n_boot=n_boot, seed=seed)
    labels = label_rows(items, judgements)
    import pandas as pd

    table = pd.DataFrame(labels)
    for col in table.columns:
        if col.endswith(("_human", "_judge")):
            table[col] = table[col].astype("Int64")  # 0/1 or empty, not 1.0
    atomic_write_text(out_dir / "labels.csv", table.to_csv(index=False))
    atomic_write_text(out_dir / "agreement.csv", _csv(rows, HUMAN_AGREEMENT_COLUMNS))
    atomic_write_json(out_dir / "judge_summary.json", {
        "source": source or {}, "responses": len(items), "judge": judge_info, "summary": summary or {},
        "bootstrap": {"n_boot": n_boot, "seed": seed, "ci": "95% percentile over responses"},
    })
    return rows


# ---- reading judged dialogues -------------------------------------------------------------------


def _has_results_json(path: Path) -> bool:
    if path.is_file():
        return path.name.startswith("results_") and path.suffix == ".json"
    return any(p.name.startswith("results_") and p.suffix == ".json" for p in path.rglob("results_*.json"))


def judged_samples_files(path: str | Path) -> tuple[str, list[Path]]:
    """(label, samples files) of a judged run: an lm-eval output folder / model folder / results
    JSON (the newest samples file per task, as ``edufair report`` reads it), or a folder of samples
    files without results JSON (what ``edufair judge --out DIR`` writes), or one samples file."""
    from edufair_metrics.errors import EduFairError
    from edufair_metrics.judge.rejudge import find_samples
    from edufair_metrics.report.runs import find_model_dirs, load_run

    p = Path(path).expanduser()
    if not p.exists():
        raise EduFairError(f"no such file or directory: {p}")
    if p.is_file() and p.name.startswith("samples_"):
        return p.parent.name, [p]
    if _has_results_json(p):
        if len(find_model_dirs(p)) != 1:
            raise EduFairError(f"{p} holds several model folders; pass one of them")
        run = load_run(p)
        return run.label, [run.samples_files[t] for t in sorted(run.samples_files)]
    return p.name, find_samples([str(p)])


def read_judged_dialogues(files: list[Path], tutor: str = "", *, allow_empty: bool = False):
    """Every EduFair record of ``files`` as JudgedDialogue (transcript, judgements, scores, the
    doc's gold answer forms); lines without a record are skipped. No record with a transcript is
    an error unless ``allow_empty`` (then the list is empty)."""
    from edufair_metrics.analysis.judge_validity import JudgedDialogue
    from edufair_metrics.errors import EduFairError
    from edufair_metrics.io import iter_jsonl
    from edufair_metrics.records import DialogueScores, Transcript, TurnJudgement
    from edufair_metrics.report.runs import RECORD_KEY

    out = []
    for f in files:
        for lineno, obj in iter_jsonl(f):
            rec = obj.get(RECORD_KEY) if isinstance(obj, dict) else None
            if not isinstance(rec, dict) or not isinstance(rec.get("transcript"), dict):
                continue
            where = f"{f}:{lineno}"
            try:
                # records of older runs have no stop_reason ("" = unknown, as report.runs reads them)
                transcript = Transcript.from_dict({"stop_reason": "", **rec["transcript"]})
                judgements = [TurnJudgement.from_dict(j) for j in rec.get("judgements") or []]
                scores = DialogueScores.from_dict(rec["scores"])
            except (TypeError, ValueError, KeyError) as exc:
                raise EduFairError(f"{where}: malformed EduFair record ({exc})") from exc
            scores.tutor = tutor
            doc = obj.get("doc") if isinstance(obj.get("doc"), dict) else {}
            forms = doc.get("answer_forms")
            forms = [str(x) for x in forms] if isinstance(forms, list) and forms else None
            out.append(JudgedDialogue(transcript, judgements, scores, forms, where))
    if not out and not allow_empty:
        raise EduFairError(f"no EduFair records with transcripts in {', '.join(str(f) for f in files)}")
    return out


def load_judged(path: str | Path, tutor: str | None = None):
    """(tutor label, JudgedDialogue list) of one judged run (see :func:`judged_samples_files`)."""
    label, files = judged_samples_files(path)
    label = tutor or label
    return label, read_judged_dialogues(files, label)


def judged_dialogues_of_run(run, *, allow_empty: bool = False):
    """The JudgedDialogue list of a ``report.runs.Run`` (the samples files it was read from)."""
    return read_judged_dialogues([run.samples_files[t] for t in sorted(run.samples_files)], run.label,
                                 allow_empty=allow_empty)



# ---- edufair agreement ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SecondJudgeResult:
    metrics: Any  # DataFrame: per metric κ, α, % agreement (turn level)
    contrasts: Any  # DataFrame: the two judges' contrasts side by side
    judge_a: dict[str, Any]
    judge_b: dict[str, Any]

    @property
    def contingent(self):
        return self.contrasts[self.contrasts["judge_contingent"]]


def compare_judgings(path_a: str | Path, path_b: str | Path, params, *, n_boot_agreement: int | None = None) -> SecondJudgeResult:
    """Load two judgings of the same transcripts and compare them (never averaged)."""
    import pandas as pd

    from edufair_metrics.analysis.frames import scores_frame
    from edufair_metrics.analysis.judge_validity import contrast_comparison, match_judgings, second_judge_agreement
    from edufair_metrics.analysis.grid import contrast_grid

    label, a = load_judged(path_a)
    _, b = load_judged(path_b, tutor=label)  # same transcripts, same tutor: rows line up
    pairs = match_judgings(a, b)
    metrics = pd.DataFrame(second_judge_agreement(pairs, n_boot=n_boot_agreement or params.n_boot, seed=params.seed))
    grids = []
    for side in (a, b):
        frame = scores_frame([d.scores for d in side], keep_failed=params.keep_failed_dialogues)
        grids.append(contrast_grid(frame, n_boot=params.n_boot, seed=params.seed,
                                   min_pairs=params.min_pairs, ses_summary=params.ses_summary))
    contrasts = contrast_comparison(*grids)
    return SecondJudgeResult(metrics, contrasts, _read_judge_info(path_a), _read_judge_info(path_b))


def _read_judge_info(path: str | Path) -> dict[str, Any]:
    """The judge settings a run records (first record's ``judge``), model and prompt version only."""
    from edufair_metrics.io import iter_jsonl

    _, files = judged_samples_files(path)
    for f in files:
        for _, obj in iter_jsonl(f):
            rec = obj.get("edufair_record") if isinstance(obj, dict) else None
            judge = rec.get("judge") if isinstance(rec, dict) else None
            if isinstance(judge, dict):
                return {k: judge.get(k) for k in ("model", "prompt_version", "temperature", "mask_cues") if k in judge}
    return {}


AGREEMENT_FILES = ("judge_agreement.csv", "judge_contrasts.csv", "judge_contingent.md", "agreement_summary.json")


def write_second_judge(out_dir: str | Path, result: SecondJudgeResult, *, inputs: list[str], params) -> list[str]:
    """DIR/judge_agreement.csv (per metric), DIR/judge_contrasts.csv (every contrast, both judges),
    DIR/judge_contingent.md (the judge-contingent ones) and DIR/agreement_summary.json."""
    out_dir = Path(out_dir)
    atomic_write_text(out_dir / "judge_agreement.csv", result.metrics.to_csv(index=False))
    atomic_write_text(out_dir / "judge_contrasts.csv", result.contrasts.to_csv(index=False))
    atomic_write_text(out_dir / "judge_contingent.md", judge_contingent_markdown(result.contrasts))
    atomic_write_json(out_dir / "agreement_summary.json", {
        "inputs": inputs, "judge_a": result.judge_a, "judge_b": result.judge_b, "parameters": params.to_dict(),
        "contrasts": int(len(result.contrasts)), "judge_contingent": int(result.contrasts["judge_contingent"].sum()),
        "definitions": {
            "agreement": "turn level; a turn counts when both judges have a value other than N/A",
            "meaningful": "|r| >= 0.10",
            "judge_contingent": "both sufficient and (signs of r differ with at least one |r| >= 0.10, "
                                "or exactly one judge finds a violation)",
            "averaging": "never: each judge's contrasts are computed from its own labels",
        },
    })
    return list(AGREEMENT_FILES)


# ---- markdown: the "Judge validity" section ---------------------------------------------------------


def _ci(value: float, lo: float, hi: float) -> str:
    import math

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if lo is None or (isinstance(lo, float) and math.isnan(lo)):
        return f"{value:.3f}"
    return f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def _signed(r, lo, hi, sufficient, n, violation=False) -> str:
    """r [CI] (* = violation), or "insufficient (n=…)"."""
    from edufair_metrics.report.tables import fmt_signed

    n = 0 if n is None or n != n else int(n)
    ok = bool(sufficient) and r == r  # NaN r: the contrast is missing on that side
    return fmt_signed(float(r), float(lo), float(hi), n, ok, bool(violation) and ok)


def judge_contingent_markdown(contrasts, title: str = "Judge-contingent contrasts") -> str:
    """The contrasts where two judges disagree (sign of a meaningful r, or a violation)."""
    from edufair_metrics.report.tables import to_markdown

    c = contrasts[contrasts["judge_contingent"]]
    note = ("Both judges' r side by side (never averaged); contingent = the signs differ with |r| ≥ 0.10 on at least one "
            "side, or exactly one judge finds a violation (95% CI excludes 0, marked *).")
    if not len(c):
        return f"### {title}\n\nNone ({len(contrasts)} contrast rows compared).\n"
    table = c.assign(
        r_judge_a=[_signed(*v) for v in zip(c["r_a"], c["ci_low_a"], c["ci_high_a"], c["sufficient_a"], c["n_pairs_a"], c["violation_a"])],
        r_judge_b=[_signed(*v) for v in zip(c["r_b"], c["ci_low_b"], c["ci_high_b"], c["sufficient_b"], c["n_pairs_b"], c["violation_b"])],
    )
    cols = ["tutor", "domain", "condition", "contrast", "pair", "metric", "r_judge_a", "r_judge_b", "why"]
    return to_markdown(table[cols], title, note)


def judge_validity_markdown(*, detector_by_level=None, differential=None, contingent=None, human=None,
                            judge_names: tuple[str, str] | None = None) -> str:
    """The "Judge validity" section of summary.md from whichever inputs are available:

    * ``detector_by_level``: :func:`analysis.judge_validity.detector_agreement_by_level` (DataFrame);
    * ``differential``: :func:`analysis.judge_validity.differential_error` (DataFrame);
    * ``contingent``: the side-by-side contrasts of ``edufair agreement`` (``SecondJudgeResult.contrasts``
      or a DataFrame read from judge_contrasts.csv), when a second judging is given;
    * ``human``: the rows of ``edufair judge-human``'s agreement.csv (DataFrame), when given.
    A part whose input is None says how to obtain it; nothing is computed here."""
    import pandas as pd

    from edufair_metrics.report.tables import to_markdown

    lines = ["## Judge validity", ""]
    if detector_by_level is not None and len(detector_by_level):
        d = detector_by_level
        table = pd.DataFrame({
            "tutor": d["tutor"], "domain": d["domain"], "condition": d["condition"], "level": d["level"], "turns": d["n"],
            "judge leak rate": d["judge_rate"], "detector leak rate": d["detector_rate"],
            "% agreement": [_ci(v, lo, hi) for v, lo, hi in zip(d["percent_agreement"], d["percent_agreement_ci_low"], d["percent_agreement_ci_high"])],
            "Cohen's κ": [_ci(v, lo, hi) for v, lo, hi in zip(d["cohen_kappa"], d["cohen_kappa_ci_low"], d["cohen_kappa_ci_high"])],
        })
        lines.append(to_markdown(table, "Judge vs deterministic detector (answer_leakage), per condition level",
                                 "Tutor turns with a judge label; the detector is the stop rule's matcher (string-level, "
                                 "conservative: paraphrased reveals are missed). 95% bootstrap CIs over turns."))
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
                                     "r [95% CI]: judged answer_leakage, detector leak_rate_det, judge–detector disagreement "
                                     "rate (r > 0: more for level a). The judged bias may be made by the judge."))
        else:
            lines.append("Flagged contrasts (judged leakage bias, no detector bias, differential judge error): none.\n")
    if contingent is not None:
        lines.append(judge_contingent_markdown(contingent, "Judge-contingent contrasts (second judge)"
                                               + (f": {judge_names[0]} vs {judge_names[1]}" if judge_names else "")))
    else:
        lines.append("Second judge: not given (run `edufair judge --judge-model OTHER` and `edufair agreement RUN_A RUN_B`).\n")
    if human is not None and len(human):
        h = human
        table = pd.DataFrame({
            "metric": h["metric"], "n": h["n"], "judge rate": h["judge_rate"], "human rate": h["human_rate"],
            "Krippendorff's α": [_ci(v, lo, hi) for v, lo, hi in zip(h["krippendorff_alpha"], h["krippendorff_alpha_ci_low"], h["krippendorff_alpha_ci_high"])],
            "Cohen's κ": [_ci(v, lo, hi) for v, lo, hi in zip(h["cohen_kappa"], h["cohen_kappa_ci_low"], h["cohen_kappa_ci_high"])],
            "% agreement": [_ci(v, lo, hi) for v, lo, hi in zip(h["percent_agreement"], h["percent_agreement_ci_low"], h["percent_agreement_ci_high"])],
        })
        lines.append(to_markdown(table, "Judge–human agreement", "From `edufair judge-human` (agreement.csv); 95% bootstrap CIs over responses."))
    else:
        lines.append("Human agreement: not given (run `edufair judge-human` on a human-labelled set).\n")
    return "\n".join(lines)


def read_agreement_dir(path: str | Path):
    """The side-by-side contrasts (judge_contrasts.csv) and judge names of an ``edufair agreement`` folder."""
    import pandas as pd

    from edufair_metrics.errors import EduFairError
    from edufair_metrics.io import read_json

    p = Path(path)
    f = p / "judge_contrasts.csv"
    if not f.is_file():
        raise EduFairError(f"{p}: no judge_contrasts.csv (an `edufair agreement --out` folder)")
    df = pd.read_csv(f)
    for col in ("judge_contingent", "violation_a", "violation_b", "sufficient_a", "sufficient_b"):
        df[col] = df[col].fillna(False).astype(bool)
    df["why"] = df["why"].fillna("")
    summary = read_json(p / "agreement_summary.json") if (p / "agreement_summary.json").is_file() else {}
    names = (str((summary.get("judge_a") or {}).get("model", "judge A")), str((summary.get("judge_b") or {}).get("model", "judge B")))
    return df, names


def read_human_dir(path: str | Path):
    """agreement.csv of an ``edufair judge-human`` folder (or the file itself)."""
    import pandas as pd

    from edufair_metrics.errors import EduFairError

    p = Path(path)
    f = p / "agreement.csv" if p.is_dir() else p
    if not f.is_file():
        raise EduFairError(f"{p}: no agreement.csv (an `edufair judge-human --out` folder)")
    return pd.read_csv(f)


# ---- what the report reads from the stored transcripts: one pass, one samples file at a time ----------


NEXT_TURN_KEYS = ("tutor", "domain", "condition", "dimension", "level")


@dataclass
class TranscriptScan:
    """Everything the report derives from one run's stored transcripts (:func:`scan_run`). Only
    these small results are kept, never the transcripts: a paper-size report reads ~10^5 of them.

    ``detector``: (task, condition, level, question_id) -> detector metric values (NaN ones left
    out); ``next_turn``: (tutor, domain, condition, dimension, level) -> [leaking turns, of them
    followed by a reasoning attempt, non-leaking turns, of them followed by an attempt];
    ``by_level``: judge-vs-detector agreement frames (one per samples file; a condition level lives
    in one task, so per file is per level); ``validity``: the per-dialogue scores of
    ``analysis.judge_validity.validity_scores`` (judged leakage, detector metrics, disagreement)."""

    label: str
    dialogues: int = 0
    detector: dict = field(default_factory=dict)
    next_turn: dict = field(default_factory=dict)
    by_level: list = field(default_factory=list)
    validity: list = field(default_factory=list)


def scan_run(run, *, n_boot: int | None = None, seed: int = 0, validity: bool = True) -> TranscriptScan:
    """Read a run's samples files one at a time (``read_judged_dialogues``) and keep only what the
    report needs (:class:`TranscriptScan`). ``validity`` False skips the Judge validity parts
    (leaderboard, compare). ``n_boot``: the agreement bootstrap (default that of
    ``analysis.agreement``). A run whose records store no transcript gives an empty scan."""
    import math

    from edufair_metrics.analysis.agreement import DEFAULT_AGREEMENT_N_BOOT
    from edufair_metrics.analysis.judge_validity import detector_agreement_by_level, leak_turn_rows, validity_scores
    from edufair_metrics.detectors import DETECTOR_METRICS, detect_turns, detector_scores

    scan = TranscriptScan(run.label)
    for task in sorted(run.samples_files):
        found = read_judged_dialogues([run.samples_files[task]], run.label, allow_empty=True)
        scan.dialogues += len(found)
        for d in found:
            det = detector_scores(d.transcript, d.answer_forms)
            scan.detector[d.key] = {m: det[m] for m in DETECTOR_METRICS if not math.isnan(det[m])}
            if d.answer_forms:  # without gold forms a leak cannot be detected
                t = d.transcript
                counts = scan.next_turn.setdefault((run.label, t.domain, t.condition, t.dimension, t.level), [0, 0, 0, 0])
                for _, leaked, attempts in detect_turns(t, d.answer_forms).next_turn:
                    k = 0 if leaked else 2
                    counts[k] += 1
                    counts[k + 1] += int(attempts)
        if validity and found:
            rows = leak_turn_rows(found)
            if rows:
                scan.by_level.append(detector_agreement_by_level(rows, n_boot=n_boot or DEFAULT_AGREEMENT_N_BOOT, seed=seed))
            scan.validity.extend(validity_scores(found))
    return scan


def scan_runs(runs, params=None, *, n_boot_agreement: int | None = None, validity: bool = True) -> list[TranscriptScan]:
    """:func:`scan_run` of every run (in order; two runs may share a label, as in compare)."""
    n_boot = n_boot_agreement or (params.n_boot if params is not None else None)
    seed = params.seed if params is not None else 0
    return [scan_run(r, n_boot=n_boot, seed=seed, validity=validity) for r in runs]


def add_detector_scores(runs, scans: list[TranscriptScan] | None = None) -> int:
    """Add the detector metrics (``records.DETECTOR_METRICS``) to the scores of every dialogue of
    loaded runs, computed from the stored transcripts and the samples lines' gold forms (no model
    call: old runs get them too; values a run stored are recomputed, the detectors being
    deterministic). A NaN value (no tutor turn, no gold forms) is not added, so a run whose records
    hold no turns gets no detector contrasts rather than a grid of insufficient ones.
    ``scans``: :func:`scan_runs` of the same runs when already read. Returns the number of
    dialogues that got at least one value."""
    from edufair_metrics.detectors import DETECTOR_METRICS

    scans = scan_runs(runs, validity=False) if scans is None else scans
    if len(scans) != len(runs):
        from edufair_metrics.errors import EduFairError

        raise EduFairError("add_detector_scores needs one scan per run")
    updated = 0
    for run, scan in zip(runs, scans):
        for ds in run.scores:
            for m in DETECTOR_METRICS:  # a stored value is replaced, never mixed with a recomputed one
                ds.scores.pop(m, None)
            det = scan.detector.get((ds.task, ds.condition, ds.level, str(ds.question_id)))
            if det:
                ds.scores.update(det)
                updated += 1
    return updated


def next_turn_table(scans: list[TranscriptScan], by: tuple[str, ...] = NEXT_TURN_KEYS):
    """Next-turn independence per ``by`` group (a subset of ``NEXT_TURN_KEYS``; default all):
    tutor turns that leaked / did not (detector ``leaks_answer``), the share of each whose next
    student turn attempts reasoning (``attempts_reasoning``), and the difference after leak − after
    non-leak (NaN when a side has no turn). Dialogues without gold forms are not counted. Same
    columns as ``detectors.next_turn_summary``."""
    import pandas as pd

    pos = [NEXT_TURN_KEYS.index(k) for k in by]
    groups: dict[tuple, list[int]] = {}
    for scan in scans:
        for key, c in scan.next_turn.items():
            g = groups.setdefault(tuple(key[i] for i in pos), [0, 0, 0, 0])
            for i in range(4):
                g[i] += c[i]
    nan = float("nan")
    rows = []
    for key, (ln, la, nn, na) in sorted(groups.items()):
        a = la / ln if ln else nan
        b = na / nn if nn else nan
        rows.append({**dict(zip(by, key)), "leaking_turns": ln, "independence_after_leak": a, "non_leaking_turns": nn,
                     "independence_after_nonleak": b, "difference": a - b if ln and nn else nan})
    cols = list(by) + ["leaking_turns", "independence_after_leak", "non_leaking_turns", "independence_after_nonleak",
                       "difference"]
    return pd.DataFrame(rows, columns=cols)


def judge_validity_section(runs, params, *, agreement_dir: str | Path | None = None, human_dir: str | Path | None = None,
                           n_boot_agreement: int | None = None, scans: list[TranscriptScan] | None = None) -> str:
    """The whole "Judge validity" section for loaded runs (``report.runs.Run``): judge vs detector per
    level and differential error from the runs' samples files; the judge-contingent contrasts from
    an ``edufair agreement`` folder and human α from an ``edufair judge-human`` folder, when given.
    ``scans``: :func:`scan_runs` of the same runs (with validity) when the caller has read them."""
    import pandas as pd

    from edufair_metrics.analysis.judge_validity import differential_error, judge_validity_grid
    from edufair_metrics.analysis.frames import scores_frame
    from edufair_metrics.analysis.grid import contrast_grid

    contingent, names = read_agreement_dir(agreement_dir) if agreement_dir else (None, None)
    human = read_human_dir(human_dir) if human_dir else None
    scans = scan_runs(runs, params, n_boot_agreement=n_boot_agreement) if scans is None else scans
    if not any(s.dialogues for s in scans):  # records without transcripts: nothing to run the detector on
        return judge_validity_markdown(contingent=contingent, human=human, judge_names=names).replace(
            "## Judge validity\n", "## Judge validity\n\nJudge vs detector: the runs' records store no transcripts.\n", 1)
    parts = [f for s in scans for f in s.by_level]
    keys = ["tutor", "domain", "condition", "dimension", "level"]
    by_level = (pd.concat(parts, ignore_index=True).sort_values(keys, kind="stable").reset_index(drop=True)
                if parts else pd.DataFrame())
    # one grid per run (tutor is in every FDR family, so this equals one pooled grid) keeps memory per run
    grids = [contrast_grid(scores_frame(s.validity, keep_failed=params.keep_failed_dialogues), n_boot=params.n_boot,
                           seed=params.seed, min_pairs=params.min_pairs, ses_summary=params.ses_summary)
             for s in scans if s.validity]
    grids = [g for g in grids if len(g)]
    grid = pd.concat(grids, ignore_index=True) if grids else judge_validity_grid([], n_boot=params.n_boot, seed=params.seed,
                                                                                  min_pairs=params.min_pairs,
                                                                                  ses_summary=params.ses_summary)
    return judge_validity_markdown(detector_by_level=by_level, differential=differential_error(grid), contingent=contingent,
                                   human=human, judge_names=names)
