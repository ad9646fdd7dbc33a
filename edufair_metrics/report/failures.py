"""The failure views of a report: every failure counted by kind per tutor, task and condition level
(``failures.csv`` / ``failures.md``), the failed dialogues the statistics left out, the model calls
per role, and the missing judge labels (``missing_labels.csv`` / ``.md``). Each view is a function
of the loaded runs; :func:`failures_sections` lists the Markdown sections of failures.md in order
(add a section there for a new view)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import pandas as pd

from edufair_metrics.analysis.tallies import (
    COST_COLUMNS,
    MISSING_LABEL_COLUMNS,
    cost_table,
    failure_table,
    missing_label_table,
    protocol_sorted,
)
from edufair_metrics.failures import CallCounts, sum_call_counts
from edufair_metrics.report.tables import to_markdown
from edufair_metrics.runlog import Run


def failure_examples(runs: Iterable[Run]):
    """One row per (tutor, stage, kind): how many, and the first one as an example with its
    recorded reason (which dialogue, which judged turn), so that a count such as
    ``inconsistent=4`` can be looked up."""
    cols = ["tutor", "stage", "kind", "count", "example", "reason"]
    first: dict[tuple, list] = {}
    for r in runs:
        for f in r.failures:
            key = (r.label, f.stage, f.kind)
            if key not in first:
                where = f"{f.task} / {f.level} / question {f.question_id}"
                if f.turn_index is not None:
                    where += f" / turn {f.turn_index}"
                first[key] = [*key, 0, where, (f.detail or "(no reason recorded)").replace("\n", " ")[:300]]
            first[key][3] += 1
    return pd.DataFrame(sorted(first.values(), key=lambda row: row[:3]), columns=cols)


def failed_dialogue_counts(runs, keep_failed: bool):
    """Dialogues ended by a failed call per tutor, task, condition and level, and whether the
    statistics left them out (``excluded``)."""
    cols = ["tutor", "task", "condition", "level"]
    rows = [(r.label, s.task, s.condition, s.level) for r in runs for s in r.scores if s.failed]
    if not rows:
        return pd.DataFrame(columns=cols + ["failed_dialogues", "excluded"])
    out = protocol_sorted(pd.DataFrame(rows, columns=cols).groupby(cols, sort=True).size()
                          .reset_index(name="failed_dialogues"), cols)  # levels in the protocol's order
    out["excluded"] = out["failed_dialogues"] * (0 if keep_failed else 1)
    return out


def failures_sections(runs, failures, keep_failed: bool) -> list[str]:
    """The Markdown sections of ``failures.md``, in order (one string each): failures by kind, then
    the failed dialogues the statistics left out. A new failure view appends a section here."""
    sections = [to_markdown(
        failures, "Failures by kind per task and condition level",
        "stage student/tutor: the dialogue ended because that call still failed (its transcript records the error, "
        "e.g. empty_visible_turn); stage judge: a tutor turn whose label is missing (never replaced by a value).")]
    examples = failure_examples(runs)
    if len(examples):
        sections.append(to_markdown(examples, "One example per kind, with its reason",
                                    "The first failure of each kind, as its record states it (the dialogue's samples line "
                                    "holds the rest: transcript.error, or the judgement's reason and raw answer)."))
    failed = failed_dialogue_counts(runs, keep_failed)
    n = int(failed["failed_dialogues"].sum()) if len(failed) else 0
    how = ("kept in the contrasts, scored on their partial turns (--keep-failed-dialogues)" if keep_failed else
           "left out of the contrasts: the question's pairs with that level drop out "
           "(--keep-failed-dialogues keeps them)")
    sections.append(to_markdown(failed, "Failed dialogues in the statistics",
                                f"{n} failed dialogue(s) {how}. They stay in levels.md (descriptive)."))
    sections += call_count_sections(runs)
    return sections


def call_count_sections(runs) -> list[str]:
    """Per tutor, the run's model calls per role summed over its tasks (results_*.json
    ``configs.<task>.metadata.edufair_calls``): retries that succeeded leave no other trace."""
    out = []
    for run in runs:
        counts = []
        for per_role in (getattr(run, "call_counts", None) or {}).values():
            counts += [c for c in per_role.values() if isinstance(c, dict) and c.get("role")]
        if counts:
            out.append(call_counts_markdown(counts, title=f"Model calls per role: {run.label}"))
    if not out:
        out.append("## Model calls per role\n\nThe results files hold no `edufair_calls` (runs made before "
                   "EduFair counted calls).\n")
    return out


def _kinds(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "-"


def call_counts_markdown(counts: Iterable[CallCounts | Mapping[str, Any]],
                         title: str = "Model calls per role") -> str:
    """A markdown section with one row per role (counts of the same role are summed)."""
    rows = sum_call_counts(counts)
    lines = [
        f"## {title}", "",
        "requests = cached + coalesced (identical request of the same turn, answered once) + distinct; "
        "sends = how often distinct requests were sent; retried = distinct requests sent again after a "
        "failed attempt (recovered = then answered); failed = distinct requests that still failed. "
        "Failed attempts count every failure, also those a retry recovered. HTTP attempts (API "
        "models) include lm-eval's own retries inside a send, which lm-eval does not report; their failures "
        "by kind are the endpoint's. Attempts the client ended itself are counted apart, never as the "
        "endpoint's failures: client timeouts (its own deadline passed: a slow server or a CPU-starved "
        "client) and cancelled (Ctrl-C, the run's shutdown).", "",
        "| role | requests | cached | coalesced | distinct | sends | retried | recovered | failed | failed by kind "
        "| failed attempts by kind | HTTP attempts | failed HTTP attempts by kind | client timeouts | cancelled |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---|---:|---:|",
    ]
    for c in rows:
        lines.append(
            f"| {c.role} | {c.requests} | {c.cached} | {c.coalesced} | {c.distinct} | {c.sends} | {c.retried} | "
            f"{c.recovered} | {c.failed} | {_kinds(c.failed_by_kind)} | {_kinds(c.failed_attempts_by_kind)} | "
            f"{c.http_attempts or '-'} | {_kinds(c.http_failed_by_kind)} | {c.client_timeouts} | {c.cancelled} |"
        )
    if not rows:
        lines.append("| (no calls recorded) | | | | | | | | | | | | | | |")
    return "\n".join(lines) + "\n"


# ---- cost: tokens and wall time per role (counted by analysis.tallies.cost_table) ------------------

def cost_markdown(table: pd.DataFrame) -> str:
    """The summary's cost section: one row per tutor and role."""
    def num(v) -> str:
        return "—" if v is None or (isinstance(v, float) and v != v) else f"{int(v):,}"

    lines = ["## Cost per tutor and role", "",
             "Prompt and completion tokens where the backend reports them (usage: the OpenAI `usage` of each response, "
             "from the judge and lm-eval's API models; tokenizer: counted with the model's own tokenizer for hf / vLLM "
             "tutors and students), over the calls actually made (cache hits and coalesced requests cost nothing); "
             "wall time: seconds the role's calls were in flight (batched calls count once, the judge's concurrent "
             "requests as the judging's wall time; tutor and student overlap when the turns run in two cohorts). "
             "Per task: results_*.json `configs.<task>.metadata.edufair_calls`.", "",
             "| tutor | role | requests | calls | prompt tokens | completion tokens | tokens from | wall time | note |",
             "|---|---|---:|---:|---:|---:|---|---:|---|"]
    for r in table.itertuples(index=False):
        wall = "—" if r.wall_s is None or r.wall_s != r.wall_s else f"{r.wall_s:,.1f} s"
        source = f"{r.token_source} ({int(r.token_calls)} calls)" if isinstance(r.token_source, str) and r.token_source else "—"
        lines.append(f"| {r.tutor} | {r.role} | {num(r.requests)} | {num(r.calls)} | {num(r.prompt_tokens)} | "
                     f"{num(r.completion_tokens)} | {source} | {wall} | {r.note if isinstance(r.note, str) else ''} |")
    if not len(table):
        lines.append("| (no runs) | | | | | | | | |")
    return "\n".join(lines) + "\n"


# the counts themselves live in analysis.tallies (computed once by analysis.audit); the names stay here too
__all__ = ["COST_COLUMNS", "MISSING_LABEL_COLUMNS", "call_count_sections", "call_counts_markdown", "cost_markdown",
           "cost_table", "failed_dialogue_counts", "failure_examples", "failure_table", "failures_sections",
           "missing_label_table"]
