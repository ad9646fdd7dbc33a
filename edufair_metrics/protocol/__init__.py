"""Stage 1, conditions & prompts: the one reader of the protocol data (``data/protocol.yaml``:
conditions, levels, prompt texts from the paper's Appendix C, contrasts; ``data/protocol-extensions.yaml``:
the conditions EduFair adds beside the paper's, with their own protocol version) and the answer
matcher that the stop rule and the bank builders share."""

from edufair_metrics.protocol.paths import DATA_DIR
from edufair_metrics.protocol.prompts import (
    condition_levels,
    drawn_levels,
    expand_documents,
    extension_provenance,
    extensions_hash,
    extensions_path,
    load_extensions,
    load_protocol,
    posttest_prompt,
    posttest_provenance,
    protocol_for,
    protocol_hash,
    protocol_path,
    select_levels,
    system_prompts,
)

__all__ = [
    "DATA_DIR", "condition_levels", "drawn_levels", "expand_documents", "extension_provenance", "extensions_hash", "extensions_path",
    "load_extensions", "load_protocol", "posttest_prompt", "posttest_provenance", "protocol_for", "protocol_hash", "protocol_path", "select_levels",
    "system_prompts",
]
