"""``edufair`` command line. Each subcommand lives in its own module exposing
``configure(parser)`` and ``main(args) -> int``; they are imported lazily so that
``edufair --help`` and ``edufair tasks-path`` stay fast."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import threading

from edufair_metrics import __version__
from edufair_metrics.errors import EduFairError, Interrupted

# subcommand -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "tasks-path": ("edufair_metrics.cli.tasks_path", "print the directory to pass as lm_eval --include_path"),
    "tasks": ("edufair_metrics.cli.tasks", "list EduFair's lm-eval task names, or check one (did you mean ...?)"),
    "build-bank": ("edufair_metrics.cli.build_bank", "rebuild the question bank (SciQ, SocraTeach or GSM8K proxy)"),
    "judge": ("edufair_metrics.cli.judge", "(re-)judge stored transcripts from lm-eval samples files"),
    "posttest": ("edufair_metrics.cli.posttest", "outcome fairness: the student answers each stored dialogue's question once more, alone"),
    "report": ("edufair_metrics.cli.report", "paired bias statistics, paper tables and figures for runs"),
    "view": ("edufair_metrics.cli.view", "serve a report's HTML view (verdict grid, twin transcripts) on a loopback port"),
    "leaderboard": ("edufair_metrics.cli.leaderboard", "rank tutors by fairness and pedagogy"),
    "compare": ("edufair_metrics.cli.compare", "CI gate: is a candidate tutor less fair than a baseline?"),
    "audit": ("edufair_metrics.cli.audit", "sequential audit: run a task in batches, stop once the decision is reached or the budget spent"),
    "plan": ("edufair_metrics.cli.plan", "questions x replicates (and cost) an audit needs to flag or certify, from a pilot"),
    "demo": ("edufair_metrics.cli.demo", "run a real EduFair task end to end on the embedded local model"),
    "cache": ("edufair_metrics.cli.cache", "show or clear the persistent call cache"),
    "judge-human": ("edufair_metrics.cli.judge_human", "judge human-labelled tutor responses and measure judge-human agreement"),
    "label-sample": ("edufair_metrics.cli.label_sample", "draw a blind sample of a run's tutor turns for human labelling"),
    "detector-human": ("edufair_metrics.cli.detector_human", "measure the deterministic reveal detectors against human reveal labels (no judge)"),
    "agreement": ("edufair_metrics.cli.agreement", "compare two judgings of the same transcripts (kappa, alpha, judge-contingent contrasts)"),
}


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="edufair", description="EduFair: pedagogical fairness audits of LLM tutors")
    parser.add_argument("--version", action="version", version=f"edufair {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        # Only the chosen subcommand's module is imported (its arguments are needed only then).
        if name == wanted:
            _load(module).configure(p)
            p.set_defaults(_module=module)
    return parser


def _load(module: str):
    return importlib.import_module(module)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "_module", None):
        parser.print_help()
        return 2
    try:
        return int(_load(args._module).main(args) or 0)
    except EduFairError as exc:
        print(f"edufair {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt as exc:
        line = exc.line() if isinstance(exc, Interrupted) else "interrupted"
        print(f"\nedufair {args.command}: {line}", file=sys.stderr, flush=True)
        if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
            # worker threads still wait on requests in flight: do not wait for them (their answers,
            # if any arrive, would only be cached)
            sys.stdout.flush()
            os._exit(130)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
