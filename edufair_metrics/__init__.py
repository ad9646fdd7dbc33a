"""EduFair: judge, detectors, statistics, reports and CLI for the EduFair lm-eval tasks."""

__version__ = "0.1.0"

# Bumped whenever prompts, judge protocol or score definitions change in a way that makes
# results incomparable; reports refuse to pool runs with different protocol versions.
PROTOCOL_VERSION = "edufair-bench-2"
# The protocol version of the conditions EduFair adds beside the paper's (protocol-extensions.yaml):
# recorded instead of PROTOCOL_VERSION by the extension tasks only, so the paper's tasks keep theirs.
EXTENSION_PROTOCOL_VERSION = "edufair-ext-1"
