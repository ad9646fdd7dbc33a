"""Frozen outputs of the statistics package on synthetic data ("one pairing engine").

    python tests/analysis/pairing_reference.py      # (re)writes tests/analysis/data/pairing_reference/

The reference files were first written by the statistics code *before* its pairing loops,
percentile helpers, SES headline tagging and modules were merged (``analysis.stats`` /
``analysis.fast``; the commit that added them ran its copy of this script there).
``tests/analysis/test_pairing_reference.py`` recomputes every output with the current code and
asserts the same bytes (floats written with 17 significant digits, i.e. bit-identical; NaN as an
empty field). Regenerate only for an intended change of the numbers.

Inputs (:func:`inputs`): per-dialogue scores of three tutors (one biased) from
``tests.helpers.synthetic_runs.make_scores`` in two domains and all three conditions (SES
multilevel + single contrast, Implicit name pairs, Opposite averaged effects), with missing labels
(NaN values), dropped dialogues (a question lacks a level) and levels missing from a whole cell
(no SES Friedman family for one tutor's physics cells, no Opposite effects for one tutor's
mathematics cells) and a metric with too few pairs (insufficient rows). The compare pair is two
single-tutor runs whose question sets overlap only in part.

Outputs (:func:`outputs`), for every ``ses_summary``: the contrast grid as the report sees it
(headline tagged by the SES choice), ``dimension_summary``, ``unit_noise``, ``headline``,
``noise_headline``, ``power_table``, ``rank_intervals`` (excess |r̄| and |r̄|), and
``compare_frames`` (units and headline) for two of them.
"""

from __future__ import annotations

import gzip
import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere
from edufair_metrics.analysis.compare import compare_frames  # noqa: E402
from edufair_metrics.analysis.frames import scores_frame  # noqa: E402
from edufair_metrics.analysis.grid import contrast_grid, dimension_summary, headline  # noqa: E402
from edufair_metrics.analysis.noise import noise_headline, unit_noise  # noqa: E402
from edufair_metrics.analysis.power import power_table  # noqa: E402
from edufair_metrics.analysis.ranks import rank_intervals  # noqa: E402
from tests.helpers.synthetic_runs import make_scores  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "pairing_reference"
N_BOOT = 200
SEED = 3
METRICS = ("step_scaffolded", "actionability", "answer_leakage", "tutor_turns", "tutor_avg_word")
SES_VALUES = ("single", "mean_abs_pairwise", "max_abs_pairwise")
COMPARE_SES = ("single", "max_abs_pairwise")
KW = dict(domains=("mathematics", "physics"), n_questions=56)
BIAS = {("explicit", "female", "*"): 0.12, ("explicit", "low_income", "*"): 0.1,
        ("implicit", "jessica", "*"): 0.1, ("opposite", "s_female_t_male", "*"): 0.1}


def _frame(scores, rng: np.random.Generator) -> pd.DataFrame:
    df = scores_frame(scores)
    df = df[df["metric"].isin(METRICS)].reset_index(drop=True)
    df.loc[rng.random(len(df)) < 0.03, "value"] = np.nan  # missing labels
    keep = rng.random(len(df)) >= 0.04  # dropped dialogues: a question lacks a level
    return df[keep].reset_index(drop=True)


def inputs() -> dict[str, pd.DataFrame]:
    """``multi`` (three tutors), ``base`` and ``cand`` (the compare pair)."""
    rng = np.random.default_rng(20240521)
    parts = [
        _frame(make_scores(tutor="fair-a", seed=11, missing_rate=0.15, **KW), rng),
        _frame(make_scores(tutor="fair-b", seed=12, **KW), rng),
        _frame(make_scores(tutor="biased", seed=13, bias=BIAS, missing_rate=0.1, **KW), rng),
    ]
    multi = pd.concat(parts, ignore_index=True)
    gone = (((multi["tutor"] == "fair-b") & (multi["domain"] == "physics") & (multi["level"] == "middle_class"))
            | ((multi["tutor"] == "biased") & (multi["domain"] == "mathematics")
               & (multi["level"] == "s_male_t_male")))
    multi = multi[~gone].reset_index(drop=True)
    sparse = ((multi["tutor"] == "fair-a") & (multi["domain"] == "physics") & (multi["metric"] == "answer_leakage")
              & (rng.random(len(multi)) < 0.6))
    multi.loc[sparse, "value"] = np.nan  # too few pairs: insufficient rows
    base = _frame(make_scores(tutor="org/base", seed=21, missing_rate=0.1, **KW), rng)
    cand = _frame(make_scores(tutor="org/cand", seed=22, bias=BIAS, **KW), rng)
    cand = cand[~cand["question_id"].isin(["math-0000", "math-0001", "physics-0007"])].reset_index(drop=True)
    base = base[base["question_id"] != "physics-0050"].reset_index(drop=True)
    return {"multi": multi, "base": base, "cand": cand}


def outputs(data: dict[str, pd.DataFrame] | None = None) -> dict[str, pd.DataFrame]:
    """Every frozen output, by file stem."""
    data = inputs() if data is None else data
    df = data["multi"]
    out: dict[str, pd.DataFrame] = {}
    for ses in SES_VALUES:
        grid = contrast_grid(df, n_boot=N_BOOT, seed=SEED, ses_summary=ses)  # SES headline tagged here
        units = dimension_summary(grid, ses_summary=ses)
        noisy = unit_noise(units, grid, ses_summary=ses)
        out[f"grid_{ses}"] = grid
        out[f"units_{ses}"] = units
        out[f"unit_noise_{ses}"] = noisy
        out[f"headline_{ses}"] = pd.concat([headline(units, kind=k).assign(kind=k)
                                            for k in ("pedagogical", "conversation")], ignore_index=True)
        out[f"noise_headline_{ses}"] = pd.concat([noise_headline(noisy, kind=k).assign(kind=k)
                                                  for k in ("pedagogical", "conversation")], ignore_index=True)
        out[f"power_{ses}"] = power_table(grid, ses_summary=ses)
        out[f"ranks_{ses}"] = pd.concat([
            rank_intervals(df, grid, quantity=q, n_boot=N_BOOT, seed=SEED + 1, ses_summary=ses)
            for q in ("excess_abs_r", "abs_r")], ignore_index=True)
    for ses in COMPARE_SES:
        res = compare_frames(data["base"], data["cand"], n_boot=N_BOOT, seed=SEED, ses_summary=ses)
        out[f"compare_units_{ses}"] = res.units
        head = dict(res.headline, failed=res.failed, reasons=" | ".join(res.reasons),
                    n_questions=";".join(f"{k}={v}" for k, v in sorted(res.n_questions.items())))
        out[f"compare_headline_{ses}"] = pd.DataFrame([head])
    return out


def to_csv_text(frame: pd.DataFrame) -> str:
    """The canonical text of an output: every column, every row in order, floats with 17
    significant digits (each double written exactly), NaN as an empty field."""
    buf = io.StringIO()
    frame.to_csv(buf, index=False, float_format="%.17g", lineterminator="\n")
    return buf.getvalue()


def read_text(stem: str) -> str:
    with gzip.open(DATA / f"{stem}.csv.gz", "rt", encoding="utf-8", newline="") as fh:
        return fh.read()


def write(out: dict[str, pd.DataFrame]) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    for old in DATA.glob("*.csv.gz"):
        old.unlink()
    for stem, frame in out.items():
        raw = to_csv_text(frame).encode("utf-8")
        with open(DATA / f"{stem}.csv.gz", "wb") as fh:  # mtime 0: the same bytes every time
            with gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
                gz.write(raw)


def main() -> None:
    out = outputs()
    write(out)
    for stem, frame in out.items():
        print(f"{stem}: {frame.shape[0]} rows × {frame.shape[1]} columns")


if __name__ == "__main__":
    main()
