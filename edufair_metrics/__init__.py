"""EduFair: judge, detectors, statistics, reports and CLI for the EduFair lm-eval tasks."""

__version__ = "0.1.0"

# Bumped whenever prompts, judge protocol or score definitions change in a way that makes
# results incomparable; reports refuse to pool runs with different protocol versions.
PROTOCOL_VERSION = "edufair-bench-2"
