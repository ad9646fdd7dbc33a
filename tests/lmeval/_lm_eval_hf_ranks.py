"""Test only (``tests/lmeval/test_sharded.py``): the real lm-eval CLI (``tests/helpers/_lm_eval_cli.py``:
no indexing of lm-eval's built-in tasks) with ONE more change, so that ``accelerate launch
--num_processes N`` on CPU (gloo) shards like N GPUs: while ``HFLM.__init__`` runs, and only then,
``torch.cuda.device_count()`` says N (``$WORLD_SIZE``, set by accelerate; one process: no change). HFLM reads the device
count only to decide whether ``accelerate launch`` means data parallelism ("gpus > 1"); with
``ACCELERATE_USE_CPU=true`` the model stays on the CPU and the processes talk over gloo. Nothing
else sees the patched count (it is restored before ``__init__`` returns), so no code path tries
CUDA; ``torch.cuda.is_available()`` stays False throughout.
"""

import os
import sys

import torch
from lm_eval.models import huggingface

import tests.helpers._lm_eval_cli  # noqa: F401  (TaskManager without lm-eval's built-in tasks)

_init = huggingface.HFLM.__init__


def _init_seeing_one_device_per_process(self, *args, **kwargs):
    processes = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if processes <= 1:  # one process: HFLM as it is
        return _init(self, *args, **kwargs)
    real = torch.cuda.device_count
    torch.cuda.device_count = lambda: processes
    try:
        _init(self, *args, **kwargs)
    finally:
        torch.cuda.device_count = real


huggingface.HFLM.__init__ = _init_seeing_one_device_per_process

if __name__ == "__main__":
    from lm_eval.__main__ import cli_evaluate

    sys.argv[0] = "lm_eval"
    cli_evaluate()
