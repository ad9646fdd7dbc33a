"""The demo: run a real EduFair task end to end on a laptop CPU, offline.

Starts the embedded llama.cpp server (SmolLM2-135M-Instruct) on a free loopback port, runs
``lm_eval`` with ``--model local-chat-completions`` as the tutor and the same server as student and
judge, then writes the report. The embedded model is for trying the pipeline and smoke tests; its
dialogues and labels carry no scientific weight (see README for real audits on a GPU).
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from edufair_metrics.analysis.params import StatParams
from edufair_metrics.errors import EduFairError
from edufair_metrics.lmeval import tasks_path
from edufair_metrics.local.server import EMBEDDED_ALIAS, LocalServer, run_filtered, run_while_serving
from edufair_metrics.protocol import drawn_levels, select_levels
from edufair_metrics.protocol.names import NAMES_CONDITION
from edufair_metrics.records import ALL_CONDITIONS, TASK_DOMAINS
from edufair_metrics.report.write import read_report_inputs, write_report
from edufair_metrics.runlog import newest_outputs


@dataclass(frozen=True)
class DemoOptions:
    task: str = "edufair_explicit_physics"
    questions: int = 1
    levels: tuple[str, ...] | None = None  # None: every level of the condition
    max_tutor_turns: int = 3
    tutor_max_tokens: int = 64
    student_max_tokens: int = 48
    judge_max_tokens: int = 128  # the six-field JSON needs 52-64 tokens; less cuts it into invalid JSON
    threads: int | None = None
    model_file: str | None = None
    endpoint: str | None = None
    endpoint_model: str | None = None
    n_ctx: int = 4096
    out: str | None = None
    n_boot: int = 1000
    gen_kwargs: str | None = None  # the tutor's decoding, lm_eval --gen_kwargs style (k=v,...)
    # The judge's request field reasoning_effort; None sends nothing. The demo's default is None on
    # every endpoint (the embedded SmolLM2 and most small servers have no reasoning mode): what the
    # record says is then what was sent. Set "low" for gpt-oss (the paper's judge).
    reasoning_effort: str | None = None


# The embedded server answers one request at a time; two in flight keep one queued behind it so the
# server never idles between requests (and lm-eval's async path is used, with no one-at-a-time warning).
DEMO_CONCURRENCY = 2
# where `--print-command` shows the embedded server (its port is chosen when the demo starts)
PLACEHOLDER_URL = "http://127.0.0.1:8080/v1"


def demo_metadata(opts: DemoOptions, base_url: str, model: str) -> dict[str, Any]:
    """The ``edufair`` settings the demo passes as ``--metadata``: student and judge on the same
    endpoint as the tutor (``configs/demo-local.yaml`` holds the same, for the embedded model)."""
    chat_url = base_url.rstrip("/") + "/chat/completions"
    return {
        "max_tutor_turns": opts.max_tutor_turns,
        **({"levels": list(opts.levels)} if opts.levels else {}),
        "student": {
            "model": "local-chat-completions",
            "model_args": {"model": model, "base_url": chat_url, "num_concurrent": DEMO_CONCURRENCY, "max_retries": 3,
                           "tokenized_requests": False},
            "generation_kwargs": {"temperature": 0, "max_gen_toks": opts.student_max_tokens, "until": []},
        },
        # Small local models only emit valid JSON under schema-constrained decoding.
        "judge": {
            "base_url": base_url, "model": model, "structured_output": "json_object",
            "max_tokens": opts.judge_max_tokens, "concurrency": 1, "max_retries": 2, "timeout_s": 300,
            # Always stated, so a settings file saved from --print-command records what is sent
            # (an absent key would fall back to the paper's "low" for a model without reasoning).
            "reasoning_effort": opts.reasoning_effort,
        },
    }


def tutor_gen_kwargs(opts: DemoOptions) -> str:
    """The tutor's decoding (lm_eval --gen_kwargs): the demo's short turns, then ``--gen-kwargs``."""
    given = dict(kv.split("=", 1) for kv in filter(None, (opts.gen_kwargs or "").split(",")) if "=" in kv)
    bad = [kv for kv in filter(None, (opts.gen_kwargs or "").split(",")) if "=" not in kv]
    if bad:
        raise EduFairError(f"--gen-kwargs expects key=value pairs separated by commas, got {bad[0]!r}")
    merged = {"temperature": "0.1", "max_gen_toks": str(opts.tutor_max_tokens), **given}
    return ",".join(f"{k}={v}" for k, v in merged.items())


def lm_eval_command(opts: DemoOptions, out: Path, base_url: str, model: str, limit: int) -> list[str]:
    """The ``lm_eval run`` command line of the demo: tutor, student and judge on one endpoint."""
    chat_url = base_url.rstrip("/") + "/chat/completions"
    return [
        sys.executable, "-m", "lm_eval", "run",
        "--model", "local-chat-completions",
        "--model_args", f"model={model},base_url={chat_url},num_concurrent={DEMO_CONCURRENCY},max_retries=3,"
                        "tokenized_requests=False",
        "--tasks", opts.task,
        "--include_path", str(tasks_path()),
        "--limit", str(limit),
        # `until` stays [] from the task YAML: lm-eval would parse "until=[]" here as the stop string "[]".
        "--gen_kwargs", tutor_gen_kwargs(opts),
        "--metadata", json.dumps({"edufair": demo_metadata(opts, base_url, model)}),
        "--log_samples",
        "--output_path", str(out / "lm_eval"),
    ]


def print_command(opts: DemoOptions) -> str:
    """The exact ``lm_eval`` command the demo runs (shell-quoted) and its metadata, for running the
    same audit against your own server: ``--endpoint`` / ``--endpoint-model``, else the embedded
    server at a placeholder port."""
    levels_per_question(opts)  # a bad --task or --levels fails here too
    base = opts.endpoint or PLACEHOLDER_URL
    model = opts.endpoint_model or EMBEDDED_ALIAS
    limit = opts.questions * levels_per_question(opts)
    out = Path(opts.out or "results/demo")
    cmd = ["lm_eval"] + lm_eval_command(opts, out, base, model, limit)[3:]
    lines = ["# the lm_eval command `edufair demo` runs" + ("" if opts.endpoint else
             f" (the embedded server's port is chosen at start; {PLACEHOLDER_URL} stands for it)") + ":",
             shlex.join(cmd), "", "# its --metadata edufair block, as a settings file (--metadata '{\"edufair\": {\"config\": FILE}}'):",
             yaml.safe_dump(demo_metadata(opts, base, model), sort_keys=False).rstrip()]
    return "\n".join(lines)


def levels_per_question(opts: DemoOptions) -> int:
    names = [f"edufair_{c}_{d}" for c in ALL_CONDITIONS for d in TASK_DOMAINS]
    if opts.task not in names:
        close = difflib.get_close_matches(opts.task, names, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else f" ({', '.join(names)})"
        raise EduFairError(f"--task must be one of the edufair_<condition>_<domain> tasks, got '{opts.task}'{hint}")
    condition = opts.task[len("edufair_"):].rsplit("_", 1)[0]
    # Unknown level names are an error here already, before any server starts.
    if condition == NAMES_CONDITION:  # the protocol's default draw of names (the demo passes no edufair.names)
        draw, drawn = drawn_levels()
        outside = [lv for lv in opts.levels or () if lv not in drawn]
        if outside:
            raise EduFairError(f"--levels {', '.join(outside)} are not among the names drawn (k={draw.k}, "
                               f"seed={draw.seed}: {', '.join(drawn)})")
        return len(opts.levels) if opts.levels else len(drawn)
    return len(select_levels(condition, list(opts.levels) if opts.levels else None))


def run_demo(opts: DemoOptions, make_server=LocalServer) -> Path:
    """Run the demo; returns its output folder. Prints progress lines and a closing summary."""
    if opts.questions < 1 or opts.max_tutor_turns < 1:
        raise EduFairError("--questions and --max-tutor-turns must be at least 1")
    if opts.endpoint and not opts.endpoint_model:
        raise EduFairError("--endpoint needs --endpoint-model (the model name that endpoint serves)")
    n_levels = levels_per_question(opts)
    limit = opts.questions * n_levels
    out = Path(opts.out or Path("results") / f"demo-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # the call cache: the user-level default of every run (cache.default_cache_path), so the
    # demo's second run hits the cache from any folder
    env.setdefault("OPENAI_API_KEY", "EMPTY")  # a local server needs none; the client insists on one
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("HF_DATASETS_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    started = time.time()

    def run_all(base_url: str, model: str, server: LocalServer | None = None) -> None:
        cmd = lm_eval_command(opts, out, base_url, model, limit)
        print(f"edufair demo: {opts.task}, {opts.questions} question(s) x {n_levels} level(s) = {limit} dialogues, "
              f"T_max={opts.max_tutor_turns}", flush=True)
        print("edufair demo: running lm_eval (tutor, student and judge on the same endpoint) ...", flush=True)
        if server is None:
            code = run_filtered(cmd, env=env)
        else:
            code = run_while_serving(cmd, server, env=env)
        if code != 0:
            raise EduFairError(f"lm_eval failed with exit code {code} (its output is above)")

    if opts.endpoint:
        run_all(opts.endpoint, opts.endpoint_model)
    else:
        server = make_server(opts.model_file, n_ctx=opts.n_ctx, n_threads=opts.threads, log_path=out / "llama-server.log")
        print(f"edufair demo: starting local server for {server.model_path.name} ...", flush=True)
        with server:
            print(f"edufair demo: server ready at {server.base_url}", flush=True)
            run_all(server.base_url, server.model, server)

    report_dir = out / "report"
    print("edufair demo: writing the report ...", flush=True)
    result = write_report(read_report_inputs([str(out / "lm_eval")]), report_dir, StatParams(n_boot=opts.n_boot),
                          command=["edufair", "demo"])
    print(f"edufair demo: report: {result.line()}", flush=True)
    print(closing_summary(out, report_dir, time.time() - started))
    return out


def closing_summary(out: Path, report_dir: Path, seconds: float) -> str:
    """The few lines a newcomer needs after the demo: where everything is and what to open first."""
    lm_eval_dir = out / "lm_eval"
    results, samples = newest_outputs(lm_eval_dir)
    lines = [
        f"edufair demo: done in {seconds:.0f} s",
        f"  open first:  {_shown(report_dir / 'summary.md')}  (then tables.md, levels.md and the fig_*.png figures)",
        f"  report:      {_shown(report_dir)}  (index.html: the verdict grid and the transcripts behind it; "
        f"edufair view {_shown(report_dir)})",
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
