"""``edufair tasks-path``: where the installed task YAMLs live (for ``lm_eval --include_path``)."""

from __future__ import annotations

import argparse

from edufair_metrics.lmeval import tasks_path


def configure(parser: argparse.ArgumentParser) -> None:
    pass


def main(args: argparse.Namespace) -> int:
    print(tasks_path())
    return 0
