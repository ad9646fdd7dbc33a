"""The secret policy, in one place: what looks like a credential, how it is kept out of
provenance, logs and cache keys, and where a key-like entry is an error.

API keys are never settings. They come from environment variables only (the judge's from
``EDUFAIR_JUDGE_API_KEY``, see ``judge/settings.judge_api_key``); a key-like entry in a settings
layer (the task YAML, a settings file, ``--metadata``) or anywhere in the task metadata (which
lm-eval writes into ``results_*.json``) is a one-line error, and every copy written anywhere is
stripped of key-like entries first.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Iterator

from edufair_metrics.errors import EduFairError

# Not lm-eval's SECRET_KEY_PATTERN: that one also matches lm-eval's own `tokenized_requests` model
# argument. Over-redaction is harmless; rejecting a harmless argument is not.
_SECRET_NAME = re.compile(r"api_?key|authori[sz]ation|password|passwd|secret|bearer|access_?token|auth_?token|hf_?token|^token$|(^|_)key$")

KEY_HINT = "API keys come from environment variables only (the judge's: EDUFAIR_JUDGE_API_KEY)"


@functools.lru_cache(maxsize=4096)  # asked for every environment variable on every cache write
def is_secret_name(name: str) -> bool:
    """True for names like api_key, API-Key, Authorization, x-api-key, access_token, password."""
    norm = str(name).lower().replace("-", "_")
    return bool(_SECRET_NAME.search(norm))


def strip_secrets(obj: Any) -> Any:
    """A copy of ``obj`` without any mapping entry whose name looks like a credential (for
    provenance, logs and cache keys)."""
    if isinstance(obj, dict):
        return {k: strip_secrets(v) for k, v in obj.items() if not is_secret_name(k)}
    if isinstance(obj, (list, tuple)):
        return [strip_secrets(v) for v in obj]
    return obj


def walk_keys(obj: Any) -> Iterator[str]:
    """Every mapping key in ``obj``, recursively (lists included)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield str(k)
            yield from walk_keys(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from walk_keys(v)


def known_secrets() -> list[str]:
    """API keys present in the environment (never written anywhere by this package)."""
    out = []
    # asked on every cache write: names first (os.environ decodes what it is asked for), the value
    # only of a key-like name
    for name in os.environ:
        if is_secret_name(name) and name.upper().endswith("KEY"):
            value = os.environ.get(name)
            if value and len(value) >= 8 and value != "EMPTY":
                out.append(value)
    return out


def reject_secrets(obj: Any, where: str) -> None:
    """A one-line error naming ``where`` and the key (never the value) for the first key-like entry
    with a value. Empty, ``EMPTY``, null and boolean/number values are not credentials."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if is_secret_name(str(k)) and v not in (None, "", "EMPTY") and not isinstance(v, (bool, int, float)):
                raise EduFairError(f"{where}: '{k}' looks like a secret; {KEY_HINT}")
            reject_secrets(v, where)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            reject_secrets(v, where)


def reject_secrets_in_task_metadata(metadata: dict[str, Any] | None) -> None:
    """lm-eval copies the whole ``--metadata`` (and, under its CLI, every ``--model_args`` entry)
    into each task's config, and from there into ``results_*.json``: a key-like entry anywhere in
    it, not only in the ``edufair`` block, would be written to disk. Credentials belong in the
    environment (EDUFAIR_JUDGE_API_KEY, HF_TOKEN, ...)."""
    reject_secrets(metadata or {}, "task metadata (--metadata / --model_args, copied into results files)")
