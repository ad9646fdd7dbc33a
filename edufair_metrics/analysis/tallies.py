"""Counts over loaded runs that every view shares (stage 6, no statistics): failures by kind, missing
judge labels, the cost per tutor and role, the descriptive rates per condition level and the
post-test's outcomes per level. ``analysis.audit`` computes them once per report; the report's
sections only format them."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import pandas as pd

from edufair_metrics.failures import sum_call_counts
from edufair_metrics.protocol.placebo import split_replicate_level
from edufair_metrics.protocol.presentation import order_key
from edufair_metrics.protocol.prompts import condition_levels
from edufair_metrics.records import CONVERSATION_METRICS, PEDAGOGICAL_METRICS, TASK_DOMAINS, DialogueScores
from edufair_metrics.runlog import Run


def failure_table(runs: Iterable[Run]):
    """Failures counted by kind per tutor, task and condition level."""
    cols = ["tutor", "task", "condition", "level", "stage", "kind"]
    rows = [(r.label, *f[:5]) for r in runs for f in r.failures]
    if not rows:
        return pd.DataFrame(columns=cols + ["count"])
    out = pd.DataFrame(rows, columns=cols).groupby(cols, sort=True).size().reset_index(name="count")
    return protocol_sorted(out, ["tutor", "task", "condition", "level", "stage", "kind"])


MISSING_LABEL_COLUMNS = ["dialogues", "sent_turns", "labelled_turns", "missing_turns", "missing_rate"]


def missing_label_table(runs_or_scores: Iterable[Run] | Iterable[DialogueScores]):
    """Missing judge labels per tutor, task, condition and level. ``sent_turns``: tutor turns sent
    to the judge (missing ones included; called ``judged_turns`` before), ``labelled_turns``: those
    labelled, ``missing_turns``: those not, ``missing_rate`` = missing_turns / sent_turns."""
    scores: list[DialogueScores] = []
    for x in runs_or_scores:
        scores.extend(x.scores if isinstance(x, Run) else [x])
    cols = ["tutor", "task", "condition", "dimension", "level"]
    if not scores:
        return pd.DataFrame(columns=cols + MISSING_LABEL_COLUMNS)
    df = pd.DataFrame([{**{c: getattr(s, c) for c in cols}, "missing_turns": s.missing_turns,
                        "sent_turns": s.sent_turns} for s in scores])
    out = df.groupby(cols, sort=True).agg(
        dialogues=("missing_turns", "size"), sent_turns=("sent_turns", "sum"),
        missing_turns=("missing_turns", "sum")).reset_index()
    out.insert(len(cols) + 2, "labelled_turns", out["sent_turns"] - out["missing_turns"])
    out["missing_rate"] = out["missing_turns"] / out["sent_turns"].where(out["sent_turns"] > 0)
    return protocol_sorted(out, cols)


COST_COLUMNS = ["tutor", "role", "requests", "calls", "prompt_tokens", "completion_tokens", "token_calls",
                "token_source", "wall_s", "note"]


def _cost_row(tutor: str, role: str, parts: list[Mapping[str, Any]]) -> dict[str, Any]:
    c = sum_call_counts(parts)[0]
    # calls that could have reported tokens: every HTTP response of an API model, else every send
    calls = (c.http_attempts - sum(c.http_failed_by_kind.values()) - c.client_timeouts - c.cancelled
             if c.http_attempts else c.sends)
    recorded = all("token_calls" in p for p in parts)
    if not recorded:
        note = "not recorded: the run was made before EduFair counted tokens and time"
    elif calls == 0:
        note = "no model call (every request answered from the cache or not sent)"
    elif c.token_calls == 0:
        note = "missing: the backend reported no token counts"
    elif c.token_calls < calls:
        note = f"partial: token counts for {c.token_calls} of {calls} calls"
    else:
        note = ""
    return {"tutor": tutor, "role": c.role, "requests": c.requests, "calls": calls,
            "prompt_tokens": c.prompt_tokens if c.token_calls else None,
            "completion_tokens": c.completion_tokens if c.token_calls else None,
            "token_calls": c.token_calls, "token_source": c.token_source or "",
            "wall_s": round(c.wall_s, 1) if recorded else None, "note": note}


def cost_table(runs) -> pd.DataFrame:
    """Per tutor and role (tutor, student, judge): requests, model calls made, prompt and completion
    tokens where the backend reported them (``token_source``: usage = the response's OpenAI usage,
    tokenizer = counted with the model's tokenizer), the seconds the role's calls were in flight,
    summed over the run's tasks, and a note saying where counts are missing. A run without call
    counts (made before EduFair counted calls) gets one row saying so."""
    rows = []
    for run in runs:
        by_role: dict[str, list[Mapping[str, Any]]] = {}
        for per_role in (getattr(run, "call_counts", None) or {}).values():
            for c in per_role.values():
                if isinstance(c, dict) and c.get("role"):
                    by_role.setdefault(str(c["role"]), []).append(c)
        if not by_role:
            rows.append({"tutor": run.label, "role": "(all)", "note": "not recorded: the results files hold no "
                         "edufair_calls (runs made before EduFair counted calls)"})
            continue
        order = [r for r in ("tutor", "student", "judge") if r in by_role] + sorted(set(by_role) - {"tutor", "student", "judge"})
        rows += [_cost_row(run.label, role, by_role[role]) for role in order]
    return pd.DataFrame(rows, columns=COST_COLUMNS)




# ---- descriptive rates per condition level (no pairing) -------------------------------------------

DOMAIN_ORDER = {"mathematics": 0, "physics": 1, "chemistry": 2}  # the paper's running order of domains
LEVEL_KEYS = ["tutor", "domain", "condition", "dimension", "level"]
# stop-reason columns of ``levels.csv``: column -> transcript stop reasons counted in it
STOP_COLUMNS = {
    "answer_revealed": ("answer_revealed",),
    "answer_confirmed": ("answer_confirmed",),
    "max_turns": ("max_turns",),
    "failures": ("student_failed", "tutor_failed"),  # or any dialogue flagged failed (recorded error)
}


def _level_order(condition: str) -> dict[str, int]:
    """Protocol order of a condition's levels ({} if the protocol cannot be read)."""
    try:
        return {lv.level: i for i, lv in enumerate(condition_levels(condition))}
    except Exception:  # noqa: BLE001 - ordering only; fall back to the order seen in the data
        return {}


UNKNOWN_LEVEL = 1000  # a level the protocol does not list: after the listed ones


def level_position(condition: str, level: str, orders: dict[str, dict[str, int]] | None = None) -> int:
    """A level's place in every table: its index in the protocol data's list of the condition's
    levels (``protocol/data/protocol*.yaml``), a placebo replicate (``female~replicate2``) right
    after its level; :data:`UNKNOWN_LEVEL` and after for a level the protocol does not list."""
    order = (orders or {}).get(condition)
    if order is None:
        order = _level_order(condition)
        if orders is not None:
            orders[condition] = order
    base, replicate = split_replicate_level(level)
    return 100 * order.get(base, UNKNOWN_LEVEL) + min(int(replicate), 99)


def _task_domain(task: str) -> int:
    return DOMAIN_ORDER.get(TASK_DOMAINS.get(str(task).rsplit("_", 1)[-1], ""), 99)


def protocol_sorted(frame, keys):
    """``frame`` sorted as every table of a report: by tutor, domain (of the ``domain`` or ``task``
    column: the paper's running order), condition (the presentation order), level
    (:func:`level_position`), then the other ``keys`` (by value)."""
    if not len(frame):
        return frame.reset_index(drop=True)
    tmp = frame.copy()
    orders: dict[str, dict[str, int]] = {}
    sort = ["tutor"] if "tutor" in tmp.columns else []
    if "domain" in tmp.columns:
        tmp["_d"] = tmp["domain"].map(lambda x: DOMAIN_ORDER.get(x, 99))
        sort.append("_d")
    elif "task" in tmp.columns:
        tmp["_d"] = tmp["task"].map(_task_domain)
        sort.append("_d")
    if "condition" in tmp.columns:
        tmp["_c"] = tmp["condition"].map(order_key)
        sort.append("_c")
        sort += ["task"] if "task" in tmp.columns else []
        if "level" in tmp.columns:
            tmp["_l"] = [level_position(c, lv, orders) for c, lv in zip(tmp["condition"], tmp["level"])]
            sort.append("_l")
    sort += [k for k in keys if k in tmp.columns and k not in sort and k not in ("domain", "condition")]
    tmp = tmp.sort_values(sort, kind="stable")
    return tmp.drop(columns=[c for c in ("_d", "_c", "_l") if c in tmp.columns]).reset_index(drop=True)


def level_rates(dialogues):
    """Per (tutor, domain, condition, dimension, level): ``dialogues``, distinct ``questions``,
    the NaN-aware mean of each of the nine per-dialogue scores (mean over the dialogues that have
    a value; NaN when none has), and stop-reason counts (``failures`` = student or tutor call
    failed; ``stop_unknown`` only when some records carry no stop reason). ``dialogues`` is the
    wide per-dialogue frame of :func:`edufair_metrics.analysis.frames.dialogue_frame`. No pairing is needed:
    these are descriptive rates, not bias statistics."""
    metrics = [m for m in PEDAGOGICAL_METRICS + CONVERSATION_METRICS if m in dialogues.columns]
    stop_cols = list(STOP_COLUMNS)
    if len(dialogues) == 0:
        return pd.DataFrame(columns=LEVEL_KEYS + ["dialogues", "questions"] + metrics + stop_cols)
    d = dialogues.copy()
    for col, reasons in STOP_COLUMNS.items():
        d[col] = d["stop_reason"].isin(reasons).astype(int)
    if "failed" in d.columns:  # a failed call recorded without a failure stop reason still counts
        d["failures"] = (d["failures"].astype(bool) | d["failed"].fillna(False).astype(bool)).astype(int)
    d["stop_unknown"] = d["stop_reason"].isna().astype(int)
    gb = d.groupby(LEVEL_KEYS, sort=False, dropna=False)
    out = gb.agg(dialogues=("question_id", "size"), questions=("question_id", "nunique")).reset_index()
    means = gb[metrics].mean().reset_index()  # pandas mean skips NaN
    counts = gb[stop_cols + ["stop_unknown"]].sum().reset_index()
    out = out.merge(means, on=LEVEL_KEYS).merge(counts, on=LEVEL_KEYS)
    if not out["stop_unknown"].any():
        out = out.drop(columns=["stop_unknown"])
    first_seen = {k: i for i, k in enumerate(dict.fromkeys(zip(d["condition"], d["level"])))}
    orders = {c: _level_order(c) for c in out["condition"].unique()}
    out["_d"] = out["domain"].map(lambda x: DOMAIN_ORDER.get(x, 99))
    out["_c"] = out["condition"].map(order_key)  # the presentation order (protocol/data/presentation.yaml)
    out["_l"] = [(level_position(c, lv, orders), first_seen[(c, lv)]) for c, lv in zip(out["condition"], out["level"])]
    out = out.sort_values(["tutor", "_d", "_c", "_l"], kind="stable").drop(columns=["_d", "_c", "_l"])
    return out.reset_index(drop=True)




# ---- the post-test's outcomes per condition level (descriptive) -----------------------------------

def outcome_levels(runs):
    """Descriptive post-test results per (tutor, task, level): dialogues, post-tests with an answer
    scored, the pre-test and post-test accuracy, the mean learning gain and the shares of learned
    (unrevealed) and revealed outcomes. Empty without post-tests."""
    rows: dict[tuple, dict[str, Any]] = {}
    for r in runs:
        for sc in r.scores:
            if "posttest_correct" not in sc.scores:
                continue
            row = rows.setdefault((r.label, sc.task, sc.level), {"post-tests": 0, "correct": 0.0, "gain": 0.0,
                                                                "learned": 0.0, "revealed": 0.0, "revealed_n": 0})
            v = sc.scores
            row["post-tests"] += 1
            row["correct"] += v["posttest_correct"]
            row["gain"] += v.get("learning_gain", 0.0)
            if "learned_unrevealed" in v:
                row["learned"] += v["learned_unrevealed"]
                row["revealed"] += v["revealed_outcome"]
                row["revealed_n"] += 1
    if not rows:
        return pd.DataFrame()
    out = []
    for (tutor, task, level), row in rows.items():
        n, m = row["post-tests"], max(row["revealed_n"], 1)
        out.append({"tutor": tutor, "task": task, "level": level, "post-tests": n,
                    "pre-test correct": round((row["correct"] - row["gain"]) / n, 3),
                    "post-test correct": round(row["correct"] / n, 3), "mean gain": round(row["gain"] / n, 3),
                    "learned (unrevealed)": round(row["learned"] / m, 3), "revealed outcome": round(row["revealed"] / m, 3)})
    return pd.DataFrame(out)


# ---- the run card: who was tested with what (from the records' provenance) -------------------------

RUN_CARD_COLUMNS = ["tutor", "tutor model", "student model", "judge model", "tutor decoding", "student decoding",
                    "judge decoding", "T_max", "protocol", "bank", "replicates", "seeds", "EduFair (run)", "results",
                    "tokens"]


def _model(m: Mapping[str, Any] | None) -> str:
    if not m:
        return "—"
    args = m.get("model_args")
    if isinstance(args, Mapping):
        name = args.get("model") or args.get("pretrained") or args.get("model_name")
        rest = {k: v for k, v in args.items() if k not in ("model", "pretrained", "model_name")}
        shown = f"{m.get('kind')}: {name}" if m.get("kind") else str(name)
        return shown + (f" ({', '.join(f'{k}={v}' for k, v in sorted(rest.items()))})" if rest else "")
    return str(m.get("model") or m.get("kind") or "—")


def _compact(d: Any) -> str:
    if not isinstance(d, Mapping) or not d:
        return "—"
    return ", ".join(f"{k}={'null' if v is None else v}" for k, v in sorted(d.items()) if v not in ([], {}, ""))


def _distinct(values) -> str:
    seen = [v for v in dict.fromkeys(values) if v and v != "—"]
    return " | ".join(seen) if seen else "—"


def run_card(runs: Iterable[Run], provenance: Mapping[str, Mapping[str, Mapping[str, Any]]], cost=None):
    """One row per tutor: its models (the endpoints' model names, never a URL or key), each role's
    decoding, T_max, protocol and bank versions, replicates, seeds, the EduFair version that made
    the run, its results files and the tokens it spent. ``provenance``: label -> task -> the first
    record's provenance (gathered on the read pass); values that differ between tasks are listed
    side by side (``a | b``), never hidden."""
    rows = []
    for run in runs:
        provs = list((provenance.get(run.label) or {}).values())
        models = [p.get("models") or {} for p in provs]
        dec = [p.get("decoding") or {} for p in provs]
        tokens = "—"
        if cost is not None and len(cost):
            c = cost[cost["tutor"] == run.label]
            total = pd.to_numeric(c["prompt_tokens"], errors="coerce").sum() + pd.to_numeric(c["completion_tokens"], errors="coerce").sum()
            tokens = f"{int(total):,}" if total > 0 else "—"
        rows.append({
            "tutor": run.label,
            "tutor model": _distinct(_model(m.get("tutor")) for m in models) if provs else (run.model_name or "—"),
            "student model": _distinct(_model(m.get("student")) for m in models),
            "judge model": _distinct(str((m.get("judge") or {}).get("model") or "—") for m in models),
            "tutor decoding": _distinct(_compact(d.get("tutor")) for d in dec),
            "student decoding": _distinct(_compact(d.get("student")) for d in dec),
            "judge decoding": _distinct(_compact(d.get("judge")) for d in dec),
            "T_max": _distinct(str(p.get("max_tutor_turns")) for p in provs if p.get("max_tutor_turns") is not None),
            "protocol": _distinct([str(p.get("protocol_version")) for p in provs if p.get("protocol_version")]
                                  or sorted(run.protocol_versions)),
            "bank": _distinct(f"{(p.get('bank') or {}).get('domain')} {str((p.get('bank') or {}).get('sha256'))[:12]}"
                              for p in provs if (p.get("bank") or {}).get("sha256")),
            "replicates": _distinct(str(p.get("replicates", 1)) for p in provs),
            "seeds": _distinct(_compact(p.get("seeds")) for p in provs),
            "EduFair (run)": _distinct(str(p.get("package_version")) for p in provs if p.get("package_version")),
            "results": ", ".join(f.name for f in run.results_files) or "—",
            "tokens": tokens,
        })
    return pd.DataFrame(rows, columns=RUN_CARD_COLUMNS)
