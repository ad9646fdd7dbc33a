"""One exception type for user-facing errors: the CLI prints it as one line and exits non-zero."""


class EduFairError(Exception):
    """A problem with the user's input or environment, reported as one clear line."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a run: pending work was cancelled; what finished is in the call cache. Carries
    how much, for the one line a user sees (:meth:`line`); the entry points exit with status 130."""

    def __init__(self, dialogues: int | None = None, labels: int | None = None) -> None:
        super().__init__()
        self.dialogues, self.labels = dialogues, labels

    def line(self) -> str:
        d = "?" if self.dialogues is None else self.dialogues
        m = "?" if self.labels is None else self.labels
        return f"interrupted: {d} dialogues and {m} labels are cached; rerun the same command to resume"
