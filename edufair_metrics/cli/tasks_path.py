"""``edufair tasks-path``: where the installed task YAMLs live (for ``lm_eval --include_path``)."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    pass


def main(args: argparse.Namespace) -> int:
    from edufair_metrics.lmeval import tasks_path

    print(tasks_path())
    return 0
