"""On-disk cache of sweep points: one file per point, written atomically, checksummed.

A file is ``MAGIC + sha256(payload) + payload`` with ``payload`` the pickle of the
point's record (its row, its warm-start state, its status). It is written to a
temporary file in the same folder (``.tmp-*.part``, left behind only by a killed
writer and never read) and moved into place with :func:`os.replace`, so a reader
sees either the whole file or none. A file whose magic, length or
checksum does not match (a partial write from another tool, a corrupted disk) is
reported with a warning, deleted and treated as missing: it is never read as a
result. The cache holds pickles: only read caches this user wrote.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
import warnings
from pathlib import Path

__all__ = ["default_cache_dir", "CorruptEntry", "Cache"]

MAGIC = b"ATTNLIB-SWEEP-1\n"
_DIGEST = 32
log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """``$ATTNLIB_SWEEP_CACHE``, else ``$XDG_CACHE_HOME/attnlib/sweep``
    (``~/.cache/attnlib/sweep``)."""
    env = os.environ.get("ATTNLIB_SWEEP_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attnlib" / "sweep"


class CorruptEntry(UserWarning):
    """A cache file that failed its format or checksum check (it is recomputed)."""


class Cache:
    """The cache of one experiment: ``root/<name>/<key>.pkl``."""

    def __init__(self, root: str | os.PathLike, name: str):
        if not isinstance(root, (str, os.PathLike)):
            raise ValueError(f"root must be a folder path (str or os.PathLike), got {root!r}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
        self.dir = Path(root) / safe

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.pkl"

    def load(self, key: str):
        """The stored record of ``key``, or ``None`` when absent or corrupt."""
        path = self.path(key)
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            return None
        head = len(MAGIC) + _DIGEST
        ok = len(blob) > head and blob.startswith(MAGIC)
        payload = blob[head:]
        if ok and hashlib.sha256(payload).digest() == blob[len(MAGIC) : head]:
            try:
                return pickle.loads(payload)
            except Exception as err:  # a valid checksum over an unreadable pickle
                reason = f"unpicklable ({type(err).__name__}: {err})"
        else:
            reason = "bad format or checksum"
        warnings.warn(
            f"sweep cache: {path} is corrupt ({reason}); recomputing", CorruptEntry, stacklevel=2
        )
        path.unlink(missing_ok=True)
        return None

    def store(self, key: str, record) -> None:
        """Write ``record`` under ``key`` atomically (temporary file + ``os.replace``)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        payload = pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
        blob = MAGIC + hashlib.sha256(payload).digest() + payload
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        """Number of entries (temporary files of interrupted writes are not entries)."""
        if not self.dir.exists():
            return 0
        return sum(not p.name.startswith(".") for p in self.dir.glob("*.pkl"))
