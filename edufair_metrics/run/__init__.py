"""Stage 5, one task run without lm-eval's evaluator: its documents (``documents``) and
:func:`run_task` (dialogues, judge, records; ``task``). ``edufair_metrics.lmeval`` adapts lm-eval's
task API to it."""

from edufair_metrics.run.documents import TaskDocuments, task_documents
from edufair_metrics.run.task import RoleModel, TaskResult, TaskSpec, run_task

__all__ = ["RoleModel", "TaskDocuments", "TaskResult", "TaskSpec", "run_task", "task_documents"]
