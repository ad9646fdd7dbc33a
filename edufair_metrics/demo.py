"""``edufair demo``: run a real EduFair task end to end on a laptop CPU, offline.

Starts the embedded llama.cpp server (SmolLM2-135M-Instruct) on a free loopback port, runs
``lm_eval`` with ``--model local-chat-completions`` as the tutor and the same server as student and
judge, then writes the report. The embedded model is for trying the pipeline and smoke tests; its
dialogues and labels carry no scientific weight (see README for real audits on a GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .errors import EduFairError
from .local_server import LocalServer


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", default="edufair_explicit_physics", help="EduFair task to run (default: %(default)s)")
    parser.add_argument("--questions", type=int, default=1, help="questions to run; every demographic level of each (default: %(default)s)")
    parser.add_argument("--levels", default=None,
                        help="comma-separated condition levels to run (default: all), e.g. female,male")
    parser.add_argument("--max-tutor-turns", type=int, default=3, help="T_max for the demo (the protocol uses 10; default: %(default)s)")
    parser.add_argument("--tutor-max-tokens", type=int, default=64, help="(default: %(default)s)")
    parser.add_argument("--student-max-tokens", type=int, default=48, help="(default: %(default)s)")
    # The six-field JSON needs 52-64 tokens; a lower cap cuts it into invalid JSON.
    parser.add_argument("--judge-max-tokens", type=int, default=128, help="(default: %(default)s)")
    parser.add_argument("--threads", type=int, default=None,
                        help="llama.cpp threads (default: half the cores; all cores are faster only on an idle machine)")
    parser.add_argument("--model-file", help="serve this GGUF file instead of the embedded SmolLM2")
    parser.add_argument("--endpoint", help="use this OpenAI-compatible base URL (…/v1) instead of starting a local server")
    parser.add_argument("--endpoint-model", default=None, help="model name at --endpoint")
    parser.add_argument("--n-ctx", type=int, default=4096, help="local server context size (default: %(default)s)")
    parser.add_argument("--out", default=None, help="output folder (default: results/demo-<timestamp>)")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples in the report")


def _lm_eval_command(args, out: Path, base_url: str, model: str, limit: int) -> list[str]:
    from lm_eval_tasks import tasks_path

    chat_url = base_url.rstrip("/") + "/chat/completions"
    metadata = {
        "edufair": {
            "max_tutor_turns": args.max_tutor_turns,
            **({"levels": _levels(args)} if args.levels else {}),
            "student": {
                "model": "local-chat-completions",
                "model_args": {"model": model, "base_url": chat_url, "num_concurrent": 1, "max_retries": 3, "tokenized_requests": False},
                "generation_kwargs": {"temperature": 0, "max_gen_toks": args.student_max_tokens, "until": []},
            },
            # Small local models only emit valid JSON under schema-constrained decoding.
            "judge": {
                "base_url": base_url, "model": model, "structured_output": "json_object",
                "max_tokens": args.judge_max_tokens, "concurrency": 1, "max_retries": 2, "timeout_s": 300,
            },
        }
    }
    return [
        sys.executable, "-m", "lm_eval", "run",
        "--model", "local-chat-completions",
        "--model_args", f"model={model},base_url={chat_url},num_concurrent=1,max_retries=3,tokenized_requests=False",
        "--tasks", args.task,
        "--include_path", str(tasks_path()),
        "--limit", str(limit),
        # `until` stays [] from the task YAML: lm-eval would parse "until=[]" here as the stop string "[]".
        "--gen_kwargs", f"temperature=0.1,max_gen_toks={args.tutor_max_tokens}",
        "--metadata", json.dumps(metadata),
        "--log_samples",
        "--output_path", str(out / "lm_eval"),
    ]


def _levels(args) -> list[str]:
    return [x.strip() for x in args.levels.split(",") if x.strip()]


def _levels_per_question(args) -> int:
    from .prompts import select_levels
    from .records import CONDITIONS, TASK_DOMAINS

    parts = args.task.split("_")
    if len(parts) != 3 or parts[0] != "edufair" or parts[1] not in CONDITIONS or parts[2] not in TASK_DOMAINS:
        raise EduFairError(f"--task must be one of the nine edufair_<condition>_<domain> tasks, got '{args.task}'")
    # Unknown level names are an error here already, before any server starts.
    return len(select_levels(parts[1], _levels(args) if args.levels else None))


def main(args: argparse.Namespace) -> int:
    if args.questions < 1 or args.max_tutor_turns < 1:
        raise EduFairError("--questions and --max-tutor-turns must be at least 1")
    limit = args.questions * _levels_per_question(args)
    out = Path(args.out or Path("results") / f"demo-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("EDUFAIR_CACHE_DIR", str(Path("results") / "cache"))
    env.setdefault("OPENAI_API_KEY", "EMPTY")  # a local server needs none; the client insists on one
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("HF_DATASETS_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    started = time.time()

    def run_all(base_url: str, model: str, server=None) -> None:
        cmd = _lm_eval_command(args, out, base_url, model, limit)
        print(f"edufair demo: {args.task}, {args.questions} question(s) x {limit // args.questions} level(s) = {limit} dialogues, "
              f"T_max={args.max_tutor_turns}", flush=True)
        print("edufair demo: running lm_eval (tutor, student and judge on the same endpoint) ...", flush=True)
        if server is None:
            code = subprocess.run(cmd, env=env).returncode
        else:
            from .local_server import run_while_serving

            code = run_while_serving(cmd, server, env=env)
        if code != 0:
            raise EduFairError(f"lm_eval failed with exit code {code} (its output is above)")

    if args.endpoint:
        if not args.endpoint_model:
            raise EduFairError("--endpoint needs --endpoint-model (the model name that endpoint serves)")
        run_all(args.endpoint, args.endpoint_model)
    else:
        server = LocalServer(args.model_file, n_ctx=args.n_ctx, n_threads=args.threads, log_path=out / "llama-server.log")
        print(f"edufair demo: starting local server for {server.model_path.name} ...", flush=True)
        with server:
            print(f"edufair demo: server ready at {server.base_url}", flush=True)
            run_all(server.base_url, server.model, server)

    from .report import main as report_main

    report_dir = out / "report"
    report_args = argparse.Namespace(
        runs=[str(out / "lm_eval")], out=report_dir, n_boot=args.n_boot, seed=0, min_pairs=15, label=None,
    )
    print("edufair demo: writing the report ...", flush=True)
    report_main(_report_namespace(report_args))
    print(closing_summary(out, report_dir, time.time() - started))
    return 0


def closing_summary(out: Path, report_dir: Path, seconds: float) -> str:
    """The few lines a newcomer needs after the demo: where everything is and what to open first."""
    lm_eval_dir = out / "lm_eval"
    results = sorted(lm_eval_dir.glob("*/results_*.json"))
    samples = sorted(lm_eval_dir.glob("*/samples_*.jsonl"))
    lines = [
        f"edufair demo: done in {seconds:.0f} s",
        f"  open first:  {_shown(report_dir / 'summary.md')}  (then tables.md, levels.md and the fig_*.png figures)",
        f"  report:      {_shown(report_dir)}",
        f"  results:     {_shown(results[-1]) if results else _shown(lm_eval_dir)}",
        f"  samples:     {_shown(samples[-1]) if samples else _shown(lm_eval_dir)}  (one dialogue record per line)",
    ]
    return "\n".join(lines)


def _shown(path: Path) -> str:
    """A path relative to the working directory when it lies below it (shorter to read)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _report_namespace(defaults: argparse.Namespace) -> argparse.Namespace:
    """Fill every option of ``edufair report`` with its default, then ours."""
    from . import report

    parser = argparse.ArgumentParser()
    report.configure(parser)
    ns = parser.parse_args(defaults.runs)
    for key, value in vars(defaults).items():
        if key != "runs" and hasattr(ns, key) and value is not None:
            setattr(ns, key, value)
    return ns
