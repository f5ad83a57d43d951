"""How a catalog regex meets a line or a message: the literals every match must contain (a
prefilter that spares most searches), and partial matches of text that was cut (a line cap,
a terminal's width, the end of the input) — counted only when the pattern's words, not one of
its gaps, ran into the cut."""

from __future__ import annotations

import functools
import re
from typing import Any

from . import _cache
from ._catalog import timed_fullmatch, timed_search

MIN_PARTIAL_CHARS = 16  # characters of the pattern's words a partial match must have matched


# — the prefilter: literals a match must contain ———————————————————————————————————
_IGNORECASE = int(re.IGNORECASE)  # an int: "&" of the enum builds an enum member each call
MIN_LITERAL = 3  # shorter required literals are too common to reject anything
MAX_PREFIXES = 64  # leading literals of a pattern, at most (its branches multiply them)


def required_literals(rx) -> tuple[tuple[str, ...], bool] | None:
    """``(literals, casefold)``: every match of the compiled ``rx`` contains one of
    ``literals`` (case-folded when ``casefold``). ``None`` when no such set is known.

    Read from the pattern's syntax tree (the standard library's parser: the catalog's
    patterns use the syntax common to ``re`` and ``regex``; anything else gives ``None``, so
    the pattern is always searched). A sequence requires the best literal of its items, a
    branch one literal of each alternative; optional parts and classes require nothing. A
    case-insensitive part (``(?i:…)``) case-folds every literal: the line is then case-folded
    too, which keeps every match (a pattern with no prefilter is searched on every line, and a
    search with a timeout costs hundreds of microseconds for some patterns)."""
    return _prefilters(rx)[0]


def leading_literals(rx) -> tuple[tuple[str, ...], bool] | None:
    """``(prefixes, casefold)``: every match of ``rx`` starts with one of ``prefixes``, each at
    most ``MIN_PARTIAL_CHARS`` long. A partial match counted at a cut (``search``) matched at
    least that many characters of its words from its start, so the cut text holds one of them
    whole: the prefilter of partial matches, which may lack the required literals. ``None``
    when a match may start otherwise (a class, a repeat, a lookaround)."""
    return _prefilters(rx)[1]


_NONE: tuple = (None, None)


def _prefilters(rx) -> tuple:
    source = rx.pattern
    if not isinstance(source, str):
        return _NONE
    return _prefilters_of(source, bool(getattr(rx, "flags", 0) & _IGNORECASE))


@functools.lru_cache(maxsize=4096)
def _prefilters_of(source: str, ignorecase: bool) -> tuple:
    """The required and the leading literals of one pattern source, parsed once per process
    (every explain builds a new Matcher, and parsing the catalog's sources each time cost ~70
    ms per log) and kept in the disk cache across processes."""
    return _cache.cached("prefilters", (source, ignorecase), lambda: _parse_prefilters(source, ignorecase))


def _parse_prefilters(source: str, ignorecase: bool) -> tuple:
    import warnings
    from re import _constants as C  # type: ignore[attr-defined]  # noqa: N812 - typeshed stubs only sre_*
    from re import _parser  # type: ignore[attr-defined]

    if "(?V1" in source:  # V1's nested sets are not re's syntax
        return _NONE
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = _parser.parse(source)
    except Exception:  # noqa: BLE001 - regex-only syntax: no prefilter for it
        return _NONE
    repeats = tuple(getattr(C, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(C, n))
    folded = bool(tree.state.flags & re.IGNORECASE) or ignorecase

    def seq(items) -> list[str] | None:
        options: list[list[str]] = []
        run: list[str] = []
        for op, av in items:
            if op is C.LITERAL:
                run.append(chr(av))
                continue
            if run:
                options.append(["".join(run)])
                run = []
            need = item(op, av)
            if need:
                options.append(need)
        if run:
            options.append(["".join(run)])
        return max(options, key=lambda o: min(map(len, o)), default=None)

    def item(op, av) -> list[str] | None:
        if op is C.SUBPATTERN:
            need = seq(av[3])
            if need and av[1] & re.IGNORECASE:
                nonlocal folded
                folded = True
            return need
        if op is C.BRANCH:
            out: list[str] = []
            for alternative in av[1]:
                need = seq(alternative)
                if not need:
                    return None
                out += need
            return out
        if op in repeats:
            return seq(av[2]) if av[0] >= 1 else None
        if op is C.ASSERT and av[0] in (1, -1):  # positive lookahead / lookbehind
            return seq(av[1])
        return None

    def lead(items, prefixes: list[str]) -> tuple[list[str], bool]:
        """The prefixes a match of ``items`` following one of ``prefixes`` starts with, and
        whether they hold all of ``items`` (else they end where a non-literal began)."""
        for op, av in items:
            if min(map(len, prefixes)) >= MIN_PARTIAL_CHARS:
                return prefixes, False
            if op is C.LITERAL:
                prefixes = [p + chr(av) for p in prefixes]
                continue
            if (op is C.AT and av is C.AT_BEGINNING) or op in (C.ASSERT, C.ASSERT_NOT):
                continue  # they take no character of the match
            if op is C.SUBPATTERN:
                if av[1] & re.IGNORECASE:
                    nonlocal folded
                    folded = True
                alternatives = [av[3]]
            elif op is C.BRANCH:
                alternatives = av[1]
            else:
                return prefixes, False
            ends = [lead(list(alternative), [""]) for alternative in alternatives]
            longer = [p + q for p in prefixes for qs, _ in ends for q in qs]
            if len(longer) > MAX_PREFIXES:
                return prefixes, False
            prefixes = longer
            if not all(whole for _, whole in ends):
                return prefixes, False
        return prefixes, True

    def finish(found: list[str] | None) -> tuple[tuple[str, ...], bool] | None:
        if not found or min(map(len, found)) < MIN_LITERAL:
            return None
        # a catalog Regex is compiled without flags: its inline ones are in the tree
        if folded:
            if not all(lit.isascii() for lit in found):  # a non-ASCII letter may match unlike its fold
                return None
            found = [lit.casefold() for lit in found]
        return tuple(sorted(set(found), key=len, reverse=True)), folded

    required = seq(list(tree))
    leading = [p[:MIN_PARTIAL_CHARS] for p in lead(list(tree), [""])[0]]
    return finish(required), finish(leading)


_ZEROS = bytes.maketrans(b"123456789", b"000000000")


def digits_as_zeros(text: str) -> bytes:
    """``text`` as UTF-8 with each digit made ``0``: a literal in a text is, so made, in the text
    so made (a digit byte is only ever an ASCII digit in UTF-8), so lines differing only in
    their numbers share the literals they may hold."""
    return text.encode("utf-8", "surrogatepass").translate(_ZEROS)


def shape_literals(rx) -> tuple[tuple[bytes, ...], bool] | None:
    """``required_literals`` as ``digits_as_zeros`` makes them: a line holding a match of ``rx``
    holds one of them in its shape (the line, digits as zeros), so one check of a shape answers
    for every line of it (the matcher's candidates per shape, the fast path's templates)."""
    need = required_literals(rx)
    return None if need is None else (tuple(digits_as_zeros(lit) for lit in need[0]), need[1])


def shape_holds(need: tuple[tuple[bytes, ...], bool], shape: bytes, folded_shape: bytes) -> bool:
    """Whether a line's ``shape`` (``folded_shape``: of the line case-folded) holds one of the
    ``shape_literals`` ``need``."""
    literals, casefold = need
    hay = folded_shape if casefold else shape
    return any(lit in hay for lit in literals)


def could_match(pattern, text: str) -> bool:
    """False when ``text`` holds none of the literals every match of ``pattern`` contains: it
    is then not searched, nor its regex compiled (a traceback meets every traceback pattern,
    and compiling the ~360 catalog regexes costs ~60 ms, more than a small log takes to read)."""
    need = required_literals(pattern)
    if need is None:
        return True
    literals, casefold = need
    if casefold:
        text = text.casefold()
    return any(lit in text for lit in literals)


def found_in(pattern, text: str) -> Any:
    """A timed search of the whole ``text``, prefiltered (a frame, a traceback's context)."""
    return could_match(pattern, text) and timed_search(pattern, text)


def fullmatch(pattern, text: str) -> Any:
    """A timed full match of ``text``, prefiltered (an exception's type)."""
    return could_match(pattern, text) and timed_fullmatch(pattern, text)


def search(pattern, text: str, may_be_cut: bool) -> tuple[Any, bool] | None:
    """Search ``text``; when it may be cut, also accept a partial match running off its end
    (which may lack the literals a whole match has: no prefilter for that one)."""
    m = timed_search(pattern, text) if could_match(pattern, text) else None
    if m is not None:
        return m, False
    if not may_be_cut:
        return None
    cut = text.rstrip()
    for tail in ("...", "\u2026"):
        if cut.endswith(tail):
            cut = cut[: -len(tail)].rstrip()
    lead = leading_literals(pattern)
    if lead is not None and not any(p in (cut.casefold() if lead[1] else cut) for p in lead[0]):
        return None
    m = timed_search(pattern, cut, partial=True)
    if m is not None and m.partial and m.end() >= len(cut) \
            and _words_before_the_cut(pattern, cut, m.start()) >= MIN_PARTIAL_CHARS:
        return m, True
    return None


_NO_WORD = "\x01"  # a character none of a pattern's words contains


def _words_before_the_cut(pattern, cut: str, start: int) -> int:
    """How much of a partial match the pattern's words matched, not a gap or hole of it
    (``[^\n]{0,60}``, ``\\S+``) that the cut fell into: a gap also takes a character no word has,
    so the shortest prefix that still matches with that character after it is where the gap
    began. "init_cpu_threads_env and shared memory based AllReduce is " matched only "cpu" of
    "CPU ... does not support AVX512"; "waitForInput: poll for socket SocketImpl(fd=100, addr=["
    matched its words up to the address."""

    def in_gap(k: int) -> bool:
        m = timed_search(pattern, cut[:k] + _NO_WORD, partial=True, pos=start)
        return m is not None and m.partial and m.start() == start

    if not in_gap(len(cut)):
        return len(cut) - start  # the cut fell inside a word: all of it is the pattern's words
    lo, hi = start, len(cut)  # the gap begins in (lo, hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if in_gap(mid):
            hi = mid
        else:
            lo = mid
    return hi - start


def search_message(pattern, message: str, may_be_cut: bool) -> tuple[Any, bool] | None:
    """Search an exception message; a message hard-wrapped over several lines (a terminal, a
    paste, the writer's own line breaks) is also searched as one line, the breaks read as
    spaces, then as nothing (a break inside a word)."""
    found = search(pattern, message, may_be_cut)
    if found is not None or "\n" not in message:
        return found
    lines = [part.strip() for part in message.split("\n")]
    return (search(pattern, " ".join(lines), may_be_cut)
            or search(pattern, "".join(lines), may_be_cut))
