"""Benchmark (prints figures; not a test): the size of the samples file and the peak memory of
``lm_eval`` on a whole task at full scale, against a fast fake endpoint (tutor, student and judge).

Runs the real lm_eval CLI on ``edufair_explicit_physics`` (the shipped physics bank: 500 questions
× 9 levels = 4,500 dialogues) with T_max 10; the fake tutor never states the gold, so every
dialogue runs all 10 tutor turns (10 tutor, 10 student and 10 judge requests per dialogue). The
fake answers are about as long as short real turns (tutor ~60 words, student ~20). Prints the
samples file's bytes per record (whole line, the ``complete_dialogues`` part, and what lm-eval adds),
how often each turn's text occurs in a line, and lm_eval's peak RSS (its own process).

    python tests/cli/bench_lean_samples.py [--questions 500] [--turns 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.helpers.aio_chat import ChatServer  # noqa: E402
from tests.helpers.edufair_cli import FAST_LM_EVAL, PY, TASK, cli_env  # noqa: E402
from lm_eval_tasks import TASKS_DIR  # noqa: E402

WORDS = ("think", "about", "what", "happens", "when", "the", "object", "moves", "faster", "energy", "changes",
         "notice", "first", "step", "carefully", "consider", "again", "which", "quantity", "stays")


def _text(seed: str, n: int) -> str:
    h = hashlib.sha256(seed.encode()).digest()
    return " ".join(WORDS[h[i % len(h)] % len(WORDS)] for i in range(n))


def _labels(h: int) -> str:
    return json.dumps({"student_mistake_prev_turn": bool(h % 2), "correction_tone": h % 2 * ((h >> 3) % 2) if h % 2 else -1,
                       "mistake_recognize": (h >> 4) % 2 if h % 2 else -1, "answer_leakage": (h >> 5) % 2,
                       "scaffolding_guidance": (h >> 6) % 2, "actionability": (h >> 7) % 2})


def reply(body: dict) -> tuple[int, str]:
    msgs = body.get("messages") or []
    system = next((m.get("content") or "" for m in msgs if m.get("role") == "system"), "")
    key = json.dumps(msgs[-3:], sort_keys=True)
    h = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
    if body.get("max_tokens") == 1 or body.get("max_completion_tokens") == 1:
        return 200, "ok"
    if system.startswith("Reasoning: low"):
        return 200, _labels(h)
    if system.startswith("This is a Grade"):
        return 200, f"Good effort. {_text(key, 55)}. What do you notice first?"
    return 200, f"I think {_text(key + 's', 18)}."


def _physics_bank(out: Path, questions: int) -> Path:
    src = Path(__file__).resolve().parents[2] / "edufair_metrics" / "bank" / "data" / "physics.jsonl"
    lines = src.read_text().splitlines()[:questions]
    out.mkdir(parents=True, exist_ok=True)
    (out / "physics.jsonl").write_text("\n".join(lines) + "\n")
    return out


# Runs lm_eval as the only child of a small wrapper, so that RUSAGE_CHILDREN is lm_eval's own peak.
_WRAPPER = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
            "print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
            "sys.exit(r.returncode)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=500)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--keep", help="write the run here instead of a temporary folder")
    args = ap.parse_args()
    server = ChatServer(reply, backlog=2048, client_max_size=64 * 1024 * 1024,
                        usage={"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20})
    url = f"http://127.0.0.1:{server.start()}/v1"
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="edufair-lean-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        bank = _physics_bank(work / "bank", args.questions)
        chat = f"{url}/chat/completions"
        student = {"model": "fake-student", "base_url": chat, "num_concurrent": 64, "max_retries": 3, "tokenized_requests": False}
        meta = {"edufair": {"student": {"model": "local-chat-completions", "model_args": student},
                            "judge": {"base_url": url, "model": "fake-judge", "concurrency": 32},
                            "bank_dir": str(bank), "max_tutor_turns": args.turns}}
        out = work / "out"
        argv = [PY, "-c", _WRAPPER, PY, str(FAST_LM_EVAL), "run", "--model", "local-chat-completions",
                "--model_args", f"model=fake-tutor,base_url={chat},num_concurrent=64,max_retries=3,tokenized_requests=False",
                "--tasks", TASK, "--include_path", str(TASKS_DIR), "--log_samples", "--output_path", str(out),
                "--metadata", json.dumps(meta)]
        env = cli_env(work / "cache")
        start = time.time()
        r = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True)
        wall = time.time() - start
        if r.returncode != 0:
            print(r.stderr[-3000:], file=sys.stderr)
            return 1
        peak_kb = int(next(ln.split()[1] for ln in r.stderr.splitlines() if ln.startswith("PEAK_RSS_KB")))
        files = sorted(out.rglob(f"samples_{TASK}_*.jsonl"))
        lines = [ln for ln in files[-1].read_text().splitlines() if ln.strip()]
        line_bytes = [len(ln.encode()) for ln in lines]
        rec_bytes, copies, turns = [], [], 0
        for ln in lines:
            obj = json.loads(ln)
            rec_bytes.append(len(json.dumps(obj["complete_dialogues"], ensure_ascii=False).encode()))
            for t in obj["complete_dialogues"]["transcript"]["turns"]:
                if t["role"] in ("tutor", "student") and len(t["text"]) > 40:
                    copies.append(ln.count(json.dumps(t["text"])[1:-1]))
                    turns += 1
        n = len(lines)
        print(f"{TASK}: {n} dialogues x up to {args.turns} tutor turns, {args.questions} questions; lm_eval {wall:.0f} s")
        print(f"  samples file: {sum(line_bytes) / 2**20:.1f} MiB, {sum(line_bytes) / n / 1024:.1f} KiB per record line "
              f"(complete_dialogues {sum(rec_bytes) / n / 1024:.1f} KiB, the rest of the line {(sum(line_bytes) - sum(rec_bytes)) / n / 1024:.1f} KiB)")
        print(f"  each turn's text occurs {sum(copies) / max(1, turns):.2f} times per line (over {turns} turns)")
        print(f"  lm_eval peak RSS: {peak_kb / 1024:.0f} MiB")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
