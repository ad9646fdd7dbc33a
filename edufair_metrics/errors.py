"""One exception type for user-facing errors: the CLI prints it as one line and exits non-zero."""


class EduFairError(Exception):
    """A problem with the user's input or environment, reported as one clear line."""
