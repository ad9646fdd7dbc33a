"""File I/O at the edges: atomic writes, strict JSONL/JSON/YAML reading with file:line errors."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator

import yaml

from edufair_metrics.errors import EduFairError


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temp file in the same folder and an atomic rename,
    so a reader never sees a half-written file, even after a kill."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; give the file the permissions a plain open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def dumps_jsonl(records: Iterable[Any]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def atomic_write_jsonl(path: str | os.PathLike, records: Iterable[Any]) -> Path:
    return atomic_write_text(path, dumps_jsonl(records))


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, Any]]:
    """Yield (line_number, object) for every non-blank line; a malformed line raises
    EduFairError naming the file and the line."""
    path = Path(path)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise EduFairError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise EduFairError(f"{path}:{lineno}:{exc.start + 1}: not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                if not raw.endswith(b"\n"):  # the last line, without its end: a write that stopped
                    raise EduFairError(
                        f"{path}:{lineno}: the file is cut in its last line (a write that could not finish, e.g. a full "
                        "disk): run the command that wrote it again into the same folder, or move the file away") from None
                raise EduFairError(f"{path}:{lineno}:{exc.colno}: malformed JSON ({exc.msg})") from None


def parse_json(text: str, where: str) -> Any:
    """``json.loads`` whose error is one EduFairError line naming the file and line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise EduFairError(f"{where}:{exc.lineno}:{exc.colno}: malformed JSON ({exc.msg})") from None


def read_json(path: str | os.PathLike) -> Any:
    """Read and parse one JSON file; unreadable or malformed files are one-line EduFairErrors."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EduFairError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    return parse_json(text, str(path))


def read_yaml(path: str | os.PathLike, what: str = "") -> Any:
    """Read and parse one YAML file (``yaml.safe_load``; an empty file is None). Every problem is
    one EduFairError line: ``cannot read <what> FILE: reason`` when the file cannot be read, else
    ``FILE:LINE:COLUMN: invalid YAML (problem)``. ``what`` names the file's role ("settings file")."""
    p = Path(path).expanduser()
    label = f"{what} {p}" if what else str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise EduFairError(f"cannot read {label}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise EduFairError(f"cannot read {label}: not UTF-8 text (byte {exc.start + 1})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(p)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        detail = f"{problem} {context}" if context and problem != context else problem
        in_what = f" in the {what}" if what else ""
        raise EduFairError(f"{where}: invalid YAML{in_what} ({' '.join(str(detail).split())})") from None


def sha256_file(path: str | os.PathLike) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
