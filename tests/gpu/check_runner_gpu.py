#!/usr/bin/env python
"""GPU check of the EduFair runner with lm-eval's ``hf`` backend (no vLLM, no network).

Builds a small random-weight Llama chat model locally (tests/gpu/tiny_hf.py), then runs
``edufair_explicit_physics`` through the real lm-eval CLI entry point
(``lm_eval.__main__.cli_evaluate``, i.e. ``lm_eval --model hf --model_args pretrained=DIR,dtype=bfloat16
--device cuda --batch_size auto ...``) with the student = the same model as a second in-process
``hf`` model on the same device, judge disabled, call cache off (every turn is really generated).

Checks: one batched tutor ``generate_until`` per turn over all active dialogues, no failed
dialogue, every tutor turn non-blank. Prints per-turn timings and tokens/s and a PASS/FAIL line.

    python tests/gpu/check_runner_gpu.py                        # one NVIDIA GPU, bf16
    python tests/gpu/check_runner_gpu.py --device cpu --hidden 32 --layers 2 --batch-size 32 \
        --max-positions 1024                                    # same run on CPU, tiny (≈1 min)

Exit status 0 on PASS, 1 on FAIL.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

QUESTIONS = [
    {"id": "phys-q1", "question": "What force pulls objects toward Earth?", "answer": "gravity", "answer_forms": ["gravity"]},
    {"id": "phys-q2", "question": "What is the unit of force?", "answer": "newton", "answer_forms": ["newton"]},
    {"id": "phys-q3", "question": "What is the SI unit of energy?", "answer": "joule", "answer_forms": ["joule"]},
    {"id": "phys-q4", "question": "What is the speed of light in vacuum, in km/s (approx.)?", "answer": "300000", "answer_forms": ["300000", "300,000"]},
]
TASK = "edufair_explicit_physics"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    ap.add_argument("--dtype", default=None, help="default: bfloat16 on cuda, float32 on cpu")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=2000)
    ap.add_argument("--max-positions", type=int, default=4096, help="model context length (HFLM's max_length)")
    ap.add_argument("--questions", type=int, default=2, help=f"questions from the built-in list (max {len(QUESTIONS)})")
    ap.add_argument("--levels", default=None, help="comma-separated explicit levels (default: all 9)")
    ap.add_argument("--max-turns", type=int, default=3)
    ap.add_argument("--tutor-max-gen-toks", type=int, default=64)
    ap.add_argument("--student-max-gen-toks", type=int, default=32)
    ap.add_argument("--batch-size", default="auto", help="tutor and student --batch_size (default auto)")
    ap.add_argument("--workdir", default=None, help="default: a fresh temp dir")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    dtype = args.dtype or ("float32" if args.device == "cpu" else "bfloat16")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("FAIL: --device cuda but torch.cuda.is_available() is False (use --device cpu)")
        return 1
    work = Path(args.workdir or tempfile.mkdtemp(prefix="edufair-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)

    from tests.gpu.tiny_hf import build_tiny_chat_model

    t0 = time.perf_counter()
    model_dir = build_tiny_chat_model(
        work / "model", hidden=args.hidden, layers=args.layers, heads=args.heads, vocab=args.vocab,
        max_positions=args.max_positions,
    )
    print(f"[check] model built in {time.perf_counter() - t0:.1f}s at {model_dir}")
    bank = work / "bank"
    bank.mkdir(exist_ok=True)
    with open(bank / "physics.jsonl", "w") as fh:
        for q in QUESTIONS[: args.questions]:
            fh.write(json.dumps({**q, "domain": "physics", "grade": 8, "source": "sciq"}) + "\n")

    # ---- instrumentation: every HFLM.generate_until call, by role ------------------------------
    from lm_eval.models.huggingface import HFLM

    import edufair_metrics.lmeval.task as task_mod

    calls: list[dict] = []  # {role, n, seconds, new_tokens, max_gen_toks}
    detect: list[float] = []  # seconds spent in HFLM's batch size detection (--batch_size auto)
    real_generate_until = HFLM.generate_until
    real_detect = HFLM._detect_batch_size
    real_build_student = task_mod.build_student

    def build_student(cfg):
        lm = real_build_student(cfg)
        lm._edufair_role = "student"
        return lm

    def generate_until(self, requests, disable_tqdm: bool = False):
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        outs = real_generate_until(self, requests, disable_tqdm=disable_tqdm)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        dt = time.perf_counter() - t
        # re-encoded output: approximate for a random model (decoded bytes re-tokenize differently)
        new_tokens = sum(len(self.tok_encode(o, add_special_tokens=False)) for o in outs)
        # HFLM silently LEFT-truncates a context longer than max_length - max_gen_toks (cutting the
        # system prompt, i.e. the demographic cue): count it, the check fails on it.
        gen_toks = int((requests[0].args[1] if requests else {}).get("max_gen_toks", self.max_gen_toks))
        over = sum(1 for r in requests if len(self.tok_encode(r.args[0])) > self.max_length - gen_toks)
        calls.append({"truncated": over,
            "role": getattr(self, "_edufair_role", "tutor"), "n": len(requests), "seconds": dt,
            "new_tokens": new_tokens, "max_gen_toks": requests[0].args[1].get("max_gen_toks") if requests else None,
        })
        return outs

    def detect_batch_size(self, *a, **kw):
        t = time.perf_counter()
        bs = real_detect(self, *a, **kw)
        detect.append(time.perf_counter() - t)
        return bs

    task_mod.build_student = build_student
    HFLM.generate_until = generate_until
    HFLM._detect_batch_size = detect_batch_size

    # ---- the real lm-eval CLI ---------------------------------------------------------------
    levels = [x for x in (args.levels or "").split(",") if x] or None
    meta = {"edufair": {
        "max_tutor_turns": args.max_turns,
        "bank_dir": str(bank),
        "levels": levels,
        "student": {
            "model": "hf",
            "model_args": {"pretrained": str(model_dir), "device": args.device, "dtype": dtype},
            "batch_size": args.batch_size,
            "generation_kwargs": {"temperature": 0, "max_gen_toks": args.student_max_gen_toks, "until": []},
        },
        "judge": {"enabled": False},
        "cache": {"enabled": False},
    }}
    out_dir = work / "out"
    from lm_eval_tasks import TASKS_DIR

    sys.argv = [
        "lm_eval", "--model", "hf",
        # lm-eval 0.4.13's CLI always passes device (default cuda:0) to the model, so device=... in
        # --model_args fails with "got multiple values for keyword argument 'device'": use --device.
        "--model_args", f"pretrained={model_dir},dtype={dtype}", "--device", args.device,
        "--tasks", TASK, "--include_path", str(TASKS_DIR),
        "--batch_size", str(args.batch_size),
        "--gen_kwargs", f"max_gen_toks={args.tutor_max_gen_toks}",
        "--metadata", json.dumps(meta),
        "--log_samples", "--output_path", str(out_dir),
    ]
    print("[check] " + " ".join(a if " " not in a and "{" not in a else repr(a) for a in sys.argv))
    from lm_eval.__main__ import cli_evaluate

    t0 = time.perf_counter()
    try:
        cli_evaluate()
    except SystemExit as exc:  # the CLI may exit on its own; anything non-zero is a failure
        if exc.code not in (0, None):
            print(f"FAIL: lm_eval exited with {exc.code}")
            return 1
    wall = time.perf_counter() - t0

    # ---- checks ---------------------------------------------------------------------------------
    problems: list[str] = []
    files = sorted(glob.glob(str(out_dir / "**" / f"samples_{TASK}_*.jsonl"), recursive=True))
    if not files:
        print(f"FAIL: no samples file under {out_dir}")
        return 1
    recs = [json.loads(line)["complete_dialogues"] for line in open(files[-1])]
    # complete_dialogues is logged per sample as the metric value; lm-eval may wrap it
    recs = [r[0] if isinstance(r, list) else r for r in recs]
    n_docs = args.questions * (len(levels) if levels else 9)
    if len(recs) != n_docs:
        problems.append(f"{len(recs)} records, expected {n_docs}")

    tutor = [c for c in calls if c["role"] == "tutor"]
    student = [c for c in calls if c["role"] == "student"]
    turn_calls = [c for c in tutor if c["max_gen_toks"] != 1]
    # lm-eval's own request per document after the dialogues is answered locally, never generated
    harness_calls = [c for c in tutor if c["max_gen_toks"] == 1]
    tutor_turns = [sum(1 for t in r["transcript"]["turns"] if t["role"] == "tutor") for r in recs]
    per_turn_active = [sum(1 for k in tutor_turns if k > i) for i in range(max(tutor_turns or [0]))]
    if [c["n"] for c in turn_calls] != per_turn_active:
        problems.append(f"tutor calls per turn {[c['n'] for c in turn_calls]} != active dialogues per turn {per_turn_active}")
    if not turn_calls or turn_calls[0]["n"] != n_docs:
        problems.append(f"first tutor call has {turn_calls[0]['n'] if turn_calls else 0} requests, expected {n_docs}")
    if harness_calls:
        problems.append(f"lm-eval's placeholder requests reached the model: {[c['n'] for c in harness_calls]}")
    failed = [r for r in recs if r["transcript"].get("stop_reason") in ("student_failed", "tutor_failed") or r["transcript"].get("error")]
    if failed:
        problems.append(f"{len(failed)} failed dialogues, e.g. {failed[0]['transcript'].get('error')}")
    blank = sum(1 for r in recs for t in r["transcript"]["turns"] if t["role"] == "tutor" and not (t.get("raw", t.get("text")) or "").strip())
    if blank:
        problems.append(f"{blank} blank tutor turns")
    truncated = sum(c["truncated"] for c in calls)
    if truncated:
        problems.append(f"{truncated} contexts were left-truncated by HFLM (longer than max_length - max_gen_toks): "
                        "the system prompt was cut; raise --max-positions or lower max_gen_toks")

    print(f"\n[check] device={args.device} dtype={dtype} model=hidden {args.hidden}, {args.layers} layers, "
          f"vocab {args.vocab}, ctx {args.max_positions}; {n_docs} dialogues, max {args.max_turns} tutor turns; "
          f"batch_size={args.batch_size}")
    print(f"[check] lm_eval wall time {wall:.1f}s; batch-size detection: {len(detect)} runs, {sum(detect):.1f}s total")
    for role, cs in (("tutor", turn_calls), ("student", student), ("harness 1-token", harness_calls)):
        for i, c in enumerate(cs):
            tps = c["new_tokens"] / c["seconds"] if c["seconds"] > 0 else float("nan")
            print(f"  {role:>15} call {i + 1}: {c['n']:3d} requests, {c['seconds']:7.2f}s, {c['new_tokens']:6d} new tokens, {tps:8.1f} tok/s")
    if turn_calls:
        secs = [c["seconds"] for c in turn_calls]
        print(f"[check] tutor: {sum(secs) / len(secs):.2f}s per turn (mean over {len(secs)} turns), "
              f"{sum(c['new_tokens'] for c in turn_calls) / max(sum(secs), 1e-9):.1f} tok/s overall")
    example = next((t for t in recs[0]["transcript"]["turns"] if t["role"] == "tutor"), None) if recs else None
    if example:
        print(f"[check] first tutor turn (random model): {example.get('raw', example['text'])[:80]!r}")
    if problems:
        print("FAIL: " + "; ".join(problems))
        return 1
    print(f"PASS: {n_docs} dialogues, {len(turn_calls)} tutor turns, one batched tutor call per turn, no failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
