"""Fault probe (a script, not a test): the lm_eval CLI against a loopback OpenAI-compatible server
that injects one kind of fault into 20% of ALL requests (tutor, student and judge), at 90
documents (10 questions × 9 Explicit levels, T_max = 3). Prints, per fault kind, whether the run
completed with results, the dialogues that failed, the missing judge labels, what the server saw
(requests and faults per role) and what the run itself reports (per-role call counts in
results_*.json).

    python tests/cli/fault_probe.py [--kinds http_5xx,timeout,...] [--docs 90] [--rate 0.2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.helpers.edufair_cli import FAST_LM_EVAL, PY, TASK, EduFairFake, call_key, cli_env, run_cli  # noqa: E402
from tests.helpers.fake_openai import Drop, Hang, HTTPError, Raw, Reply  # noqa: E402
from lm_eval_tasks import TASKS_DIR  # noqa: E402

FAULTS = {
    "http_5xx": lambda: HTTPError(500),
    "http_429": lambda: HTTPError(429),
    "timeout": lambda: Hang(3.0),  # clients time out after 1.5 s
    "truncated_body": lambda: Raw(b'{"id": "x", "choices": [{"message": {"content": "I th'),
    "empty_content": lambda: Reply(None),
    "no_choices": lambda: Raw(b'{"id": "x", "object": "chat.completion", "choices": []}'),
    "dropped_connection": lambda: Drop(),
}


def write_bank(d: Path, n: int) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    golds = ["gravity", "friction", "inertia", "velocity", "mass", "energy", "newton", "joule", "momentum", "density"]
    with open(d / "physics.jsonl", "w") as fh:
        for i in range(n):
            g = golds[i % len(golds)]
            fh.write(json.dumps({"id": f"probe-{i}", "domain": "physics", "grade": 8, "question": f"Question {i}: which quantity is asked here?",
                                 "answer": g, "answer_forms": [g], "source": "sciq"}) + "\n")
    return d


def argv(url: str, bank: Path, out: Path, limit: int) -> list[str]:
    chat = f"{url}/chat/completions"
    student = {"model": "fake-student", "base_url": chat, "num_concurrent": 8, "max_retries": 3, "timeout": 1.5,
               "tokenized_requests": False}
    meta = {"edufair": {"student": {"model": "local-chat-completions", "model_args": student},
                        "judge": {"base_url": url, "model": "fake-judge", "concurrency": 8, "timeout_s": 1.5,
                                  "backoff_base_s": 0.05, "backoff_max_s": 0.2},
                        "bank_dir": str(bank), "max_tutor_turns": 3}}
    return [PY, str(FAST_LM_EVAL), "run", "--model", "local-chat-completions",
            "--model_args", f"model=fake-tutor,base_url={chat},num_concurrent=8,max_retries=3,timeout=1.5,tokenized_requests=False",
            "--tasks", TASK, "--include_path", str(TASKS_DIR), "--limit", str(limit),
            "--log_samples", "--output_path", str(out), "--metadata", json.dumps(meta)]


def probe(kind: str, docs: int, rate: float, work: Path) -> dict:
    served: dict[str, dict[str, int]] = {}

    def behaviour(req, n):
        role = call_key(req)[0]
        u = int(hashlib.sha256(repr((kind, call_key(req), n)).encode()).hexdigest()[:8], 16) / 2**32
        fault = FAULTS[kind]() if role in ("tutor", "student", "judge") and u < rate else None
        row = served.setdefault(role, {"requests": 0, "faults": 0})
        row["requests"] += 1
        row["faults"] += fault is not None
        return fault

    bank = write_bank(work / "bank", max(1, docs // 9))
    out = work / "out"
    t0 = time.time()
    with EduFairFake(behaviour) as fake:
        r = run_cli(argv(fake.url, bank, out, docs), cli_env(work / "cache"), work, timeout=1800)
    row = {"kind": kind, "exit": r.returncode, "wall_s": round(time.time() - t0, 1), "served": served}
    files = sorted(out.rglob("results_*.json"))
    row["results_written"] = bool(files)
    if files:
        data = json.loads(files[-1].read_text())
        res = data["results"][TASK]
        row["failed_dialogues"] = res.get("failed_dialogues,judged")
        row["missing_label_rate"] = res.get("missing_label_rate,judged")
        row["failed_attempts"] = res.get("failed_call_attempts,judged")
        row["call_counts"] = ((data.get("configs") or {}).get(TASK) or {}).get("metadata", {}).get("edufair_calls")
    else:
        row["stderr_tail"] = r.stderr[-1500:]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default=",".join(FAULTS))
    ap.add_argument("--docs", type=int, default=90)
    ap.add_argument("--rate", type=float, default=0.2)
    args = ap.parse_args()
    rows = []
    for kind in args.kinds.split(","):
        with tempfile.TemporaryDirectory() as d:
            row = probe(kind, args.docs, args.rate, Path(d))
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\n| fault (20% of requests) | exit | results | failed dialogues | missing labels | requests t/s/j | faults t/s/j "
          "| failed attempts counted (failed_call_attempts) | retried t/s/j | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        s = row["served"]
        req = "/".join(str(s.get(k, {}).get("requests", 0)) for k in ("tutor", "student", "judge"))
        flt = "/".join(str(s.get(k, {}).get("faults", 0)) for k in ("tutor", "student", "judge"))
        counts = row.get("call_counts") or {}
        retried = "/".join(str((counts.get(k) or {}).get("retried", "-")) for k in ("tutor", "student", "judge"))
        missing = row.get("missing_label_rate")
        print(f"| {row['kind']} | {row['exit']} | {'yes' if row['results_written'] else 'NO'} | {row.get('failed_dialogues')} "
              f"| {missing if missing is None else round(missing, 4)} | {req} | {flt} | {row.get('failed_attempts')} "
              f"| {retried} | {row['wall_s']} |")
    return 0 if all(r["exit"] == 0 and r["results_written"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
