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
