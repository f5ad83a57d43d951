"""A server's failure sites (SGLang's ``data/sglang_sites.idx``, built by
``tools/index_sglang.py``; each dialect names its own in ``Dialect.sites``) and the lookup that
finds which one printed an exception no catalog pattern explains.

A site is a ``raise`` / ``assert`` / ``parser.error`` / failure-announcing log call in some
release of the server, with its message template (a regex with named holes), file, function, the
``if``/assert tests around it, the flags, env vars and ServerArgs fields it names, and the
release ranges that contain exactly that template.

The lookup never tries thousands of regexes: each template is filed under its two rarest
words, a message's words pick the few candidates, and a candidate is checked by finding its
literal pieces in order (linear ``str.find``s) on the message with all whitespace removed, so
a hard-wrapped message matches as well. A message cut at the screen edge (``...``) matches as
a prefix. The index is read on the first lookup only, and stays compressed in memory: 32
sites to a zlib block, a block decoded when a lookup checks one of its sites (``index_bytes``
has the format), so a lookup costs a few blocks rather than the whole index's objects.
"""

from __future__ import annotations

import json
import re
import zlib
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from functools import cache

from ._dialects import DEFAULT
from ._dialects.base import SiteData, version_tuple
from ._record import field, record
from ._tracebacks import Frame, Traceback

MIN_PARTIAL_CHARS = 16  # literal characters a cut message must match
MIN_LITERAL_CHARS = 8  # a template with less literal text is too vague to name a site
KEYS_PER_TEMPLATE = 2
_HOLE = re.compile(r"\(\?P<\w+>\.\*\?\)")
_ESCAPED = re.compile(r"\\(.)", re.S)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_WS = re.compile(r"\s+")
_CUT = ("...", "\u2026")


def _squash(text: str) -> str:
    return _WS.sub("", text)


@record(frozen=True, slots=True)
class Site:
    kind: str  # raise | assert | parser.error | log.error | log.warning
    exc_type: str  # "ValueError"; "" for log calls, "argparse" for parser.error
    regex: str
    file: str  # sglang/srt/server_args.py
    function: str  # ServerArgs.__post_init__
    conditions: tuple[str, ...]
    flags: tuple[str, ...]
    env: tuple[str, ...]
    args: tuple[str, ...]
    releases: tuple[tuple[str, str], ...]
    pieces: tuple[str, ...] = field(compare=False)  # literal pieces, in order
    starts_literal: bool = field(compare=False)
    ends_literal: bool = field(compare=False)

    @classmethod
    def from_row(cls, row: Sequence[str]) -> Site:
        """A site from its row (``to_row``'s strings, in ``COLUMNS`` order)."""
        kind, exc_type, rx, file, function, conditions, flags, env, args, releases = row
        raw = _literal_text(rx)
        return cls(
            kind=kind, exc_type=exc_type, regex=rx, file=file, function=function,
            conditions=tuple(c for c in conditions.split("\n") if c),
            flags=tuple(flags.split()), env=tuple(env.split()), args=tuple(args.split()),
            releases=tuple(tuple(r.split("/", 1)) for r in releases.split()),  # type: ignore[misc]
            pieces=tuple(p for p in (_squash(x) for x in raw) if p),
            starts_literal=bool(raw) and raw[0] != "", ends_literal=bool(raw) and raw[-1] != "",
        )

    def same_template(self, other: Site) -> bool:
        """One message, whatever the holes are called (releases rename the variables)."""
        return (self.exc_type, self.pieces, self.starts_literal, self.ends_literal) == \
            (other.exc_type, other.pieces, other.starts_literal, other.ends_literal)

    @property
    def literal_chars(self) -> int:
        return sum(map(len, self.pieces))

    @property
    def where(self) -> str:
        return f"{self.file}:{self.function}"

    @property
    def release_range(self) -> str:
        """``0.5.10–0.5.13`` (or ``0.4.6–0.4.9, 0.5.2–0.5.23`` when it came and went)."""
        return ", ".join(a if a == b else f"{a}–{b}" for a, b in self.releases)

    def fields(self) -> dict[str, str]:
        """The template's hole names (regex group names, unique)."""
        return dict.fromkeys(re.findall(r"\(\?P<(\w+)>", self.regex), "")


@record(slots=True)
class SiteMatch:
    site: Site
    confidence: float
    partial: bool  # the message was cut: matched as a prefix
    equivalent: list[Site]  # other sites with the same type and template
    file_agrees: bool = False  # the raising frame is in the site's file

    @property
    def release_bounds(self) -> tuple[str, str]:
        """The first and last release in which this template (at any of its sites) exists."""
        sites = [self.site, *self.equivalent]
        if self.file_agrees:  # the raising frame's file holds the site: only its releases count
            sites = [s for s in sites if s.file == self.site.file]
        ranges = [r for s in sites for r in s.releases]
        return (min((a for a, _ in ranges), key=_release), max((b for _, b in ranges), key=_release))


COLUMNS = ("k", "t", "re", "f", "fn", "c", "flags", "env", "args", "r")
_RE, _FILE, _FUNCTION, _FLAGS, _ARGS = (COLUMNS.index(c) for c in ("re", "f", "fn", "flags", "args"))
MAGIC = b"logx-sites/1\n"
SITES_PER_BLOCK = 32  # ~8 KB decoded: a lookup decodes the blocks of its candidates, never the index
DICTIONARY_BYTES = 32768  # zlib's largest preset dictionary
DECODED_BLOCKS = 64  # blocks kept decoded between lookups (~1 MB at most)
BUILT_SITES = 4096  # sites kept built between lookups (a log of many distinct tracebacks stays bounded)
_ROW_END, _FIELD_END = "\x1e", "\x1f"  # ASCII record/unit separators: no template holds them


def to_row(record: dict) -> list[str]:
    """A site record (``tools/index_sglang.py``'s) as strings in ``COLUMNS`` order: conditions
    joined by newlines, names by spaces, release ranges as ``first/last`` by spaces."""
    def flat(key: str) -> str:
        value = record.get(key, "")
        if key == "c":
            return "\n".join(value)
        if key == "r":
            return " ".join(f"{a}/{b}" for a, b in value)
        return " ".join(value) if isinstance(value, list) else value

    row = [flat(key) for key in COLUMNS]
    if any(_ROW_END in v or _FIELD_END in v for v in row):
        raise ValueError(f"a site holds a separator character: {row[_FILE]}:{row[_FUNCTION]}")
    return row


def filing_keys(regexes: list[str]) -> dict[str, str]:
    """Each template's two rarest words among its first literal words (a cut message keeps
    those) → the sites filed under them, as space-separated indices (parsed per word when a
    lookup needs it). ``write_index`` stores this with the sites."""
    words_of = [list(dict.fromkeys(_WORD.findall(" ".join(_literal_text(rx))))) for rx in regexes]
    df: dict[str, int] = {}
    for words in words_of:
        for w in words:
            df[w] = df.get(w, 0) + 1
    keys: dict[str, list[str]] = {}
    for i, (rx, words) in enumerate(zip(regexes, words_of, strict=True)):
        if sum(len(_squash(p)) for p in _literal_text(rx)) < MIN_LITERAL_CHARS:
            continue
        for w in sorted(words[:8], key=lambda w: (df[w], -len(w)))[:KEYS_PER_TEMPLATE]:
            keys.setdefault(w, []).append(str(i))
    return {w: " ".join(ids) for w, ids in keys.items()}


def index_bytes(releases: list[str], records: list[dict], site_count_all_releases: int | None = None) -> bytes:
    """An index file: ``MAGIC``, the header's length (4 bytes, little-endian), the header
    (zlib'd JSON: releases, filing keys, sites per block, the dictionary's and each block's size,
    each block's first file, every flag the sites name), the dictionary, then the blocks:
    ``SITES_PER_BLOCK`` rows each, fields ended by ``\\x1f`` and rows by ``\\x1e``, zlib'd with
    the dictionary (the index's most frequent field values: a small block compresses nearly as
    well as the whole). Sites are ordered by file and function (a block's first file finds a
    file's sites); the bytes are deterministic (a rebuild is byte-identical)."""
    rows = sorted((to_row(r) for r in records), key=lambda row: (row[_FILE], row[_FUNCTION], row[_RE]))
    dictionary = _dictionary(rows)
    chunks = [rows[i:i + SITES_PER_BLOCK] for i in range(0, len(rows), SITES_PER_BLOCK)]
    blocks = []
    for chunk in chunks:
        packer = zlib.compressobj(9, zdict=dictionary)
        blocks.append(packer.compress("".join(_FIELD_END.join(row) + _ROW_END for row in chunk).encode())
                      + packer.flush())
    named = {f.removeprefix("--").replace("-", "_") for row in rows for f in row[_FLAGS].split()}
    header = {
        "releases": releases, "sites": len(rows), "sites_per_block": SITES_PER_BLOCK,
        "site_count_all_releases": len(rows) if site_count_all_releases is None else site_count_all_releases,
        "keys": filing_keys([row[_RE] for row in rows]), "dictionary_size": len(dictionary),
        "block_sizes": [len(b) for b in blocks], "first_files": [chunk[0][_FILE] for chunk in chunks],
        "flags": sorted(named | {a for row in rows for a in row[_ARGS].split()}),
    }
    head = zlib.compress(json.dumps(header, separators=(",", ":"), sort_keys=True).encode(), 9)
    return b"".join([MAGIC, len(head).to_bytes(4, "little"), head, dictionary, *blocks])


def _dictionary(rows: list[list[str]]) -> bytes:
    """zlib's preset dictionary for the blocks: the field values (files, functions,
    conditions) that repeat most, up to ``DICTIONARY_BYTES``, the most frequent last (zlib
    reaches the end of its window most cheaply)."""
    counts: dict[str, int] = {}
    for row in rows:
        for value in row:
            if len(value) > 3:
                counts[value] = counts.get(value, 0) + 1
    chosen: list[bytes] = []
    size = 0
    for value in sorted(counts, key=lambda v: (-counts[v], v)):
        data = value.encode()
        if counts[value] > 1 and size + len(data) <= DICTIONARY_BYTES:
            chosen.append(data)
            size += len(data)
    return b"".join(reversed(chosen))


def _read_header(raw: bytes) -> dict:
    """An index file's header, with ``body_start``: where its dictionary begins."""
    if not raw.startswith(MAGIC):
        raise ValueError("not a logx site index (tools/index_<server>.py writes one)")
    start = len(MAGIC) + 4
    size = int.from_bytes(raw[len(MAGIC):start], "little")
    return {**json.loads(zlib.decompress(raw[start:start + size])), "body_start": start + size}


class SiteIndex:
    """One server's sites (``data``: which server; the default dialect's when None), filed for
    lookup, from an index file's bytes (``index_bytes``). The blocks stay compressed; a
    ``Site`` is built from its row only when a lookup checks it; ``candidates_checked`` counts
    that work."""

    def __init__(self, raw: bytes, data: SiteData | None = None):
        header = _read_header(raw)
        self.releases: list[str] = header["releases"]
        self.site_count_all_releases: int = header["site_count_all_releases"]
        self.keys: dict[str, str] = header["keys"]
        self.flags = frozenset(header["flags"])  # every flag the sites name or test, as ServerArgs fields
        self.data = data or _default_sites()
        self.candidates_checked = 0
        self._count: int = header["sites"]
        self._per_block: int = header["sites_per_block"]
        self._first_files: list[str] = header["first_files"]
        self._raw = memoryview(raw)
        start = header["body_start"]
        self._dictionary = bytes(raw[start:start + header["dictionary_size"]])
        self._starts = [start + header["dictionary_size"]]
        for size in header["block_sizes"]:
            self._starts.append(self._starts[-1] + size)
        self._blocks: dict[int, list[list[str]]] = {}
        self._sites: dict[int, Site] = {}
        self._postings: dict[str, list[int]] = {}

    @classmethod
    def from_records(cls, releases: list[str], records: list[dict], data: SiteData | None = None) -> SiteIndex:
        return cls(index_bytes(releases, records), data=data)

    def __len__(self) -> int:
        return self._count

    def _block(self, b: int) -> list[list[str]]:
        found = self._blocks.get(b)
        if found is None:
            if len(self._blocks) >= DECODED_BLOCKS:
                del self._blocks[next(iter(self._blocks))]  # the oldest
            unpacker = zlib.decompressobj(zdict=self._dictionary)
            text = unpacker.decompress(self._raw[self._starts[b]:self._starts[b + 1]]).decode()
            found = self._blocks[b] = [row.split(_FIELD_END) for row in text.split(_ROW_END)[:-1]]
        return found

    def site(self, i: int) -> Site:
        found = self._sites.get(i)
        if found is None:
            if len(self._sites) >= BUILT_SITES:
                self._sites.clear()
            found = self._sites[i] = Site.from_row(self._block(i // self._per_block)[i % self._per_block])
        return found

    def posting(self, word: str) -> list[int]:
        """The sites filed under ``word``."""
        found = self._postings.get(word)
        if found is None:
            found = self._postings[word] = [int(i) for i in self.keys.get(word, "").split()]
        return found

    def at_place(self, file: str, function: str) -> list[int]:
        """The sites in ``file`` whose function's last name is ``function`` (a bare assert is
        found through its frame): only the blocks whose first files bracket ``file`` are read."""
        first = max(bisect_left(self._first_files, file) - 1, 0)
        last = bisect_right(self._first_files, file)
        return [b * self._per_block + k for b in range(first, last)
                for k, row in enumerate(self._block(b))
                if row[_FILE] == file and row[_FUNCTION].rsplit(".", 1)[-1] == function]

    def lookup(self, exc_type: str | None, message: str, file: str | None = None,
               function: str | None = None, source: str | None = None,
               cut: bool = False) -> SiteMatch | None:
        """The best site for an exception (``exc_type`` None: a log line), or None.

        ``file``/``function`` are the raising frame's (any path; the part from the server's
        package on, ``sglang/…``, is compared); ``source`` its source line, which names an ``assert`` without a
        message. ``cut``: the message may end early (it is also cut when it ends in ``...``)."""
        short = exc_type.rsplit(".", 1)[-1] if exc_type else None
        text = message.strip()
        if short == "KeyError" and len(text) > 1 and text[0] in "'\"" and (text[-1] == text[0] or cut):
            # str(KeyError(msg)) is repr(msg): the site's template has no quotes (a cut one lost its end)
            text = text[1:-1] if text[-1] == text[0] else text[1:]
        for tail in _CUT:
            if text.endswith(tail):
                text, cut = text[: -len(tail)], True
        squashed = _squash(text)
        place = _package_path(file, self.data.package), (function or "")
        scored: list[tuple[float, tuple, SiteMatch]] = []
        seen: set[int] = set()
        for w in dict.fromkeys(_WORD.findall(text)):
            for i in self.posting(w) if w in self.keys else ():
                if i in seen:
                    continue
                seen.add(i)
                self.candidates_checked += 1
                site = self.site(i)
                if not _type_agrees(site, short):
                    continue
                got = _match(site, squashed, cut)
                if got is None:
                    continue
                coverage, partial = got
                confidence = 0.9 if not partial else 0.55 + 0.3 * coverage
                if site.literal_chars < 20:
                    confidence -= 0.15
                confidence += _place_bonus(site, place)
                scored.append((confidence, _rank(site, self.data.core), SiteMatch(site, confidence, partial, [])))
        if not scored and short == "AssertionError" and not squashed and source and place[0]:
            scored = self._assert_by_source(place, source)
        if not scored:
            return None
        scored.sort(key=lambda t: (t[0], t[1]), reverse=True)
        best = scored[0][2]
        best.confidence = min(best.confidence, 0.95)
        best.file_agrees = place[0] == best.site.file
        best.equivalent = [m.site for _, _, m in scored[1:]
                           if m.site.same_template(best.site)]
        return best

    def _assert_by_source(self, place: tuple[str, str], source: str) -> list[tuple[float, tuple, SiteMatch]]:
        """A bare ``assert x`` prints no message: the frame's source line names it."""
        shown = _squash(source.strip().removeprefix("assert"))
        out = []
        for i in self.at_place(*place):
            site = self.site(i)
            self.candidates_checked += 1
            if site.kind != "assert" or not site.conditions:
                continue
            test = _squash(site.conditions[-1].removeprefix("not (").removesuffix(")"))
            if shown and (test.startswith(shown.rstrip(",")) or shown.startswith(test)):
                out.append((0.8, (len(test), *_rank(site, self.data.core)), SiteMatch(site, 0.8, False, [])))
        return out


def _rank(site: Site, core: str) -> tuple:
    """Between equally good matches: the most literal text, then the fewest holes (an
    empty hole fits anything), then the LLM server's own code (``core``, ``sglang/srt/``)
    over the package's other programs, then the newest release."""
    holes = len(site.pieces) - 1 + (not site.starts_literal) + (not site.ends_literal)
    return site.literal_chars, -holes, site.file.startswith(core), _release(site.releases[-1][1])


def _literal_text(rx: str) -> list[str]:
    return [_ESCAPED.sub(r"\1", p) for p in _HOLE.split(rx)]


def _type_agrees(site: Site, short: str | None) -> bool:
    if short is None:  # a log line: log calls and the argument parser print those
        return site.kind in ("log.error", "log.warning", "parser.error")
    return site.exc_type == short


def _package_path(file: str | None, package: str) -> str:
    """``file`` from ``<package>/`` on (``/opt/x/sglang/srt/a.py`` → ``sglang/srt/a.py``), or ""."""
    if not file:
        return ""
    at = file.replace("\\", "/").rfind(f"{package}/")
    return file[at:] if at >= 0 else ""


def _place_bonus(site: Site, place: tuple[str, str]) -> float:
    file, function = place
    if not file:
        return 0.0
    if file != site.file:
        return -0.05
    return 0.05 if function and site.function.rsplit(".", 1)[-1] == function else 0.02


def _match(site: Site, text: str, cut: bool) -> tuple[float, bool] | None:
    """``(coverage, partial)`` when ``text`` (whitespace removed) fits the template: its
    literal pieces in order, anchored where the template starts/ends with a literal. A cut
    text may stop anywhere; coverage is the share of literal characters it showed."""
    pieces = site.pieces
    pos = 0
    matched = 0
    for k, piece in enumerate(pieces):
        anchored = k == 0 and site.starts_literal
        at = (0 if text.startswith(piece) else -1) if anchored else text.find(piece, pos)
        if at < 0:
            if not cut:
                return None
            rest = text[pos:]
            if anchored and not piece.startswith(rest):
                return None
            matched += len(rest) if anchored else _shown_prefix(piece, rest)
            if matched < MIN_PARTIAL_CHARS:
                return None
            return matched / max(site.literal_chars, 1), True
        pos = at + len(piece)
        matched += len(piece)
    if site.ends_literal and pieces and not text.endswith(pieces[-1]):
        return None
    if not pieces and text:
        return None
    return 1.0, False


def match_traceback(tb: Traceback, data: SiteData | None = None) -> SiteMatch | None:
    """The site of server ``data`` (the default dialect's when None) that raised ``tb``'s final
    exception, from its type, message and raising frame."""
    frame = tb.raising_frame
    index = site_index(data)
    if frame is not None and frame.file and "/" in frame.file \
            and not _package_path(frame.file, index.data.package):
        return None  # raised in another package (torch, transformers, json): no site of this server raised it
    final = tb.final
    where = {"file": frame.file if frame else None, "function": frame.function if frame else None,
             "source": frame.source if frame else None}
    found = index.lookup(tb.exc_type, final.message, cut=tb.may_be_cut, **where)
    if found is None and final.head_cut and "\n" in final.message:
        # its first line ends at the paste's width: the rest was cut off (what follows is not it)
        # rather than hard-wrapped onto the next lines (read above: whitespace is squashed)
        found = index.lookup(tb.exc_type, final.message.split("\n", 1)[0], cut=True, **where)
    return found


def _shown_prefix(piece: str, rest: str) -> int:
    """How much of ``piece`` a cut text ends with, after whatever filled the hole before it:
    found by its first characters, then checked to run to the end of the text."""
    head = piece[:MIN_PARTIAL_CHARS]
    at = rest.find(head)
    while at >= 0:
        if piece.startswith(rest[at:]):
            return len(rest) - at
        at = rest.find(head, at + 1)
    # the text stopped inside the piece's first characters
    return next((k for k in range(min(len(head), len(rest)), 3, -1) if head.startswith(rest[-k:])), 0)


def _data(name: str):
    """A bundled file of ``logforensics/data``; ``importlib.resources`` is imported on first use
    (~8 ms, tempfile's imports: a log without a traceback reads none of these files)."""
    from importlib import resources

    return resources.files("logforensics").joinpath(f"data/{name}")


_LOADED: dict[str, SiteIndex] = {}


def _default_sites() -> SiteData:
    assert DEFAULT.sites is not None  # the default dialect ships an index
    return DEFAULT.sites


def site_index(data: SiteData | None = None) -> SiteIndex:
    """Server ``data``'s bundled index (the default dialect's when None), read on first use
    (only when a traceback needs it: ~1 MB, kept compressed)."""
    data = data or _default_sites()
    found = _LOADED.get(data.index_file)
    if found is None:
        found = _LOADED[data.index_file] = SiteIndex(_data(data.index_file).read_bytes(), data)
    return found


# — flags as each release spells them (data/sglang_flags.json.gz, tools/index_sglang_flags.py) ——


Version = tuple[int, ...]


def _release(text: str) -> Version:
    """A release of the index (``"0.5.14"``) as a tuple, to order releases by."""
    return version_tuple(text) or ()


@cache
def _flag_settings(data: SiteData) -> dict[str, dict[str, tuple[tuple[Version, Version], ...]]]:
    """Each renamed flag of server ``data`` → its setting: every spelling with the releases it
    was the name in (empty when the server ships no flag table)."""
    if data.flags is None:
        return {}
    import gzip

    raw = json.loads(gzip.decompress(
        _data(data.flags).read_bytes()))
    out: dict[str, dict[str, tuple[tuple[Version, Version], ...]]] = {}
    for setting in raw["settings"]:
        spelled = {flag: tuple((_release(a), _release(b)) for a, b in runs) for flag, runs in setting.items()}
        out.update(dict.fromkeys(spelled, spelled))
    return out


def flag_as_spelled(flag: str, low: Version | None, high: Version | None, data: SiteData | None = None,
                    server: str = "SGLang") -> str:
    """``flag`` (as a site's release names it) as the log's release spells it: ``low`` and
    ``high`` bound that release (equal when the log prints it; None: unbounded). When the
    bounds straddle a rename, the newer name with the older one: ``--new (named --old before
    SGLang 0.5.14)``."""
    setting = _flag_settings(data or _default_sites()).get(flag)
    if setting is None:
        return flag
    lo, hi = low or (0,), high or (99,)

    def throughout(name: str) -> bool:
        return any(a <= lo and hi <= b for a, b in setting[name])

    def at(version: Version) -> list[str]:
        return [name for name, runs in setting.items() if any(a <= version <= b for a, b in runs)]

    if throughout(flag):
        return flag
    whole = [name for name in setting if throughout(name)]
    if whole:
        return min(whole, key=lambda name: min(a for a, _ in setting[name]))  # the established one
    newest = max(setting, key=lambda name: max(b for _, b in setting[name]))
    older = [name for name in at(lo) if name != newest] if low else []
    if not older:
        older = [name for name in setting if name != newest and max(b for _, b in setting[name])
                 < min(a for a, _ in setting[newest])]
    if not older:
        return newest
    since = ".".join(map(str, min(a for a, _ in setting[newest])))
    return f"{newest} (named {older[0]} before {server} {since})"


_LONG_FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")


def renamed_flags(rejected: str, low: Version | None, high: Version | None, data: SiteData | None = None,
                  server: str = "SGLang") -> str | None:
    """What the flags the parser rejected (``rejected``: its ``unrecognized arguments: …``) are
    called in the log's release (``low``/``high`` bound it; None: the newest names): a flag that
    stopped being a name before another spelling of its setting began (``--stream-output`` →
    ``--incremental-streaming-output`` from 0.5.10), or one typed with underscores. None when no
    rejected flag is either."""
    data = data or _default_sites()
    settings = _flag_settings(data)
    notes = []
    for flag in dict.fromkeys(_LONG_FLAG.findall(rejected)):
        dashed = "--" + flag[2:].replace("_", "-")
        if dashed != flag and dashed[2:].replace("-", "_") in site_index(data).flags:
            notes.append(f"`{flag}` is spelled `{dashed}`")
            continue
        setting = settings.get(flag)
        if setting is None:
            continue
        ended = max(b for _, b in setting[flag])
        later = {name: min(a for a, _ in runs) for name, runs in setting.items() if min(a for a, _ in runs) > ended}
        at = high or low or max(b for runs in setting.values() for _, b in runs)  # the release, or the newest
        named = [name for name in later if any(a <= at <= b for a, b in setting[name])]
        if named:
            new = min(named, key=lambda name: later[name])
            notes.append(f"`{flag}` is now `{new}`, its name since {server} {'.'.join(map(str, later[new]))}")
    return "; ".join(notes) or None


# — what a site stands for: its home's root cause (SiteData.categories, data/site_categories.toml) ——


@record(frozen=True, slots=True)
class Category:
    id: str
    what: str
    fix: str
    phase: str | None
    keys: tuple[tuple[str, re.Pattern[str]], ...]
    flag_value: bool = False  # the home of a flag's value that a helper failed to parse, not of a site

    def claims(self, site: Site) -> bool:
        values = {"file": site.file, "function": site.function, "kind": site.kind,
                  "text": " ".join(_literal_text(site.regex) + list(site.conditions))}
        return not self.flag_value and all(rx.search(values[key]) for key, rx in self.keys)


def _data_toml(name: str) -> dict:
    import tomllib

    return tomllib.loads(_data(name).read_text())


@cache
def categories(data: SiteData | None = None) -> tuple[Category, ...]:
    """Server ``data``'s categories (the default dialect's when None), in the file's order."""
    return tuple(
        Category(c["id"], c["what"], c["fix"], c.get("phase"),
                 tuple((k, re.compile(c[k])) for k in ("file", "function", "text", "kind") if k in c),
                 c.get("flag_value", False))
        for c in _data_toml((data or _default_sites()).categories)["category"])


def category_of(site: Site, data: SiteData | None = None) -> Category | None:
    """The first category of server ``data`` whose rule claims ``site`` (None: its home has none)."""
    return next((c for c in categories(data) if c.claims(site)), None)


def category_of_frame(file: str | None, function: str | None, data: SiteData | None = None) -> Category | None:
    """The category of server ``data``'s module an exception was raised in without a site of
    its own (``x.get`` on a list in the model-config code): the first rule that reads only the
    file and function and claims them. None outside the server's package."""
    data = data or _default_sites()
    path = _package_path(file, data.package)
    if not path:
        return None
    values = {"file": path, "function": function or ""}
    return next((c for c in categories(data) if c.keys and all(key in values for key, _ in c.keys)
                 and all(rx.search(values[key]) for key, rx in c.keys)), None)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def flag_in_source(source: str | None, data: SiteData | None = None) -> str | None:
    """The flag (``--json-model-override-args``) whose value a caller's source line hands to the
    helper that failed (``json.loads(model_override_args)``): a name of two words or more in it
    that is a flag's ServerArgs field, or that field less its leading words (a parameter passed on
    keeps the field's tail). None when the line names no flag."""
    if not source:
        return None
    fields = site_index(data).flags
    for name in dict.fromkeys(n for n in _NAME.findall(source) if n.strip("_").count("_") >= 1):
        name = name.strip("_")
        found = name if name in fields else min(
            (f for f in fields if f.endswith("_" + name)), key=len, default=None)
        if found:
            return "--" + found.replace("_", "-")
    return None


# what a parser or converter raises on a value it cannot take (json/orjson.loads, int(), a
# builtin given too many arguments): raised by a compiled call, such an error is about its input
VALUE_ERRORS = frozenset({"ValueError", "TypeError", "JSONDecodeError", "OverflowError"})
_RAISE_LINE = re.compile(r"^\s*(?:raise|assert)\b")


def home_category(frames: list[Frame], data: SiteData | None = None,
                  exc_type: str | None = None) -> tuple[Frame, Category, str | None] | None:
    """What the module of an exception without a site of its own stands for: ``(home frame, its
    category, the flag whose value it failed on)``. When the standard library raised it on a
    value a flag gave, or a compiled call on the raising frame's line did (``orjson.loads``,
    ``gc.set_threshold``: no frame of its own, its source line no ``raise``) with an error about
    its input (``VALUE_ERRORS``, of type ``exc_type``), the flag is the cause wherever the value
    was parsed; else the home frame's module's category, or, in a library the server called, the
    home of that library's module that reads the user's files (None for any other module outside
    the server's package)."""
    frame = home_frame(frames)
    if frame is None:
        return None
    compiled_call = (frame is frames[-1] and bool(frame.source) and not _RAISE_LINE.match(frame.source or "")
                     and (exc_type or "").rsplit(".", 1)[-1] in VALUE_ERRORS)
    if frame is not frames[-1] or compiled_call:  # a helper raised: what was it handed?
        flag = flag_in_source(frame.source, data)
        value = next((c for c in categories(data) if c.flag_value), None)
        if flag and value and in_server(frame.file, data):
            return frame, value, flag
    category = category_of_frame(frame.file, frame.function, data)
    if category is None:  # the log is the server's: a library's reader ran under its calls
        category = next((c for rx, c in _library_homes() if rx.search(frame.file.replace("\\", "/"))), None)
    return (frame, category, None) if category else None


@cache
def _library_homes() -> tuple[tuple[re.Pattern[str], Category], ...]:
    """The modules of a library that read what the user gave the server (transformers' config
    and tokenizer loaders): what they raise when the server calls them is that input's fault
    (``frame_packages.toml``'s ``[[package.home]]``)."""
    return tuple((re.compile(rf"(?:^|/)(?:{p['name']})/(?:[^/]*/)*?(?:{h['file']})"),
                  Category(h["id"], h["what"], h["fix"], h.get("phase"), ()))
                 for p in _data_toml("frame_packages.toml")["package"] for h in p.get("home", []))


# the standard library's own files (``/usr/lib/python3.11/json/decoder.py``, ``<frozen runpy>``),
# not what a site-packages or dist-packages folder under it holds
_STDLIB = re.compile(r"^<frozen |(?:^|[/\\])lib[/\\]python3\.\d+[/\\](?!(?:site|dist)-packages[/\\])")


def in_server(file: str | None, data: SiteData | None = None) -> bool:
    """``file`` is one of server ``data``'s own modules."""
    return bool(_package_path(file, (data or _default_sites()).package))


def home_frame(frames: list[Frame]) -> Frame | None:
    """The frame whose module says what an exception means: the raising frame, or, when the
    standard library raised it (``json.loads`` on a value it was handed), the caller's frame
    nearest to it, since a generic helper says nothing of what it was parsing."""
    for frame in reversed(frames):
        if not _STDLIB.search(frame.file):
            return frame
    return frames[-1] if frames else None


@cache
def _packages() -> tuple[tuple[re.Pattern[str], str, str, str | None], ...]:
    return tuple((re.compile(rf"(?:^|[/\\])(?:{p['name']})[/\\.]" if p["name"] != "*" else r""), p["name"],
                  p["meaning"], p.get("server")) for p in _data_toml("frame_packages.toml")["package"])


def frame_package(file: str | None, server: str | None = None) -> tuple[str, str] | None:
    """``(package, what its failures usually mean)`` for a raising frame's file; ``server``
    (the log's server package, the default dialect's when None) names a source checkout's
    frames, which have no site-packages/ in their path, and picks the entries of its logs (vLLM's
    own code on a vLLM log, vLLM code SGLang imports on an SGLang log)."""
    if not file:
        return None
    path = file.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        at = path.rfind(marker)
        if at >= 0:
            path = path[at + len(marker):]
            break
    else:
        path = _package_path(path, server or _default_sites().package) or path
    for rx, name, meaning, only in _packages():
        if only is not None and only != (server or _default_sites().package):
            continue  # an entry of another server's logs
        m = rx.search(path) if name != "*" else None
        if m is not None or name == "*":
            package = path.split("/", 1)[0].split(".", 1)[0] if name == "*" or "|" in name else name
            return package or name, meaning
    return None


# — a site's conditions in plain words ——————————————————————————————————————————————

_OPS = {"Eq": "is", "NotEq": "is not", "Lt": "is below", "LtE": "is at most", "Gt": "is above",
        "GtE": "is at least", "In": "is one of", "NotIn": "is not one of", "Is": "is", "IsNot": "is not"}
_INVERSE = {"Eq": "NotEq", "NotEq": "Eq", "Lt": "GtE", "GtE": "Lt", "Gt": "LtE", "LtE": "Gt",
            "In": "NotIn", "NotIn": "In", "Is": "IsNot", "IsNot": "Is"}
_OWNER = re.compile(r"\b(?:self\.server_args|self\.config|server_args|self)\.")


def plain_condition(conditions: tuple[str, ...] | list[str]) -> str:
    """What held when the site fired, in words: the enclosing tests joined by "and"
    (``self.tp_size % self.pp_size != 0`` → "tp_size is not a multiple of pp_size")."""
    import ast

    words = []
    for cond in conditions:
        try:
            node = ast.parse(_OWNER.sub("", cond), mode="eval").body
        except SyntaxError:
            words.append(f"`{cond}`")
            continue
        words.append(_words(node, False))
    return " and ".join(w for w in words if w)


def _words(node, negate: bool) -> str:
    import ast

    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _words(node.operand, not negate)
    if isinstance(node, ast.BoolOp):
        joiner = " and " if isinstance(node.op, ast.And) != negate else " or "
        return joiner.join(_words(v, negate) for v in node.values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op = type(node.ops[0]).__name__
        op = _INVERSE[op] if negate else op
        left, right = node.left, node.comparators[0]
        if isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod) \
                and isinstance(right, ast.Constant) and right.value == 0 and op in ("Eq", "NotEq"):
            verb = "is a multiple of" if op == "Eq" else "is not a multiple of"
            return f"{ast.unparse(left.left)} {verb} {ast.unparse(left.right)}"
        if isinstance(right, ast.Constant) and right.value is None:
            return f"{ast.unparse(left)} {'is not set' if op == 'Is' else 'is set'}"
        return f"{ast.unparse(left)} {_OPS[op]} {ast.unparse(right)}"
    text = ast.unparse(node)
    if isinstance(node, ast.Name | ast.Attribute):
        return f"{text} is {'off' if negate else 'on'}"
    return f"not {text}" if negate else text


# — argument defaults that changed between releases (SiteData.defaults: data/sglang_defaults.json) —


def release_key(version: str) -> tuple[int, ...]:
    """``"0.5.3.post3"`` -> ``(0, 5, 3, 3)``, ``"0.5.4"`` -> ``(0, 5, 4, 0)``: releases in order."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:4]]
    return tuple(parts + [0] * (4 - len(parts)))


@cache
def _default_changes(data: str) -> dict[str, list]:
    raw = _data(data).read_text()
    return json.loads(raw)["changes"]


Bounds = tuple[tuple[int, ...] | None, tuple[int, ...] | None]


def default_change(data: str, field: str, old: object, new: object, base: Bounds, cand: Bounds) -> str | None:
    """The release whose server arguments (``data``: the dialect's ``SiteData.defaults``) changed
    ``field``'s default from ``old`` to ``new``, when the baseline's release (``(low, high)``,
    None: unbounded) can be older than it and the candidate's not; None when the index knows no
    such change (many defaults are resolved at start-up, not written in the dataclass: those it
    cannot know)."""
    def key(bound: tuple[int, ...] | None) -> tuple[int, ...] | None:
        return release_key(".".join(map(str, bound))) if bound else None

    base_low, cand_high = key(base[0]), key(cand[1])
    for release, was, now in _default_changes(data).get(field, ()):
        if was != old or now != new or type(was) is not type(old) or type(now) is not type(new):
            continue
        r = release_key(release)
        if (base_low is None or base_low < r) and (cand_high is None or r <= cand_high):
            return release
    return None
