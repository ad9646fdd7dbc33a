"""Stage 5, one task run without lm-eval's evaluator, and every stage step that calls a model on stored
data: its documents (``documents``), :func:`run_task` (dialogues, judge, records; ``task``), judging
transcripts into records (``judging``), re-judging stored transcripts (``rejudge``, ``edufair judge``) and
the post-test of stored dialogues (``posttest``, ``edufair posttest``). ``edufair_metrics.lmeval`` adapts
lm-eval's task API to it; ``edufair_metrics.runlog`` (pure) reads and writes what it makes."""

from edufair_metrics.run.documents import TaskDocuments, task_documents
from edufair_metrics.run.judging import judge_and_build
from edufair_metrics.run.task import RoleModel, TaskResult, TaskSpec, run_task

__all__ = ["RoleModel", "TaskDocuments", "TaskResult", "TaskSpec", "judge_and_build", "run_task", "task_documents"]
