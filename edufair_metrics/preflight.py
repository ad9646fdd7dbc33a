"""Fail fast on an endpoint that is not there: a TCP connect to its host and port (no request, no
credentials), at most once per endpoint and process, before any dialogue runs. Skipped with
``edufair.preflight: false`` or ``EDUFAIR_SKIP_PREFLIGHT=1`` (e.g. when the same job starts the
server later)."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

from edufair_metrics.errors import EduFairError

_REACHABLE: set[tuple[str, int]] = set()


def preflight_enabled(setting: bool | None = True) -> bool:
    return bool(setting if setting is not None else True) and os.environ.get("EDUFAIR_SKIP_PREFLIGHT", "") in ("", "0")


def check_reachable(what: str, url: str | None, timeout_s: float = 3.0) -> None:
    if not url:
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if (parts.hostname, port) in _REACHABLE:
        return
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout_s).close()
    except OSError as exc:
        raise EduFairError(
            f"{what}: endpoint {url} is unreachable ({exc.strerror or exc}); start the server or fix base_url "
            "(skip this check with EDUFAIR_SKIP_PREFLIGHT=1)"
        ) from None
    _REACHABLE.add((parts.hostname, port))


def check_output_path(output_path: str | os.PathLike | None) -> None:
    """lm-eval writes results and samples under ``--output_path`` only after the whole job, and
    an unwritable path then loses everything with exit status 0. Check it first, leaving nothing
    behind: the path (or, for ``*.json``, its folder) must be a folder, or not exist yet under a
    folder; no part of it may be a file; and a temporary file must really be created (and removed)
    in the deepest folder that exists. ``os.access`` is not enough: it calls ``/proc`` writable
    for root, and knows nothing of read-only mounts, quotas or ACLs."""
    if not output_path:
        return
    from pathlib import Path

    path = Path(output_path).expanduser()
    target = path.parent if path.suffix == ".json" else path
    if path.suffix == ".json" and path.is_dir():
        raise EduFairError(f"--output_path {output_path}: is a folder, but a name ending in .json means a results file")
    probe = target
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise EduFairError(f"--output_path {output_path}: {probe} is a file, not a folder; nothing could be saved there")
    import tempfile

    try:
        fd, name = tempfile.mkstemp(prefix=".edufair-write-probe-", dir=probe)
        try:
            os.write(fd, b"x")
        finally:
            os.close(fd)
            os.unlink(name)
    except OSError as exc:
        raise EduFairError(f"--output_path {output_path}: {probe} is not writable ({exc.strerror or exc}); "
                           "nothing could be saved there") from None


def openai_key_exposure(endpoints: dict[str, str | None], environ: dict[str, str] | None = None) -> list[str]:
    """The roles (tutor, student) whose lm-eval API model would receive ``OPENAI_API_KEY``: lm-eval's
    ``local-chat-completions`` sends that variable to every endpoint it calls and prints it in its
    HTTP error messages. Loopback endpoints are left out (the key never leaves the machine)."""
    env = os.environ if environ is None else environ
    if not env.get("OPENAI_API_KEY") or env.get("OPENAI_API_KEY") == "EMPTY":
        return []
    out = []
    for role, url in endpoints.items():
        host = (urlsplit(url).hostname or "").lower() if url else ""
        if host and host not in ("localhost", "127.0.0.1", "::1", "0.0.0.0"):
            out.append(f"{role} ({url})")
    return out
