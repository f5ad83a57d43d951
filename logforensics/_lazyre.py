"""Module-level regexes compiled at their first use.

logx's stages and dialects hold ~100 regexes (prefixes, frames, memory lines, the dialects'
markers); a small healthy log reaches a few of them, and compiling them all at import cost
about a tenth of every command's start. ``lazy`` stands for ``re.compile``: the pattern is
compiled when one of its attributes (``match``, ``search``, ``pattern``…) is first read, and
that attribute is then found directly, as fast as the compiled pattern's own."""

from __future__ import annotations

import re
from typing import AnyStr, cast


class _LazyPattern:
    """``re.compile(source, flags)``, compiled by the first attribute read."""

    def __init__(self, source: str | bytes, flags: int) -> None:
        self._source = source
        self._flags = flags

    def __getattr__(self, name: str):
        if name.startswith("__"):  # copy, pickle and friends probe these: not the pattern's
            raise AttributeError(name)
        value = getattr(re.compile(self._source, self._flags), name)
        self.__dict__[name] = value  # the next read does not come here
        return value

    def __reduce__(self):
        return _LazyPattern, (self._source, self._flags)

    def __repr__(self) -> str:
        return f"lazy({self._source!r})"


def lazy(source: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``re.compile(source, flags)`` on first use (a stand-in with the methods of ``re.Pattern``)."""
    return cast("re.Pattern[AnyStr]", _LazyPattern(source, flags))
