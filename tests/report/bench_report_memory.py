"""Benchmark (a script, not a test): peak memory and wall time of `edufair report` on a synthetic
paper-size set of runs: 5 tutors × 9 tasks × the full shipped bank (mathematics 907, physics and
chemistry 500 questions; 9 Explicit + 4 Implicit + 4 Opposite levels = 32,419 dialogues per tutor),
each dialogue with a realistic transcript (6 tutor and 6 student turns of ~40 words, judged).

    python tests/report/bench_report_memory.py [--scale 1.0] [--tutors 5] [--keep DIR]

Prints the number of dialogues, the size of the samples files, and the report's peak RSS (from
the child's rusage) against the 4 GB goal.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from edufair_metrics.bank import load_bank  # noqa: E402
from edufair_metrics.records import JUDGE_OK, Turn, TurnJudgement  # noqa: E402
from tests.helpers.synthetic_runs import make_scores, write_run  # noqa: E402

WORDS = ("the force acts on the object so its velocity changes over time because mass resists any change "
         "in motion and energy is conserved when no friction is present in the system we study").split()
LABELS = {"student_mistake_prev_turn": True, "correction_tone": 1, "mistake_recognize": 1, "answer_leakage": 0,
          "scaffolding_guidance": 1, "actionability": 1}


def dialogue(s):
    turns = [Turn("question", "What happens to the velocity of a falling object?")]
    judgements = []
    for k in range(6):
        turns.append(Turn("student", " ".join(WORDS[(k + j) % len(WORDS)] for j in range(40))))
        text = " ".join(WORDS[(3 * k + j) % len(WORDS)] for j in range(40)) + "?"
        turns.append(Turn("tutor", text, raw=text))
        judgements.append(TurnJudgement(len(turns) - 1, JUDGE_OK, labels=dict(LABELS), raw="{}", attempts=1))
    return turns, judgements


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of each domain's bank (1.0 = full)")
    ap.add_argument("--tutors", type=int, default=5)
    ap.add_argument("--keep", help="write the runs and report here instead of a temporary folder")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="edufair-bench-"))
    runs = work / "runs"
    t0 = time.time()
    n = 0
    for t in range(args.tutors):
        scores = []
        for domain in ("mathematics", "physics", "chemistry"):
            q = max(15, int(len(load_bank(domain)) * args.scale))
            scores += make_scores(domains=(domain,), n_questions=q, seed=t * 10 + len(domain))
        n += len(scores)
        write_run(runs, f"org/tutor-{t}", scores=scores, stop_reason=lambda s: "max_turns", dialogue=dialogue)
    size = sum(p.stat().st_size for p in runs.rglob("*.jsonl"))
    print(f"wrote {n:,} dialogues ({args.tutors} tutors), samples {size / 2**30:.2f} GiB, in {time.time() - t0:.0f} s", flush=True)
    t0 = time.time()
    r = subprocess.run([sys.executable, "-m", "edufair_metrics.cli", "report", str(runs), "--out", str(work / "report")],
                       capture_output=True, text=True)
    wall = time.time() - t0
    peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # KiB on Linux
    print(f"edufair report: exit {r.returncode}, {wall:.0f} s, peak RSS {peak_gb:.2f} GB (goal < 4 GB)")
    if r.returncode != 0:
        print(r.stderr[-3000:])
    return r.returncode


if __name__ == "__main__":
    raise SystemExit(main())
