"""``edufair tasks [NAME]``: the names ``lm_eval --tasks`` accepts from EduFair's task folder; with
NAME, whether it is one, or the closest (lm-eval itself answers a misspelt name with a traceback
ending in ``Tasks not found: NAME``)."""

from __future__ import annotations

import argparse
import difflib

from edufair_metrics.errors import EduFairError
from edufair_metrics.lmeval import task_names, tasks_path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", help="a task, group or tag name to check")


def main(args: argparse.Namespace) -> int:
    names = task_names()
    if args.name is None:
        for name, what in names.items():
            print(f"{name:<30} {what}")
        print(f"(lm_eval --include_path \"{tasks_path()}\")")
        return 0
    if args.name in names:
        print(f"{args.name}: {names[args.name]}")
        return 0
    close = difflib.get_close_matches(args.name, list(names), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else "`edufair tasks` lists them"
    raise EduFairError(f"{args.name!r} is not an EduFair task, group or tag; {hint}")
