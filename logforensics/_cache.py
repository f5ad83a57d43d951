"""A cache on disk of what logx derives from its own data at every start: the parsed pattern
files (``tomllib`` is pure Python: ~45 ms for the catalog) and the literals each catalog regex
requires or starts with (parsing its ~380 regex trees: ~60 ms). A command on a small log paid
both before reading a line. The command line turns it on (``enable()``); the library writes
nothing unless asked.

One ``marshal`` file per kind under ``$XDG_CACHE_HOME/logx`` (``~/.cache/logx``), named with
logx's version and a digest of where it is installed; an entry of a file is keyed by its path
and a digest of its bytes, so an edited pattern file is parsed again. Anything wrong with the
cache (unwritable, corrupt, a value marshal cannot hold) only costs the time it would have
saved. ``LOGX_NO_CACHE=1`` turns it off."""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

from ._version import __version__

try:  # hashlib's own blake2b; hashlib itself loads OpenSSL first (~2 ms of every start)
    from _blake2 import blake2b
except ImportError:  # an interpreter built without it
    from hashlib import blake2b

T = TypeVar("T")
_MISSING = object()

_enabled = False
_stores: dict[str, _Store] = {}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "logx"


def enable() -> None:
    """Use the cache in this process (the CLI calls it), unless ``LOGX_NO_CACHE`` is set."""
    global _enabled
    _enabled = not os.environ.get("LOGX_NO_CACHE")


def disable() -> None:
    global _enabled
    _enabled = False
    _stores.clear()


def store_name(kind: str) -> str:
    """The file of one kind: logx's version and where this copy of logx is installed (entries
    are keyed by path, so two checkouts or venvs of one version would share, double and race
    over one file)."""
    home = blake2b(os.path.dirname(os.path.abspath(__file__)).encode(), digest_size=4).hexdigest()
    return f"{kind}-{__version__}-{home}.marshal"


class _Store:
    """One kind's entries, read at first use and written back at exit when something was added."""

    def __init__(self, kind: str) -> None:
        self.path = cache_dir() / store_name(kind)
        self.entries: dict[Any, Any] = {}
        self.dirty = False
        with contextlib.suppress(OSError, EOFError, ValueError, TypeError):
            loaded = marshal.loads(self.path.read_bytes())
            if isinstance(loaded, dict):
                self.entries = loaded

    def save(self) -> None:
        if not self.dirty:
            return
        self.dirty = False
        with contextlib.suppress(OSError, ValueError):
            data = marshal.dumps(self.entries)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, self.path)  # atomic: a reader sees the old file or the new one


def _store(kind: str) -> _Store:
    store = _stores.get(kind)
    if store is None:
        if not _stores:
            atexit.register(_save_all)
        store = _stores[kind] = _Store(kind)
    return store


def _save_all() -> None:
    for store in _stores.values():
        store.save()


def cached(kind: str, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, or what it gave for ``key`` in an earlier process."""
    if not _enabled:
        return compute()
    store = _store(kind)
    found = store.entries.get(key, _MISSING)
    if found is not _MISSING:
        return found
    value = compute()
    try:
        marshal.dumps(value)  # type: ignore[arg-type]
    except ValueError:
        return value  # marshal cannot hold it: computed every time
    store.entries[key] = value
    store.dirty = True
    return value


def file_key(path: Path, data: bytes) -> tuple[str, str]:
    """The cache key of a file read as ``data``: its path and a digest of its bytes. Not its
    mtime: two writes within a clock tick keep it, and hashing ~150 KB is cheap."""
    return str(path), blake2b(data, digest_size=16).hexdigest()
