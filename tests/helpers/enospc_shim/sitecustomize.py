"""Test shim (tests/helpers/full_disk.py): with ``EDUFAIR_TEST_FULL_DIR`` set, every file written
under that folder counts its bytes against ``EDUFAIR_TEST_FULL_BYTES`` (the whole process's
budget), and a write past it writes what fits and raises ``OSError(ENOSPC)``, as a full disk does."""

import builtins
import errno
import io
import os

_DIR = os.environ.get("EDUFAIR_TEST_FULL_DIR")

if _DIR:
    _root = os.path.realpath(_DIR)
    _left = [int(os.environ.get("EDUFAIR_TEST_FULL_BYTES") or 0)]
    _open = io.open

    class _Full:
        def __init__(self, fh, binary):
            self._fh, self._binary = fh, binary

        def write(self, data):
            size = len(data if self._binary else data.encode("utf-8"))
            if size > _left[0]:
                part = data[: _left[0]] if self._binary else data.encode("utf-8")[: _left[0]].decode("utf-8", "ignore")
                _left[0] = 0
                self._fh.write(part)
                self._fh.flush()
                raise OSError(errno.ENOSPC, "No space left on device")
            _left[0] -= size
            return self._fh.write(data)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._fh.close()

        def __getattr__(self, name):
            return getattr(self._fh, name)

        def __iter__(self):
            return iter(self._fh)

    def _shim_open(file, mode="r", *args, **kwargs):
        fh = _open(file, mode, *args, **kwargs)
        if any(m in mode for m in "wax+") and isinstance(file, (str, bytes, os.PathLike)):
            path = os.path.realpath(os.fsdecode(file))
            if path == _root or path.startswith(_root + os.sep):
                return _Full(fh, "b" in mode)
        return fh

    builtins.open = _shim_open
    io.open = _shim_open

# Run the next sitecustomize on the path too (this one only adds the shim).
_here = os.path.dirname(os.path.abspath(__file__))
for _entry in list(__import__("sys").path):
    _candidate = os.path.join(_entry or ".", "sitecustomize.py")
    if os.path.abspath(_entry or ".") != _here and os.path.isfile(_candidate):
        with io.open(_candidate, encoding="utf-8") as _fh:
            exec(compile(_fh.read(), _candidate, "exec"), {"__name__": "sitecustomize", "__file__": _candidate})
        break
