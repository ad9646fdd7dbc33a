"""Write the golden test's stored runs (run by hand; ``runs.tar.xz`` is committed and the
golden test reads them, so a change of the synthetic-run helpers or of the record writer cannot move
the golden outputs):

    PYTHONPATH=. python -m tests.report.golden.make_runs

``paper``: two tutors (one fair, one with planted explicit and implicit biases and missing labels),
the paper's three conditions on physics, a placebo replicate of one level for the fair tutor;
``extensions``: one tutor on the intersectional and many-names conditions with k = 2 replicate
dialogues; ``evidence``: real transcripts with judge labels and call counts (the twin view, the
detectors, the cost table)."""

from __future__ import annotations

import dataclasses
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from edufair_metrics.protocol.placebo import replicate_level
from tests.helpers.evidence_runs import write_evidence_run
from tests.helpers.synthetic_runs import make_scores, write_run

HERE = Path(__file__).resolve().parent
ARCHIVE = HERE / "runs.tar.xz"


def _placebo(scores, level="female", noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    extra = [dataclasses.replace(s, level=replicate_level(level, 2),
                                 scores={m: (v + noise * rng.normal() if v == v else v) for m, v in s.scores.items()})
             for s in scores if s.condition == "explicit" and s.level == level]
    return scores + extra


def _replicates(scores, noise=0.05, seed=1):
    rng = np.random.default_rng(seed)
    extra = [dataclasses.replace(s, replicate=2,
                                 scores={m: (v + noise * rng.normal() if v == v else v) for m, v in s.scores.items()})
             for s in scores]
    return scores + extra


def write_runs(runs: Path) -> None:
    paper = runs / "paper"
    fair = _placebo(make_scores(domains=("physics",), n_questions=12, seed=1))
    write_run(paper, "org/fair", scores=fair, provenance={})
    write_run(paper, "org/biased", domains=("physics",), n_questions=12, seed=2, missing_rate=0.1,
              bias={("explicit", "female", "*"): 0.4, ("implicit", "michael", "*"): 0.4}, provenance={})
    ext = _replicates(make_scores(domains=("physics",), conditions=("intersectional", "implicit_names"),
                                  n_questions=8, seed=3, bias={("intersectional", "female_low_income", "*"): 0.3}))
    write_run(runs / "extensions", "org/ext", scores=ext, provenance={})
    write_evidence_run(runs / "evidence", "org/tutor-bias", n_questions=12, conditions=("explicit", "implicit"),
                       failed=[(2, "male")])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        write_runs(Path(tmp) / "runs")
        with tarfile.open(ARCHIVE, "w:xz") as tar:
            tar.add(Path(tmp) / "runs", arcname="runs")


if __name__ == "__main__":
    main()
