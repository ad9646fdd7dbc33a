"""``edufair demo``: run a real EduFair task end to end on the embedded local model (see
``edufair_metrics/local/demo.py``)."""

from __future__ import annotations

import argparse

from edufair_metrics.judge.settings import REASONING_EFFORTS
from edufair_metrics.local import demo
from edufair_metrics.local.demo import DemoOptions

_DEFAULTS = DemoOptions()


def configure(parser: argparse.ArgumentParser) -> None:
    d = _DEFAULTS
    parser.add_argument("--task", default=d.task, help="EduFair task to run (default: %(default)s)")
    parser.add_argument("--questions", type=int, default=d.questions, help="questions to run; every demographic level of each (default: %(default)s)")
    parser.add_argument("--levels", default=None, help="comma-separated condition levels to run (default: all), e.g. female,male")
    parser.add_argument("--max-tutor-turns", type=int, default=d.max_tutor_turns, help="T_max for the demo (the protocol uses 10; default: %(default)s)")
    parser.add_argument("--tutor-max-tokens", type=int, default=d.tutor_max_tokens, help="(default: %(default)s)")
    parser.add_argument("--student-max-tokens", type=int, default=d.student_max_tokens, help="(default: %(default)s)")
    parser.add_argument("--judge-max-tokens", type=int, default=d.judge_max_tokens, help="(default: %(default)s)")
    parser.add_argument("--threads", type=int, default=None,
                        help="llama.cpp threads (default: half the cores; all cores are faster only on an idle machine)")
    parser.add_argument("--model-file", help="serve this GGUF file instead of the embedded SmolLM2")
    parser.add_argument("--endpoint", help="use this OpenAI-compatible base URL (…/v1) instead of starting a local server")
    parser.add_argument("--endpoint-model", default=None, help="model name at --endpoint")
    parser.add_argument("--n-ctx", type=int, default=d.n_ctx, help="local server context size (default: %(default)s)")
    parser.add_argument("--out", default=None, help="output folder (default: results/demo-<timestamp>)")
    parser.add_argument("--n-boot", type=int, default=d.n_boot, help="bootstrap resamples in the report")
    parser.add_argument("--gen-kwargs", default=None, metavar="K=V,...",
                        help="the tutor's decoding, as lm_eval --gen_kwargs (default: temperature=0.1,"
                             "max_gen_toks=--tutor-max-tokens), e.g. temperature=0.7,top_p=0.9")
    parser.add_argument("--reasoning-effort", choices=(*REASONING_EFFORTS, "none"), default="none",
                        help="the judge's request field reasoning_effort (default none: sends nothing, for models "
                             "without a reasoning mode; low is the paper's, for gpt-oss)")
    parser.add_argument("--print-command", action="store_true",
                        help="print the exact lm_eval command and metadata the demo runs, and stop (for running the "
                             "same audit against your own server: with --endpoint/--endpoint-model)")


def main(args: argparse.Namespace) -> int:
    levels = tuple(x.strip() for x in args.levels.split(",") if x.strip()) if args.levels else None
    opts = DemoOptions(
        task=args.task, questions=args.questions, levels=levels, max_tutor_turns=args.max_tutor_turns,
        tutor_max_tokens=args.tutor_max_tokens, student_max_tokens=args.student_max_tokens,
        judge_max_tokens=args.judge_max_tokens, threads=args.threads, model_file=args.model_file,
        endpoint=args.endpoint, endpoint_model=args.endpoint_model, n_ctx=args.n_ctx, out=args.out, n_boot=args.n_boot,
        gen_kwargs=args.gen_kwargs,
        reasoning_effort=None if args.reasoning_effort == "none" else args.reasoning_effort,
    )
    if args.print_command:
        print(demo.print_command(opts))
        return 0
    demo.run_demo(opts, make_server=demo.LocalServer)
    return 0
