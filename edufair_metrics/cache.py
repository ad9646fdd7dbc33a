"""Persistent call cache for every model call (judge, student, tutor).

Storage: one SQLite file in WAL mode. Each ``put`` is its own transaction (``BEGIN IMMEDIATE`` ...
``COMMIT``), so a process killed with SIGKILL at any instant leaves either the whole record or
nothing: SQLite never exposes a partially written row, and a reader after a crash sees exactly the
committed records. ``synchronous=NORMAL`` (the recommended setting with WAL) keeps every committed
transaction across a process kill; only an OS crash / power loss may drop the last few commits,
never corrupt the file. Values are stored as JSON together with their sha256, and a row whose
value does not parse or does not match its checksum is treated as a miss (belt and braces).

Key: ``sha256`` of a canonical JSON (sorted keys, no whitespace, UTF-8) of a key object that holds
everything that determines the output: a ``namespace`` ("judge", "student", "tutor", ...), the
model identity, the decoding settings and the exact messages/prompt. Anything whose name looks like
a credential (``api_key``, ``authorization``, ``password``, ``secret``, access tokens) is removed
from the key object before hashing, recursively, so neither keys nor headers ever influence or
reach the cache. Values that contain the text of an API key found in the environment are refused.

Policy (:class:`CachePolicy`, the ``edufair.cache`` block, resolved once by the settings chain and
used by the runner, the judge and ``edufair cache``): enabled or not, and where. The file is
``cache.path`` if set, else ``edufair-calls.sqlite`` in ``$EDUFAIR_CACHE_DIR`` (the environment
beats the ``cache.dir`` setting), else in ``cache.dir``, else in the user's cache folder
``$XDG_CACHE_HOME/edufair`` (default ``~/.cache/edufair``): never relative to the working
directory, so a rerun from another folder resumes from the same cache. Threads: one connection per
thread (``threading.local``); processes: SQLite locking with a busy timeout.

When the disk fills (or the file is damaged while a run uses it), an answer that cannot be
committed is kept in memory for the rest of the process (``get`` still finds it) and one line on
stderr says that the cache is full and where: the run goes on and finishes with its results;
SQLite rolls the failed transaction back itself, so the file stays a valid database holding every
answer committed before. A file that is not a valid database (not SQLite, truncated, malformed) is
refused at open with one line naming it and what to do (``edufair cache --check`` / ``--repair``,
:func:`check_cache_file` / :func:`repair_cache_file`); a run never overwrites or deletes it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar, Mapping

from pydantic import field_validator

from edufair_metrics.errors import EduFairError
from edufair_metrics.schema import SettingsModel
from edufair_metrics.secrets import known_secrets, strip_secrets

log = logging.getLogger(__name__)

CACHE_FILENAME = "edufair-calls.sqlite"
SCHEMA_VERSION = 1

_OFF_WORDS = ("off", "none", "false", "no", "disabled")


def user_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user-level cache folder: ``$EDUFAIR_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/edufair``,
    else ``~/.cache/edufair``. Never relative to the working directory."""
    env = os.environ if environ is None else environ
    if env.get("EDUFAIR_CACHE_DIR"):
        return Path(env["EDUFAIR_CACHE_DIR"]).expanduser()
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg and Path(xdg).expanduser().is_absolute() else Path.home() / ".cache"
    return base / "edufair"


def default_cache_path(environ: Mapping[str, str] | None = None) -> Path:
    """``edufair-calls.sqlite`` in :func:`user_cache_dir`."""
    return user_cache_dir(environ) / CACHE_FILENAME


def default_cache_source(environ: Mapping[str, str] | None = None) -> str:
    """Which rule chose :func:`default_cache_path` (for ``edufair cache``)."""
    env = os.environ if environ is None else environ
    if env.get("EDUFAIR_CACHE_DIR"):
        return "$EDUFAIR_CACHE_DIR"
    xdg = env.get("XDG_CACHE_HOME")
    return "$XDG_CACHE_HOME/edufair" if xdg and Path(xdg).expanduser().is_absolute() else "~/.cache/edufair"


class CachePolicy(SettingsModel):
    """The ``edufair.cache`` block: whether model calls are cached, and where. ``path`` is the
    file, ``dir`` a folder for ``edufair-calls.sqlite``; :meth:`from_settings` resolves them into
    the one file (``path`` only) that the runner, the judge and ``edufair cache`` open."""

    PATH: ClassVar[str] = "edufair.cache"
    EXPECTED: ClassVar[str] = "a mapping like {enabled: true, path: FILE, dir: FOLDER}"

    enabled: bool = True
    path: str | None = None  # None with enabled: dir, else the user-level default
    dir: str | None = None

    @field_validator("path", "dir", mode="before")
    @classmethod
    def _path_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, os.PathLike) else v

    @classmethod
    def from_settings(cls, cache: Mapping[str, Any] | str | os.PathLike | "CachePolicy" | None,
                      environ: Mapping[str, str] | None = None, *, source: str = "edufair settings") -> "CachePolicy":
        """The resolved policy of the ``edufair.cache`` setting ({enabled, path, dir}) or of a
        command-line value (a path, or "off"). The file is ``path`` if set, else
        ``edufair-calls.sqlite`` in ``$EDUFAIR_CACHE_DIR`` (the environment overrides settings),
        else in ``dir``, else in the user-level cache folder (:func:`user_cache_dir`)."""
        if isinstance(cache, (str, os.PathLike)):
            text = str(cache).strip()
            if text.lower() in _OFF_WORDS:
                return cls(enabled=False)
            cache = {"path": text} if text else {}
        block = cache if isinstance(cache, CachePolicy) else cls.from_setting(
            {} if cache is None else cache, path="edufair.cache", source=source)
        env = os.environ if environ is None else environ
        if env.get("EDUFAIR_CACHE_DIR") and block.dir:
            block = block.model_copy(update={"dir": None})
        return block.resolved(env)

    def resolved(self, environ: Mapping[str, str] | None = None) -> "CachePolicy":
        """The same policy with its file decided (``path`` only): ``path``, else ``dir``, else the
        user-level default (:func:`default_cache_path`)."""
        if not self.enabled:
            return CachePolicy(enabled=False)
        if self.path:
            return CachePolicy(path=str(Path(self.path).expanduser()))
        if self.dir:
            return CachePolicy(path=str(Path(self.dir).expanduser() / CACHE_FILENAME))
        return CachePolicy(path=str(default_cache_path(environ)))

    @property
    def location(self) -> Path | None:
        if not self.enabled:
            return None
        if self.path:
            return Path(self.path)
        return Path(self.dir).expanduser() / CACHE_FILENAME if self.dir else default_cache_path()

    def open(self) -> "CallCache | None":
        return CallCache(self.location) if self.enabled else None

    def to_setting(self) -> dict[str, Any]:
        """The form that travels in lm-eval filter arguments (plain data)."""
        return {"enabled": self.enabled, "path": str(self.location) if self.enabled else None}


# Model arguments that change how requests are sent, never what a model answers: they are left out
# of cache keys so that a new port (edufair demo picks a free one), more concurrency or another
# replica behind a load balancer still reuses every cached call.
EXECUTION_ONLY_ARGS = frozenset({
    "base_url", "num_concurrent", "max_retries", "timeout", "batch_size", "max_batch_size", "device",
    "tokenized_requests", "verify_certificate", "header", "headers", "max_length", "parallelize",
    "gpu_memory_utilization", "tensor_parallel_size", "data_parallel_size", "swap_space", "enable_prefix_caching",
})


def model_identity(kind: str, model_args: Mapping[str, Any] | None) -> dict[str, Any]:
    """What determines a model's answers: its lm-eval class/name and the arguments that matter."""
    args = {k: v for k, v in (model_args or {}).items() if k not in EXECUTION_ONLY_ARGS}
    return strip_secrets({"kind": kind, "model_args": args})


def call_key(role: str, identity: Mapping[str, Any], gen_kwargs: Mapping[str, Any], prompt: str) -> dict[str, Any]:
    """The cache key object of one tutor or student call."""
    return {"namespace": role, "model": dict(identity), "gen_kwargs": dict(gen_kwargs), "prompt": prompt}


def canonical_json(obj: Any) -> str:
    return json.dumps(strip_secrets(obj), sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def cache_key(key_obj: Any) -> str:
    """sha256 hex digest of the canonical JSON of ``key_obj`` (credentials stripped)."""
    return hashlib.sha256(canonical_json(key_obj).encode("utf-8")).hexdigest()


# The longest answer (tutor, student or judge) EduFair accepts, in UTF-8 bytes: far beyond any turn
# of the protocol's decoding (2048 new tokens), so only a broken endpoint sends more.
MAX_ANSWER_BYTES = 512 * 1024


def unstorable_text(text: str) -> str | None:
    """Why ``text`` (a model's answer) cannot be stored in the call cache and the samples file, or
    None when it can: a lone surrogate (valid as a JSON escape such as ``\\ud800``, but no UTF-8
    text), NUL bytes, or more than :data:`MAX_ANSWER_BYTES`. Such an answer is a failed request
    (``bad_body``), never a turn."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        return f"answer is not valid text ({exc.reason} at character {exc.start})"
    if "\x00" in text:
        return f"answer holds {text.count(chr(0))} NUL byte(s)"
    if size > MAX_ANSWER_BYTES:
        return f"answer of {size} bytes is longer than {MAX_ANSWER_BYTES} (a broken endpoint?)"
    return None


def storable_excerpt(text: Any, limit: int = 2000) -> str | None:
    """``text`` cut to ``limit`` characters, with whatever could not be stored escaped (lone
    surrogates, NUL bytes): for the raw answer a failure record keeps."""
    if text is None:
        return None
    text = str(text)[:limit]
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


def _namespace_of(key_obj: Any) -> str:
    if isinstance(key_obj, dict) and isinstance(key_obj.get("namespace"), str):
        return key_obj["namespace"]
    return ""


class CallCache:
    """Persistent key/value cache of model calls. ``get``/``put`` take the key *object*."""

    def __init__(self, path: str | os.PathLike | None = None, timeout_s: float = 60.0):
        self.path = Path(path) if path is not None else default_cache_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise EduFairError(
                f"cannot create the call cache folder {self.path.parent}: {exc.strerror or exc} "
                "(set EDUFAIR_CACHE_DIR or edufair.cache.path to a writable place, or cache.enabled: false)"
            ) from None
        self._timeout = timeout_s
        self._local = threading.local()
        # each connection with the thread that opened it (see close)
        self._all_conns: list[tuple[sqlite3.Connection, threading.Thread]] = []
        self._lock = threading.Lock()
        # answers (and call counts) the file could not take (disk full, file damaged during the
        # run): kept for this process only, so the run goes on with every answer it received
        self._memory: dict[str, str] = {}
        self._memory_counts: dict[tuple[str, str], str] = {}
        self._full_said = False
        try:
            self._create_schema()
        except sqlite3.DatabaseError as exc:
            self.close()
            raise EduFairError(damaged_cache_line(self.path, exc)) from None

    def _create_schema(self) -> None:
        conn = self._conn()
        existed = self.path.exists() and self.path.stat().st_size > 0
        if existed:
            problem = quick_check_problem(conn, self.path)
            if problem is not None:
                raise sqlite3.DatabaseError(problem)
        with self._lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS calls ("
                    " key TEXT PRIMARY KEY, namespace TEXT NOT NULL, value TEXT NOT NULL,"
                    " value_sha256 TEXT NOT NULL, created REAL NOT NULL)"
                )
                conn.execute("CREATE INDEX IF NOT EXISTS calls_ns ON calls(namespace)")
                conn.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
                # per-role call counts of each process of a task run, kept while it runs, so that a
                # resumed run reports the work of every process (edufair_metrics/run/counts.py)
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS run_counts ("
                    " run TEXT NOT NULL, process TEXT NOT NULL, counts TEXT NOT NULL,"
                    " finished INTEGER NOT NULL, updated REAL NOT NULL, PRIMARY KEY (run, process))"
                )
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(str(self.path), timeout=self._timeout, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA busy_timeout={int(self._timeout * 1000)}")
            self._local.conn = conn
            with self._lock:
                self._all_conns.append((conn, threading.current_thread()))
        return conn

    def get(self, key_obj: Any) -> Any | None:
        """The stored value, or None on a miss (or an unreadable row, which is logged)."""
        key = cache_key(key_obj)
        try:
            row = self._conn().execute("SELECT value, value_sha256 FROM calls WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError as exc:  # damaged while the run uses it: a miss, said once
            self._say_unstorable(exc)
            row = None
        if row is None:
            kept = self._memory.get(key)
            return None if kept is None else json.loads(kept)
        value, digest = row
        if hashlib.sha256(value.encode("utf-8")).hexdigest() != digest:
            log.warning("cache %s: entry %s fails its checksum; ignored", self.path, key[:12])
            return None
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            log.warning("cache %s: entry %s is not valid JSON; ignored", self.path, key[:12])
            return None

    def put(self, key_obj: Any, value: Any) -> bool:
        """Store ``value`` (JSON-serialisable) in its own committed transaction. Returns False (and
        stores nothing) if the key or value would contain an API key from the environment, or could
        not be stored (text that is not UTF-8, such as a lone surrogate; NaN): a value that cannot
        be stored is a miss on the next run, never the end of this one."""
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
            key_text = canonical_json(key_obj)
            text.encode("utf-8")
            key_text.encode("utf-8")
        except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
            log.warning("cache: not storing an entry that cannot be stored (%s)", str(exc)[:200])
            return False
        for secret in known_secrets():
            if secret in text or secret in key_text:
                log.warning("cache: refusing to store an entry that contains an API key")
                return False
        key = hashlib.sha256(key_text.encode("utf-8")).hexdigest()
        try:
            self._transaction(lambda conn: conn.execute(
                "INSERT OR REPLACE INTO calls (key, namespace, value, value_sha256, created) VALUES (?, ?, ?, ?, ?)",
                (key, _namespace_of(key_obj), text, hashlib.sha256(text.encode("utf-8")).hexdigest(), time.time()),
            ))
        except sqlite3.DatabaseError as exc:  # disk full, I/O error, damaged file: kept for this run
            with self._lock:
                self._memory[key] = text
            self._say_unstorable(exc)
        return True

    @property
    def unstored(self) -> int:
        """How many answers this process kept in memory because the file could not take them."""
        return len(self._memory)

    def _transaction(self, body) -> None:
        """``body(conn)`` in one committed transaction. On failure the transaction is rolled back
        (SQLite has already done so itself after a full disk: a second rollback would fail with
        "cannot rollback - no transaction is active", so that one is ignored) and the error raised."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            body(conn)
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise

    def _say_unstorable(self, exc: BaseException) -> None:
        """One line on stderr, once per process, the first time the file cannot take an answer."""
        with self._lock:
            if self._full_said:
                return
            self._full_said = True
        print(f"edufair: warning: {unstorable_cache_line(self.path, exc)}", file=sys.stderr, flush=True)

    # ---- call counts of task runs (see edufair_metrics/run/counts.py) ---------------------------
    def save_run_counts(self, run: str, process: str, counts: Mapping[str, Any]) -> None:
        """Store (replace) one process's call counts of ``run`` so far, in one transaction."""
        text = json.dumps(counts, sort_keys=True)
        try:
            self._transaction(lambda conn: conn.execute(
                "INSERT OR REPLACE INTO run_counts (run, process, counts, finished, updated) VALUES (?, ?, ?, 0, ?)",
                (run, process, text, time.time())))
        except sqlite3.DatabaseError as exc:  # a full disk: this process's counts stay its own
            self._memory_counts[(run, process)] = text
            self._say_unstorable(exc)

    def earlier_run_counts(self, run: str, process: str) -> list[dict[str, Any]]:
        """The counts that other, unfinished processes of ``run`` left (interrupted before they
        finished), oldest first."""
        try:
            rows = self._conn().execute("SELECT counts FROM run_counts WHERE run = ? AND process != ? AND finished = 0 "
                                        "ORDER BY updated", (run, process)).fetchall()
        except sqlite3.DatabaseError as exc:
            self._say_unstorable(exc)
            rows = []
        out = []
        for (text,) in rows:
            try:
                out.append(json.loads(text))
            except json.JSONDecodeError:
                log.warning("cache %s: unreadable call counts of run %s; ignored", self.path, run[:12])
        return out

    def finish_run_counts(self, run: str, process: str, counts: Mapping[str, Any]) -> None:
        """Replace every row of ``run`` by ``counts`` (the combined counts of its processes), marked
        finished, in one transaction: a later process of the same run starts afresh."""
        def body(conn):
            conn.execute("DELETE FROM run_counts WHERE run = ?", (run,))
            conn.execute("INSERT INTO run_counts (run, process, counts, finished, updated) VALUES (?, ?, ?, 1, ?)",
                         (run, process, json.dumps(counts, sort_keys=True), time.time()))

        try:
            self._transaction(body)
        except sqlite3.DatabaseError as exc:  # a full disk: the earlier processes' rows stay
            self._say_unstorable(exc)

    def stats(self) -> dict[str, Any]:
        """{"path", "entries", "namespaces": {ns: n}, "size_bytes" (db + WAL), "oldest", "newest"}."""
        conn = self._conn()
        rows = conn.execute("SELECT namespace, COUNT(*) FROM calls GROUP BY namespace ORDER BY namespace").fetchall()
        oldest, newest = conn.execute("SELECT MIN(created), MAX(created) FROM calls").fetchone()
        size = 0
        for suffix in ("", "-wal"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                size += p.stat().st_size
        return {
            "path": str(self.path),
            "entries": sum(n for _, n in rows),
            "namespaces": {ns: n for ns, n in rows},
            "size_bytes": size,
            "oldest": oldest,
            "newest": newest,
        }

    def clear(self, namespace: str | None = None) -> int:
        """Delete all entries (or those of one namespace); returns how many were deleted."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            if namespace is None:
                conn.execute("DELETE FROM run_counts")
                cur = conn.execute("DELETE FROM calls")
            else:
                cur = conn.execute("DELETE FROM calls WHERE namespace = ?", (namespace,))
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise
        if namespace is None:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
        return cur.rowcount

    def close(self) -> None:
        """Close the connections of this thread and of threads that have ended. A connection of a
        thread still running (a worker abandoned with its call in flight after Ctrl-C) is left to
        the process's exit: closing it under a statement of that thread crashes the interpreter
        (SIGSEGV), and every answer it stored is already committed."""
        me = threading.current_thread()
        with self._lock:
            conns = self._all_conns
            self._all_conns = [(c, t) for c, t in conns if t is not me and t.is_alive()]
        for conn, owner in conns:
            if owner is me or not owner.is_alive():
                try:
                    conn.close()
                except sqlite3.Error:  # pragma: no cover
                    pass
        self._local = threading.local()

    def __enter__(self) -> "CallCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already (it does after SQLITE_FULL and
    some I/O errors: ROLLBACK then fails with "no transaction is active", which is not an error)."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def _free_space(path: Path) -> str:
    """The free space on the file system holding ``path`` (or its nearest existing folder)."""
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return f"{shutil.disk_usage(probe).free / 1024:.0f} KiB free"
    except OSError:
        return "free space unknown"


def unstorable_cache_line(path: Path, exc: BaseException) -> str:
    what = "is full" if "full" in str(exc).lower() else f"cannot store answers ({exc})"
    return (f"the call cache {path} {what} ({_free_space(path)} there): answers received from now on are kept in "
            "memory for this run only, which goes on; free space there (or set EDUFAIR_CACHE_DIR to another disk) "
            "so that a rerun finds them")


def _one_line(text: object) -> str:
    return " ".join(str(text).replace("*** in database main ***", "").split())


def damaged_cache_line(path: Path, exc: BaseException) -> str:
    return (f"{path}: the call cache is not a valid SQLite database ({_one_line(exc)}); nothing was changed: run "
            f"`edufair cache --repair --path {path}` to move it aside and keep the answers that still read "
            f"(`edufair cache --check --path {path}` to see what is wrong), or use another cache "
            "(EDUFAIR_CACHE_DIR, edufair.cache.path, cache.enabled: false)")


# quick_check reads the whole file: at open only up to this size (a bigger file is still refused
# when it is not a database at all; damage found later is handled like a full disk)
QUICK_CHECK_MAX_BYTES = 256 * 1024 * 1024


def quick_check_problem(conn: sqlite3.Connection, path: Path, *, full: bool = False) -> str | None:
    """The first problem SQLite's ``quick_check`` finds in the open file, or None (also for a file
    over :data:`QUICK_CHECK_MAX_BYTES` unless ``full``). "file is not a database" raises."""
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # a non-SQLite file raises here
    if not full and path.exists() and path.stat().st_size > QUICK_CHECK_MAX_BYTES:
        return None
    rows = conn.execute("PRAGMA quick_check(5)").fetchall()
    problems = [str(r[0]) for r in rows if str(r[0]) != "ok"]
    return "; ".join(problems) if problems else None


def check_cache_file(path: str | os.PathLike) -> tuple[bool, str]:
    """(valid, one line) for a cache file, read only: SQLite's ``integrity_check``, the tables
    EduFair needs, and the entries whose value no longer matches its checksum."""
    path = Path(path)
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        return False, f"cannot open: {exc}"
    try:
        rows = conn.execute("PRAGMA integrity_check(5)").fetchall()
        problems = [str(r[0]) for r in rows if str(r[0]) != "ok"]
        if problems:
            return False, "damaged: " + _one_line("; ".join(problems))
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "calls" not in tables:
            return False, "a SQLite database, but not an EduFair call cache (no calls table)"
        bad = sum(1 for value, digest in conn.execute("SELECT value, value_sha256 FROM calls")
                  if hashlib.sha256(str(value).encode("utf-8", "surrogatepass")).hexdigest() != digest)
        n = conn.execute("SELECT count(*) FROM calls").fetchone()[0]
        return True, f"valid: {n} entries" + (f", {bad} failing their checksum (ignored as misses)" if bad else "")
    except sqlite3.DatabaseError as exc:
        return False, f"not a valid SQLite database ({_one_line(exc)})"
    finally:
        conn.close()


# a truncated file: rowids are probed upwards until this many in a row hold nothing
_PROBE_GAP = 5000


def _probe_rowids(conn: sqlite3.Connection):
    rowid, gap = 0, 0
    while gap < _PROBE_GAP:
        rowid += 1
        try:
            found = conn.execute("SELECT 1 FROM calls WHERE rowid = ?", (rowid,)).fetchone() is not None
        except sqlite3.DatabaseError:
            found = False
        gap = 0 if found else gap + 1
        if found:
            yield rowid


def _padded_copy(source: Path) -> Path | None:
    """A copy of a truncated SQLite file padded with zero pages to the size its header states
    (SQLite refuses a file shorter than its header says; padded, only the lost pages fail to
    read), or None when the header is not SQLite's."""
    with open(source, "rb") as fh:
        header = fh.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        return None
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    want = page_size * pages
    if want <= source.stat().st_size:
        return None
    target = source.with_name(source.name + ".padded")
    shutil.copyfile(source, target)
    with open(target, "r+b") as fh:
        fh.truncate(want)
    return target


def _salvage_rows(source: Path) -> tuple[list[tuple], int]:
    """The ``calls`` rows of a damaged file that still read and pass their checksum, and how many
    rows could not be used. A truncated file is read from a zero-padded copy (removed after)."""
    padded = _padded_copy(source)
    try:
        return _salvage_from(padded or source)
    finally:
        if padded is not None:
            for suffix in ("", "-wal", "-shm"):
                Path(str(padded) + suffix).unlink(missing_ok=True)


def _salvage_from(source: Path) -> tuple[list[tuple], int]:
    """Row by row, so that one bad page loses only the rows on it."""
    rows: list[tuple] = []
    lost = 0
    try:
        conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error:
        return rows, 0
    try:
        try:
            rowids = [r[0] for r in conn.execute("SELECT rowid FROM calls ORDER BY rowid")]
        except sqlite3.DatabaseError:  # a damaged page on the way: probe the rowids one by one
            try:
                top = int(conn.execute("SELECT max(rowid) FROM calls").fetchone()[0] or 0)
            except sqlite3.DatabaseError:
                top = None  # the last page is lost too (a truncated file): probe until a long gap
            rowids = range(1, top + 1) if top is not None else _probe_rowids(conn)
        for rowid in rowids:
            try:
                row = conn.execute("SELECT key, namespace, value, value_sha256, created FROM calls WHERE rowid = ?",
                                   (rowid,)).fetchone()
            except sqlite3.DatabaseError:
                lost += 1
                continue
            if row is None:  # no row of that rowid (deleted earlier)
                continue
            if hashlib.sha256(str(row[2]).encode("utf-8", "surrogatepass")).hexdigest() != row[3]:
                lost += 1
                continue
            rows.append(row)
    except sqlite3.DatabaseError:
        pass
    finally:
        conn.close()
    return rows, lost


def repair_cache_file(path: str | os.PathLike) -> tuple[Path, int, int]:
    """Move a damaged cache file aside (``<name>.damaged-<time>``, with its -wal/-shm) and write a
    new cache at ``path`` holding every entry that still reads and passes its checksum. Returns
    (where the old file went, entries kept, entries lost). Never deletes anything."""
    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(path) + suffix)
        if src.exists():
            os.replace(src, Path(str(aside) + suffix))
    rows, lost = _salvage_rows(aside)
    with CallCache(path) as fresh:
        fresh._transaction(lambda conn: conn.executemany(
            "INSERT OR REPLACE INTO calls (key, namespace, value, value_sha256, created) VALUES (?, ?, ?, ?, ?)", rows))
    return aside, len(rows), lost
