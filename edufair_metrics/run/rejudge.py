"""Re-judging stored transcripts (``edufair judge``), without regenerating dialogues.

Reads every ``samples_*.jsonl`` given (or found recursively under given folders); each record's
transcript is judged again (all files in one concurrent batch, through the persistent cache) and
its record rebuilt (:func:`~edufair_metrics.run.judging.judge_and_build`: new labels and scores,
the generating run's provenance with the new judge's part). The output folder has the layout of
an lm-eval output folder, so every command that reads a run reads it (generate on one machine,
judge on another, report):

    OUT/<model folder>/samples_<task>_<ts>.jsonl   the same lines, the record (``complete_dialogues``) replaced
    OUT/<model folder>/results_<ts>.json           the run's results file, or a minimal one
    OUT/judge_summary.json                         settings without any key, counts, missing labels

Inputs are never modified; every file is written atomically.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edufair_metrics.cache import CallCache
from edufair_metrics.errors import Interrupted
from edufair_metrics.io import atomic_write_json
from edufair_metrics.judge.settings import JudgeSettings
from edufair_metrics.records import ALL_METRICS
from edufair_metrics.run.judging import judge_and_build
from edufair_metrics.runlog.rewrite import ResultsWriter, read_stored_run, write_rebuilt

REJUDGED_KEY = "edufair_rejudged"  # in a results file written by re-judging: what was re-judged


@dataclass(frozen=True)
class RejudgeResult:
    files: list[Path]
    outputs: list[str]
    dialogues: int
    summary: dict[str, Any]


def rejudge_samples(inputs: list[str], out_dir: Path, *, judge: JudgeSettings, cache: CallCache | None = None,
                    progress: bool = True) -> RejudgeResult:
    """Judge again the transcripts of lm-eval samples files (or folders of them) and write them, as a
    run folder per input model folder, into ``out_dir`` (see the module docstring)."""
    out_dir = Path(out_dir)
    run = read_stored_run(inputs, out_dir, "re-judge")
    records = [r for _, r in run.records]
    summary: dict[str, Any] = {}
    try:
        rebuilt = judge_and_build([r.transcript for r in records], judge=judge, cache=cache,
                                  documents=[r.document for r in records], provenances=[r.provenance for r in records],
                                  progress=progress, summary=summary, posttests=[r.posttest for r in records])
    except Interrupted as exc:  # the dialogues are all there (read from the files); say so
        raise Interrupted(dialogues=len(records), labels=exc.labels) from None
    written = []
    results = ResultsWriter(REJUDGED_KEY, "rejudged")
    for f, path in write_rebuilt(run, rebuilt, ALL_METRICS):
        written.append(path)
        # the run's own results file: its metrics are the old judge's, so the record is what reports read
        results.write(f, run.targets[f], {"from": str(f), "judge_model": judge.model})
    judge_info = rebuilt[0].judge if rebuilt else None
    atomic_write_json(out_dir / "judge_summary.json",
                      {"inputs": [str(f) for f in run.files], "outputs": written, "judge": judge_info, "summary": summary})
    return RejudgeResult(files=run.files, outputs=written, dialogues=len(records), summary=summary)


__all__ = ["REJUDGED_KEY", "RejudgeResult", "rejudge_samples"]
