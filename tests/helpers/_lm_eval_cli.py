"""Run the real lm-eval CLI (``lm_eval.__main__.cli_evaluate``: same argument parsing, same
``simple_evaluate``, same output writing) with ONE change: ``TaskManager`` does not index lm-eval's
~several thousand built-in task YAMLs (about 6 s of every start on the CI machine). EduFair tasks
come from ``--include_path`` exactly as in production. Used by the CLI tests (resume, faults,
bad input, security) to keep them fast; ``test_security`` also runs plain ``python -m lm_eval``.
"""

import sys

from lm_eval.tasks import manager

_orig_init = manager.TaskManager.__init__


def _init(self, *args, include_defaults=True, **kwargs):  # noqa: ARG001 - forced off
    _orig_init(self, *args, include_defaults=False, **kwargs)


manager.TaskManager.__init__ = _init

if __name__ == "__main__":
    from lm_eval.__main__ import cli_evaluate

    sys.argv[0] = "lm_eval"
    cli_evaluate()
