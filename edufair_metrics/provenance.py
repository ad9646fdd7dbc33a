"""Provenance: what a pooled report must agree on (versions, prompt and bank hashes, model
identities without secrets, decoding settings, seeds), written into every dialogue record."""

from __future__ import annotations

import copy
import importlib.metadata
import platform
from pathlib import Path
from typing import Any

from edufair_metrics import PROTOCOL_VERSION, __version__
from edufair_metrics.io import sha256_file
from edufair_metrics.secrets import strip_secrets

# judge settings that do not change a label (transport, bookkeeping): not part of "decoding"
JUDGE_NOT_DECODING = (
    "model", "base_url", "enabled", "concurrency", "timeout_s", "max_retries", "backoff_base_s", "backoff_max_s",
    "api_key_env", "prompt_version",
)


def _sha256_or_none(path: Path) -> str | None:
    try:
        return sha256_file(path)
    except OSError:
        return None


def run_provenance(*, bank_file: Path, domain: str, judge_prompts_file: Path, models: dict[str, Any],
                   decoding: dict[str, Any], max_tutor_turns: Any, seeds: dict[str, Any],
                   sample: dict[str, Any] | None = None, execution: dict[str, Any] | None = None,
                   protocol: dict[str, Any] | None = None) -> dict[str, Any]:
    """The part of a record's provenance fixed when the dialogues of a task start. ``sample``: the
    question subsample (fraction, seed, how many of how many, hash of the chosen ids), or None.
    ``execution``: how the task was split and batched (``world_size``, the tutor's
    ``tutor_batch_size``, the ``shard``), or None. ``protocol``: an extension task's protocol
    fields (``protocol_version`` in place of the paper's, ``protocol_extensions_sha256``, a names
    draw), or None (a paper task records nothing more)."""
    out = {
        "bank": {"domain": domain, "file": bank_file.name, "sha256": _sha256_or_none(bank_file), "sample": sample},
        "judge_prompts_sha256": _sha256_or_none(judge_prompts_file),
        "models": models,
        "decoding": decoding,
        "max_tutor_turns": max_tutor_turns,
        "seeds": seeds,
    }
    if execution is not None:
        out["execution"] = dict(execution)
    if protocol:
        out.update(copy.deepcopy(protocol))
    return out


def record_provenance(judge: dict[str, Any] | None, run: dict[str, Any] | None, protocol_sha256: str) -> dict[str, Any]:
    """A judged record's full provenance: package and protocol versions, the run's part, and the
    judge's identity and decoding settings (``judge``: its public settings)."""
    out = {"package_version": __version__, "protocol_version": PROTOCOL_VERSION, "protocol_sha256": protocol_sha256}
    out.update(copy.deepcopy(run or {}))
    judge = judge or {}
    out.setdefault("models", {})["judge"] = strip_secrets({k: v for k, v in judge.items() if k in ("model", "base_url", "enabled")})
    out.setdefault("decoding", {})["judge"] = strip_secrets({k: v for k, v in judge.items() if k not in JUDGE_NOT_DECODING})
    return out


# the entry-point groups of lm-eval's plugin discovery EduFair declares (setup.cfg)
PLUGIN_GROUPS = ("lm_eval.tasks", "lm_eval.metrics", "lm_eval.aggregations")


def package_provenance() -> dict[str, Any]:
    """EduFair's version and its lm-eval plugin entries as the installed distribution declares them
    (``{"version", "distribution", "entry_points": {group: {name: value}}}``; a group is absent when
    the installed metadata does not declare it, e.g. an install older than the declaration)."""
    out: dict[str, Any] = {"version": __version__, "distribution": None, "entry_points": {}}
    try:
        dist = importlib.metadata.distribution("edufair")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return out
    out["distribution"] = dist.version
    for ep in dist.entry_points:
        if ep.group in PLUGIN_GROUPS:
            out["entry_points"].setdefault(ep.group, {})[ep.name] = ep.value
    out["entry_points"] = {g: dict(sorted(v.items())) for g, v in sorted(out["entry_points"].items())}
    return out


def versions() -> dict[str, str]:
    """The versions a report's numbers depend on (installed distributions; nothing is imported).
    Here, at the root, so that every view (report, leaderboard, compare) reads it without importing
    another view."""
    out = {"edufair": __version__, "protocol": PROTOCOL_VERSION, "python": platform.python_version()}
    for dist in ("numpy", "scipy", "pandas", "matplotlib", "lm_eval"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover - all are dependencies
            pass
    return out
